//! The policy pipeline around every model call (SPEC §7): today the
//! outbound filter chain and the reviewer; hooks, secret encryption and the
//! response cache join it here. Built once per session from its config.

pub mod filter;
pub mod hooks;
pub mod reviewer;

use crate::config::{Command, ProcessMode, SessionConfig};
use crate::procs::pin::{data_of, pin_argv};
use crate::procs::{CallerEnv, Mode, Pinned, ProcessRunner, Script};
use filter::Stage;
use hooks::rpc::HookRegistry;
use hooks::{CommandEntry, Hooks};
use reviewer::Reviewer;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use swival_protocol::{DataFile, FileDigest, ScriptStatus};

/// Policy files and directories the agent may never change.
#[derive(Debug, Clone, Default)]
pub struct Protection {
    /// Files and directory trees, canonical, sorted.
    pub paths: Vec<std::path::PathBuf>,
    /// The programs' data files (`data_files`): hidden from the model, not
    /// only kept from changing (`sandbox::data`).
    pub data: Vec<std::path::PathBuf>,
    /// What could not be protected, in plain words.
    pub notes: Vec<String>,
}

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
    /// The files of the `command` provider, pinned at session start.
    pub provider_pins: Vec<Pinned>,
    /// The data files the `command` provider's arguments name.
    pub provider_data: Vec<PathBuf>,
    /// The MCP servers the session names, their files pinned like scripts.
    pub mcp: Vec<crate::mcp::ServerSpec>,
}

pub(crate) fn mode_of(mode: ProcessMode, prespawn: u32) -> Mode {
    match (mode, prespawn) {
        (ProcessMode::Persistent, _) => Mode::Persistent,
        (ProcessMode::Oneshot, 0) => Mode::Oneshot,
        (ProcessMode::Oneshot, n) => Mode::Prespawn(n),
    }
}

fn mode_name(mode: Mode) -> swival_protocol::ScriptMode {
    match mode {
        Mode::Oneshot => swival_protocol::ScriptMode::Oneshot,
        Mode::Prespawn(_) => swival_protocol::ScriptMode::Prespawn,
        Mode::Persistent => swival_protocol::ScriptMode::Persistent,
    }
}

pub use crate::procs::locate;

/// Why a session's pipeline cannot be built (Swival's start-up check).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A script's program is neither on the caller's PATH nor an
    /// executable file; `key` is the config key naming it.
    #[error("{key} executable not found or not executable: {program}")]
    NotExecutable { key: &'static str, program: String },
}

/// The reviewer of `self_review`: this daemon's `swivalctl`, beside it, in
/// reviewer mode; it reviews in a session started from the reviewed one
/// (`SWIVALD_SESSION`), so the same model, config and pipeline judge.
fn self_review_command(base_dir: &Path) -> crate::config::Command {
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("swivalctl")));
    let program = beside.filter(|p| p.is_file()).map_or_else(|| "swivalctl".to_owned(), |p| p.display().to_string());
    let argv = [program.as_str(), "run", "--reviewer-mode", "--quiet"].map(str::to_owned).to_vec();
    crate::config::Command { argv, source_dir: base_dir.to_owned() }
}

/// Swival's start-up check: the program must be on the caller's PATH or
/// an executable file.
fn check(command: &Command, key: &'static str, env: &CallerEnv) -> Result<(), PipelineError> {
    match locate(command.program(), &env.path()) {
        Some(_) => Ok(()),
        None => Err(PipelineError::NotExecutable { key, program: command.program().to_string() }),
    }
}

