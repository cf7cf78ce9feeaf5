//! What the REPL's slash commands do (the table is `cmd/slash.rs`): each
//! through a typed daemon method, or on the user's side when it is about
//! the user's terminal or files.

use super::show::preview;
use super::Repl;
use crate::cmd::slash::{self, Slash};
use std::path::Path;
use swival_protocol::methods::typed as m;
use swival_protocol::{ChangesRef, RunChangesParams, RunRevertParams, SessionConfigureParams, SessionFrom, SessionId};
use swivalctl::{Client, ClientError};

/// What the loop does after a command.
pub enum Next {
    /// Show the prompt again.
    Prompt,
    /// Run this as a prompt to the model.
    Run(String),
    /// Go on with the conversation as it is (`/continue`).
    Continue,
    /// Leave the REPL.
    Exit,
}

impl Repl {
    /// Do the slash command `line`.
    pub async fn command(&mut self, line: &str) -> Result<Next, ClientError> {
        let Some((slash, arg)) = slash::parse(line) else {
            let name = line.split_whitespace().next().unwrap_or(line);
            self.warn(&slash::unknown(name).unwrap_or_default());
            return Ok(Next::Prompt);
        };
        match slash {
            Slash::Help => self.say(&slash::help()),
            Slash::Exit => return Ok(Next::Exit),
            Slash::Clear => self.fresh().await?,
            Slash::Status => self.status().await?,
            Slash::Tools => self.tools().await?,
            Slash::Model => self.model(arg).await?,
            Slash::Profile => {
                // Another profile, another server: its list is not this one.
                self.models.clear();
                self.configure_key("active_profile", arg).await?
            }
            Slash::Reasoning => self.configure_key("reasoning_effort", arg).await?,
            Slash::Extend => self.extend(arg).await?,
            Slash::Continue => return Ok(Next::Continue),
            Slash::Goal => self.goal(arg).await?,
            Slash::Loop => self.add_loop(arg).await?,
            Slash::Loops => self.list_loops().await?,
            Slash::Unloop => self.unloop(arg).await?,
            Slash::Compact => self.compact(arg == "--drop").await?,
            Slash::Save | Slash::Unsave => self.checkpoint(arg, slash == Slash::Unsave).await?,
            Slash::Restore => self.restore().await?,
            Slash::AddDir | Slash::AddDirRo => self.add_dir(arg, slash == Slash::AddDirRo).await?,
            Slash::Copy => self.copy(),
            Slash::Remember => self.remember(arg),
            Slash::Init => return Ok(Next::Run(INIT_PROMPT.to_owned())),
            Slash::Learn => return Ok(Next::Run(LEARN_PROMPT.to_owned())),
            Slash::Policy => self.policy().await?,
            Slash::Report => self.report().await?,
            Slash::Diff => self.diff(arg).await?,
            Slash::Undo => self.undo(arg).await?,
            Slash::Sessions => self.sessions(arg).await?,
            Slash::Attach => self.attach_to(SessionId(arg.to_owned())).await?,
        }
        Ok(Next::Prompt)
    }

    /// `/clear`, `/new`: a new session from this one's settings, with an
    /// empty conversation; the old one stays in the daemon. A worktree
    /// session's successor gets a worktree of its own (never the checkout).
    async fn fresh(&mut self) -> Result<(), ClientError> {
        let old = self.session.clone();
        // Swival's /clear also drops the project's continue file.
        let clear = swival_protocol::ContinueClearParams { session_id: Some(old.clone()), base_dir: None };
        self.client.request::<m::ContinueClear>(&clear).await?;
        let worktree = self.client.session(&old).await?.info.worktree.is_some();
        let params = swival_protocol::SessionCreateParams {
            base_dir: self.base_dir.display().to_string(),
            config: None,
            title: None,
            trust: false,
            env: Some(swivalctl::caller_env()),
            from: Some(SessionFrom { session_id: old.clone(), conversation: false }),
            worktree,
        };
        let created = self.client.create_session(&params).await?;
        self.switch(created.session_id, 1).await?;
        self.info(&format!("context cleared; the previous conversation stays in the daemon as session {old}"));
        if worktree {
            self.info(&format!(
                "this session has a new worktree; bring the previous one's work in with `swivalctl apply {old}`"
            ));
        }
        Ok(())
    }

