//! The LoCoMo retrieval evaluation (turn-level recall).
//!
//! Format and metrics: `../shared/data/locomo-dev/README.md`. Each
//! conversation goes into its own tenant as semantic memory through the
//! public [`KnowledgeStore`] API, one record per turn; each question of
//! categories 1–4 is asked with [`KnowledgeStore::query_knowledge`], and the
//! top 20 are checked against the question's evidence turns.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openvibe_protocols::{
    CallerContext, Embedder, KnowledgeQuery, KnowledgeStore, NewKnowledge, Principal, RetrievalMode,
};
use serde::Deserialize;
use serde_json::Value;

/// A question of the dataset.
#[derive(Debug, Clone, Deserialize)]
pub struct Qa {
    /// The question.
    pub question: String,
    /// Evidence turn ids (`D3:7`).
    #[serde(default)]
    pub evidence: Vec<String>,
    /// 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
    pub category: u8,
}

/// One turn.
#[derive(Debug, Clone)]
pub struct Turn {
    /// `D3:7`.
    pub dia_id: String,
    /// Who said it.
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// The caption of a shared image, if any.
    pub caption: Option<String>,
    /// The session's date and time as the data writes it.
    pub date: String,
}

/// One conversation file.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// The file's stem (`26`).
    pub name: String,
    /// Every turn, in order.
    pub turns: Vec<Turn>,
    /// Every question.
    pub qa: Vec<Qa>,
}

/// Read one LoCoMo file.
pub fn load(path: &Path) -> Result<Conversation, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let obj = doc
        .as_object()
        .ok_or_else(|| format!("{}: not a JSON object", path.display()))?;
    // The conversation may be at the top level or under `conversation`.
    let conv = obj
        .get("conversation")
        .and_then(Value::as_object)
        .unwrap_or(obj);
    let mut sessions: Vec<(u32, &Vec<Value>)> = conv
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut turns = Vec::new();
    for (n, list) in sessions {
        let date = conv
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for t in list {
            let field = |name: &str| t.get(name).and_then(Value::as_str).map(str::to_owned);
            let (Some(dia_id), Some(speaker), Some(text)) =
                (field("dia_id"), field("speaker"), field("text"))
            else {
                continue;
            };
            turns.push(Turn {
                dia_id,
                speaker,
                text,
                caption: field("blip_caption"),
                date: date.clone(),
            });
        }
    }
    let qa: Vec<Qa> = match obj.get("qa") {
        Some(v) => {
            serde_json::from_value(v.clone()).map_err(|e| format!("{}: qa: {e}", path.display()))?
        }
        None => Vec::new(),
    };
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Conversation { name, turns, qa })
}

/// Every `*.json` file of `dir`, sorted by name.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no .json files", dir.display()));
    }
    Ok(files)
}

/// The text a turn is indexed as: who said it and when, what they said,
/// and the caption of the image they shared.
pub fn indexed_text(turn: &Turn) -> String {
    let mut text = format!("{} ({}): {}", turn.speaker, turn.date, turn.text);
    if let Some(caption) = &turn.caption {
        text.push_str(" [shared ");
        text.push_str(caption);
        text.push(']');
    }
    text
}

/// Recall figures of one method.
#[derive(Debug, Default, Clone)]
pub struct Recall {
    /// Questions asked.
    pub questions: usize,
    /// Questions with an evidence turn in the top 5.
    pub any5: usize,
    /// … in the top 10.
    pub any10: usize,
    /// Questions with every evidence turn in the top 10.
    pub all10: usize,
    /// … any in the top 20.
    pub any20: usize,
}

impl Recall {
    fn add(&mut self, evidence: &[&str], ranked: &[String]) {
        let within = |k: usize| -> Vec<bool> {
            let top: HashSet<&str> = ranked.iter().take(k).map(String::as_str).collect();
            evidence.iter().map(|e| top.contains(e)).collect()
        };
        self.questions += 1;
        self.any5 += usize::from(within(5).iter().any(|b| *b));
        let ten = within(10);
        self.any10 += usize::from(ten.iter().any(|b| *b));
        self.all10 += usize::from(ten.iter().all(|b| *b));
        self.any20 += usize::from(within(20).iter().any(|b| *b));
    }

    fn share(&self, n: usize) -> f64 {
        if self.questions == 0 {
            0.0
        } else {
            n as f64 / self.questions as f64
        }
    }

