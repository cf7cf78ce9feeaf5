//! A run's setup: the provider client its session's config describes, the
//! MCP tools it offers, the conversation opened with the task, and the
//! model found. A failure here ends the run before its first turn. A
//! compaction between runs gets the part of this it needs
//! ([`for_compaction`]).

use super::{prompt, resume, CompactError, Llm, LoopEnd, Run, RunContext, RunState};
use crate::config::SessionConfig;
use crate::message::{Message, ToolCall};
use crate::provider::{Provider, ProviderKind, ProviderSettings};
use crate::report::RunRecord;
use crate::store::StoreError;
use std::path::Path;
use std::time::Duration;
use swival_protocol::{EventKind, FailureKind, MemoryStats};

/// Why a session's config describes no provider to call.
#[derive(Debug, thiserror::Error)]
pub enum ProviderConfigError {
    /// A provider without a preset URL and no `base_url`.
    #[error("provider = \"{}\" needs base_url; set it in swival.toml or pass --base-url", .0.as_str())]
    NoBaseUrl(ProviderKind),
}

/// A generic base URL gets `/v1` unless it already ends in `/vN`.
fn normalise_base_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let has_version = trimmed
        .rsplit('/')
        .next()
        .is_some_and(|last| last.len() > 1 && last.starts_with('v') && last[1..].chars().all(|c| c.is_ascii_digit()));
    if has_version {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1")
    }
}

/// The provider settings a session's config describes; the key comes from
/// the config, else from the caller's environment (`env`).
pub fn provider_settings(
    cfg: &SessionConfig,
    base_dir: &Path,
    env: &crate::procs::CallerEnv,
    backoff_base: Duration,
) -> Result<ProviderSettings, ProviderConfigError> {
    let kind = cfg.provider;
    let base_url = match (&cfg.base_url, kind.default_base_url()) {
        (Some(url), _) => normalise_base_url(url),
        (None, Some(preset)) => preset.to_owned(),
        (None, None) if kind == ProviderKind::Command => String::new(),
        (None, None) => return Err(ProviderConfigError::NoBaseUrl(kind)),
    };
    let api_key = cfg
        .api_key
        .as_ref()
        .map(|k| k.expose().to_owned())
        .or_else(|| kind.key_envs().iter().find_map(|name| env.secret(name)))
        .or_else(|| (kind == ProviderKind::Lmstudio).then(|| "lm-studio".to_owned()));
    Ok(ProviderSettings {
        kind,
        base_url,
        api_key,
        model: if kind == ProviderKind::Command { None } else { cfg.model.clone() },
        default_model: kind.default_model(),
        stream_usage: cfg.model_prices.is_some(),
        user_agent: cfg.user_agent.clone().unwrap_or_else(|| format!("swivald/{}", crate::VERSION)),
        timeout: crate::config::seconds(cfg.provider_timeout, 1.0),
        attempts: u32::try_from(cfg.retries.max(1)).unwrap_or(u32::MAX),
        backoff_base,
        max_output_tokens: cfg.max_output_tokens,
        temperature: cfg.temperature,
        top_p: cfg.top_p,
        seed: cfg.seed,
        extra_body: cfg.extra_body.clone(),
        reasoning_effort: cfg.reasoning_effort.map(|e| e.as_str().to_owned()),
        // Apple's server speaks only SSE.
        stream: cfg.stream || kind == ProviderKind::Applefm,
        cut_runaway: !cfg.disable_nudges.contains(&swival_protocol::InterventionKind::Runaway),
        command: cfg.model_command.as_ref().map(|c| c.argv.clone()),
        command_pins: Vec::new(),
        runner: None,
        cwd: base_dir.to_owned(),
        env: env.clone(),
    })
}

/// A run that ended in its setup: how, the model if it was found, and
/// what the run holds.
pub(super) type SetupEnd = (LoopEnd, String, RunRecord, RunState);

