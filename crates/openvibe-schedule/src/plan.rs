//! When a trigger is due: its cron expression (in its time zone) or its
//! period, read once when it is scheduled.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;
use openvibe_protocols::{ScheduleError, TriggerConfig, TriggerKind};

/// The shortest period an interval trigger may have.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// A trigger's timetable.
#[derive(Debug, Clone)]
pub enum Plan {
    /// A cron expression read in a time zone.
    Cron {
        /// The parsed expression.
        cron: Box<Cron>,
        /// Where its hours and days are counted.
        zone: Tz,
    },
    /// Every `period`, counted from `anchor` (when it was scheduled).
    Interval {
        /// How often.
        period: Duration,
        /// The first period starts here.
        anchor: DateTime<Utc>,
    },
}

impl Plan {
    /// Read `trigger`'s timetable; `now` anchors an interval. A trigger
    /// that is not timed, has no schedule, or whose schedule does not parse
    /// is an [`ScheduleError::InvalidTrigger`] that says why.
    pub fn of(trigger: &TriggerConfig, now: DateTime<Utc>) -> Result<Self, ScheduleError> {
        let invalid = |reason: String| ScheduleError::InvalidTrigger {
            trigger_id: trigger.id.clone(),
            reason,
        };
        let schedule = trigger
            .schedule
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match trigger.kind {
            TriggerKind::Cron => {
                let schedule =
                    schedule.ok_or_else(|| invalid("a cron trigger needs a schedule".into()))?;
                let (zone, expression) = split_zone(schedule).map_err(invalid)?;
                let cron = Cron::from_str(expression).map_err(|e| {
                    invalid(format!("`{expression}` is not a cron expression: {e}"))
                })?;
                Ok(Self::Cron {
                    cron: Box::new(cron),
                    zone,
                })
            }
            TriggerKind::Interval => {
                let schedule = schedule.ok_or_else(|| {
                    invalid("an interval trigger needs a schedule (a period such as `5m`)".into())
                })?;
                let period = humantime::parse_duration(schedule).map_err(|e| {
                    invalid(format!(
                        "`{schedule}` is not a period such as `30s` or `1h 30m`: {e}"
                    ))
                })?;
                if period < MIN_INTERVAL {
                    return Err(invalid(format!(
                        "the period `{schedule}` is shorter than {} ms",
                        MIN_INTERVAL.as_millis()
                    )));
                }
                if chrono::Duration::from_std(period).is_err() {
                    return Err(invalid(format!("the period `{schedule}` is too long")));
                }
                Ok(Self::Interval {
                    period,
                    anchor: now,
                })
            }
            other => Err(invalid(format!(
                "a {other:?} trigger is started by whoever receives it (activate()), not by the clock"
            ))),
        }
    }

    /// The first time this plan is due strictly after `after`; `None` when
    /// it never is again (a cron expression bound to past years).
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Self::Cron { cron, zone } => cron
                .find_next_occurrence(&after.with_timezone(zone), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
            Self::Interval { period, anchor } => {
                let period_ns = i64::try_from(period.as_nanos()).ok()?.max(1);
                let elapsed_ns = (after - *anchor).num_nanoseconds().unwrap_or(i64::MAX);
                let periods = if elapsed_ns < 0 {
                    0
                } else {
                    elapsed_ns / period_ns + 1
                };
                let offset = periods.checked_mul(period_ns)?;
                anchor.checked_add_signed(chrono::Duration::nanoseconds(offset))
            }
        }
    }
}

