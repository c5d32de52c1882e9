//! Vector similarity.

/// Cosine similarity of two vectors of the same length (0 when either is zero).
///
/// Accumulates in eight independent lanes so that the compiler can keep
/// them in SIMD registers (a single running sum is a dependency chain it
/// may not reorder).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let (mut dot, mut na, mut nb) = ([0.0f32; LANES], [0.0f32; LANES], [0.0f32; LANES]);
    let chunks = a.len().min(b.len()) / LANES;
    for (ca, cb) in a
        .chunks_exact(LANES)
        .zip(b.chunks_exact(LANES))
        .take(chunks)
    {
        for i in 0..LANES {
            dot[i] += ca[i] * cb[i];
            na[i] += ca[i] * ca[i];
            nb[i] += cb[i] * cb[i];
        }
    }
    let (mut dot, mut na, mut nb) = (
        dot.iter().sum::<f32>(),
        na.iter().sum::<f32>(),
        nb.iter().sum::<f32>(),
    );
    for (x, y) in a.iter().zip(b).skip(chunks * LANES) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    let similarity = dot / (na.sqrt() * nb.sqrt());
    if similarity.is_finite() {
        similarity
    } else {
        // Values near `f32::MAX` overflow the single-precision sums: the
        // same in double precision, where they cannot.
        cosine_f64(a, b)
    }
}

/// The dot product of two vectors (over the shorter's length), in eight
/// independent lanes as [`cosine`]: the similarity of unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut sum = [0.0f32; LANES];
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    for (ca, cb) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
        for i in 0..LANES {
            sum[i] += ca[i] * cb[i];
        }
    }
    let tail = n / LANES * LANES;
    sum.iter().sum::<f32>()
        + a[tail..]
            .iter()
            .zip(&b[tail..])
            .map(|(x, y)| x * y)
            .sum::<f32>()
}

/// [`cosine`] accumulated in `f64` (the slow path for huge values).
fn cosine_f64(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        #[allow(clippy::cast_possible_truncation)]
        let similarity = (dot / (na.sqrt() * nb.sqrt())) as f32;
        similarity
    }
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn cosine_of_vectors() {
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 1.0]).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        // Huge values overflow single precision, not the answer.
        let huge = [3.0e38f32, -3.0e38, 1.0e38];
        assert!((cosine(&huge, &huge) - 1.0).abs() < 1e-6);
        assert!((cosine(&huge, &[-3.0e38, 3.0e38, -1.0e38]) + 1.0).abs() < 1e-6);
        // Lanes and remainder agree with the plain definition.
        let a: Vec<f32> = (0..387).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let b: Vec<f32> = (0..387).map(|i| ((i * 5) % 11) as f32 - 5.0).collect();
        let dot: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        assert!((f64::from(cosine(&a, &b)) - dot / (na * nb)).abs() < 1e-5);
    }
}