/// Set a run up: its provider client, the MCP tools it offers (servers not
/// started yet start now), the conversation opened with the task, the
/// model found; a run ready for its first turn, or how it ended. A cancel
/// ends it at any of its waits (a server that never answers, a provider
/// that never replies): what it holds comes back whole.
pub(super) async fn prepare<'a>(ctx: RunContext<'a>, mut state: RunState) -> Result<Run<'a>, SetupEnd> {
    let mut record = RunRecord::default();
    let made = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => Err((LoopEnd::Cancelled, String::new())),
        made = llm(ctx, &mut state, &mut record) => made,
    };
    match made {
        Ok(llm) => Ok(Run::new(ctx, llm, state, record)),
        Err((end, model)) => Err((end, model, record, state)),
    }
}

/// The setup's steps: the run's model client, or how the run ended and the
/// model if it was found.
async fn llm(ctx: RunContext<'_>, state: &mut RunState, record: &mut RunRecord) -> Result<Llm, (LoopEnd, String)> {
    let cfg = ctx.config;
    let provider = provider(ctx).map_err(|e| (LoopEnd::Failed(FailureKind::Setup, e.to_string()), String::new()))?;
    for message in state.tools.mcp_mut().prepare().await {
        ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
    }
    find_skills(ctx, state, record);
    // A change undone in an earlier run may be made again in this one.
    state.tools.new_run();
    match open_conversation(ctx, state, record) {
        Ok(memory) => record.set_memory(memory),
        Err(e) => return Err((LoopEnd::from(e), String::new())),
    }
    let discovered = provider
        .discover(cfg.max_context_tokens)
        .await
        .map_err(|e| (LoopEnd::Failed(FailureKind::Provider, e.to_string()), String::new()))?;
    if let Some(window) = discovered.context_window {
        fit_mcp(ctx, state, window);
    }
    let cache = match cfg.cache.then(|| ctx.services.cache()).transpose() {
        Ok(c) => c,
        Err(e) => return Err((LoopEnd::Failed(FailureKind::Internal, e.to_string()), discovered.model)),
    };
    Ok(Llm {
        provider,
        model: discovered.model,
        context_window: discovered.context_window,
        cache,
        policy_digest: ctx.pipeline.policy_digest(),
    })
}

impl<'a> Run<'a> {
    /// A run about to start: its context, its model, the session's state
    /// it holds until it ends, and its record so far.
    fn new(ctx: RunContext<'a>, llm: Llm, state: RunState, record: RunRecord) -> Run<'a> {
        let RunState { conversation, tools, shield } = state;
        let subagents = ctx.subagents.filter(|_| ctx.config.subagents).map(super::subagents::Subagents::new);
        Run {
            ctx,
            llm,
            conversation,
            tools,
            shield,
            record,
            turn_offset: 0,
            subagents,
            nudges: super::nudge::Switches::new(ctx.config),
            deleted: Default::default(),
            unmade: Default::default(),
            changed: false,
            checkpoints: Default::default(),
            goal: Default::default(),
        }
    }
}

/// Set a job between runs up (a compaction, a restore): the session's
/// provider client and, when it will ask for a summary (`discover`), the
/// model found, or why none was (then a compaction drops the middle turns
/// with a note, and a restore changes nothing). Nothing else of a run's
/// setup: no MCP server starts, no message is added.
pub(super) async fn for_compaction<'a>(
    ctx: RunContext<'a>,
    state: RunState,
    discover: bool,
) -> Result<(Run<'a>, Result<(), String>), (CompactError, RunState)> {
    let cfg = ctx.config;
    let provider = match provider(ctx) {
        Ok(p) => p,
        Err(e) => return Err((CompactError::Failed(FailureKind::Setup, e.to_string()), state)),
    };
    let discovered = if discover {
        tokio::select! {
            d = provider.discover(cfg.max_context_tokens) => d.map_err(|e| e.to_string()),
            _ = ctx.cancel.cancelled() => return Err((CompactError::Cancelled, state)),
        }
    } else {
        Err("no model was looked for".to_owned())
    };
    let (model, context_window, found) = match discovered {
        Ok(d) => (d.model, d.context_window, Ok(())),
        Err(why) => (cfg.model.clone().unwrap_or_default(), cfg.max_context_tokens, Err(why)),
    };
    let llm = Llm { provider, model, context_window, cache: None, policy_digest: ctx.pipeline.policy_digest() };
    Ok((Run::new(ctx, llm, state, RunRecord::default()), found))
}

