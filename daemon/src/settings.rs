//! Daemon-wide settings: `$XDG_CONFIG_HOME/swival/swivald.toml`, overridden
//! by command-line flags. Session configuration (Swival's keys) lives in
//! `config/`, not here.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default largest message, in bytes (16 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: u64 = 16 * 1024 * 1024;

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Everything the daemon reads from swivald.toml. Unknown keys are errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Socket path; when unset, resolved as SPEC §3 says.
    pub socket: Option<PathBuf>,
    /// Largest accepted JSON-RPC message in bytes, on every framing.
    pub max_message_size: u64,
    /// Most connections open at once; more are answered with `overloaded`.
    pub max_connections: u32,
    /// Most subscriptions one connection may hold.
    pub max_subscriptions_per_connection: u32,
    /// Seconds a connection may stay idle (no request in flight, no open
    /// subscription) before the daemon closes it; 0 never closes it.
    pub idle_timeout_s: f64,
    /// Seconds an HTTP client gets to send a complete request head (the
    /// first one, and each next one on a kept-alive connection); 0 waits forever.
    pub header_read_timeout_s: f64,
    /// Most requests in one JSON-RPC batch, on every framing.
    pub max_batch_len: u32,
    /// Most bytes of replies and notifications queued for one
    /// newline-delimited connection whose client does not read them; past
    /// it the connection is closed.
    pub max_reply_buffer_bytes: u64,
    /// Seconds a subscriber may leave its notifications unread before its
    /// subscription is dropped (with a last notification saying how to
    /// resume); 0 never drops it.
    pub subscriber_stall_s: f64,
    /// Most event subscriptions open at once, daemon-wide.
    pub max_subscriptions: u32,
    /// Seconds in-flight requests get to finish after SIGTERM.
    pub shutdown_grace_s: f64,
    /// Log line format.
    pub log_format: LogFormat,
    /// Where the database lives (default `$XDG_STATE_HOME/swival`).
    pub state_dir: Option<PathBuf>,
    /// Where sessions' git worktrees go (default
    /// `$XDG_DATA_HOME/swival-worktrees`); never under `state_dir`, which
    /// the sandbox hides from commands.
    pub worktrees_dir: Option<PathBuf>,
    /// Most provider calls in flight at once across all sessions; more wait
    /// their turn in arrival order.
    pub max_concurrent_llm_calls: u32,
    /// Base of the provider retry backoff in seconds (2 → about 2, 4, 8, 16 s).
    pub provider_backoff_base_s: f64,
    /// Most processes running at once (filters, hooks, reviewers, the
    /// `command` provider, the model's commands); more wait their turn.
    pub max_children: u32,
    /// Where the response cache lives (default `$XDG_CACHE_HOME/swival`).
    pub cache_dir: Option<PathBuf>,
    /// Size cap of the response cache in bytes; least recently used replies go first.
    pub max_cache_bytes: u64,
    /// Most sessions held in memory; past it the least recently used idle
    /// ones are dropped (they load again from the store when used).
    /// Sessions with a run in flight are never dropped.
    pub max_live_sessions: u32,
    /// Seconds an idle session (no run in flight) stays in memory unused;
    /// 0 keeps it until `max_live_sessions` pushes it out.
    pub session_idle_timeout_s: f64,
    /// Seconds a run waits for a user to approve a command (`commands =
    /// "ask"`); no answer in time is a rejection.
    pub approval_timeout_s: f64,
    /// Sessions unused for this many days are deleted (at start, then
    /// hourly); 0 keeps them all.
    pub prune_sessions_after_days: f64,
    /// Seconds an MCP server no session uses keeps running before it is stopped.
    pub mcp_idle_timeout_s: f64,
    /// Seconds a prespawn pool or persistent worker no call uses keeps its
    /// processes before they are stopped; 0 keeps them until the daemon stops.
    pub process_idle_timeout_s: f64,
    /// Seconds one MCP tool call may take.
    pub mcp_call_timeout_s: f64,
    /// Seconds an MCP server may take to start and list its tools.
    pub mcp_start_timeout_s: f64,
    /// Threads that run the daemon's tasks; 0 means one per CPU core. Work
    /// that may take long (tree walks, waiting for the store) moves off
    /// them, and the store writer has a thread of its own.
    pub worker_threads: u32,
    /// Record what each run changes in its project (snapshots before and
    /// after each call that may change files), for `run/changes` and
    /// `run/revert`.
    pub snapshots: bool,
    /// Files larger than this many bytes are recorded by size and hash
    /// only, and cannot be put back by undo.
    pub snapshot_max_file_bytes: u64,
    /// Commands (and MCP tools) of different sessions in one project run
    /// one at a time, so every change they make is attributed to the one
    /// that made it; `false` lets them run at once, and a file two of them
    /// changed is marked shared (undo leaves it unless forced).
    pub snapshot_exact_commands: bool,
    /// Subagents (`spawn_subagent`, child sessions) running at once, all
    /// sessions together; a spawn past it is refused with this key named.
    pub max_subagents: u32,
    /// Goals and loops working at once, all sessions together; setting or
    /// resuming one past it is refused with this key named.
    pub max_background_runs: u32,
    /// Runs a goal may take when `goal/set` names no `max_runs`.
    pub goal_max_runs: u64,
    /// Active loops, all sessions together; adding one past it is refused
    /// with this key named.
    pub max_loops: u32,
    /// The shortest interval a loop may have, in seconds (Swival's floor).
    pub loop_min_interval_s: f64,
    /// The wait after a loop's first failed firing, doubling with each
    /// further failure in a row (at most an hour, never below its interval).
    pub loop_backoff_base_s: f64,
    /// Tokens background runs (goals, loop firings) may use per local day,
    /// all together; 0: no bound. Past it no goal run or firing starts,
    /// saying so with this key named.
    pub max_background_tokens_per_day: u64,
    /// Tell the desktop of each inbox entry (`notify-send` on Linux,
    /// `osascript` on macOS, when on the daemon's PATH).
    pub desktop_notifications: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            socket: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_connections: 1024,
            max_subscriptions_per_connection: 64,
            idle_timeout_s: 300.0,
            header_read_timeout_s: 10.0,
            max_batch_len: 1024,
            max_reply_buffer_bytes: 8 * 1024 * 1024,
            subscriber_stall_s: 30.0,
            max_subscriptions: 4096,
            shutdown_grace_s: 10.0,
            log_format: LogFormat::Human,
            state_dir: None,
            worktrees_dir: None,
            max_concurrent_llm_calls: 16,
            provider_backoff_base_s: 2.0,
            max_children: 64,
            cache_dir: None,
            max_cache_bytes: 256 * 1024 * 1024,
            max_live_sessions: 1024,
            session_idle_timeout_s: 600.0,
            approval_timeout_s: 300.0,
            prune_sessions_after_days: 0.0,
            mcp_idle_timeout_s: 300.0,
            process_idle_timeout_s: 300.0,
            mcp_call_timeout_s: 120.0,
            mcp_start_timeout_s: 30.0,
            worker_threads: 0,
            snapshots: true,
            snapshot_max_file_bytes: 10 * 1024 * 1024,
            snapshot_exact_commands: true,
            max_subagents: 16,
            max_background_runs: 4,
            goal_max_runs: 20,
            max_loops: 16,
            loop_min_interval_s: 5.0,
            loop_backoff_base_s: 30.0,
            max_background_tokens_per_day: 0,
            desktop_notifications: false,
        }
    }
}

