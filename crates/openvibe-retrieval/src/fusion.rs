//! Reciprocal rank fusion of several retrievers' lists, and the tie order
//! every backend breaks ties with.

use openvibe_protocols::{Retriever, RetrieverScore};

/// The best `limit` of `(key, score)`, highest score first, ties by key.
pub fn top_by_score<K: Ord>(mut scored: Vec<(K, f32)>, limit: usize) -> Vec<(K, f32)> {
    let order = |a: &(K, f32), b: &(K, f32)| {
        b.1.partial_cmp(&a.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    };
    if limit == 0 {
        return Vec::new();
    }
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, order);
        scored.truncate(limit);
    }
    scored.sort_by(order);
    scored
}

/// How [`fuse`] weighs the retrievers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The RRF constant: larger flattens the difference between ranks.
    pub k: f64,
    /// Weight of the full-text list.
    pub full_text: f64,
    /// Weight of the vector list.
    pub vector: f64,
    /// How many candidates the full-text list contributes, per result asked
    /// for (at least [`Fusion::MIN_CANDIDATES`]).
    pub depth: usize,
    /// How many candidates the vector list contributes, per result asked
    /// for (at least [`Fusion::MIN_VECTOR_CANDIDATES`]). Fewer than the
    /// full text's: at half the weight, for ten results a vector rank past
    /// the thirtieth scores below every full-text rank of the first fifty,
    /// so it can only nudge a record the full text found too; and on
    /// PostgreSQL the HNSW search costs in proportion to the list
    /// (docs/retrieval.md).
    pub vector_depth: usize,
}

impl Fusion {
    /// The fewest candidates the full-text list contributes.
    pub const MIN_CANDIDATES: usize = 50;
    /// The fewest candidates the vector list contributes.
    pub const MIN_VECTOR_CANDIDATES: usize = 30;

    /// How many candidates the full-text list contributes for `top_k`
    /// results.
    pub fn candidates(&self, top_k: usize) -> usize {
        top_k.saturating_mul(self.depth).max(Self::MIN_CANDIDATES)
    }

    /// How many candidates the vector list contributes for `top_k` results.
    pub fn vector_candidates(&self, top_k: usize) -> usize {
        top_k
            .saturating_mul(self.vector_depth)
            .max(Self::MIN_VECTOR_CANDIDATES)
    }

    fn weight(&self, retriever: Retriever) -> f64 {
        match retriever {
            Retriever::FullText => self.full_text,
            // The vector list (and a later retriever, until it is given a weight).
            _ => self.vector,
        }
    }
}

/// The fusion every backend uses (measured on LoCoMo, see `docs/retrieval.md`).
pub const FUSION: Fusion = Fusion {
    k: 5.0,
    full_text: 1.0,
    vector: 0.5,
    depth: 5,
    vector_depth: 3,
};

/// How backends identify ranked documents: ties of score go to the newest
/// (`created_at` descending), then to the smallest id.
pub type RankKey = (std::cmp::Reverse<chrono::DateTime<chrono::Utc>>, String);

/// The [`RankKey`] of a record created at `created_at` with id `id`.
pub fn rank_key(created_at: chrono::DateTime<chrono::Utc>, id: &str) -> RankKey {
    (std::cmp::Reverse(created_at), id.to_owned())
}

/// A fused result: its key, fused score and what each retriever said.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<K> {
    /// The record's key.
    pub id: K,
    /// The fused score (higher is better).
    pub score: f32,
    /// Each retriever that found it, in [`Retriever`] order.
    pub retrievers: Vec<RetrieverScore>,
}

/// Fuse ranked lists (each best first) by weighted reciprocal rank; the
/// best `limit`, highest fused score first, ties by key.
pub fn fuse<K: Ord + Clone>(
    fusion: &Fusion,
    lists: &[(Retriever, Vec<(K, f32)>)],
    limit: usize,
) -> Vec<Fused<K>> {
    let mut by_id: std::collections::BTreeMap<&K, Fused<K>> = std::collections::BTreeMap::new();
    for (retriever, list) in lists {
        for (i, (id, score)) in list.iter().enumerate() {
            let rank = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let entry = by_id.entry(id).or_insert_with(|| Fused {
                id: id.clone(),
                score: 0.0,
                retrievers: Vec::new(),
            });
            entry.score += (fusion.weight(*retriever) / (fusion.k + f64::from(rank))) as f32;
            entry.retrievers.push(RetrieverScore {
                retriever: *retriever,
                rank,
                score: *score,
            });
        }
    }
    let mut fused: Vec<Fused<K>> = by_id.into_values().collect();
    for f in &mut fused {
        f.retrievers.sort_by_key(|r| r.retriever);
    }
    fused.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.id.cmp(&b.id))
    });
    fused.truncate(limit);
    fused
}

/// The final ranking of a query's retriever lists: one list keeps its
/// own scores (cut to `limit`), several are [`fuse`]d with [`FUSION`].
pub fn combine<K: Ord + Clone>(
    lists: Vec<(Retriever, Vec<(K, f32)>)>,
    limit: usize,
) -> Vec<Fused<K>> {
    if lists.len() == 1 {
        let (retriever, mut list) = lists
            .into_iter()
            .next()
            .unwrap_or((Retriever::Vector, Vec::new()));
        list.truncate(limit);
        single(retriever, list)
    } else {
        fuse(&FUSION, &lists, limit)
    }
}

/// A single retriever's list as fused results (scores and ranks kept).
pub fn single<K>(retriever: Retriever, list: Vec<(K, f32)>) -> Vec<Fused<K>> {
    list.into_iter()
        .enumerate()
        .map(|(i, (id, score))| Fused {
            id,
            score,
            retrievers: vec![RetrieverScore {
                retriever,
                rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
                score,
            }],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement_and_keeps_sources() {
        let lists = vec![
            (
                Retriever::FullText,
                vec![("x".to_owned(), 9.0), ("y".to_owned(), 5.0)],
            ),
            (
                Retriever::Vector,
                vec![("y".to_owned(), 0.9), ("z".to_owned(), 0.8)],
            ),
        ];
        let fused = fuse(&FUSION, &lists, 10);
        assert_eq!(fused[0].id, "y", "found by both: {fused:?}");
        assert_eq!(fused[0].retrievers.len(), 2);
        assert_eq!(fused[0].retrievers[0].retriever, Retriever::FullText);
        assert_eq!(fused[0].retrievers[0].rank, 2);
        // x and z tie on rank 1 of one list... x is rank 1, z rank 2.
        assert_eq!(fused[1].id, "x");
        assert_eq!(fuse(&FUSION, &lists, 1).len(), 1);
        let one = single(Retriever::Vector, vec![("a", 0.5)]);
        assert_eq!(one[0].retrievers[0].rank, 1);
        assert_eq!(FUSION.candidates(1), Fusion::MIN_CANDIDATES);
        assert_eq!(FUSION.candidates(100), 500);
        assert_eq!(FUSION.vector_candidates(1), Fusion::MIN_VECTOR_CANDIDATES);
        assert_eq!(FUSION.vector_candidates(100), 300);
    }
}