impl Pipeline {
    /// The pipeline a session's config describes, its scripts run in
    /// `env` (the caller's); fails when a script's program is missing or
    /// not executable (Swival's start-up check).
    pub fn build(
        cfg: &SessionConfig,
        base_dir: &Path,
        env: &CallerEnv,
        runner: Arc<ProcessRunner>,
        registry: Arc<HookRegistry>,
    ) -> Result<Pipeline, PipelineError> {
        let path = env.path();
        let mut filters = Vec::new();
        for stage in cfg.filter_stages() {
            check(&stage.command, "llm_filter", env)?;
            filters.push(Stage {
                script: Script {
                    argv: stage.command.argv.clone(),
                    cwd: base_dir.to_owned(),
                    base: env.clone(),
                    env: Vec::new(),
                    pins: pin_argv(&stage.command.argv, base_dir, &path),
                },
                mode: mode_of(stage.mode, stage.prespawn),
                timeout: crate::config::seconds(stage.timeout_s, 0.001),
                display: stage.command.display(),
            });
        }
        let own = (cfg.self_review && cfg.reviewer.is_none()).then(|| self_review_command(base_dir));
        let reviewer = match cfg.reviewer.as_ref().or(own.as_ref()) {
            Some(cmd) => {
                check(cmd, "reviewer", env)?;
                // Swival exports an explicitly configured key to the
                // reviewer; one already in the environment is inherited.
                let encrypt_key = cfg.encrypt_secrets.then_some(cfg.encrypt_secrets_key.as_ref()).flatten();
                Some(Reviewer {
                    argv: cmd.argv.clone(),
                    base_dir: base_dir.to_owned(),
                    base: env.clone(),
                    encrypt_key: encrypt_key.cloned(),
                    timeout: crate::config::seconds(cfg.reviewer_timeout_s, 0.001),
                    max_rounds: cfg.max_review_rounds,
                    display: cmd.display(),
                    pins: pin_argv(&cmd.argv, base_dir, &path),
                    // The session's own review puts `verify` in its prompt.
                    reads: own
                        .as_ref()
                        .and(cfg.verify.as_ref())
                        .map(|path| reviewer::ReviewFile { key: "verify", path: path.clone(), source: String::new() })
                        .into_iter()
                        .collect(),
                    hidden: Vec::new(),
                })
            }
            None => None,
        };
        let mut commands = Vec::new();
        for hook in &cfg.hooks {
            check(&hook.command, "hook", env)?;
            commands.push(CommandEntry::new(hook, base_dir, env, &registry));
        }
        let hooks = Hooks { commands, registry, runner: runner.clone() };
        let (provider_pins, provider_data) = match (&cfg.model_command, cfg.provider) {
            (Some(cmd), crate::provider::ProviderKind::Command) => {
                (pin_argv(&cmd.argv, base_dir, &path), data_of(&cmd.argv, base_dir))
            }
            _ => (Vec::new(), Vec::new()),
        };
        let mcp = crate::mcp::spec::specs(cfg, base_dir, env);
        Ok(Pipeline { runner, filters, reviewer, hooks, provider_pins, provider_data, mcp })
    }

    /// Every file the pipeline runs, as pinned: filter stages, command
    /// hooks, the reviewer, the `command` provider and MCP servers.
    pub fn pinned(&self) -> impl Iterator<Item = &Pinned> {
        let filters = self.filters.iter().flat_map(|s| &s.script.pins);
        let hooks = self.hooks.commands.iter().flat_map(|c| &c.script.pins);
        let reviewer = self.reviewer.iter().flat_map(|r| &r.pins);
        let mcp = self.mcp.iter().flat_map(|s| &s.pins);
        filters.chain(hooks).chain(reviewer).chain(&self.provider_pins).chain(mcp)
    }

    /// Hold every pin to the hash `recorded` (path → SHA-256) holds for it:
    /// a session loaded again keeps what it pinned when it was created.
    pub fn expect_pins(&mut self, recorded: &std::collections::HashMap<String, String>) {
        let filters = self.filters.iter_mut().flat_map(|s| s.script.pins.iter_mut());
        let hooks = self.hooks.commands.iter_mut().flat_map(|c| c.script.pins.iter_mut());
        let reviewer = self.reviewer.iter_mut().flat_map(|r| r.pins.iter_mut());
        let mcp = self.mcp.iter_mut().flat_map(|s| s.pins.iter_mut());
        for pin in filters.chain(hooks).chain(reviewer).chain(self.provider_pins.iter_mut()).chain(mcp) {
            if let Some(sha) = recorded.get(&pin.path.display().to_string()) {
                pin.expect(sha);
            }
        }
    }

