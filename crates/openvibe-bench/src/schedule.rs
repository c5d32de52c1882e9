//! The in-process scheduler: how late 1,000 interval triggers fire.

use openvibe_bench::report;
use openvibe_protocols::{ScheduleProvider, TriggerConfig, TriggerKind};
use openvibe_schedule::InProcessScheduler;

const TRIGGERS: usize = 1_000;
const RUN_FOR: std::time::Duration = std::time::Duration::from_secs(6);

/// Run the group: 1,000 interval triggers with periods spread over
/// 500–999 ms on the system clock for six seconds; the lag of a firing is
/// when the runner received it minus when it was due.
pub async fn run() {
    let scheduler = InProcessScheduler::new();
    let Some(mut firings) = scheduler.take_firings() else {
        eprintln!("sched benchmark: the scheduler hands out no firings");
        return;
    };
    for i in 0..TRIGGERS {
        let trigger = TriggerConfig {
            id: format!("t{i}"),
            kind: TriggerKind::Interval,
            schedule: Some(format!("{}ms", 500 + i % 500)),
            workflow: "wf".into(),
            operator_id: Some("ops".into()),
            input: serde_json::Value::Null,
        };
        if let Err(e) = scheduler.schedule("bench", &trigger).await {
            eprintln!("sched benchmark: {e}");
            return;
        }
    }
    let mut lags_us: Vec<i64> = Vec::new();
    let deadline = tokio::time::Instant::now() + RUN_FOR;
    while let Ok(Some(firing)) = tokio::time::timeout_at(deadline, firings.next()).await {
        let lag = chrono::Utc::now() - firing.scheduled_at;
        lags_us.push(lag.num_microseconds().unwrap_or(i64::MAX));
    }
    scheduler.cancel_all();
    if lags_us.is_empty() {
        eprintln!("sched benchmark: nothing fired");
        return;
    }
    lags_us.sort_unstable();
    let at = |q: f64| {
        let idx = ((lags_us.len() - 1) as f64 * q).round() as usize;
        lags_us.get(idx).copied().unwrap_or_default() as f64 / 1_000.0
    };
    report("sched_firings", lags_us.len() as f64, "firings");
    report("sched_fire_lag_p50_ms", at(0.5), "ms");
    report("sched_fire_lag_p99_ms", at(0.99), "ms");
}
