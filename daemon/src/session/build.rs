//! Building a session in memory from its stored row and effective config:
//! the path policy, the pipeline with its pinned scripts, what is
//! protected and hidden from the agent, the command sandbox plan and
//! environment, fetch, secret encryption, the tools and the conversation.
//! Building has no side effect: what a session in use needs beyond that
//! (its MCP leases, the sweep of old spill files) is done by
//! `Sessions::hold`, so a session built only to be looked at changes
//! nothing.

use super::{Parts, Session, SessionError, Sessions};
use crate::agent::conversation::Conversation;
use crate::config::{self, EffectiveConfig};
use crate::environment::CallerEnv;
use crate::pipeline::Pipeline;
use crate::sandbox::{check::EditChecks, CommandEnv, CommandPolicy, FetchEnv};
use crate::secrets::SecretShield;
use crate::store::SessionRow;
use crate::tools::path::PathPolicy;
use crate::tools::{OutputCaps, ToolBox};
use std::path::PathBuf;
use std::sync::Arc;

/// Swival's checks and messages for `allowed_dirs` and `allowed_dirs_ro`
/// (`_resolve_dir_list`): each must be an existing directory other than
/// the root; a run failure (exit 1) in Swival, not a usage error.
fn canon_all(dirs: &[PathBuf], key: &str) -> Result<Vec<PathBuf>, SessionError> {
    dirs.iter()
        .map(|d| {
            let not_dir = || SessionError::Setup(format!("{key} path is not a directory: {}", d.display()));
            let c = d.canonicalize().map_err(|_| not_dir())?;
            if c.parent().is_none() {
                return Err(SessionError::Setup(format!("{key} cannot be the filesystem root: {}", d.display())));
            }
            if !c.is_dir() {
                return Err(not_dir());
            }
            Ok(c)
        })
        .collect()
}

/// The secret shield of a session that encrypts secrets (not for the
/// command provider, as in Swival); the key comes from the config, else
/// from the caller's environment.
fn shield(cfg: &config::SessionConfig, env: &CallerEnv) -> Result<Option<SecretShield>, SessionError> {
    if !cfg.encrypt_secrets || cfg.provider == crate::provider::ProviderKind::Command {
        return Ok(None);
    }
    let env_key = env.secret(crate::secrets::ENCRYPT_KEY_ENV);
    let key = cfg.encrypt_secrets_key.as_ref().map(|k| k.expose().to_owned()).or(env_key);
    SecretShield::from_hex_key(key.as_deref(), cfg.encrypt_secrets_tweak.as_deref(), &cfg.encrypt_secrets_patterns)
        .map(Some)
        .map_err(|e| SessionError::Config(format!("encrypt_secrets: {e}")))
}

