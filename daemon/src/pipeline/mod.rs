//! The policy pipeline around every model call (SPEC §7): today the
//! outbound filter chain and the reviewer; hooks, secret encryption and the
//! response cache join it here. Built once per session from its config.

pub mod filter;
pub mod hooks;
pub mod reviewer;

use crate::config::{Command, ProcessMode, SessionConfig};
use crate::procs::{Mode, ProcessRunner, Script};
use filter::Stage;
use hooks::rpc::HookRegistry;
use hooks::{CommandEntry, Hooks};
use reviewer::Reviewer;
use sha2::{Digest, Sha256};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use swival_protocol::{FileDigest, ScriptStatus};

/// One session's pipeline.
#[derive(Clone)]
pub struct Pipeline {
    /// The daemon-wide process runner.
    pub runner: Arc<ProcessRunner>,
    /// Filter stages, in order.
    pub filters: Vec<Stage>,
    /// The reviewer, if configured.
    pub reviewer: Option<Reviewer>,
    /// Command hooks and the client hook registry.
    pub hooks: Hooks,
}

pub(crate) fn mode_of(mode: ProcessMode, prespawn: u32) -> Mode {
    match (mode, prespawn) {
        (ProcessMode::Persistent, _) => Mode::Persistent,
        (ProcessMode::Oneshot, 0) => Mode::Oneshot,
        (ProcessMode::Oneshot, n) => Mode::Prespawn(n),
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Oneshot => "oneshot",
        Mode::Prespawn(_) => "prespawn",
        Mode::Persistent => "persistent",
    }
}

/// Find `program` as the OS would: a path as given, a bare name on PATH.
pub fn locate(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    std::env::var_os("PATH").iter().flat_map(std::env::split_paths).map(|d| d.join(program)).find(|p| executable(p))
}

/// Swival's start-up check: the program must be on PATH or an executable file.
fn check(command: &Command, key: &str) -> Result<(), String> {
    match locate(command.program()) {
        Some(_) => Ok(()),
        None => Err(format!("{key} executable not found or not executable: {}", command.program())),
    }
}

impl Pipeline {
    /// The pipeline a session's config describes; fails when a script's
    /// program is missing or not executable (Swival's start-up check).
    pub fn build(
        cfg: &SessionConfig,
        base_dir: &Path,
        runner: Arc<ProcessRunner>,
        registry: Arc<HookRegistry>,
    ) -> Result<Pipeline, String> {
        let mut filters = Vec::new();
        for stage in cfg.filter_stages() {
            check(&stage.command, "llm_filter")?;
            filters.push(Stage {
                script: Script { argv: stage.command.argv.clone(), cwd: base_dir.to_owned(), env: Vec::new() },
                mode: mode_of(stage.mode, stage.prespawn),
                timeout: Duration::from_secs_f64(stage.timeout_s.max(0.001)),
                display: stage.command.display(),
            });
        }
        let reviewer = match &cfg.reviewer {
            Some(cmd) => {
                check(cmd, "reviewer")?;
                Some(Reviewer {
                    argv: cmd.argv.clone(),
                    base_dir: base_dir.to_owned(),
                    timeout: Duration::from_secs_f64(cfg.reviewer_timeout_s.max(0.001)),
                    max_rounds: cfg.max_review_rounds,
                    display: cmd.display(),
                })
            }
            None => None,
        };
        let mut commands = Vec::new();
        for hook in &cfg.hooks {
            check(&hook.command, "hook")?;
            commands.push(CommandEntry::new(hook, base_dir, &registry));
        }
        let hooks = Hooks { commands, registry, runner: runner.clone() };
        Ok(Pipeline { runner, filters, reviewer, hooks })
    }

    /// A digest of every filter and hook in force: commands, modes,
    /// timeouts and the contents of the files they run. Part of the
    /// response cache key, so changing a filter script misses the cache.
    pub fn policy_digest(&self) -> String {
        let mut h = Sha256::new();
        let mut add = |label: &str, argv: &[String], mode: &str| {
            h.update(label.as_bytes());
            for a in argv {
                h.update(a.as_bytes());
                h.update(b"\0");
            }
            h.update(mode.as_bytes());
            for d in digests(argv) {
                h.update(d.sha256.as_bytes());
            }
        };
        for s in &self.filters {
            add("filter", &s.script.argv, mode_name(s.mode));
        }
        for c in &self.hooks.commands {
            add(hooks::point_name(c.point), &c.script.argv, mode_name(c.mode));
        }
        hex::encode(h.finalize())
    }

    /// `policy/status` entries for the filter stages.
    pub fn filter_status(&self) -> Vec<ScriptStatus> {
        self.filters
            .iter()
            .map(|s| ScriptStatus {
                command: s.display.clone(),
                mode: mode_name(s.mode).into(),
                timeout_s: s.timeout.as_secs_f64(),
                point: None,
                priority: None,
                files: digests(&s.script.argv),
            })
            .collect()
    }

    /// `policy/status` entries for the hooks, command and client, in running order per point.
    pub fn hook_status(&self) -> Vec<ScriptStatus> {
        let mut out: Vec<(i64, u64, ScriptStatus)> = self
            .hooks
            .commands
            .iter()
            .map(|c| {
                (
                    c.priority,
                    c.order,
                    ScriptStatus {
                        command: c.name.clone(),
                        mode: mode_name(c.mode).into(),
                        timeout_s: c.timeout.as_secs_f64(),
                        point: Some(hooks::point_name(c.point).into()),
                        priority: Some(c.priority),
                        files: digests(&c.script.argv),
                    },
                )
            })
            .collect();
        for r in self.hooks.registry.all() {
            for point in &r.points {
                out.push((
                    r.priority,
                    r.order,
                    ScriptStatus {
                        command: format!("rpc:{}", r.name),
                        mode: "rpc".into(),
                        timeout_s: r.timeout.as_secs_f64(),
                        point: Some(hooks::point_name(*point).into()),
                        priority: Some(r.priority),
                        files: Vec::new(),
                    },
                ));
            }
        }
        out.sort_by_key(|(p, o, _)| (*p, *o));
        out.into_iter().map(|(_, _, s)| s).collect()
    }

    /// The `policy/status` entry for the reviewer.
    pub fn reviewer_status(&self) -> Option<ScriptStatus> {
        self.reviewer.as_ref().map(|r| ScriptStatus {
            command: r.display.clone(),
            mode: "oneshot".into(),
            timeout_s: r.timeout.as_secs_f64(),
            point: None,
            priority: None,
            files: digests(&r.argv),
        })
    }
}

/// SHA-256 of the program and of every argument that names a file (the
/// script an interpreter runs).
pub fn digests(argv: &[String]) -> Vec<FileDigest> {
    let mut out = Vec::new();
    for (i, arg) in argv.iter().enumerate() {
        let path =
            if i == 0 { locate(arg) } else { Some(PathBuf::from(arg)).filter(|p| p.is_absolute() && p.is_file()) };
        if let Some(path) = path {
            if let Ok(bytes) = std::fs::read(&path) {
                out.push(FileDigest { path: path.display().to_string(), sha256: hex::encode(Sha256::digest(&bytes)) });
            }
        }
    }
    out
}
