//! `swivalctl run`'s flags, named as in Swival, which `repl`, `goal`,
//! `loop` and the commands that make a session take too.

use clap::Args;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Flags of `swivalctl run`, named as in Swival.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The task; read from stdin when omitted and stdin is not a terminal.
    pub task: Option<String>,
    /// LLM provider: lmstudio, llamacpp, ollama, openai, openrouter, generic, command.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (for provider=command: the command line).
    #[arg(long)]
    pub model: Option<String>,
    /// Provider base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Provider API key.
    #[arg(long)]
    pub api_key: Option<String>,
    /// Project directory (default: the nearest directory from the current
    /// one up holding `.git` or `swival.toml`, else the current directory).
    #[arg(long)]
    pub base_dir: Option<PathBuf>,
    /// Turn budget (default 100).
    #[arg(long)]
    pub max_turns: Option<u64>,
    /// Provider attempts per call (1 = no retry; default 5).
    #[arg(long)]
    pub retries: Option<u64>,
    /// Provider request timeout in seconds.
    #[arg(long)]
    pub provider_timeout: Option<f64>,
    /// Outbound filter command (repeatable: stages in order).
    #[arg(long)]
    pub llm_filter: Vec<String>,
    /// Reviewer command.
    #[arg(long)]
    pub reviewer: Option<String>,
    /// Most reviewer rounds.
    #[arg(long)]
    pub max_review_rounds: Option<u64>,
    /// Commands the agent may run: "all", "none", "ask" (each kind of
    /// command approved on this terminal first), or a comma-separated
    /// whitelist such as "ls,git,cargo" (Swival's --commands).
    #[arg(long, value_name = "all|none|ask|LIST", conflicts_with = "allowed_commands")]
    pub commands: Option<String>,
    /// Commands run_command may run, comma-separated (same as --commands LIST).
    #[arg(long, value_name = "LIST")]
    pub allowed_commands: Option<String>,
    /// Grant read/write access to an extra directory (repeatable).
    #[arg(long = "add-dir", visible_alias = "allow-dir", value_name = "DIR")]
    pub add_dir: Vec<PathBuf>,
    /// Grant read-only access to an extra directory (repeatable).
    #[arg(long = "add-dir-ro", visible_alias = "allow-dir-ro", value_name = "DIR")]
    pub add_dir_ro: Vec<PathBuf>,
    /// Where the file tools may go: some (the base dir and --add-dir
    /// directories; default), all (anywhere but /), none (only .swival/).
    #[arg(long, value_parser = ["some", "all", "none"])]
    pub files: Option<String>,
    /// Lift the command whitelist and path checks (never the root rule);
    /// an explicit --files or --commands still wins.
    #[arg(long)]
    pub yolo: bool,
    /// How commands are confined: os (the kernel, default) or builtin.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<String>,
    /// Commands read only system directories, the base dir and the allowed dirs.
    #[arg(long)]
    pub sandbox_strict_read: bool,
    /// Sampling temperature (the provider's default when unset).
    #[arg(long, allow_negative_numbers = true)]
    pub temperature: Option<f64>,
    /// Nucleus sampling top_p (the provider's default when unset).
    #[arg(long, allow_negative_numbers = true)]
    pub top_p: Option<f64>,
    /// Sampling seed.
    #[arg(long, allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Most tokens the model may write per reply (default 32768).
    #[arg(long)]
    pub max_output_tokens: Option<u64>,
    /// Context window in tokens (discovered from the provider when unset).
    #[arg(long)]
    pub max_context_tokens: Option<u64>,
    /// Most lines a read returns when it names no limit (default 2000).
    #[arg(long)]
    pub max_output_lines: Option<u64>,
    /// Most KiB one file tool result or fetch_url page carries inline (default 50).
    #[arg(long)]
    pub max_output_kb: Option<u64>,
    /// Extra parameters merged into every provider request, as a JSON
    /// object (e.g. '{"chat_template_kwargs": {"enable_thinking": false}}').
    #[arg(long, value_name = "JSON", value_parser = parse_extra_body)]
    pub extra_body: Option<Map<String, Value>>,
    /// Reasoning effort asked of the model.
    #[arg(long, value_name = "LEVEL", value_parser = ["none", "minimal", "low", "medium", "high", "xhigh", "default"])]
    pub reasoning_effort: Option<String>,
    /// User-Agent header sent to the provider.
    #[arg(long)]
    pub user_agent: Option<String>,
    /// Replace the built-in system prompt.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_system_prompt")]
    pub system_prompt: Option<String>,
    /// Send no system prompt at all.
    #[arg(long)]
    pub no_system_prompt: bool,
    /// Do not load the project's instruction files (CLAUDE.md, AGENTS.md).
    #[arg(long)]
    pub no_instructions: bool,
    /// Let write_file overwrite files the agent has not read.
    #[arg(long)]
    pub no_read_guard: bool,
    /// Do not read the files the task names before the first model call:
    /// the first request is the system prompt and the task, as Swival's.
    #[arg(long)]
    pub no_read_named_files: bool,
    /// Offer the tools with short descriptions, without their rarely
    /// needed parameters, think and todo, with a short system prompt for
    /// small models (the default with a local provider: llamacpp,
    /// lmstudio, ollama).
    #[arg(long, overrides_with = "no_lean_tools")]
    pub lean_tools: bool,
    /// Offer Swival's tool schemas, as they are, whatever the provider.
    #[arg(long)]
    pub no_lean_tools: bool,
    /// Don't load auto-memory from .swival/memory/.
    #[arg(long, conflicts_with = "memory_full")]
    pub no_memory: bool,
    /// Inject all of MEMORY.md into the prompt (skip budgeted retrieval).
    #[arg(long)]
    pub memory_full: bool,
    /// Neither write .swival/continue.md when a run stops early nor load it.
    #[arg(long)]
    pub no_continue: bool,
    /// Offer the model spawn_subagent and check_subagents: subagents run
    /// as child sessions of the daemon.
    #[arg(long, overrides_with = "no_subagents")]
    pub subagents: bool,
    /// Do not offer subagents (the default).
    #[arg(long)]
    pub no_subagents: bool,
    /// Review each answer with this same model in a reviewer session
    /// (Swival's `--self-review`).
    #[arg(long)]
    pub self_review: bool,
    /// Act as a reviewer script: the positional argument is the base dir,
    /// the answer comes on stdin; exit 0 accept, 1 retry, 2 error.
    #[arg(long)]
    pub reviewer_mode: bool,
    /// Reviewer mode: read the task from FILE instead of SWIVAL_TASK.
    #[arg(long, value_name = "FILE")]
    pub objective: Option<String>,
    /// Reviewer mode: read acceptance criteria from FILE.
    #[arg(long, value_name = "FILE")]
    pub verify: Option<String>,
    /// Instructions added to the review prompt.
    #[arg(long, value_name = "TEXT")]
    pub review_prompt: Option<String>,
    /// Additional directory to scan for skills (can be repeated).
    #[arg(long, value_name = "DIR")]
    pub skills_dir: Vec<PathBuf>,
    /// Don't load or discover any skills.
    #[arg(long)]
    pub no_skills: bool,
    /// Swival's: no prompt-cache marks in requests. swivald never adds them
    /// (a server's own prefix cache still serves), so this changes nothing.
    #[arg(long)]
    pub no_prompt_cache: bool,
    /// Take whole <think>…</think> blocks out of the model's replies.
    #[arg(long)]
    pub sanitize_thinking: bool,
    /// Show the model's reasoning on stderr after each reply (otherwise a
    /// one-line note of its size).
    #[arg(long)]
    pub show_thinking: bool,
    /// Select a named LLM profile from config ([profiles.NAME]).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// List the profiles the config files define, and exit (Swival's).
    #[arg(long)]
    pub list_profiles: bool,
    /// Write Swival's report JSON to FILE.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No progress on stderr (errors still show).
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not append the answer to .swival/HISTORY.md.
    #[arg(long)]
    pub no_history: bool,
    /// Read MCP servers from this JSON file (`mcpServers`) instead of
    /// .swival/mcp.json.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    /// Start no MCP server.
    #[arg(long)]
    pub no_mcp: bool,
    /// Accept the project's swival.toml for this run even if it is not
    /// trusted (for scripts and CI); nothing is recorded.
    #[arg(long)]
    pub trust: bool,
    /// Use the response cache.
    #[arg(long)]
    pub cache: bool,
    /// Encrypt secrets before they reach the provider.
    #[arg(long, conflicts_with = "no_encrypt_secrets")]
    pub encrypt_secrets: bool,
    /// Do not encrypt secrets (overrides the config).
    #[arg(long)]
    pub no_encrypt_secrets: bool,
    /// Hex key for --encrypt-secrets (16, 24 or 32 bytes; random per session when unset).
    #[arg(long, value_name = "HEX")]
    pub encrypt_secrets_key: Option<String>,
    /// Print every event as one JSON line on stdout instead of the answer.
    #[arg(long)]
    pub json: bool,
    /// Continue an existing session instead of creating one.
    #[arg(long)]
    pub session: Option<String>,
    /// Work in a new git worktree of the project, on its own branch
    /// `swival/<session>`, so the checkout stays untouched until
    /// `swivalctl apply SESSION` brings the changes in.
    #[arg(long, conflicts_with = "session")]
    pub worktree: bool,
    /// Start the run, print its id and return at once.
    #[arg(long)]
    pub detach: bool,
    /// Force ANSI colour in the REPL even when output is not a terminal.
    #[arg(long, conflicts_with = "no_color")]
    pub color: bool,
    /// No ANSI colour in the REPL even on a terminal (so does NO_COLOR).
    #[arg(long)]
    pub no_color: bool,
}

/// `--extra-body`: a JSON object, as Swival requires.
pub fn parse_extra_body(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("--extra-body must be a JSON object".into()),
        Err(e) => Err(format!("--extra-body is not valid JSON: {e}")),
    }
}