impl Sessions {
    /// Build session `row` under `config`, with `messages` as its
    /// conversation, in `env`, its scripts held to `pins`.
    pub(super) fn build(
        &self,
        row: &SessionRow,
        config: EffectiveConfig,
        messages: Vec<crate::message::Message>,
        env: CallerEnv,
        pins: &std::collections::HashMap<String, String>,
        live: bool,
    ) -> Result<(Arc<Session>, Parts), SessionError> {
        // The project (config, trust, pipeline) is the base dir; a
        // worktree session works in its worktree (`worktree::work_dir`).
        let base = PathBuf::from(&row.base_dir);
        let worktree = self.worktree_of(row)?;
        let work = super::worktree::work_dir(&row.base_dir, worktree.as_ref());
        let cfg = &config.config;
        let mut policy = PathPolicy {
            base: work.clone(),
            allow_rw: canon_all(&cfg.allowed_dirs, "allowed_dirs")?,
            allow_ro: canon_all(&cfg.allowed_dirs_ro, "allowed_dirs_ro")?,
            skills: Vec::new(),
            files: cfg.files_mode(),
            protected: Vec::new(),
            hidden: Vec::new(),
            home: env.home(),
            home_view: None,
        };
        let mut pipeline = Pipeline::build(cfg, &base, &env, self.shared.runner.clone(), self.shared.hooks.clone())
            .map_err(|e| SessionError::Setup(e.to_string()))?;
        // Loaded again (or started from another session): what runs must still be what was
        // pinned before (`pins`: path → SHA-256; a new session has nothing recorded yet).
        pipeline.expect_pins(pins);
        if let Some(reviewer) = pipeline.reviewer.as_mut() {
            reviewer.hidden = self.review_hidden(env.home().as_deref());
            for file in &mut reviewer.reads {
                let source = config.sources.get(file.key).map_or(config::SOURCE_DEFAULT, String::as_str);
                file.source = if source == config::SOURCE_REQUEST { config::REQUEST_LABEL } else { source }.to_owned();
            }
        }
        let protection = self.protection(row, worktree.as_ref(), cfg, &pipeline, &policy, live)?;
        policy.protected = protection.paths.clone();
        let git_dir = super::worktree::git_dir(worktree.as_ref());
        let (commands, sandbox) =
            self.commands(cfg, &env, &mut policy, (&protection.paths, &protection.data), git_dir.as_ref())?;
        if cfg.sandbox_mcp {
            crate::mcp::spec::confine(&mut pipeline.mcp, &commands);
        }
        let fetch = FetchEnv {
            base_dir: work.clone(),
            allow_networks: cfg.fetch_allow_networks.clone(),
            max_inline: usize::try_from(cfg.max_output_kb).unwrap_or(50).saturating_mul(1024),
        };
        // Secrets are encrypted before anything reaches the provider.
        let shield = shield(cfg, &env)?;
        let tools = toolbox(cfg, policy);
        let conversation = Conversation::new(self.shared.store.clone(), row.id.clone(), messages);
        let session = Session {
            id: row.id.clone(),
            base_dir: work,
            config,
            env,
            events: self.shared.logs.log(&row.id),
            pipeline,
            commands,
            fetch,
            hook_asks: crate::sandbox::ask::AskGate::new(
                self.shared.approvals.clone(),
                self.shared.settings.approval_timeout,
                &[],
            ),
            sandbox,
            tools_protected: protection.paths,
            protection_notes: protection.notes,
        };
        Ok((Arc::new(session), Parts { conversation, tools, shield }))
    }

    /// What the model may never change or read (`Pipeline::protection`):
    /// policy files, the config files naming them, the `.git` file of the
    /// `worktree` it works in, and the programs' data files — which a session that may run
    /// (`live`, not one only inspected) secures before any command:
    /// created where missing, refused where something was planted
    /// (`sandbox::data`).
    fn protection(
        &self,
        row: &SessionRow,
        worktree: Option<&crate::store::WorktreeRow>,
        cfg: &config::SessionConfig,
        pipeline: &Pipeline,
        policy: &PathPolicy,
        live: bool,
    ) -> Result<crate::pipeline::Protection, SessionError> {
        let base = PathBuf::from(&row.base_dir);
        let config_files: Vec<PathBuf> = self
            .shared
            .settings
            .global_config
            .iter()
            .cloned()
            .chain([base.join(config::PROJECT_FILE), base.join(config::PROJECT_MCP_JSON)])
            .chain(cfg.mcp_config.iter().cloned())
            .collect();
        let mut protection = pipeline.protection(&base, &config_files);
        if live {
            let writable: Vec<PathBuf> =
                std::iter::once(policy.base.clone()).chain(policy.allow_rw.iter().cloned()).collect();
            crate::sandbox::data::secure(&protection.data, &writable)
                .map_err(|e| SessionError::Config(e.to_string()))?;
        }
        protection.paths.extend(super::worktree::git_file(worktree));
        protection.paths.sort();
        Ok(protection)
    }

    /// What commands and file tools never see: the credential stores (but
    /// what `sandbox_expose` shows), the daemon's directories,
    /// `sandbox_hide`, and the programs' data files; canonical where they
    /// exist.
    fn hidden(&self, cfg: &config::SessionConfig, env: &CallerEnv, data: &[PathBuf]) -> Vec<PathBuf> {
        let mut hide = crate::sandbox::default_hidden(env.home().as_deref());
        hide.retain(|h| !cfg.sandbox_expose.contains(h));
        hide.extend(self.shared.settings.daemon_dirs.iter().cloned());
        hide.extend(cfg.sandbox_hide.iter().cloned());
        hide.extend(data.iter().cloned());
        // Most of the well-known stores do not exist: one lstat tells,
        // before the walk that resolving a path takes.
        hide.iter()
            .map(|h| match std::fs::symlink_metadata(h) {
                Ok(_) => h.canonicalize().unwrap_or_else(|_| h.clone()),
                Err(_) => h.clone(),
            })
            .collect()
    }