/// `CRON_TZ=Europe/Berlin 0 9 * * *` (or `TZ=…`): the zone and the
/// expression; without a prefix, UTC. An unknown zone, or a zone without
/// an expression, is an error saying so.
pub fn split_zone(schedule: &str) -> Result<(Tz, &str), String> {
    let Some(rest) = schedule
        .strip_prefix("CRON_TZ=")
        .or_else(|| schedule.strip_prefix("TZ="))
    else {
        return Ok((Tz::UTC, schedule));
    };
    let (name, expression) = rest
        .split_once(char::is_whitespace)
        .ok_or_else(|| format!("`{schedule}` names a time zone but no cron expression"))?;
    let zone = Tz::from_str(name).map_err(|_| {
        format!("`{name}` is not a time zone of the IANA database (e.g. `Europe/Berlin`)")
    })?;
    Ok((zone, expression.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn trigger(kind: TriggerKind, schedule: Option<&str>) -> TriggerConfig {
        TriggerConfig {
            id: "t".into(),
            kind,
            schedule: schedule.map(str::to_owned),
            workflow: "w".into(),
            operator_id: None,
            input: serde_json::Value::Null,
        }
    }

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    fn reason(result: Result<Plan, ScheduleError>) -> String {
        match result {
            Err(ScheduleError::InvalidTrigger { trigger_id, reason }) => {
                assert_eq!(trigger_id, "t");
                reason
            }
            other => panic!("expected an invalid trigger, got {other:?}"),
        }
    }

    #[test]
    fn cron_is_read_in_utc_or_the_named_zone() {
        let now = at(2026, 11, 25, 8, 30, 0);
        let utc = Plan::of(&trigger(TriggerKind::Cron, Some("0 9 * * *")), now).unwrap();
        assert_eq!(utc.next_after(now), Some(at(2026, 11, 25, 9, 0, 0)));
        // 09:00 in Berlin is 08:00 UTC in winter: already past, so tomorrow.
        let berlin = Plan::of(
            &trigger(TriggerKind::Cron, Some("CRON_TZ=Europe/Berlin 0 9 * * *")),
            now,
        )
        .unwrap();
        assert_eq!(berlin.next_after(now), Some(at(2026, 11, 26, 8, 0, 0)));
        // ... and 07:00 UTC in summer.
        assert_eq!(
            berlin.next_after(at(2026, 7, 1, 12, 0, 0)),
            Some(at(2026, 7, 2, 7, 0, 0))
        );
        let ny = Plan::of(
            &trigger(TriggerKind::Cron, Some("TZ=America/New_York 30 17 * * 1-5")),
            now,
        )
        .unwrap();
        // Wednesday 25 November 2026, 17:30 EST = 22:30 UTC.
        assert_eq!(ny.next_after(now), Some(at(2026, 11, 25, 22, 30, 0)));
        // Six fields: seconds first.
        let seconds = Plan::of(&trigger(TriggerKind::Cron, Some("*/15 * * * * *")), now).unwrap();
        assert_eq!(seconds.next_after(now), Some(at(2026, 11, 25, 8, 30, 15)));
        // Strictly after: a due time is not due again.
        assert_eq!(
            utc.next_after(at(2026, 11, 25, 9, 0, 0)),
            Some(at(2026, 11, 26, 9, 0, 0))
        );
    }

    #[test]
    fn intervals_count_from_their_anchor_and_skip_what_was_missed() {
        let anchor = at(2026, 11, 25, 0, 0, 0);
        let plan = Plan::of(&trigger(TriggerKind::Interval, Some("90s")), anchor).unwrap();
        assert_eq!(plan.next_after(anchor), Some(at(2026, 11, 25, 0, 1, 30)));
        assert_eq!(
            plan.next_after(at(2026, 11, 25, 0, 1, 30)),
            Some(at(2026, 11, 25, 0, 3, 0))
        );
        // Far behind: the next one on the grid, not a burst of the missed ones.
        assert_eq!(
            plan.next_after(at(2026, 11, 25, 1, 0, 10)),
            Some(at(2026, 11, 25, 1, 1, 30))
        );
        let compound = Plan::of(&trigger(TriggerKind::Interval, Some("1h 30m")), anchor).unwrap();
        assert_eq!(
            compound.next_after(anchor),
            Some(at(2026, 11, 25, 1, 30, 0))
        );
    }

    #[test]
    fn bad_schedules_are_refused_with_the_reason() {
        let now = at(2026, 11, 25, 0, 0, 0);
        let cases = [
            (trigger(TriggerKind::Cron, None), "needs a schedule"),
            (trigger(TriggerKind::Cron, Some("  ")), "needs a schedule"),
            (
                trigger(TriggerKind::Cron, Some("61 * * * *")),
                "is not a cron expression",
            ),
            (
                trigger(TriggerKind::Cron, Some("every day")),
                "is not a cron expression",
            ),
            (
                trigger(TriggerKind::Cron, Some("CRON_TZ=Mars/Olympus 0 9 * * *")),
                "is not a time zone",
            ),
            (
                trigger(TriggerKind::Cron, Some("CRON_TZ=Europe/Berlin")),
                "no cron expression",
            ),
            (trigger(TriggerKind::Interval, None), "needs a schedule"),
            (
                trigger(TriggerKind::Interval, Some("soon")),
                "is not a period",
            ),
            (
                trigger(TriggerKind::Interval, Some("1ms")),
                "shorter than 10 ms",
            ),
            (
                trigger(TriggerKind::Interval, Some("0s")),
                "shorter than 10 ms",
            ),
            (
                trigger(TriggerKind::Event, Some("lead.created")),
                "not by the clock",
            ),
            (trigger(TriggerKind::OnDemand, None), "not by the clock"),
            (trigger(TriggerKind::Webhook, None), "not by the clock"),
        ];
        for (t, expected) in cases {
            let got = reason(Plan::of(&t, now));
            assert!(got.contains(expected), "{:?}: {got}", t.schedule);
        }
    }
}
