//! Measurement helpers shared by the benchmark groups.
//!
//! Figures are printed as `BENCH <name> <value> <unit>`, one per line, which
//! is the format `cargo xtask bench` promises.

use std::time::{Duration, Instant};

/// The database a PostgreSQL group of benchmarks runs against
/// (`DATABASE_URL`, which `cargo xtask bench` provides), or `None` after
/// saying that `group` is skipped.
pub fn database_url(group: &str) -> Option<String> {
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    if url.is_none() {
        eprintln!(
            "{group}: skipped: DATABASE_URL is not set (run `cargo xtask bench {group}`, which provides it)"
        );
    }
    url
}

/// Print one figure in the `BENCH <name> <value> <unit>` format.
pub fn report(name: &str, value: f64, unit: &str) {
    println!("BENCH {name} {value:.3} {unit}");
}

/// Per-operation timings collected by [`sample`].
#[derive(Debug, Clone)]
pub struct Samples {
    nanos: Vec<u64>,
}

impl Samples {
    /// The `q`-quantile (0.0..=1.0) in microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.nanos.is_empty() {
            return 0.0;
        }
        let mut sorted = self.nanos.clone();
        sorted.sort_unstable();
        let last = sorted.len() - 1;
        let idx = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
        sorted.get(idx.min(last)).copied().unwrap_or_default() as f64 / 1_000.0
    }

    /// Mean in microseconds.
    pub fn mean_us(&self) -> f64 {
        if self.nanos.is_empty() {
            return 0.0;
        }
        self.nanos.iter().sum::<u64>() as f64 / self.nanos.len() as f64 / 1_000.0
    }
}

/// Time `op` individually `iterations` times (after `warmup` untimed runs).
pub async fn sample<F, Fut>(warmup: usize, iterations: usize, mut op: F) -> Samples
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..warmup {
        op().await;
    }
    let mut nanos = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        op().await;
        nanos.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    Samples { nanos }
}

/// Mean time of one operation when `batch` operations run back to back,
/// best of `rounds` rounds (for operations too fast to time one by one).
pub async fn mean_of_batches<F, Fut>(rounds: usize, batch: usize, mut op: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut best = Duration::MAX;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        for _ in 0..batch.max(1) {
            op().await;
        }
        let per_op = start.elapsed() / u32::try_from(batch.max(1)).unwrap_or(u32::MAX);
        best = best.min(per_op);
    }
    best
}
