//! The in-process scheduler on tokio's paused clock: exact due times, no
//! sleeping, no jitter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use openvibe_protocols::{ScheduleError, ScheduleProvider, TriggerConfig, TriggerKind};
use openvibe_schedule::{Clock, InProcessScheduler, TokioClock};

fn at(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn trigger(id: &str, kind: TriggerKind, schedule: &str) -> TriggerConfig {
    TriggerConfig {
        id: id.into(),
        kind,
        schedule: Some(schedule.into()),
        workflow: "wf".into(),
        operator_id: Some("ops".into()),
        input: serde_json::json!({"lead": "x"}),
    }
}

fn scheduler_at(start: &str) -> (InProcessScheduler, TokioClock) {
    let clock = TokioClock::starting_at(at(start));
    (InProcessScheduler::with_clock(Arc::new(clock)), clock)
}

#[tokio::test(start_paused = true)]
async fn intervals_fire_on_time_every_period() {
    let (scheduler, clock) = scheduler_at("2026-11-25T00:00:00Z");
    let mut firings = scheduler.take_firings().unwrap();
    assert!(
        scheduler.take_firings().is_none(),
        "firings are handed out once"
    );
    let id = scheduler
        .schedule("cro", &trigger("tick", TriggerKind::Interval, "10m"))
        .await
        .unwrap();
    assert_eq!(id, "cro/tick#1");
    for n in 1..=3 {
        let firing = firings.next().await.unwrap();
        let due = at("2026-11-25T00:00:00Z") + chrono::Duration::minutes(10 * n);
        assert_eq!(firing.scheduled_at, due);
        assert!(
            firing.fired_at >= due && firing.fired_at - due < chrono::Duration::milliseconds(2)
        );
        assert_eq!(firing.schedule_id, id);
        assert_eq!(firing.role_id, "cro");
        assert_eq!(firing.trigger.input["lead"], "x");
    }
    assert!(clock.now() >= at("2026-11-25T00:30:00Z"));
    let active = scheduler.list_active("cro").await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].next_run, Some(at("2026-11-25T00:40:00Z")));
    assert!(scheduler.list_active("cfo").await.unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_schedule_never_fires_again() {
    let (scheduler, _clock) = scheduler_at("2026-11-25T00:00:00Z");
    let mut firings = scheduler.take_firings().unwrap();
    let keep = scheduler
        .schedule("cro", &trigger("keep", TriggerKind::Interval, "1h"))
        .await
        .unwrap();
    let stop = scheduler
        .schedule("cro", &trigger("stop", TriggerKind::Interval, "25m"))
        .await
        .unwrap();
    assert_eq!(firings.next().await.unwrap().schedule_id, stop);
    scheduler.cancel(&stop).await.unwrap();
    assert!(matches!(
        scheduler.cancel(&stop).await,
        Err(ScheduleError::UnknownSchedule(id)) if id == stop
    ));
    // Over the next five hours only `keep` fires.
    for _ in 0..5 {
        assert_eq!(firings.next().await.unwrap().schedule_id, keep);
    }
    scheduler.cancel_all();
    assert!(scheduler.is_empty());
    assert!(
        tokio::time::timeout(Duration::from_secs(24 * 3600), firings.next())
            .await
            .is_err(),
        "nothing fires after cancel_all"
    );
}

#[tokio::test(start_paused = true)]
async fn cron_follows_its_time_zone_across_daylight_saving() {
    // Berlin moves its clocks forward on Sunday 29 March 2026.
    let (scheduler, _clock) = scheduler_at("2026-03-27T12:00:00Z");
    let mut firings = scheduler.take_firings().unwrap();
    scheduler
        .schedule(
            "cro",
            &trigger(
                "standup",
                TriggerKind::Cron,
                "CRON_TZ=Europe/Berlin 0 9 * * *",
            ),
        )
        .await
        .unwrap();
    let mut due = Vec::new();
    for _ in 0..4 {
        due.push(firings.next().await.unwrap().scheduled_at);
    }
    assert_eq!(
        due,
        [
            at("2026-03-28T08:00:00Z"),
            at("2026-03-29T07:00:00Z"),
            at("2026-03-30T07:00:00Z"),
            at("2026-03-31T07:00:00Z"),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn bad_triggers_are_refused_and_schedule_nothing() {
    let (scheduler, _clock) = scheduler_at("2026-11-25T00:00:00Z");
    for (kind, schedule) in [
        (TriggerKind::Cron, "not cron"),
        (TriggerKind::Interval, "0s"),
        (TriggerKind::Event, "lead.created"),
    ] {
        let err = scheduler
            .schedule("cro", &trigger("bad", kind, schedule))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ScheduleError::InvalidTrigger { ref trigger_id, .. } if trigger_id == "bad"),
            "{err}"
        );
    }
    assert!(scheduler.is_empty());
}

#[tokio::test(start_paused = true)]
async fn dropping_the_scheduler_stops_every_schedule() {
    let (scheduler, _clock) = scheduler_at("2026-11-25T00:00:00Z");
    let mut firings = scheduler.take_firings().unwrap();
    scheduler
        .schedule("cro", &trigger("tick", TriggerKind::Interval, "1s"))
        .await
        .unwrap();
    assert!(firings.next().await.is_some());
    drop(scheduler);
    // Whatever was already queued drains, then the source ends.
    let drained = tokio::time::timeout(Duration::from_secs(60), async {
        while firings.next().await.is_some() {}
    })
    .await;
    assert!(
        drained.is_ok(),
        "the firings end once the scheduler is gone"
    );
}

#[tokio::test]
async fn on_the_system_clock_a_short_interval_fires_promptly() {
    let scheduler = InProcessScheduler::new();
    let mut firings = scheduler.take_firings().unwrap();
    scheduler
        .schedule("cro", &trigger("fast", TriggerKind::Interval, "20ms"))
        .await
        .unwrap();
    let firing = tokio::time::timeout(Duration::from_secs(5), firings.next())
        .await
        .unwrap()
        .unwrap();
    assert!(firing.fired_at >= firing.scheduled_at);
}