    /// The `EVAL` lines of `method`.
    pub fn lines(&self, method: &str) -> Vec<String> {
        vec![
            format!("EVAL {method} recall_any@5 {:.4}", self.share(self.any5)),
            format!("EVAL {method} recall_any@10 {:.4}", self.share(self.any10)),
            format!("EVAL {method} recall_all@10 {:.4}", self.share(self.all10)),
            format!("EVAL {method} recall_any@20 {:.4}", self.share(self.any20)),
            format!("EVAL {method} questions {}", self.questions),
        ]
    }
}

/// The method's retrieval mode.
pub fn mode(method: &str) -> Result<RetrievalMode, String> {
    match method {
        "bm25" => Ok(RetrievalMode::FullText),
        "dense" => Ok(RetrievalMode::Vector),
        "hybrid" => Ok(RetrievalMode::Hybrid),
        other => Err(format!("unknown method `{other}` (bm25, dense, hybrid)")),
    }
}

/// The caller a conversation is indexed and asked as: its own tenant.
pub fn caller(conv: &Conversation) -> CallerContext {
    CallerContext::new(format!("locomo-{}", conv.name), Principal::user("eval"))
}

/// How many earlier turns of the same session the full-text index sees
/// beside a turn: a reply is often unanswerable alone ("Thanks! It's a mix
/// of drama and romance" answers what the turn two back names).
pub const TEXT_CONTEXT: usize = 2;

/// How many earlier turns the embedding sees: one sentence vector is
/// diluted by more (see `docs/retrieval.md`).
pub const EMBEDDING_CONTEXT: usize = 1;

/// What a turn is indexed as: [`indexed_text`], then up to `depth` earlier
/// turns of the same session, nearest first, as context (their words
/// without their speaker's name, which would match every question naming
/// either speaker).
pub fn with_context(conv: &Conversation, i: usize, depth: usize) -> String {
    let turn = &conv.turns[i];
    let mut text = indexed_text(turn);
    let earlier = conv.turns[..i].iter().rev().take(depth);
    for p in earlier.take_while(|p| p.date == turn.date) {
        text.push_str("\n(replying to: ");
        text.push_str(&p.text);
        text.push(')');
    }
    text
}

/// Index `conv`'s turns into `store` (embeddings from `embedder`, batched).
pub async fn index(
    store: &dyn KnowledgeStore,
    embedder: &dyn Embedder,
    conv: &Conversation,
) -> Result<(), String> {
    let ctx = caller(conv);
    let texts: Vec<String> = (0..conv.turns.len())
        .map(|i| with_context(conv, i, TEXT_CONTEXT))
        .collect();
    let embedded: Vec<String> = (0..conv.turns.len())
        .map(|i| with_context(conv, i, EMBEDDING_CONTEXT))
        .collect();
    let vectors = embedder.embed(&embedded).await.map_err(|e| e.to_string())?;
    for ((turn, text), vector) in conv.turns.iter().zip(texts).zip(vectors) {
        store
            .store_knowledge(
                &ctx,
                NewKnowledge {
                    embedding: Some(vector),
                    external_id: Some(turn.dia_id.clone()),
                    source: Some("locomo".into()),
                    ..NewKnowledge::new(text)
                },
            )
            .await
            .map_err(|e| format!("conversation {}: turn {}: {e}", conv.name, turn.dia_id))?;
    }
    Ok(())
}

/// Questions of categories 1–4 with their usable evidence ids; the ids that
/// name no turn are collected in `skipped`.
pub fn questions<'a>(
    conv: &'a Conversation,
    skipped: &mut Vec<String>,
) -> Vec<(&'a Qa, Vec<&'a str>)> {
    let ids: HashSet<&str> = conv.turns.iter().map(|t| t.dia_id.as_str()).collect();
    let mut out = Vec::new();
    for qa in conv.qa.iter().filter(|q| (1..=4).contains(&q.category)) {
        let mut evidence = Vec::new();
        for e in &qa.evidence {
            if ids.contains(e.as_str()) {
                evidence.push(e.as_str());
            } else {
                skipped.push(format!("{}:{}", conv.name, e));
            }
        }
        if !evidence.is_empty() {
            out.push((qa, evidence));
        }
    }
    out
}

