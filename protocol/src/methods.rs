//! Method, subscription and notification names. They are part of the
//! contract: clients in any language type them literally.

/// Handshake; the first call of every connection.
pub const INITIALIZE: &str = "initialize";
/// Daemon pid, version, uptime and open connections.
pub const DAEMON_STATUS: &str = "daemon/status";
/// Ask the daemon to stop gracefully.
pub const DAEMON_SHUTDOWN: &str = "daemon/shutdown";

/// Create a session in a base directory.
pub const SESSION_CREATE: &str = "session/create";
/// List sessions.
pub const SESSION_LIST: &str = "session/list";
/// One session with its runs and conversation.
pub const SESSION_GET: &str = "session/get";
/// Close a session (cancelling its run).
pub const SESSION_CLOSE: &str = "session/close";
/// Delete sessions unused for a while, and compact the database.
pub const SESSION_PRUNE: &str = "session/prune";
/// Subscribe to a session's events (notifications: `session/event`).
pub const SESSION_SUBSCRIBE: &str = "session/subscribe";
/// The notification method of `session/subscribe`.
pub const SESSION_EVENT: &str = "session/event";
/// End a `session/subscribe` subscription.
pub const SESSION_UNSUBSCRIBE: &str = "session/unsubscribe";
/// Start a run in a session.
pub const RUN_START: &str = "run/start";
/// Cancel a run.
pub const RUN_CANCEL: &str = "run/cancel";
/// Wait for a run to finish.
pub const RUN_WAIT: &str = "run/wait";
/// Answer a run's `approval_requested` event.
pub const RUN_APPROVE: &str = "run/approve";
/// Swival's report JSON of a finished run.
pub const REPORT_GET: &str = "report/get";
/// Register a client hook (notifications: `hooks/invoke`).
pub const HOOKS_REGISTER: &str = "hooks/register";
/// The notification method of `hooks/register`.
pub const HOOKS_INVOKE: &str = "hooks/invoke";
/// Remove a client hook (closing the connection also does).
pub const HOOKS_UNREGISTER: &str = "hooks/unregister";
/// Serve a session's file reads from an editor's buffers (subscription).
pub const BUFFERS_SERVE: &str = "buffers/serve";
/// The notification of a `buffers/serve` subscription: a file to read.
pub const BUFFERS_READ: &str = "buffers/read";
/// End a `buffers/serve` subscription.
pub const BUFFERS_UNSERVE: &str = "buffers/unserve";
/// Answer one `buffers/read`.
pub const BUFFERS_RESPOND: &str = "buffers/respond";
/// A client hook's answer to one invocation.
pub const HOOKS_RESPOND: &str = "hooks/respond";
/// What guards a session: filters, hooks, reviewer, sandbox.
pub const POLICY_STATUS: &str = "policy/status";
/// Response cache statistics.
pub const CACHE_STATS: &str = "cache/stats";
/// Empty the response cache.
pub const CACHE_CLEAR: &str = "cache/clear";
/// Whether a command would run, and why.
pub const POLICY_CHECK: &str = "policy/check";
/// The effective configuration for a base directory, with sources.
pub const CONFIG_RESOLVE: &str = "config/resolve";
/// Every MCP server the daemon runs or holds for a session.
pub const MCP_STATUS: &str = "mcp/status";
/// Trust a project's `swival.toml` as it is now.
pub const PROJECT_TRUST: &str = "project/trust";

/// Every method the daemon answers, with a one-line summary, in the order
/// the documentation lists them.
pub const ALL: &[(&str, &str)] = &[
    (INITIALIZE, "Handshake: client and protocol version in, server info and capabilities out."),
    (DAEMON_STATUS, "Daemon pid, version, uptime, socket path and open connections."),
    (DAEMON_SHUTDOWN, "Stop accepting connections, finish in-flight work within the grace period, exit 0."),
    (SESSION_CREATE, "Create a session: base_dir, config overrides, title."),
    (SESSION_LIST, "Every session with its state and last event seq."),
    (SESSION_GET, "One session: summary, effective config, runs and stored conversation."),
    (SESSION_CLOSE, "Close a session; a run in flight is cancelled."),
    (SESSION_PRUNE, "Delete sessions unused for older_than_s seconds (not those in use), then compact the database."),
    (SESSION_SUBSCRIBE, "Stream a session's stored and live events from a seq (notifications: session/event)."),
    (SESSION_UNSUBSCRIBE, "End a session/subscribe subscription."),
    (RUN_START, "Start a run; refused with session_busy while another runs."),
    (RUN_CANCEL, "Cancel a run: between turns and tools, killing running children."),
    (RUN_WAIT, "Wait for a run to finish and return its result."),
    (RUN_APPROVE, "Answer a run's approval_requested event: allow or reject once or for the session."),
    (REPORT_GET, "Swival's report JSON (version 1) of a finished run."),
    (HOOKS_REGISTER, "Register a client hook for some points; invocations arrive as hooks/invoke notifications."),
    (HOOKS_UNREGISTER, "End a hooks/register subscription."),
    (
        BUFFERS_SERVE,
        "Serve a session's read_file calls from an editor's buffers; requests arrive as buffers/read notifications.",
    ),
    (BUFFERS_UNSERVE, "End a buffers/serve subscription."),
    (BUFFERS_RESPOND, "Answer one buffers/read with the buffer's text, or null to read the file from disk."),
    (HOOKS_RESPOND, "Answer one hooks/invoke with the hook's result."),
    (CACHE_STATS, "Response cache: entries, bytes, hits, misses, shared calls."),
    (CACHE_CLEAR, "Empty the response cache; returns how many entries were removed."),
    (POLICY_CHECK, "Whether run_command would run an argv in a session (or base dir), and why."),
    (
        POLICY_STATUS,
        "Filter stages, hooks, reviewer, sandbox and MCP servers of a session, each script with its SHA-256.",
    ),
    (CONFIG_RESOLVE, "The effective configuration for a base directory, with the layer that set each key."),
    (MCP_STATUS, "Every MCP server: transport, command or URL, pid, tools and the sessions using it."),
    (PROJECT_TRUST, "Trust a project's swival.toml as it is now (by SHA-256); `check: true` only reports."),
];
