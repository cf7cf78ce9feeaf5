//! What guards a session, as `policy/status` and `policy/check` report it.

use super::{check_base_dir, Session, SessionError, Sessions};
use crate::config::FilesMode;
use crate::sandbox::CommandPolicy;
use std::sync::Arc;
use swival_protocol::SessionId;

impl Sessions {
    /// A session's fixed part (config, pipeline, sandbox), for what reports
    /// on it without changing anything: the copy in memory, else one built
    /// from the store for this caller alone — not held, no actor, no MCP
    /// server leased or started, no conversation read, no file touched.
    pub(super) fn inspect(&self, id: &SessionId) -> Result<Arc<Session>, SessionError> {
        if let Some(handle) = self.live.get(id) {
            return Ok(handle.session);
        }
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        Ok(self.load(&row, false)?.0)
    }

    /// `policy/check`: would `argv` run in this session (or under this base
    /// dir's configuration), and why.
    pub fn policy_check(
        &self,
        session: Option<&SessionId>,
        base_dir: Option<&str>,
        argv: &[String],
        env: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<swival_protocol::PolicyCheckResult, SessionError> {
        let (policy, base, summary) = match (session, base_dir) {
            (Some(id), _) => {
                let s = self.inspect(id)?;
                (s.commands.policy.clone(), s.base_dir.clone(), s.sandbox.summary())
            }
            (None, Some(dir)) => {
                let effective = self.resolve_config(dir, None)?;
                let base = check_base_dir(dir)?;
                // Resolved through the caller's PATH, as a session would be.
                let path = self.caller_env(env)?.unwrap_or_default().path();
                let policy = CommandPolicy::from_access(effective.config.command_access(), &base, &path)
                    .map_err(|e| SessionError::Config(e.to_string()))?;
                (policy, base, format!("sandbox = {:?}", effective.config.sandbox).to_lowercase())
            }
            (None, None) => return Err(SessionError::Config("policy/check needs session_id or base_dir".into())),
        };
        Ok(match crate::sandbox::check(argv, &policy, &base) {
            Ok(program) => swival_protocol::PolicyCheckResult {
                allowed: true,
                program: Some(program.display().to_string()),
                reason: format!("would run {} in {} ({summary})", program.display(), base.display()),
            },
            Err(refusal) => {
                swival_protocol::PolicyCheckResult { allowed: false, program: None, reason: refusal.to_string() }
            }
        })
    }

    /// `policy/status`.
    pub fn policy_status(&self, id: &SessionId) -> Result<swival_protocol::PolicyStatus, SessionError> {
        let session = self.inspect(id)?;
        let p = &session.pipeline;
        let mut status = swival_protocol::PolicyStatus {
            session_id: id.clone(),
            filters: p.filter_status(),
            hooks: p.hook_status(),
            reviewer: p.reviewer_status(),
            sandbox: sandbox_status(&session),
            protected: session.tools_protected.iter().map(|p| p.display().to_string()).collect(),
            mcp_servers: self.shared.mcp.status_of(&p.mcp),
            background: None,
        };
        let scripts = status.filters.iter_mut().chain(status.hooks.iter_mut()).chain(status.reviewer.iter_mut());
        let files = scripts
            .flat_map(|s| s.data_files.iter_mut())
            .chain(status.mcp_servers.iter_mut().flat_map(|m| m.data_files.iter_mut()));
        for file in files {
            judge_data(&session, file);
        }
        Ok(status)
    }
}

impl Sessions {
    /// `session/tools`: what the session's next run offers the model —
    /// the file tools, the command and fetch tools its policy allows, and
    /// the tools its MCP servers listed — without loading it.
    pub fn tools(&self, id: &SessionId) -> Result<swival_protocol::SessionToolsResult, SessionError> {
        let session = self.inspect(id)?;
        let cfg = &session.config.config;
        let read_lines = usize::try_from(cfg.max_output_lines).unwrap_or(usize::MAX);
        let style = crate::tools::offer::SchemaStyle::lean_if(cfg.offers_lean_tools());
        let offer = crate::tools::offer::Offer::shared(
            read_lines,
            style,
            crate::sandbox::tool_schemas(&session.commands.policy),
        );
        let schemas = &offer.schemas;
        let text = |v: &serde_json::Value, k: &str| v["function"][k].as_str().unwrap_or_default().to_owned();
        let mut tools: Vec<swival_protocol::ToolInfo> = schemas
            .iter()
            .map(|t| {
                let name = text(t, "name");
                let kind = crate::tools::registry::spec(&name).map_or(swival_protocol::ToolKind::Other, |s| s.kind);
                swival_protocol::ToolInfo { name, kind, description: text(t, "description") }
            })
            .collect();
        for server in self.shared.mcp.status_of(&session.pipeline.mcp) {
            tools.extend(server.tools.iter().map(|t| swival_protocol::ToolInfo {
                name: crate::mcp::spec::namespaced(&server.name, t),
                kind: swival_protocol::ToolKind::Mcp,
                description: String::new(),
            }));
        }
        Ok(swival_protocol::SessionToolsResult { tools })
    }
}

/// `policy/status`'s sandbox part: what is enforced, in plain words.
/// Whether a program's data file is protected as things stand now
/// (`sandbox::data::guarded`): hidden from commands where they can write,
/// with no symlink on its way; why not, when it is not.
fn judge_data(session: &Session, file: &mut swival_protocol::DataFile) {
    let st = &session.sandbox;
    let writable: Vec<std::path::PathBuf> = std::iter::once(session.base_dir.clone())
        .chain(session.commands.plan.iter().flat_map(|p| p.write_dirs.iter().cloned()))
        .collect();
    let path = std::path::Path::new(&file.path);
    // Without commands only the file tools reach it, and they refuse it.
    let (hidden, confined) = match session.commands.policy.enabled() {
        true => (st.hidden.clone(), st.filesystem_confined),
        false => (vec![path.to_owned()], true),
    };
    let verdict = crate::sandbox::data::guarded(path, &hidden, &writable, confined);
    file.protected = verdict.is_ok();
    file.why_not = verdict.err().map(|e| e.to_string());
}

/// What commands see of the home, when it is private.
fn home_status(view: &crate::sandbox::home::HomeView) -> String {
    let shown: Vec<String> = view.toolchain.iter().chain(&view.keep).map(|p| p.display().to_string()).collect();
    format!(
        "commands see nothing of {} but the project, the allowed dirs and: {} (toolchain directories as overlays whose writes vanish with the command; the rest read-only)",
        view.home.display(),
        if shown.is_empty() { "nothing else".to_owned() } else { shown.join(", ") }
    )
}

fn sandbox_status(session: &Session) -> swival_protocol::SandboxStatus {
    let st = &session.sandbox;
    let reach = match session.config.config.files_mode() {
        FilesMode::Some => format!("file tools confined to {} and allowed_dirs", session.base_dir.display()),
        FilesMode::All => "file tools reach any path (files = \"all\") except hidden ones".to_owned(),
        FilesMode::None => format!("file tools confined to {}/.swival (files = \"none\")", session.base_dir.display()),
    };
    let mut enforced = vec![format!("{reach} by the path resolver; / is never reachable")];
    let commands = &session.commands.policy;
    if commands.enabled() {
        let names = commands.allowed_names();
        enforced.push(if names.is_empty() {
            "run_command: any program (yolo), never through a shell".into()
        } else {
            format!(
                "run_command: only {} (resolved to absolute paths at session start), never through a shell",
                names.join(", ")
            )
        });
        if st.filesystem_confined {
            enforced.push(format!(
                "commands may write only in the base dir, allowed_dirs and a per-run TMPDIR (Landlock ABI {})",
                st.landlock_abi.unwrap_or_default()
            ));
        }
        match (st.network_allowed, st.network_block) {
            (true, _) => {}
            (false, Some(crate::sandbox::NetBlock::Namespace)) => {
                enforced.push("commands have no network (private network namespace)".into())
            }
            (false, Some(crate::sandbox::NetBlock::Seccomp)) => {
                enforced.push("commands cannot open IP sockets (seccomp)".into())
            }
            (false, None) => {}
        }
        if st.daemon_socket_hidden {
            enforced.push("swivald's socket is hidden from commands".into());
        }
        if st.unix_sockets_blocked {
            enforced.push("commands cannot create Unix sockets (seccomp): ssh-agent, D-Bus, docker and every other named socket are unreachable".into());
        }
        if st.pid_namespace {
            enforced.push("commands run in a private PID namespace: everything they start (setsid and double forks too) is killed when they end, and /proc shows only their own processes".into());
        }
        enforced.extend(st.home.as_ref().map(home_status));
        if !st.hidden.is_empty() {
            enforced.push(hidden_status(&st.hidden, session.env.home().as_deref()));
        }
        if !st.readonly.is_empty() {
            let list: Vec<String> = st.readonly.iter().map(|p| p.display().to_string()).collect();
            enforced.push(format!("read-only for commands (policy): {}", list.join(", ")));
        }
        enforced.push(limits_status(&session.commands.limits));
        if st.strict_read {
            enforced.push("commands read only system directories, the base dir, allowed_dirs and their temp dir (sandbox_strict_read)".into());
        }
        enforced.push("commands get only PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, TMPDIR and the names in command_env from the environment".into());
    } else {
        enforced.push("run_command is off (no allowed_commands, no yolo)".into());
    }
    enforced.push("fetch_url refuses loopback, private, link-local, CGNAT, multicast and reserved addresses".into());
    if !session.tools_protected.is_empty() {
        enforced.push(format!(
            "file tools refuse to change policy: {}",
            session.tools_protected.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    enforced.push("the code of filter, hook, reviewer, command-provider and MCP-server commands (the program, the script an interpreter runs, source files among the arguments) is pinned by SHA-256 at session start; a changed script is never run. Other files their arguments name are their data: not pinned, and protected from the model".into());
    let mut not_enforced = if commands.enabled() { st.not_enforced.clone() } else { Vec::new() };
    if commands.enabled() {
        not_enforced.extend(limits_gap(&session.commands.limits, st.filesystem_confined));
    }
    not_enforced.extend(session.protection_notes.iter().cloned());
    swival_protocol::SandboxStatus {
        mode: session.config.config.sandbox,
        summary: st.summary(),
        enforced,
        not_enforced,
    }
}

/// What is hidden, in plain words: the credential categories with the
/// paths of each that exist here, then every other hidden path (the
/// daemon's own directories, `sandbox_hide`).
fn hidden_status(hidden: &[std::path::PathBuf], home: Option<&std::path::Path>) -> String {
    use crate::sandbox::credentials::{category_of, CATEGORIES};
    let mut by_category: Vec<(&str, Vec<String>)> = CATEGORIES.iter().map(|c| (c.name, Vec::new())).collect();
    let mut other = Vec::new();
    for path in hidden {
        match home.and_then(|h| category_of(h, path)) {
            Some(name) => {
                if path.exists() {
                    let entry = by_category.iter_mut().find(|(n, _)| *n == name).expect("a category of the table");
                    entry.1.push(path.display().to_string());
                }
            }
            None => other.push(path.display().to_string()),
        }
    }
    let categories: Vec<String> = by_category
        .into_iter()
        .map(|(name, present)| match present.is_empty() {
            true => name.to_owned(),
            false => format!("{name} (here: {})", present.join(", ")),
        })
        .collect();
    let mut text = format!(
        "hidden from commands and file tools: the well-known credential stores under the home directory — {} (docs/security.md lists every path; sandbox_expose takes one off)",
        categories.join("; ")
    );
    if !other.is_empty() {
        text.push_str(&format!("; and {}", other.join(", ")));
    }
    text
}

/// The limits each command runs under, and how they are enforced: by its
/// own cgroup where the machine offers one (`procs::cgroup`), else by
/// per-process rlimits.
fn limits_status(l: &crate::procs::Limits) -> String {
    let show = |v: Option<u64>, unit: &str, key: &str, how: &str| match v {
        Some(n) => format!("{n} {unit} ({key}, {how})"),
        None => format!("no limit on {unit} ({key} = 0)"),
    };
    let parts = match crate::procs::cgroup::available() {
        Ok(cg) => [
            show(l.processes, "processes and threads", "command_max_processes", &format!("pids.max of its {}", cg.name())),
            show(
                l.data_bytes.map(|b| b >> 20),
                "MB of memory for the command and everything it starts (shared mappings, memfd and tmpfs writes included)",
                "command_max_memory_mb",
                &format!("the memory limit of its {}: the kernel's OOM killer", cg.name()),
            ),
            show(
                l.cpu_s,
                "s of CPU time for the command and everything it starts",
                "command_max_cpu_s",
                &format!("its {}'s usage, read while it runs: everything in it is killed past the limit", cg.name()),
            ),
        ],
        Err(_) => [
            show(
                l.processes,
                "processes and threads beyond the user's own when it starts",
                "command_max_processes",
                "RLIMIT_NPROC, which does not bind root; in the PID namespace also its own pid_max where the kernel has one (6.14 on, at least 300)",
            ),
            show(l.data_bytes.map(|b| b >> 20), "MB of data per process", "command_max_memory_mb", "RLIMIT_DATA"),
            show(l.cpu_s, "s of CPU time per process", "command_max_cpu_s", "RLIMIT_CPU: SIGXCPU, then SIGKILL 5 s later"),
        ],
    };
    format!("each command is limited to {}; with or without the kernel sandbox", parts.join("; "))
}

/// What the per-process rlimits leave out, when no cgroup counts a
/// command's use (`None` when one does, or no limit is set); or, with a
/// cgroup, that a command not confined by Landlock could rewrite its own
/// cgroup's limits.
fn limits_gap(l: &crate::procs::Limits, confined: bool) -> Option<String> {
    let limited = l.data_bytes.is_some() || l.cpu_s.is_some() || l.processes.is_some();
    if crate::procs::cgroup::available().is_ok() {
        return (limited && !confined).then(|| {
            "a command could rewrite its own cgroup's limits: commands' writes are not confined by Landlock here"
                .to_owned()
        });
    }
    let why = crate::procs::cgroup::available().as_ref().err()?;
    (l.data_bytes.is_some() || l.cpu_s.is_some()).then(|| format!(
        "command_max_memory_mb and command_max_cpu_s are per process, not per command ({why}): shared mappings, memfd and tmpfs writes are not counted, reserved thread stacks are, and many processes may together use more memory and CPU time than the limit"
    ))
}
