//! When a loop fires: every N seconds, on a cron expression (croner, the
//! daemon's local time), or once at a time. After a failed firing the next
//! one waits longer each time (doubling from `loop_backoff_base_s`, at
//! most an hour, never less than the interval). A loop whose time passed
//! while the daemon was down or the machine slept fires once, and its next
//! time counts from that firing: one catch-up, never a burst.

use chrono::{DateTime, Local, Utc};
use std::str::FromStr;
use std::time::Duration;
use swival_protocol::Schedule;

/// The longest interval (Swival's ceiling); a cron expression goes further.
pub const MAX_EVERY_S: u64 = 24 * 60 * 60;

/// The longest wait after failures.
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// A schedule, checked.
#[derive(Debug, Clone)]
pub enum When {
    /// Every this long.
    Every(Duration),
    /// On this cron expression.
    Cron(Box<croner::Cron>),
    /// Once, at this time.
    At(DateTime<Utc>),
}

impl When {
    /// `schedule` checked: exactly one of its three, an interval between
    /// `min_every` and a day, a cron expression that parses, a time that
    /// reads (RFC 3339, or `HH:MM` for the next such time here).
    pub fn parse(schedule: &Schedule, min_every: Duration, now: DateTime<Utc>) -> Result<When, String> {
        match (schedule.every_s, &schedule.cron, &schedule.at) {
            (Some(s), None, None) => {
                let every = Duration::from_secs(s);
                if every < min_every {
                    return Err(format!(
                        "every {s}s is below the floor of {}s (loop_min_interval_s in swivald.toml); loop less often",
                        min_every.as_secs()
                    ));
                }
                if s > MAX_EVERY_S {
                    return Err(format!(
                        "every {s}s exceeds the 24h ceiling; use a cron expression for longer periods"
                    ));
                }
                Ok(When::Every(every))
            }
            (None, Some(expr), None) => croner::Cron::from_str(expr).map(|c| When::Cron(Box::new(c))).map_err(|e| {
                format!("the cron expression {expr:?} does not read ({e}); write five fields, e.g. \"*/30 * * * *\"")
            }),
            (None, None, Some(at)) => {
                let time = at_time(at, now)?;
                if time <= now {
                    return Err(format!("{at} has passed; give a time to come"));
                }
                Ok(When::At(time))
            }
            _ => Err("a loop's schedule takes exactly one of every_s, cron and at".into()),
        }
    }

    /// The first firing of a loop added at `now`: at once for an
    /// interval (Swival fires a loop as it registers it).
    pub fn first(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            When::Every(_) => Some(now),
            When::Cron(c) => next_cron(c, now),
            When::At(t) => Some(*t),
        }
    }

    /// The next firing after one that ended at `now`, `failures` failed
    /// firings in a row (0: it went well); `None`: it fires no more.
    pub fn after(&self, now: DateTime<Utc>, failures: u64, backoff_base: Duration) -> Option<DateTime<Utc>> {
        let backoff = backoff(failures, backoff_base);
        match self {
            When::Every(d) => Some(now + (*d).max(backoff)),
            When::Cron(c) => next_cron(c, now + backoff),
            When::At(_) => None,
        }
    }
}

/// The wait after `failures` failed firings in a row.
fn backoff(failures: u64, base: Duration) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let doubled = base.saturating_mul(1u32 << failures.saturating_sub(1).min(20));
    doubled.min(MAX_BACKOFF)
}

fn next_cron(c: &croner::Cron, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let local = after.with_timezone(&Local);
    c.find_next_occurrence(&local, false).ok().map(|t| t.with_timezone(&Utc))
}

/// `at` as a time: RFC 3339, or `HH:MM[:SS]` for its next coming here.
fn at_time(at: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(at) {
        return Ok(t.with_timezone(&Utc));
    }
    let clock = chrono::NaiveTime::parse_from_str(at, "%H:%M")
        .or_else(|_| chrono::NaiveTime::parse_from_str(at, "%H:%M:%S"))
        .map_err(|_| format!("{at:?} is not a time: write RFC 3339 (2026-11-29T08:00:00Z) or HH:MM"))?;
    let here = now.with_timezone(&Local);
    let today = here.date_naive().and_time(clock);
    let pick = |day: chrono::NaiveDateTime| day.and_local_timezone(Local).earliest().map(|t| t.with_timezone(&Utc));
    match pick(today).filter(|t| *t > now) {
        Some(t) => Ok(t),
        None => pick(today + chrono::Days::new(1)).ok_or_else(|| format!("{at} does not exist here tomorrow")),
    }
}

/// `t` as stored (RFC 3339, UTC, milliseconds).
pub fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A stored time, read back.
pub fn read(stamp: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(stamp).ok().map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every(s: u64) -> Schedule {
        Schedule { every_s: Some(s), cron: None, at: None }
    }

    #[test]
    fn an_interval_fires_an_interval_from_now_and_waits_longer_after_failures() {
        let now = Utc::now();
        let w = When::parse(&every(60), Duration::from_secs(5), now).unwrap();
        assert_eq!(w.first(now), Some(now), "at once, as Swival fires a loop it registers");
        let base = Duration::from_secs(30);
        assert_eq!(w.after(now, 0, base), Some(now + Duration::from_secs(60)), "the interval when it went well");
        assert_eq!(w.after(now, 2, base), Some(now + Duration::from_secs(60)), "30, then 60: not below the interval");
        assert_eq!(w.after(now, 3, base), Some(now + Duration::from_secs(120)));
        assert_eq!(w.after(now, 30, base), Some(now + Duration::from_secs(3600)), "an hour at most");
    }

    #[test]
    fn bad_schedules_are_refused_saying_what_to_do() {
        let now = Utc::now();
        let floor = Duration::from_secs(5);
        assert!(When::parse(&every(2), floor, now).unwrap_err().contains("loop_min_interval_s"));
        assert!(When::parse(&every(MAX_EVERY_S + 1), floor, now).unwrap_err().contains("24h ceiling"));
        let both = Schedule { every_s: Some(60), cron: Some("* * * * *".into()), at: None };
        assert!(When::parse(&both, floor, now).unwrap_err().contains("exactly one"));
        let cron = Schedule { every_s: None, cron: Some("every day".into()), at: None };
        assert!(When::parse(&cron, floor, now).unwrap_err().contains("five fields"));
        let past = Schedule { every_s: None, cron: None, at: Some("2001-01-01T00:00:00Z".into()) };
        assert!(When::parse(&past, floor, now).unwrap_err().contains("has passed"));
    }

    #[test]
    fn a_cron_expression_and_a_clock_time_give_the_next_such_time() {
        let now = Utc::now();
        let cron = Schedule { every_s: None, cron: Some("*/15 * * * *".into()), at: None };
        let w = When::parse(&cron, Duration::from_secs(5), now).unwrap();
        let next = w.first(now).unwrap();
        assert!(next > now && next <= now + Duration::from_secs(15 * 60), "{next} after {now}");
        let at = Schedule { every_s: None, cron: None, at: Some("03:00".into()) };
        let t = When::parse(&at, Duration::from_secs(5), now).unwrap().first(now).unwrap();
        assert!(t > now && t <= now + Duration::from_secs(86_400), "{t}");
        assert_eq!(When::parse(&at, Duration::from_secs(5), now).unwrap().after(now, 0, Duration::ZERO), None);
    }
}