    /// `/model`, `/profile`, `/reasoning`: show the value, or set it for
    /// the next runs.
    async fn configure_key(&mut self, key: &str, value: &str) -> Result<(), ClientError> {
        if value.is_empty() {
            let detail = self.client.session(&self.session).await?;
            // A string as it is, not JSON-quoted (`model: qwen`, not `"qwen"`).
            let shown = detail.config.get(key).filter(|v| !v.is_null()).map(|v| match v.as_str() {
                Some(text) => text.to_owned(),
                None => v.to_string(),
            });
            self.info(&format!("{key}: {}", shown.unwrap_or_else(|| "(default)".into())));
            return Ok(());
        }
        let mut config = serde_json::Map::new();
        config.insert(key.to_owned(), value.into());
        if key == "active_profile" {
            // The profile's model and provider, not the ones the session
            // was started with (a session's own keys win over a profile).
            for own in ["provider", "model", "base_url", "api_key"] {
                config.insert(own.to_owned(), serde_json::Value::Null);
            }
        }
        self.configure(SessionConfigureParams {
            session_id: self.session.clone(),
            config: Some(config.into()),
            add_dirs: Vec::new(),
            add_dirs_ro: Vec::new(),
        })
        .await
    }

    /// `/model`: with no argument, the model in use and the ones the
    /// server offers, numbered; with a name, or a number of that list,
    /// that model for the next runs.
    async fn model(&mut self, arg: &str) -> Result<(), ClientError> {
        if let Ok(n) = arg.parse::<usize>() {
            let Some(name) = n.checked_sub(1).and_then(|i| self.models.get(i)).cloned() else {
                let listed = self.models.len();
                self.warn(&format!("no model number {n}: /model lists the server's models ({listed} listed so far)"));
                return Ok(());
            };
            return self.configure_key("model", &name).await;
        }
        if !arg.is_empty() {
            return self.configure_key("model", arg).await;
        }
        self.configure_key("model", "").await?;
        let params =
            swival_protocol::ProviderModelsParams { session_id: Some(self.session.clone()), ..Default::default() };
        let listed = match self.client.request::<m::ProviderModelsMethod>(&params).await {
            Ok(listed) => listed,
            Err(ClientError::Rpc { message, .. }) => {
                self.warn(&message);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if listed.models.is_empty() {
            self.info(&format!("{} lists no model", listed.base_url));
            return Ok(());
        }
        let mut out = format!("models at {}:\n", listed.base_url);
        for (i, model) in listed.models.iter().enumerate() {
            let here = if listed.current.as_deref() == Some(model.id.as_str()) { "*" } else { " " };
            let window = model.context_window.map(|w| format!("  ({w} tokens)")).unwrap_or_default();
            out.push_str(&format!("{here}{:>3}. {}{window}\n", i + 1, model.id));
        }
        out.push_str("/model N or /model NAME switches");
        self.info(&out);
        self.models = listed.models.into_iter().map(|m| m.id).collect();
        Ok(())
    }

    /// `/extend [N]`: double `max_turns`, or set it to N.
    async fn extend(&mut self, arg: &str) -> Result<(), ClientError> {
        let detail = self.client.session(&self.session).await?;
        let current = detail.config.get("max_turns").and_then(serde_json::Value::as_u64).unwrap_or(100);
        let turns = match arg {
            "" => current.saturating_mul(2),
            n => match n.parse::<u64>() {
                Ok(0) => {
                    self.warn("max turns must be at least 1");
                    return Ok(());
                }
                Ok(n) => n,
                Err(_) => {
                    self.warn(&format!("invalid number: {n}"));
                    return Ok(());
                }
            },
        };
        let mut config = serde_json::Map::new();
        config.insert("max_turns".into(), turns.into());
        let params = SessionConfigureParams {
            session_id: self.session.clone(),
            config: Some(config.into()),
            add_dirs: Vec::new(),
            add_dirs_ro: Vec::new(),
        };
        self.configure(params).await
    }

    /// `/add-dir`, `/add-dir-ro`: allow a directory (the user's path, made
    /// absolute here) for the next runs.
    async fn add_dir(&mut self, arg: &str, read_only: bool) -> Result<(), ClientError> {
        if arg.is_empty() {
            let name = if read_only { "/add-dir-ro" } else { "/add-dir" };
            {
                self.warn(&format!("{name} requires a path argument"));
                return Ok(());
            };
        }
        let path = std::env::current_dir().map(|cwd| cwd.join(arg)).unwrap_or_else(|_| Path::new(arg).to_owned());
        let dirs = vec![path.display().to_string()];
        let (add_dirs, add_dirs_ro) = if read_only { (Vec::new(), dirs) } else { (dirs, Vec::new()) };
        self.configure(SessionConfigureParams { session_id: self.session.clone(), config: None, add_dirs, add_dirs_ro })
            .await
    }

    /// `session/configure`, saying what changed; a refusal is a warning.
    async fn configure(&mut self, params: SessionConfigureParams) -> Result<(), ClientError> {
        match self.client.request::<swival_protocol::methods::typed::SessionConfigure>(&params).await {
            Ok(r) => {
                for w in &r.warnings {
                    self.warn(w);
                }
                match r.changed.is_empty() {
                    true => self.info("nothing changed"),
                    false => self.info(&format!("changed: {} (from the next run on)", r.changed.join(", "))),
                }
                Ok(())
            }
            Err(ClientError::Rpc { message, .. }) => {
                self.warn(&message);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// `/compact [--drop]`.
    async fn compact(&mut self, drop: bool) -> Result<(), ClientError> {
        let params = swival_protocol::SessionCompactParams { session_id: self.session.clone(), drop };
        match self.client.request::<swival_protocol::methods::typed::SessionCompact>(&params).await {
            Ok(r) if r.strategy.is_empty() => {
                self.info("nothing to compact");
                Ok(())
            }
            Ok(r) => {
                let saved = r.tokens_before.saturating_sub(r.tokens_after);
                {
                    self.info(&format!("compacted: {} -> {} tokens ({saved} saved)", r.tokens_before, r.tokens_after));
                    Ok(())
                }
            }
            Err(ClientError::Rpc { message, .. }) => {
                self.warn(&message);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// `/save [label]`, `/unsave`: `session/checkpoint`.
    async fn checkpoint(&mut self, label: &str, cancel: bool) -> Result<(), ClientError> {
        let params = swival_protocol::SessionCheckpointParams {
            session_id: self.session.clone(),
            label: Some(label.to_owned()).filter(|l| !l.is_empty()),
            cancel,
        };
        match self.client.request::<swival_protocol::methods::typed::SessionCheckpoint>(&params).await {
            Ok(r) => self.info(&r.message),
            Err(ClientError::Rpc { message, .. }) => self.warn(&message),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// `/restore`: `session/restore` (a summary call to the model).
    async fn restore(&mut self) -> Result<(), ClientError> {
        let params = swival_protocol::SessionRef { session_id: self.session.clone() };
        match self.client.request::<swival_protocol::methods::typed::SessionRestore>(&params).await {
            Ok(r) => self.info(&r.message),
            Err(ClientError::Rpc { message, .. }) => self.warn(&message),
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// `/copy`: the last answer to the terminal's clipboard through OSC 52,
    /// which works over ssh and inside tmux.
    fn copy(&mut self) {
        let Some(answer) = self.last_answer.clone() else {
            return self.info("nothing to copy — no output yet.");
        };
        let osc = format!("\x1b]52;c;{}\x07", base64(answer.as_bytes()));
        let osc = if std::env::var_os("TMUX").is_some() { format!("\x1bPtmux;\x1b{osc}\x1b\\") } else { osc };
        eprint!("{osc}");
        self.info("copied to clipboard.");
    }

    /// `/remember TEXT`: a bullet under `## Conventions` in the project's
    /// AGENTS.md, in Swival's words.
    fn remember(&mut self, text: &str) {
        let text = text.trim().trim_start_matches('-').trim();
        if text.is_empty() {
            return self.warn("/remember requires text. Usage: /remember <fact>");
        }
        let reply = super::agents::remember(&self.base_dir.join("AGENTS.md"), text);
        self.info(&reply);
    }

    /// `/tools`: what the session's next run offers the model.
    async fn tools(&mut self) -> Result<(), ClientError> {
        let params = swival_protocol::SessionRef { session_id: self.session.clone() };
        let r = self.client.request::<swival_protocol::methods::typed::SessionTools>(&params).await?;
        let lines: Vec<String> = r
            .tools
            .iter()
            .map(|t| format!("{:<22} {}", t.name, preview(t.description.lines().next().unwrap_or(""), 90)))
            .collect();
        self.info(&format!("{} tools:\n{}", r.tools.len(), lines.join("\n")));
        Ok(())
    }

    /// `/policy`.
    async fn policy(&mut self) -> Result<(), ClientError> {
        let s = self.client.policy_status(&self.session).await?;
        let mut out = format!("sandbox: {}\n", s.sandbox.summary);
        for f in &s.filters {
            out.push_str(&format!("filter: {}\n", f.command));
        }
        for h in &s.hooks {
            out.push_str(&format!("hook: {}\n", h.command));
        }
        if let Some(r) = &s.reviewer {
            out.push_str(&format!("reviewer: {}\n", r.command));
        }
        for m in &s.mcp_servers {
            out.push_str(&format!("mcp server: {} ({})\n", m.name, m.command));
        }
        out.push_str(&format!("protected: {}", s.protected.join(", ")));
        self.info(&out);
        Ok(())
    }

    /// `/report`: the last run's stats.
    async fn report(&mut self) -> Result<(), ClientError> {
        let detail = self.client.session(&self.session).await?;
        let Some(run) = detail.runs.iter().rev().find(|r| !r.running) else {
            {
                self.info("no run has finished in this session yet");
                return Ok(());
            };
        };
        let report = self.client.report(&run.run_id).await?;
        let result = &report.result;
        let why = result.error_message.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
        let text = match &report.stats {
            Some(stats) => serde_json::to_string_pretty(stats).unwrap_or_default(),
            None => "no stats were kept for this run".to_owned(),
        };
        let (id, task, outcome) = (&run.run_id, preview(&run.task, 60), result.outcome.as_str());
        self.info(&format!("run {id}: {task}\n{outcome}{why}\n{text}"));
        Ok(())
    }

    /// Which change set `/diff` and `/undo` mean: the id given, or this
    /// session's last run.
    fn change_set(&self, id: &str) -> ChangesRef {
        match id {
            "" => ChangesRef { run_id: None, session_id: Some(self.session.clone()) },
            id => ChangesRef { run_id: Some(id.to_owned()), session_id: None },
        }
    }

    /// `/diff [id]`.
    async fn diff(&mut self, arg: &str) -> Result<(), ClientError> {
        let which = self.change_set(arg);
        let changes = self.client.request::<m::RunChangesMethod>(&RunChangesParams { which, no_diff: false }).await?;
        // Diffs of files the model wrote: their escapes made visible.
        self.say(&crate::cmd::changes::render_changes(&crate::cmd::clean::value(changes), true));
        Ok(())
    }

    /// `/undo [--force] [id]`.
    async fn undo(&mut self, arg: &str) -> Result<(), ClientError> {
        let force = arg.split_whitespace().any(|w| w == "--force");
        let id = arg.split_whitespace().find(|w| *w != "--force").unwrap_or("");
        let which = self.change_set(id);
        let done = self.client.request::<m::RunRevert>(&RunRevertParams { which, force }).await?;
        let text = crate::cmd::changes::render_revert(&done);
        match done.applied {
            true => self.info(&text),
            false => self.warn(text.trim_end()),
        }
        Ok(())
    }

    /// `/sessions [all]`.
    async fn sessions(&mut self, arg: &str) -> Result<(), ClientError> {
        let text = listed(&self.client, &self.base_dir, arg, Some(&self.session)).await?;
        self.info(text.trim_end());
        Ok(())
    }
}

/// `/sessions`: this project's sessions newest first, or every project's
/// with `all`; `current` is marked `*`.
pub async fn listed(
    client: &Client,
    base_dir: &Path,
    arg: &str,
    current: Option<&SessionId>,
) -> Result<String, ClientError> {
    let all = matches!(arg, "all" | "--all");
    let project = crate::cmd::listing::project(base_dir);
    let list = client.list_sessions().await?;
    let sessions = crate::cmd::listing::newest_first(list.sessions, (!all).then_some(project.as_path()));
    let now = std::time::SystemTime::now();
    let mark = |s: &swival_protocol::SessionInfo| if Some(&s.session_id) == current { "* " } else { "  " };
    let mut out: String = sessions.iter().map(|s| crate::cmd::listing::lines(s, mark(s), now)).collect();
    if sessions.is_empty() {
        out = format!("no session in {} yet", project.display());
    }
    if !all {
        out.push_str("\n(/sessions all lists every project's; /attach ID works on one)");
    }
    Ok(out)
}

/// The prompt `/init` sends: look at the project and write AGENTS.md.
const INIT_PROMPT: &str = "Study this project and write AGENTS.md at its root for coding agents working here. \
Look at the build files, the CI configuration, the README and a few representative sources. Write three \
sections: `## Workflow` with the exact commands to build, test, lint and format; `## Conventions` with the \
code style, naming and layout rules the project follows; `## Commit & Pull Request Guidelines` with how changes \
are written up here. Be concrete and brief, at most 3000 characters; keep anything already in AGENTS.md that is \
still true.";

/// The prompt `/learn` sends (Swival's words): write the session's lessons
/// to MEMORY.md.
const LEARN_PROMPT: &str = "Review this session for concrete mistakes, confusions, or surprises you \
encountered with tools, commands, APIs, or syntax. Persist concise notes to `.swival/memory/MEMORY.md` for any \
durable lessons that will help in future sessions. If you were confused by something, add a note so you do not \
repeat the mistake. Do not store transient workspace state that may change soon, such as whether a file \
currently exists, current branch contents, or one-off task status. Keep MEMORY.md short (bulleted notes). For \
detailed topics, create separate files in `.swival/memory/` and reference them from MEMORY.md. If there is \
nothing worth noting, say so.";

/// Standard base64 (for OSC 52).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let c = if i <= chunk.len() { ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' };
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_alphabet_with_padding() {
        assert_eq!(base64(b"hello"), "aGVsbG8=");
        assert_eq!(base64(b"hi!"), "aGkh");
        assert_eq!(base64(b""), "");
    }
}