/// The provider client of the run's session.
fn provider(ctx: RunContext<'_>) -> Result<Provider, ProviderConfigError> {
    let mut settings = provider_settings(ctx.config, ctx.base_dir, ctx.env, ctx.services.backoff_base())?;
    settings.command_pins = ctx.pipeline.provider_pins.clone();
    settings.runner = Some(ctx.services.runner());
    Ok(Provider::new(ctx.services.http(), settings))
}

/// The run's skills (none with `no_skills`), each skipped one a warning;
/// the names go in the report's settings.
fn find_skills(ctx: RunContext<'_>, state: &mut RunState, record: &mut RunRecord) {
    let found = match ctx.config.no_skills {
        true => crate::skills::Discovery::default(),
        false => crate::skills::discover(&crate::skills::Sources {
            base: ctx.base_dir,
            extra: &ctx.config.skills_dir,
            global: crate::skills::global_dirs(),
        }),
    };
    for message in found.warnings {
        ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
    }
    record.skills_discovered = found.catalog.names();
    state.tools.set_skills(found.catalog);
}

/// The messages a run starts with: the system prompt (a new
/// conversation's first message, see [`system_message`]), orphaned tool
/// calls answered, a new conversation's map of the project
/// (`project_map_tokens`), the task, the files it names (unless
/// `read_named_files` is off: then the task is the last message, as in
/// Swival), and the skills it mentions as `$name`. A run that resumes
/// (Swival's `/continue`) adds none of these: the conversation as it is
/// goes to the model. Returns the memory's report stats when a system
/// prompt was built with memory.
fn open_conversation(
    ctx: RunContext<'_>,
    state: &mut RunState,
    record: &mut RunRecord,
) -> Result<Option<MemoryStats>, StoreError> {
    let cfg = ctx.config;
    let mut memory = None;
    let new = state.conversation.messages().is_empty();
    if new && !cfg.no_system_prompt {
        let (text, stats) = system_message(ctx, state);
        memory = stats;
        state.conversation.push(Message::system(text))?;
    }
    let conversation = &mut state.conversation;
    conversation.complete_orphans()?;
    conversation.begin_run();
    if ctx.resume {
        return Ok(memory);
    }
    // A new conversation with tools starts from a map of the project (`tools/map.rs`).
    if let Some(map) = (new && !ctx.bare).then(|| state.tools.project_map(ctx.task, cfg.project_map_budget())).flatten()
    {
        conversation.push(Message::synthetic(map))?;
    }
    conversation.push(Message::user(ctx.task))?;
    if cfg.read_named_files {
        if let Some(files) = state.tools.read_named(ctx.task) {
            conversation.push(Message::synthetic(files))?;
        }
    }
    activate_mentions(ctx, state, record)?;
    Ok(memory)
}