/// What a question missed, for reading: nothing when an evidence turn is in
/// the top 10; else the question, each evidence turn as indexed with its
/// rank in `ranked` (the hits' turn ids; `-`: not in the top 20), and the
/// top 3 `hits` that came instead.
pub fn miss_report(
    conv: &Conversation,
    method: &str,
    qa: &Qa,
    evidence: &[&str],
    ranked: &[String],
    hits: &[openvibe_protocols::KnowledgeHit],
) -> String {
    let rank = |id: &str| ranked.iter().position(|r| r == id);
    if evidence.iter().any(|e| rank(e).is_some_and(|r| r < 10)) {
        return String::new();
    }
    let one_line = |text: &str| text.replace('\n', " | ");
    let mut out = format!(
        "## {method} {}: {} (category {})\n",
        conv.name, qa.question, qa.category
    );
    for e in evidence {
        let Some(i) = conv.turns.iter().position(|t| t.dia_id == *e) else {
            continue;
        };
        let rank = rank(e).map_or("-".to_owned(), |r| (r + 1).to_string());
        let text = one_line(&with_context(conv, i, TEXT_CONTEXT));
        out.push_str(&format!("  evidence {e} (rank {rank}): {text}\n"));
    }
    for (r, h) in hits.iter().take(3).enumerate() {
        let id = h.knowledge.external_id.as_deref().unwrap_or_default();
        let text = one_line(&h.knowledge.content);
        out.push_str(&format!("  #{} {id}: {text}\n", r + 1));
    }
    out
}

/// Ask every question of `conv` by each method; add to `recall[method]`
/// and, when `misses` is given, each question's [`miss_report`].
pub async fn ask(
    store: &dyn KnowledgeStore,
    embedder: &dyn Embedder,
    conv: &Conversation,
    methods: &[String],
    recall: &mut BTreeMap<String, Recall>,
    skipped: &mut Vec<String>,
    mut misses: Option<&mut String>,
) -> Result<(), String> {
    let ctx = caller(conv);
    let asked = questions(conv, skipped);
    let texts: Vec<String> = asked.iter().map(|(q, _)| q.question.clone()).collect();
    let vectors = embedder.embed(&texts).await.map_err(|e| e.to_string())?;
    for method in methods {
        let mode = mode(method)?;
        let entry = recall.entry(method.clone()).or_default();
        for ((qa, evidence), vector) in asked.iter().zip(&vectors) {
            let query = KnowledgeQuery {
                text: Some(qa.question.clone()),
                embedding: Some(vector.clone()),
                top_k: 20,
                ..KnowledgeQuery::default()
            }
            .mode(mode);
            let hits = store
                .query_knowledge(&ctx, &query)
                .await
                .map_err(|e| format!("conversation {}: {e}", conv.name))?;
            let ranked: Vec<String> = hits
                .iter()
                .filter_map(|h| h.knowledge.external_id.clone())
                .collect();
            entry.add(evidence, &ranked);
            if let Some(report) = misses.as_deref_mut() {
                report.push_str(&miss_report(conv, method, qa, evidence, &ranked, &hits));
            }
        }
    }
    Ok(())
}

/// Run the evaluation over `dir` on `store`; with `misses`, append to it
/// every missed question's [`miss_report`].
pub async fn run(
    store: Arc<dyn KnowledgeStore>,
    embedder: Arc<dyn Embedder>,
    dir: &Path,
    methods: &[String],
    mut misses: Option<&mut String>,
) -> Result<Vec<String>, String> {
    let mut recall: BTreeMap<String, Recall> = BTreeMap::new();
    let mut skipped = Vec::new();
    for path in files(dir)? {
        let conv = load(&path)?;
        eprintln!(
            "eval: conversation {} ({} turns, {} questions)",
            conv.name,
            conv.turns.len(),
            conv.qa.len()
        );
        index(store.as_ref(), embedder.as_ref(), &conv).await?;
        // Every vector in the backend's index before the questions, so that
        // the same run ranks the same way (PostgreSQL indexes in the
        // background otherwise, racing the questions).
        store
            .index_pending(&caller(&conv))
            .await
            .map_err(|e| format!("conversation {}: {e}", conv.name))?;
        ask(
            store.as_ref(),
            embedder.as_ref(),
            &conv,
            methods,
            &mut recall,
            &mut skipped,
            misses.as_deref_mut(),
        )
        .await?;
    }
    let mut lines = Vec::new();
    for method in methods {
        if let Some(r) = recall.get(method) {
            lines.extend(r.lines(method));
        }
        lines.push(format!(
            "EVAL {method} skipped_evidence {} {}",
            skipped.len(),
            skipped.join(" ")
        ));
    }
    Ok(lines)
}