    /// What the agent may never change (SPEC §6): every pinned file, the
    /// directory of each one inside `base_dir` (a filter's helper module
    /// is policy as well) and the existing `config_files`; all canonical.
    /// A script directly in the base dir protects only itself, and a note
    /// says so.
    pub fn protection(&self, base_dir: &Path, config_files: &[std::path::PathBuf]) -> Protection {
        let mut paths = Vec::new();
        let mut notes = Vec::new();
        for pin in self.pinned() {
            let file = pin.real.clone();
            if file.starts_with(base_dir) {
                match file.parent() {
                    Some(dir) if dir != base_dir => paths.push(dir.to_owned()),
                    _ => notes.push(format!(
                        "{} lies directly in the base directory, so only the file itself is protected, not modules beside it; move it into a subdirectory to protect its helpers too",
                        file.display()
                    )),
                }
            }
            paths.push(file);
        }
        // A script's data (a log, a database, a rules file it reads) is
        // not pinned — the program may write it — but the model may not
        // change it, wherever it lies (an allowed dir is writable too):
        // only the file itself, whether or not it exists yet.
        let mut data = self.data_files();
        data.sort();
        data.dedup();
        paths.extend(data.iter().cloned());
        // Config files are protected whether or not they exist yet.
        paths.extend(config_files.iter().map(|f| f.canonicalize().unwrap_or_else(|_| f.clone())));
        let argvs =
            self.filters.iter().map(|s| &s.script.argv).chain(self.hooks.commands.iter().map(|c| &c.script.argv));
        for argv in argvs.chain(self.reviewer.iter().map(|r| &r.argv)) {
            if argv.iter().skip(1).any(|a| a == "-m" || a == "-c") {
                notes.push(format!(
                    "`{}` loads code by name (-m or -c): only the files named on its command line are pinned and protected",
                    argv.join(" ")
                ));
            }
        }
        for pin in self.pinned() {
            if pin.real.starts_with(base_dir) && pin.real.extension().is_none() {
                notes.push(format!(
                    "{} is a program inside the base directory: libraries it loads from the project (a virtualenv, node_modules) are not protected; install it outside the project",
                    pin.real.display()
                ));
            }
        }
        paths.sort();
        paths.dedup();
        notes.sort();
        notes.dedup();
        Protection { paths, data, notes }
    }

    /// Every file the pipeline's commands name as data (not code), with
    /// the symlinks of its directory resolved (not its own).
    pub fn data_files(&self) -> Vec<PathBuf> {
        let scripts = self.filters.iter().map(|s| &s.script).chain(self.hooks.commands.iter().map(|c| &c.script));
        let mut out: Vec<PathBuf> = scripts.flat_map(|s| data_of(&s.argv, &s.cwd)).collect();
        if let Some(r) = &self.reviewer {
            out.extend(data_of(&r.argv, &r.base_dir));
        }
        out.extend(self.provider_data.iter().cloned());
        out.extend(self.mcp.iter().flat_map(|s| s.data.iter().cloned()));
        out.into_iter().map(|p| real_dir(&p)).collect()
    }

    /// A digest of every filter and hook in force: commands, modes,
    /// timeouts and the contents of the files they run. Part of the
    /// response cache key, so changing a filter script misses the cache.
    pub fn policy_digest(&self) -> String {
        let mut h = Sha256::new();
        let mut add = |label: &str, script: &Script, mode: &str| {
            h.update(label.as_bytes());
            for a in &script.argv {
                h.update(a.as_bytes());
                h.update(b"\0");
            }
            h.update(mode.as_bytes());
            for d in &script.pins {
                h.update(d.sha256.as_bytes());
            }
        };
        for s in &self.filters {
            add("filter", &s.script, mode_name(s.mode).name());
        }
        for c in &self.hooks.commands {
            add(c.point.name(), &c.script, mode_name(c.mode).name());
        }
        hex::encode(h.finalize())
    }

