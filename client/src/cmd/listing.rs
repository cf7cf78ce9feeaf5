//! Sessions as `swivalctl sessions` and the REPL's `/sessions` list them:
//! newest first by last use (the daemon's `last_used_at`: a session's
//! latest run's start, or its creation), optionally only one project's,
//! one line each with the time in local human form ("5 min ago",
//! "yesterday 14:02", an ISO date when older than a week), the project
//! and the title. Titles and paths are shown cleaned: a title is the
//! user's or the model's text.

use super::clean;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use swival_protocol::SessionInfo;

/// The project a listing is narrowed to: a directory whose sessions are
/// those whose base directory (or a worktree's checkout) is it or lies
/// beneath it.
pub fn project(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned())
}

/// `sessions`, those of `project` when given, newest first.
pub fn newest_first(mut sessions: Vec<SessionInfo>, project: Option<&Path>) -> Vec<SessionInfo> {
    if let Some(dir) = project {
        let within = |p: &str| Path::new(p).starts_with(dir);
        sessions.retain(|s| within(&s.base_dir) || s.worktree.as_ref().is_some_and(|w| within(&w.origin)));
    }
    // RFC 3339 UTC times of one width compare as text; the daemon's list
    // is oldest first, so the stable sort keeps ties newest first too.
    sessions.reverse();
    sessions.sort_by(|a, b| b.last_used_at.cmp(&a.last_used_at));
    sessions
}

/// One session's lines: id, when, state, runs, project and title; its
/// worktree and the run that spawned it below. `mark` starts the line
/// (the REPL marks its own session).
pub fn lines(s: &SessionInfo, mark: &str, now: SystemTime) -> String {
    let when = humantime::parse_rfc3339(&s.last_used_at).map_or_else(|_| s.last_used_at.clone(), |t| ago(t, now));
    let mut out = format!(
        "{mark}{}  {when:<16}  {:<7}  runs {:<3}  {}  {}\n",
        s.session_id,
        format!("{:?}", s.state).to_lowercase(),
        s.run_count,
        clean::text(&s.base_dir),
        clean::text(s.title.as_deref().unwrap_or("")),
    );
    if let Some(w) = &s.worktree {
        out.push_str(&format!("    worktree {} (branch {})\n", clean::text(&w.path), clean::text(&w.branch)));
    }
    if let Some(p) = &s.parent {
        out.push_str(&format!("    subagent {} of session {} (run {})\n", p.subagent_id, p.session_id, p.run_id));
    }
    out
}

/// `then` as a person reads it at `now`, in local time.
pub fn ago(then: SystemTime, now: SystemTime) -> String {
    let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs() as i64;
    match (local(secs(then)), local(secs(now))) {
        (Some(t), Some(n)) => when(&t, &n, secs(now) - secs(then)),
        _ => humantime::format_rfc3339_seconds(then).to_string(),
    }
}

/// A moment in local time.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Local {
    /// Days since 1970-01-01 in local time.
    day: i64,
    /// Year, month (1–12), day of the month.
    date: (i32, u32, u32),
    /// Day of the week, 0 = Sunday.
    weekday: u32,
    /// Hour and minute.
    time: (u32, u32),
}

/// `secs` since the epoch in the local time zone (`TZ`, or the system's).
fn local(secs: i64) -> Option<Local> {
    let t = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `localtime_r` writes only into `tm`, which lives here, and
    // reads `t`; a null return (out of range) is handled.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return None;
    }
    let u = |v: libc::c_int| u32::try_from(v).unwrap_or(0);
    Some(Local {
        day: (secs + tm.tm_gmtoff as i64).div_euclid(86_400),
        date: (tm.tm_year + 1900, u(tm.tm_mon) + 1, u(tm.tm_mday)),
        weekday: u(tm.tm_wday),
        time: (u(tm.tm_hour), u(tm.tm_min)),
    })
}

/// The words for `then`, `secs` seconds before `now`.
fn when(then: &Local, now: &Local, secs: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    let (h, m) = then.time;
    match (secs, now.day - then.day) {
        (..60, _) => "just now".to_owned(),
        (..3600, _) => format!("{} min ago", secs / 60),
        (_, 0) => format!("today {h:02}:{m:02}"),
        (_, 1) => format!("yesterday {h:02}:{m:02}"),
        (_, 2..=6) => format!("{} {h:02}:{m:02}", DAYS[then.weekday as usize % 7]),
        _ => format!("{:04}-{:02}-{:02}", then.date.0, then.date.1, then.date.2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swival_protocol::{Seq, SessionId, SessionState};

    fn at(day: i64, weekday: u32, time: (u32, u32)) -> Local {
        Local { day, date: (2026, 3, 1), weekday, time }
    }

    #[test]
    fn recent_times_are_relative_and_older_ones_name_the_day_or_the_date() {
        let now = at(100, 3, (14, 30));
        assert_eq!(when(&at(100, 3, (14, 30)), &now, 5), "just now");
        assert_eq!(when(&at(100, 3, (14, 25)), &now, 300), "5 min ago");
        assert_eq!(when(&at(100, 3, (9, 5)), &now, 5 * 3600), "today 09:05");
        assert_eq!(when(&at(99, 2, (14, 2)), &now, 86_000), "yesterday 14:02");
        assert_eq!(when(&at(96, 6, (8, 0)), &now, 4 * 86_400), "Sat 08:00");
        assert_eq!(when(&at(80, 1, (8, 0)), &now, 20 * 86_400), "2026-03-01");
        assert_eq!(when(&at(100, 3, (14, 31)), &now, -30), "just now", "a clock a little ahead");
    }

    #[test]
    fn the_same_moment_is_the_same_local_day_whatever_the_zone() {
        let secs = 1_772_000_000;
        let a = local(secs).unwrap();
        assert_eq!(local(secs + 60).unwrap().day, a.day, "{a:?}");
        assert_eq!(ago(UNIX_EPOCH + Duration::from_secs(secs as u64), SystemTime::now()).len(), 10, "a date");
    }

    fn info(id: &str, base: &str, last: &str) -> SessionInfo {
        SessionInfo {
            session_id: SessionId(id.into()),
            base_dir: base.into(),
            title: Some(format!("title \u{1b}]0;{id}\u{7}")),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            last_used_at: last.into(),
            state: SessionState::Idle,
            last_seq: Seq(0),
            run_count: 1,
            worktree: None,
            parent: None,
            cost_usd: None,
        }
    }

    #[test]
    fn newest_first_narrowed_to_a_project_and_its_subdirectories() {
        let list = vec![
            info("s_a", "/p", "2026-01-01T00:00:00.000Z"),
            info("s_b", "/q", "2026-01-03T00:00:00.000Z"),
            info("s_c", "/p/sub", "2026-01-02T00:00:00.000Z"),
            info("s_d", "/pp", "2026-01-04T00:00:00.000Z"),
        ];
        let ids = |l: Vec<SessionInfo>| l.into_iter().map(|s| s.session_id.0).collect::<Vec<_>>();
        assert_eq!(ids(newest_first(list.clone(), None)), ["s_d", "s_b", "s_c", "s_a"]);
        assert_eq!(ids(newest_first(list, Some(Path::new("/p")))), ["s_c", "s_a"], "not /pp");
    }

    #[test]
    fn a_line_shows_the_title_cleaned() {
        let line = lines(&info("s_a", "/p", "2026-01-01T12:00:00.000Z"), "* ", SystemTime::now());
        assert!(line.starts_with("* s_a  2026-01-01        idle "), "{line}");
        assert!(line.trim_end().ends_with("/p  title ␛]0;s_a␇"), "{line}");
    }
}
