//! A bounded load generator: `clients` concurrent callers running a mix of
//! fact writes and fact searches (a topic word within an account: a
//! selective search, as real ones are) against any [`Stores`] (the remote client
//! for a service), stopping after `requests` operations or `max_duration`,
//! whichever comes first. It reports throughput, latencies, errors, and
//! which writes were acknowledged, so a caller can check that every one
//! is in the database.
//!
//! ```no_run
//! # async fn run(stores: openvibe_protocols::Stores) {
//! use openvibe_remote::load::{LoadPlan, run};
//! let report = run(&stores, &LoadPlan::mixed(64, 10_000)).await;
//! println!("{:.0} ops/s, p99 {:.0} µs, {} errors", report.ops_per_s(), report.search_us(0.99), report.errors);
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use openvibe_protocols::{CallerContext, Fact, FactQuery, Stores};

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Concurrent callers.
    pub clients: usize,
    /// Operations in all (the run stops after this many).
    pub requests: usize,
    /// The run stops after this long, whatever is left.
    pub max_duration: Duration,
    /// The share of writes, 0.0..=1.0 (the rest are searches).
    pub write_share: f64,
    /// Who writes and searches.
    pub caller: CallerContext,
    /// Prefix of the written facts' ids (`<prefix>-<client>-<n>`).
    pub id_prefix: String,
    /// Offered load, operations per second across all clients (open loop):
    /// operation `t` is due `t / rate` seconds after the start, the next
    /// idle client sends it then, and its latency counts from when it was
    /// due (a late send counts as waiting). `None`: each client sends its
    /// next operation as soon as the last one answers (closed loop: the
    /// service saturated, so latency is mostly queueing, `clients /
    /// throughput`).
    pub rate: Option<f64>,
}

impl LoadPlan {
    /// Half writes, half searches, by `clients` callers, `requests` in all,
    /// at most 60 s.
    pub fn mixed(clients: usize, requests: usize) -> Self {
        Self {
            clients,
            requests,
            max_duration: Duration::from_secs(60),
            write_share: 0.5,
            caller: CallerContext::agent("load").with_tenant("load"),
            id_prefix: "load".into(),
            rate: None,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// The ids of the facts whose writes were acknowledged.
    pub written: Vec<String>,
    /// Searches that answered.
    pub searches: usize,
    /// Operations that failed.
    pub errors: usize,
    /// The first few errors.
    pub first_errors: Vec<String>,
    /// Wall time.
    pub elapsed: Duration,
    write_nanos: Vec<u64>,
    search_nanos: Vec<u64>,
}

impl LoadReport {
    /// Operations per second (acknowledged writes and answered searches).
    pub fn ops_per_s(&self) -> f64 {
        (self.written.len() + self.searches) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Acknowledged writes per second.
    pub fn writes_per_s(&self) -> f64 {
        self.written.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The `q`-quantile of search latency, in µs.
    pub fn search_us(&self, q: f64) -> f64 {
        quantile(&self.search_nanos, q)
    }

    /// The `q`-quantile of write latency, in µs.
    pub fn write_us(&self, q: f64) -> f64 {
        quantile(&self.write_nanos, q)
    }
}

fn quantile(nanos: &[u64], q: f64) -> f64 {
    if nanos.is_empty() {
        return 0.0;
    }
    let mut sorted = nanos.to_vec();
    sorted.sort_unstable();
    let last = sorted.len() - 1;
    let idx = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
    sorted[idx.min(last)] as f64 / 1_000.0
}

/// When ticket `t` is due at `rate` operations per second (`None`: no
/// schedule, or a rate that is not a positive number).
fn due(started: Instant, ticket: usize, rate: Option<f64>) -> Option<Instant> {
    let rate = rate.filter(|r| r.is_finite() && *r > 0.0)?;
    started.checked_add(Duration::try_from_secs_f64(ticket as f64 / rate).ok()?)
}

/// Run `plan` against `stores`.
pub async fn run(stores: &Stores, plan: &LoadPlan) -> LoadReport {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + plan.max_duration;
    let mut tasks = Vec::with_capacity(plan.clients);
    for client in 0..plan.clients.max(1) {
        let stores = stores.clone();
        let plan = plan.clone();
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut report = LoadReport::default();
            let mut n = 0usize;
            loop {
                let ticket = next.fetch_add(1, Ordering::Relaxed);
                if ticket >= plan.requests || Instant::now() >= deadline {
                    break;
                }
                // Deterministic mix: ticket t writes when its share says so.
                let write = ((ticket as f64 + 0.5) * plan.write_share).floor()
                    > ((ticket as f64 - 0.5) * plan.write_share).floor();
                let start = match due(started, ticket, plan.rate) {
                    Some(due) if due >= deadline => break,
                    Some(due) => {
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                    None => Instant::now(),
                };
                let outcome = if write {
                    let id = format!("{}-{client}-{n}", plan.id_prefix);
                    n += 1;
                    let fact = Fact::new(
                        id.clone(),
                        format!(
                            "renewal note {ticket}: topic{} for account {client}",
                            ticket % 97
                        ),
                    )
                    .entity(format!("account-{}", ticket % 100));
                    stores
                        .facts
                        .store(&plan.caller, fact)
                        .await
                        .map(|_| Some(id))
                } else {
                    // One topic word in 97, within one account in 100.
                    let query = FactQuery::default()
                        .text(format!("topic{}", ticket % 97))
                        .entity(format!("account-{}", ticket % 100))
                        .limit(10);
                    stores.facts.query(&plan.caller, &query).await.map(|_| None)
                };
                let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                match outcome {
                    Ok(Some(id)) => {
                        report.written.push(id);
                        report.write_nanos.push(nanos);
                    }
                    Ok(None) => {
                        report.searches += 1;
                        report.search_nanos.push(nanos);
                    }
                    Err(e) => {
                        report.errors += 1;
                        if report.first_errors.len() < 5 {
                            report.first_errors.push(e.to_string());
                        }
                    }
                }
            }
            report
        }));
    }
    let mut total = LoadReport::default();
    for task in tasks {
        match task.await {
            Ok(r) => {
                total.written.extend(r.written);
                total.searches += r.searches;
                total.errors += r.errors;
                total.first_errors.extend(r.first_errors);
                total.write_nanos.extend(r.write_nanos);
                total.search_nanos.extend(r.search_nanos);
            }
            Err(e) => {
                total.errors += 1;
                total
                    .first_errors
                    .push(format!("a client task failed: {e}"));
            }
        }
    }
    total.first_errors.truncate(5);
    total.elapsed = started.elapsed();
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_are_due_at_the_rate() {
        let t0 = Instant::now();
        assert_eq!(
            due(t0, 50, Some(100.0)),
            Some(t0 + Duration::from_millis(500))
        );
        assert_eq!(due(t0, 0, Some(100.0)), Some(t0));
        for rate in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            assert_eq!(due(t0, 7, rate), None, "{rate:?}");
        }
    }

    #[test]
    fn quantiles_pick_the_nearest_rank() {
        let nanos: Vec<u64> = (1..=100).map(|n| n * 1_000).collect();
        assert_eq!(quantile(&nanos, 0.5), 51.0);
        assert_eq!(quantile(&nanos, 0.99), 99.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
