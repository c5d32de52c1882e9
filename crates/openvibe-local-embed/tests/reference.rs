//! The embeddings match vectors computed once, independently, by
//! `tests/reference/make_reference.py` (a float64 NumPy BERT over the same
//! `model.safetensors`): cosine ≥ 0.999 for every case, alone and batched
//! together (so padding inside a batch changes nothing), and the same token
//! counts (truncation at 256 tokens, not the tokenizer file's 128).
//!
//! Needs the model (`cargo xtask models fetch`; `cargo xtask test-all`
//! fetches it): without it the test fails and says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_local_embed::{LocalEmbedder, default_model_dir};
use openvibe_protocols::Embedder;
use openvibe_retrieval::cosine;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    max_tokens: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    tokens: usize,
    embedding: Vec<f32>,
}

fn reference() -> Reference {
    // Read at run time: a binary built in another checkout that shares the
    // target directory must not read that checkout's file (CONTRIBUTING).
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo test sets CARGO_MANIFEST_DIR");
    let path = format!("{dir}/tests/reference/minilm.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference file")).expect("json")
}

fn model() -> LocalEmbedder {
    LocalEmbedder::minilm().unwrap_or_else(|e| {
        panic!(
            "the local model is not in {}: {e}\nrun `cargo xtask models fetch` first",
            default_model_dir().display()
        )
    })
}

#[tokio::test]
async fn minilm_matches_the_reference_vectors_alone_and_batched() {
    let reference = reference();
    let model = model();
    assert_eq!(model.dimensions(), 384);
    assert_eq!(model.model_id(), "all-MiniLM-L6-v2");
    let texts: Vec<String> = reference.cases.iter().map(|c| c.text.clone()).collect();
    let batched = model.embed(&texts).await.expect("embed batch");
    assert_eq!(batched.len(), texts.len());
    for (case, together) in reference.cases.iter().zip(&batched) {
        assert_eq!(
            model.token_count(&case.text).expect("tokens"),
            case.tokens,
            "token count of {:?}",
            case.text
        );
        assert!(case.tokens <= reference.max_tokens);
        let alone = model
            .embed_blocking(std::slice::from_ref(&case.text))
            .expect("embed");
        for (how, got) in [("alone", &alone[0]), ("batched", together)] {
            assert_eq!(got.len(), 384);
            let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{how}: not unit length: {norm}");
            let similarity = cosine(got, &case.embedding);
            assert!(
                similarity >= 0.999,
                "{how}: cosine {similarity} < 0.999 for {:?}",
                case.text
            );
        }
    }
    // The reference is not trivially satisfied: different texts differ.
    assert!(cosine(&batched[0], &batched[1]) < 0.9);
}

#[test]
fn a_missing_model_is_a_typed_error_naming_the_fix() {
    let dir = std::env::temp_dir().join("openvibe-no-model-here");
    let err = LocalEmbedder::load(&dir, "none").expect_err("no files");
    let text = err.to_string();
    assert!(text.contains("config.json"), "{text}");
    assert!(text.contains("cargo xtask models fetch"), "{text}");
}