    /// `policy/status` entries for the filter stages.
    pub fn filter_status(&self) -> Vec<ScriptStatus> {
        self.filters
            .iter()
            .map(|s| ScriptStatus {
                command: s.display.clone(),
                mode: mode_name(s.mode),
                timeout_s: s.timeout.as_secs_f64(),
                point: None,
                priority: None,
                files: digests(&s.script.pins),
                data_files: data_status(&s.script.argv, &s.script.cwd),
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
                        mode: mode_name(c.mode),
                        timeout_s: c.timeout.as_secs_f64(),
                        point: Some(c.point),
                        priority: Some(c.priority),
                        files: digests(&c.script.pins),
                        data_files: data_status(&c.script.argv, &c.script.cwd),
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
                        mode: swival_protocol::ScriptMode::Rpc,
                        timeout_s: r.timeout.as_secs_f64(),
                        point: Some(*point),
                        priority: Some(r.priority),
                        files: Vec::new(),
                        data_files: Vec::new(),
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
            mode: swival_protocol::ScriptMode::Oneshot,
            timeout_s: r.timeout.as_secs_f64(),
            point: None,
            priority: None,
            files: digests(&r.pins),
            data_files: data_status(&r.argv, &r.base_dir),
        })
    }
}

/// `path` with the symlinks of its directory resolved, and its own name
/// kept: a data file that is a symlink stays one, so it is refused
/// (`sandbox::data`) rather than followed.
fn real_dir(path: &Path) -> PathBuf {
    match (path.parent().map(Path::canonicalize), path.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => path.to_owned(),
    }
}

/// The pinned files of a script, as `policy/status` lists them: the
/// hashes the session pinned, which are what may run.
pub fn digests(pins: &[Pinned]) -> Vec<FileDigest> {
    pins.iter().map(|p| FileDigest { path: p.path.display().to_string(), sha256: p.sha256.clone() }).collect()
}

/// The data files of a command run from `cwd`, as `policy/status` lists
/// them (`protected` is judged by the session: `sandbox::data::guarded`).
fn data_status(argv: &[String], cwd: &Path) -> Vec<DataFile> {
    data_of(argv, cwd)
        .into_iter()
        .map(|p| DataFile { path: p.display().to_string(), protected: false, why_not: None })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Command;

    fn script(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn command(path: &Path, base: &Path) -> Command {
        Command { argv: vec![path.display().to_string()], source_dir: base.to_owned() }
    }

    #[test]
    fn a_script_in_a_subdirectory_protects_its_directory_and_one_at_the_root_only_itself() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("scripts")).unwrap();
        script(&base.join("scripts/f.sh"));
        script(&base.join("review.sh"));
        let cfg = SessionConfig {
            llm_filter: vec![command(&base.join("scripts/f.sh"), &base)],
            reviewer: Some(command(&base.join("review.sh"), &base)),
            ..SessionConfig::default()
        };
        let pipeline =
            Pipeline::build(&cfg, &base, &CallerEnv::Daemon, Arc::new(ProcessRunner::new(1)), Arc::default()).unwrap();
        let toml = base.join("swival.toml");
        std::fs::write(&toml, "").unwrap();
        let p = pipeline.protection(&base, &[toml.clone(), base.join("missing.toml")]);
        assert!(p.paths.contains(&base.join("scripts")), "{:?}", p.paths);
        assert!(p.paths.contains(&base.join("review.sh")) && p.paths.contains(&toml), "{:?}", p.paths);
        assert!(!p.paths.contains(&base), "the whole base dir must never be protected: {:?}", p.paths);
        assert_eq!(p.notes.len(), 1);
        assert!(p.notes[0].contains("review.sh") && p.notes[0].contains("subdirectory"), "{:?}", p.notes);
    }
}