    /// How the session's commands run: the whitelist (resolved through the
    /// caller's PATH), the kernel sandbox plan with what it hides (also
    /// from the file tools, in `policy`) and keeps read-only (`readonly`,
    /// and a worktree's repository `git_dir`, which they may read), the
    /// command environment, and ask mode's approvals.
    fn commands(
        &self,
        cfg: &config::SessionConfig,
        env: &CallerEnv,
        policy: &mut PathPolicy,
        (readonly, data): (&[PathBuf], &[PathBuf]),
        git_dir: Option<&PathBuf>,
    ) -> Result<(CommandEnv, crate::sandbox::SandboxStatus), SessionError> {
        let base = policy.base.clone();
        let command_policy = CommandPolicy::from_access(cfg.command_access(), &base, &env.path())
            .map_err(|e| SessionError::Config(e.to_string()))?;
        let hide = self.hidden(cfg, env, data);
        // File tools never reach a hidden path either, except one that
        // holds the project itself.
        policy.hidden = hide.iter().filter(|h| !base.starts_with(h)).cloned().collect();
        let write_dirs: Vec<PathBuf> = std::iter::once(base.clone()).chain(policy.allow_rw.iter().cloned()).collect();
        let read_only_dirs: Vec<PathBuf> = policy.allow_ro.iter().chain(git_dir).cloned().collect();
        // The home shows commands (and the file tools) only the project,
        // the allowed dirs, toolchains and what the user exposes.
        policy.home_view =
            crate::sandbox::home::view(env.home().as_deref(), &write_dirs, &cfg.sandbox_expose, &read_only_dirs);
        let input = crate::sandbox::PlanInput {
            mode: cfg.sandbox,
            network_allowed: cfg.command_network,
            write_dirs,
            read_only_dirs,
            home: policy.home_view.clone(),
            socket: self.shared.settings.socket.clone(),
            hide,
            readonly: readonly.iter().chain(git_dir).cloned().collect(),
            strict_read: cfg.sandbox_strict_read,
        };
        let command_env = crate::sandbox::command::allowed_environment(env.vars_os(), &cfg.command_env);
        let (mut commands, sandbox) = CommandEnv::new(
            command_policy,
            &base,
            input,
            &self.shared.settings.sandbox_caps,
            crate::sandbox::default_helper(),
            command_env,
            self.shared.runner.clone(),
        );
        let limit = |n: u64| (n > 0).then_some(n);
        commands.limits = crate::procs::Limits {
            processes: limit(cfg.command_max_processes),
            data_bytes: limit(cfg.command_max_memory_mb).map(|mb| mb.saturating_mul(1 << 20)),
            cpu_s: limit(cfg.command_max_cpu_s),
        };
        if cfg.command_access() == crate::config::CommandAccess::Ask {
            // A command that could reach the daemon's socket could answer
            // its own approvals: ask mode needs the sandbox to prevent it.
            if !(sandbox.daemon_socket_hidden || sandbox.unix_sockets_blocked) {
                return Err(SessionError::Config(
                    "commands = \"ask\" needs the OS sandbox to keep commands away from swivald's socket \
                     (a command could answer its own approvals), and this session's sandbox cannot; \
                     list the programs in allowed_commands instead, or see `swivalctl policy status`"
                        .into(),
                ));
            }
            commands.ask = Some(std::sync::Arc::new(crate::sandbox::ask::AskGate::new(
                self.shared.approvals.clone(),
                self.shared.settings.approval_timeout,
                &cfg.approved_buckets,
            )));
        }
        if cfg.edit_checks {
            let writable: Vec<PathBuf> = std::iter::once(base).chain(policy.allow_rw.iter().cloned()).collect();
            commands.edit_checks = EditChecks::resolve(&cfg.edit_check_commands, &env.path(), &commands, &writable);
        }
        Ok((commands, sandbox))
    }
}

/// The session's toolbox: `policy`, and the config's guard, checks, caps
/// and schema style.
fn toolbox(cfg: &crate::config::SessionConfig, policy: crate::tools::path::PathPolicy) -> ToolBox {
    let mut tools = ToolBox::new(policy);
    let caps = OutputCaps {
        read_bytes: usize::try_from(cfg.max_output_kb).unwrap_or(usize::MAX / 1024).saturating_mul(1024),
        read_lines: usize::try_from(cfg.max_output_lines).unwrap_or(usize::MAX),
    };
    let style = crate::tools::offer::SchemaStyle::lean_if(cfg.offers_lean_tools());
    tools.configure(!cfg.no_read_guard, cfg.edit_checks, style, caps);
    tools
}
