//! # openvibe-retrieval — the ranking every memory backend shares
//!
//! Ranked retrieval, defined once for every backend: the text analyzer,
//! BM25 scoring, query expansion, and reciprocal rank fusion of several
//! retrievers' lists, over the contract's plain types
//! ([`Retriever`](openvibe_protocols::Retriever),
//! [`RetrieverScore`](openvibe_protocols::RetrieverScore),
//! [`KnowledgeSearch`](openvibe_protocols::KnowledgeSearch)).
//!
//! Backends find candidates their own way (an inverted index in memory, a
//! postings table in Postgres, HNSW for vectors) but score and fuse them with
//! the functions here, so the same data and query rank the same on every
//! backend.
//!
//! - **Analyzer** ([`analyze`]): lowercase runs of alphanumerics, English
//!   stop words dropped, each word reduced to its Snowball (Porter 2) stem,
//!   so that "researching" finds "research"; a calendar date adds a day
//!   and a month term (`d20230707`, `m202307`), so a question naming a
//!   day finds what was said that day whichever way it was written, and
//!   relative dates ("last Friday") resolved against the first day a text
//!   names add the terms of the day, ISO week or month they mean.
//! - **BM25** ([`Bm25`]): the Robertson–Spärck Jones weight with `k1 = 1.2`,
//!   `b = 0.75`. Collection statistics (document count, mean length) are the
//!   tenant's; document frequencies count only the documents the caller
//!   may read and the query's filters keep.
//! - **Expansion** ([`Expansion`]): pseudo-relevance feedback adds the
//!   first round's most characteristic terms to the query (idf counted
//!   among the first round's best 100: [`Expansion::select_from`]).
//! - **Fusion** ([`fuse`]): weighted reciprocal rank fusion,
//!   `score = Σ weight / (k + rank)` ([`FUSION`]: `k = 5`, full text 1,
//!   vector 0.5), ties broken by [`RankKey`].
//! - **Knowledge queries** ([`knowledge_search`]): a query resolved for
//!   running (its terms, vector, list depths and filters), the prologue of
//!   every backend's `query_knowledge`.
//! - **Vectors** ([`VectorGraph`]): unit vectors in one matrix and an HNSW
//!   graph over them, searched with the caller's access rule inside the
//!   walk, falling back to the exact scan ([`VectorSearch`]) when the walk
//!   finds fewer than asked for.
//! - **Documents in hand** ([`rank_candidates`]): the same retrievers over a
//!   bounded set, for the memory assembler.
//!
//! `docs/retrieval.md` has the measurements behind each constant.
//!
//! ```
//! use openvibe_retrieval::{analyze, query_terms};
//! assert_eq!(analyze("Hiked on July 7, 2023"), ["hike", "juli", "7", "2023", "d20230707", "m202307"]);
//! assert_eq!(query_terms("run runs ran"), ["run", "ran"]);
//! ```

mod analyzer;
mod bm25;
mod candidates;
mod dates;
mod expansion;
mod fusion;
mod hnsw;
mod knowledge;
mod vector;
mod words;

pub use analyzer::{MAX_TERM_LEN, TermCounts, analyze, query_terms};
pub use bm25::{BM25, Bm25, Bm25Doc, CorpusStats, bm25_rank, bm25_rank_weighted};
pub use candidates::{Candidate, TermCache, rank_candidates, rank_candidates_with};
pub use expansion::{EXPANSION, Expansion};
pub use fusion::{FUSION, Fused, Fusion, RankKey, combine, fuse, rank_key, single, top_by_score};
pub use hnsw::{Node as VectorNode, VectorGraph, VectorSearch};
pub use knowledge::knowledge_search;
pub use vector::{cosine, dot};

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
