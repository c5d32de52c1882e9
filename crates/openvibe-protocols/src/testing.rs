//! Test doubles (feature `testing`).

use async_trait::async_trait;

use crate::{EmbedError, Embedder, text_terms};

/// A deterministic **test** embedder — clearly not a model: each text's
/// terms ([`text_terms`]) are hashed (FNV-1a) into `dimensions` buckets with
/// a sign, and the vector is L2-normalised. Texts that share words are
/// near; texts that share none are orthogonal up to collisions. For tests
/// and benchmarks of the stores, never for retrieval quality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashEmbedder {
    dimensions: usize,
}

impl HashEmbedder {
    /// Its model id.
    pub const MODEL: &'static str = "openvibe-test-hash";

    /// An embedder of `dimensions` (at least 1).
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions: dimensions.max(1),
        }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dimensions];
        for term in text_terms(text) {
            let h = term.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            });
            let bucket = usize::try_from(h % self.dimensions as u64).unwrap_or(0);
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            if let Some(x) = v.get_mut(bucket) {
                *x += sign;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn model_id(&self) -> &str {
        Self::MODEL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectors are unit length: their dot product is their cosine.
    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_near_and_vectors_are_unit_length() {
        let e = HashEmbedder::new(64);
        let a = e.vector("Docker is a container platform");
        let b = e.vector("docker container images");
        let c = e.vector("Guido created Python");
        assert_eq!(a.len(), 64);
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(cosine(&a, &b) > cosine(&a, &c));
        assert_eq!(e.vector("same text"), e.vector("SAME text"));
        assert!(e.vector("").iter().all(|x| *x == 0.0));
    }
}