/// An embedder that remembers every vector in a file, so that repeated
/// evaluation runs embed only texts they have not seen.
pub struct DiskCache {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    cache: std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>,
}

impl DiskCache {
    /// Wrap `inner`, loading `path` when it exists.
    pub fn new(inner: Arc<dyn Embedder>, path: PathBuf) -> Self {
        let cache = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            inner,
            path,
            cache: std::sync::Mutex::new(cache),
        }
    }

    fn key(&self, text: &str) -> String {
        openvibe_protocols::content_hash(&format!("{}\n{text}", self.inner.model_id()))
    }

    /// Write the cache to its file.
    pub fn save(&self) -> Result<(), String> {
        let cache = self.cache.lock().map_err(|e| e.to_string())?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let bytes = serde_json::to_vec(&*cache).map_err(|e| e.to_string())?;
        std::fs::write(&self.path, bytes).map_err(|e| e.to_string())
    }
}

#[async_trait::async_trait]
impl Embedder for DiskCache {
    async fn embed(
        &self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, openvibe_protocols::EmbedError> {
        let keys: Vec<String> = texts.iter().map(|t| self.key(t)).collect();
        let missing: Vec<String> = {
            let cache = self
                .cache
                .lock()
                .map_err(|e| openvibe_protocols::EmbedError::Model(e.to_string()))?;
            let mut seen = HashSet::new();
            texts
                .iter()
                .zip(&keys)
                .filter(|(_, k)| !cache.contains_key(*k) && seen.insert((*k).clone()))
                .map(|(t, _)| t.clone())
                .collect()
        };
        if !missing.is_empty() {
            let vectors = self.inner.embed(&missing).await?;
            let mut cache = self
                .cache
                .lock()
                .map_err(|e| openvibe_protocols::EmbedError::Model(e.to_string()))?;
            for (t, v) in missing.iter().zip(vectors) {
                cache.insert(self.key(t), v);
            }
        }
        let cache = self
            .cache
            .lock()
            .map_err(|e| openvibe_protocols::EmbedError::Model(e.to_string()))?;
        Ok(keys
            .iter()
            .map(|k| cache.get(k).cloned().unwrap_or_default())
            .collect())
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_counts_any_and_all() {
        let mut r = Recall::default();
        let ranked: Vec<String> = (0..20).map(|i| format!("D1:{i}")).collect();
        r.add(&["D1:3", "D1:15"], &ranked);
        r.add(&["D9:9"], &ranked);
        assert_eq!(
            (r.questions, r.any5, r.any10, r.all10, r.any20),
            (2, 1, 1, 0, 1)
        );
        assert!(r.lines("x")[0].starts_with("EVAL x recall_any@5 0.5000"));
        assert!(mode("nope").is_err());
    }

    #[test]
    fn a_turn_is_indexed_with_earlier_turns_of_its_session() {
        let turn = |id: &str, speaker: &str, text: &str, date: &str| Turn {
            dia_id: id.into(),
            speaker: speaker.into(),
            text: text.into(),
            caption: None,
            date: date.into(),
        };
        let conv = Conversation {
            name: "x".into(),
            turns: vec![
                turn("D1:1", "Ann", "Do you run?", "1 May"),
                turn("D1:2", "Bob", "Yes, every Sunday!", "1 May"),
                turn("D1:3", "Ann", "How far?", "1 May"),
                turn("D2:1", "Bob", "Hi again", "9 May"),
            ],
            qa: vec![Qa {
                question: "Does Bob run?".into(),
                evidence: vec!["D1:2".into()],
                category: 4,
            }],
        };
        assert_eq!(with_context(&conv, 0, 2), "Ann (1 May): Do you run?");
        assert_eq!(
            with_context(&conv, 2, 2),
            "Ann (1 May): How far?\n(replying to: Yes, every Sunday!)\n(replying to: Do you run?)"
        );
        assert_eq!(
            with_context(&conv, 2, 1),
            "Ann (1 May): How far?\n(replying to: Yes, every Sunday!)"
        );
        assert_eq!(with_context(&conv, 3, 2), "Bob (9 May): Hi again");
        // A miss report names the question, its evidence and what came first.
        let evidence = ["D1:2"];
        let report = miss_report(&conv, "bm25", &conv.qa[0], &evidence, &[], &[]);
        assert!(report.starts_with("## bm25 x: Does Bob run? (category 4)\n"));
        assert!(report.contains("evidence D1:2 (rank -): Bob (1 May): Yes, every Sunday!"));
    }
}