/// A settings file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// The file is not valid TOML for these settings (unknown key, wrong type).
    #[error("invalid daemon settings in {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl Settings {
    /// `idle_timeout_s` as a duration; `None` when closing idle connections is off.
    pub fn idle_timeout(&self) -> Option<Duration> {
        positive_seconds(self.idle_timeout_s)
    }

    /// `prune_sessions_after_days` as a duration; `None` when it is off.
    pub fn session_retention(&self) -> Option<Duration> {
        positive_seconds(self.prune_sessions_after_days * 86_400.0)
    }

    /// `session_idle_timeout_s` as a duration; `None` when it is off.
    pub fn session_idle_timeout(&self) -> Option<Duration> {
        positive_seconds(self.session_idle_timeout_s)
    }

    /// `process_idle_timeout_s` as a duration; `None` when it is off.
    pub fn process_idle_timeout(&self) -> Option<Duration> {
        positive_seconds(self.process_idle_timeout_s)
    }

    /// `header_read_timeout_s` as a duration; `None` when it is off.
    pub fn header_read_timeout(&self) -> Option<Duration> {
        positive_seconds(self.header_read_timeout_s)
    }

    /// Read `path`; a missing file gives the defaults only when `required`
    /// is false (the default location may legitimately not exist).
    pub fn load(path: &Path, required: bool) -> Result<Settings, SettingsError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(Settings::default()),
            Err(source) => return Err(SettingsError::Read { path: path.to_owned(), source }),
        };
        toml::from_str(&text).map_err(|e| SettingsError::Invalid {
            path: path.to_owned(),
            message: e.to_string().trim().replace('\n', " "),
        })
    }
}

/// `s` seconds, or `None` for zero, negative, NaN or a value too large to
/// be a duration (an infinite timeout is no timeout).
fn positive_seconds(s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(s).ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_is_rejected_naming_key_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swivald.toml");
        std::fs::write(&path, "max_conections = 3\n").unwrap();
        let err = Settings::load(&path, true).unwrap_err().to_string();
        assert!(err.contains("max_conections"), "{err}");
        assert!(err.contains("swivald.toml"), "{err}");
    }

    #[test]
    fn zero_or_infinite_timeouts_are_off() {
        let mut s = Settings::default();
        assert_eq!(s.idle_timeout(), Some(Duration::from_secs(300)));
        s.idle_timeout_s = 0.0;
        assert_eq!(s.idle_timeout(), None);
        s.header_read_timeout_s = f64::INFINITY;
        assert_eq!(s.header_read_timeout(), None);
        s.header_read_timeout_s = 0.5;
        assert_eq!(s.header_read_timeout(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn missing_default_file_gives_defaults() {
        let s = Settings::load(Path::new("/nonexistent/swivald.toml"), false).unwrap();
        assert_eq!(s.max_message_size, DEFAULT_MAX_MESSAGE_SIZE);
    }
}