/// Swival's `$name` mentions: each skill the task mentions is activated
/// at once, as a `use_skill` call of the assistant with its result (so a
/// compaction can shorten it like any result), reported at turn 0.
fn activate_mentions(ctx: RunContext<'_>, state: &mut RunState, record: &mut RunRecord) -> Result<(), StoreError> {
    let names = state.tools.skills().mentions(ctx.task);
    if names.is_empty() {
        return Ok(());
    }
    let uid = format!("{:08x}", rand::random::<u32>());
    let arguments = |name: &str| serde_json::json!({ "name": name }).to_string();
    let calls = names
        .iter()
        .map(|name| ToolCall {
            id: format!("auto_skill_{name}_{uid}"),
            name: crate::skills::TOOL.to_owned(),
            arguments: arguments(name),
        })
        .collect::<Vec<_>>();
    state.conversation.push(Message::assistant_turn(None, calls.clone()))?;
    for (call, name) in calls.iter().zip(&names) {
        let (text, succeeded) = match state.tools.skills().activate(name) {
            Ok(text) => (text, true),
            Err(e) => (crate::tools::ToolError::refused(e.to_string()).render(), false),
        };
        let kind = crate::tools::parsed::ParsedCall::read(&call.id, &call.name, &call.arguments).kind;
        let start = EventKind::ToolCall {
            turn: 0,
            id: call.id.clone(),
            name: call.name.clone(),
            kind,
            arguments: call.arguments.clone(),
        };
        super::emit_recorded(ctx.events, ctx.run_id, record, start);
        let result = EventKind::ToolResult {
            turn: 0,
            id: call.id.clone(),
            name: call.name.clone(),
            succeeded,
            duration_s: 0.0,
            content: text.chars().take(4096).collect(),
            result_length: Some(text.len() as u64),
            output: None,
            change: None,
            todo: None,
        };
        super::emit_recorded(ctx.events, ctx.run_id, record, result);
        state.conversation.push(Message::tool_result(&call.id, text))?;
    }
    Ok(())
}

/// A new conversation's system prompt, in Swival's order: the prompt (or
/// its replacement), the instruction files, the memory block, the date,
/// the MCP tools, then the `<continue-here>` block of an interrupted run
/// (taken from the project: the file is removed). A replacement prompt
/// gets no memory, as in Swival, but does get the continue block.
fn system_message(ctx: RunContext<'_>, state: &RunState) -> (String, Option<MemoryStats>) {
    let cfg = ctx.config;
    let replacement = cfg
        .system_prompt
        .as_deref()
        .or((cfg.provider == ProviderKind::Command).then_some(prompt::COMMAND_PROVIDER_PROMPT));
    let (memory, stats) = if replacement.is_none() { resume::memory_block(ctx) } else { (None, None) };
    let files = cfg.files_mode();
    let lean = cfg.offers_lean_tools();
    let instructions = (!cfg.no_instructions && replacement.is_none()).then(|| {
        let (found, warnings) = prompt::Instructions::read(ctx.base_dir, &state.tools.policy().hidden);
        for message in warnings {
            ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
        }
        found
    });
    let mut text =
        prompt::system_prompt(ctx.base_dir, replacement, instructions.as_ref(), files, memory.as_deref(), lean);
    if let Some(skills) = state.tools.skills().prompt_section().filter(|_| replacement.is_none()) {
        text.push_str("\n\n");
        text.push_str(&skills);
    }
    if let Some(info) = prompt::mcp_tool_info(&state.tools.mcp().tool_info()).filter(|_| replacement.is_none()) {
        text.push_str("\n\n");
        text.push_str(&info);
    }
    if cfg.subagents && ctx.subagents.is_some() && replacement.is_none() {
        text.push_str("\n\n");
        text.push_str(super::subagents::GUIDANCE);
    }
    if let Some(block) = resume::continue_block(ctx) {
        text.push_str("\n\n");
        text.push_str(&block);
    }
    (text, stats)
}

/// Drop MCP tools that would take more than half of a `window`-token
/// context (Swival's schema budget), saying so in warnings.
fn fit_mcp(ctx: RunContext<'_>, state: &mut RunState, window: u64) {
    // Without MCP tools there is nothing to fit (and no schema to build).
    if state.tools.mcp().schemas().is_empty() {
        return;
    }
    let mut builtin = state.tools.schemas();
    builtin.extend(crate::sandbox::tool_schemas(&ctx.commands.policy));
    builtin.extend(state.tools.skills().schema());
    for message in state.tools.mcp_mut().fit(window, &builtin) {
        ctx.events.emit(Some(ctx.run_id), EventKind::Warning { message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_base_url_gets_v1_unless_versioned() {
        assert_eq!(normalise_base_url("http://h:1/"), "http://h:1/v1");
        assert_eq!(normalise_base_url("http://h:1/v1"), "http://h:1/v1");
        assert_eq!(normalise_base_url("http://h/api/v2/"), "http://h/api/v2");
    }
}
