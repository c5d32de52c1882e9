#!/usr/bin/env python3
"""Generate reference sentence embeddings for all-MiniLM-L6-v2 without torch.

Usage:
    pip install numpy safetensors tokenizers
    python3 make_reference.py MODEL_DIR > minilm.json

MODEL_DIR is the directory containing config.json, model.safetensors and
tokenizer.json (the sentence-transformers all-MiniLM-L6-v2 snapshot).

What it does (mirrors sentence-transformers for this model, see modules.json:
Transformer -> Pooling(mean) -> Normalize):
  * tokenizes with the HF `tokenizers` library from tokenizer.json, but with
    the file's own settings overridden: tokenizer.json ships with
    truncation max_length=128 and padding Fixed(128); here padding is
    disabled and truncation is set to 256 tokens (sentence_bert_config.json
    max_seq_length), counting [CLS]/[SEP];
  * runs a plain-numpy BERT encoder forward pass in float64 (word + position
    + token_type(0) embeddings, LayerNorm, 6 layers of 12-head self-attention
    with an additive large-negative mask on padding, exact erf GELU);
  * mean-pools the last hidden state over non-padding tokens;
  * L2-normalises the pooled vector.

Embedding values are rounded to 7 decimals in the JSON.
"""

import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MAX_TOKENS = 256

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "Melanie painted a sunrise over the lake last year.",
    "What did Caroline research?",
    "hello",
    "",
    "Rust is a systems programming language focused on safety, speed, and concurrency. " * 40,
    "Ünïcödé façade — naïve café 東京 🚀",
]

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    # Exact (erf) GELU, as used by BERT's "gelu" hidden_act.
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def linear(x, w, b):
    # PyTorch Linear layout: weight is (out, in).
    return x @ w.T + b


class MiniLM:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        assert self.cfg["hidden_act"] == "gelu", self.cfg["hidden_act"]
        assert self.cfg.get("position_embedding_type", "absolute") == "absolute"
        raw = load_file(os.path.join(model_dir, "model.safetensors"))
        w = {}
        for k, v in raw.items():
            if k.startswith("bert."):
                k = k[len("bert."):]
            w[k] = v.astype(np.float64)
        self.w = w
        self.eps = float(self.cfg["layer_norm_eps"])
        self.n_layers = int(self.cfg["num_hidden_layers"])
        self.n_heads = int(self.cfg["num_attention_heads"])
        self.hidden = int(self.cfg["hidden_size"])

        tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=MAX_TOKENS)
        self.tok = tok

    def encode_ids(self, texts):
        encs = self.tok.encode_batch(texts, add_special_tokens=True)
        return [list(e.ids) for e in encs]

    def forward(self, batch_ids):
        """batch_ids: list of token-id lists (may differ in length; padded here)."""
        w = self.w
        B = len(batch_ids)
        T = max(len(ids) for ids in batch_ids)
        ids = np.zeros((B, T), dtype=np.int64)  # pad id 0
        mask = np.zeros((B, T), dtype=np.float64)
        for i, seq in enumerate(batch_ids):
            ids[i, : len(seq)] = seq
            mask[i, : len(seq)] = 1.0

        pos = np.arange(T)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][pos][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)

        H = self.n_heads
        D = self.hidden // H
        # additive mask: 0 for real tokens, large negative for padding keys
        add_mask = (1.0 - mask)[:, None, None, :] * -1e9

        for l in range(self.n_layers):
            p = f"encoder.layer.{l}."

            def split(t):
                return t.reshape(B, T, H, D).transpose(0, 2, 1, 3)

            q = split(linear(x, w[p + "attention.self.query.weight"], w[p + "attention.self.query.bias"]))
            k = split(linear(x, w[p + "attention.self.key.weight"], w[p + "attention.self.key.bias"]))
            v = split(linear(x, w[p + "attention.self.value.weight"], w[p + "attention.self.value.bias"]))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D) + add_mask
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs = probs / probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, self.hidden)
            attn = linear(ctx, w[p + "attention.output.dense.weight"], w[p + "attention.output.dense.bias"])
            x = layer_norm(attn + x, w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], self.eps)
            inter = gelu(linear(x, w[p + "intermediate.dense.weight"], w[p + "intermediate.dense.bias"]))
            out = linear(inter, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
            x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)

        # mean pooling over non-padding tokens
        summed = (x * mask[:, :, None]).sum(axis=1)
        counts = np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        pooled = summed / counts
        # L2 normalise (sentence-transformers Normalize module)
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled / norms

    def embed(self, texts):
        return self.forward(self.encode_ids(texts))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        sys.exit(2)
    model = MiniLM(sys.argv[1])
    ids = model.encode_ids(SENTENCES)
    # one sentence at a time: no padding involved in the reference values
    embs = [model.forward([seq])[0] for seq in ids]
    cases = []
    for text, seq, e in zip(SENTENCES, ids, embs):
        cases.append({
            "text": text,
            "tokens": len(seq),
            "embedding": [round(float(v), 7) for v in e],
        })
    out = {
        "model": "all-MiniLM-L6-v2",
        "max_tokens": MAX_TOKENS,
        "note": (
            "Generated by make_reference.py: numpy float64 BERT forward pass over "
            "model.safetensors (no torch), HF tokenizers from tokenizer.json with "
            "padding disabled and truncation overridden to 256 tokens incl. [CLS]/[SEP] "
            "(tokenizer.json itself says truncation 128 / padding Fixed 128), "
            "token_type_ids all 0, mean pooling over all tokens incl. [CLS]/[SEP], "
            "then L2 normalisation. Each sentence embedded alone (no padding). "
            "'tokens' = token count after truncation incl. [CLS]/[SEP]. Values rounded to 7 decimals."
        ),
        "cases": cases,
    }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
