//! `swivalctl diff` and `swivalctl undo`: what a run changed, and putting
//! it back. The text forms are shared with the REPL's `/diff` and `/undo`
//! and the ACP slash commands.

use super::daemon::connect;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::methods::typed as m;
use swival_protocol::{
    ChangedFile, ChangesRef, FileChangeKind, RunChanges, RunChangesParams, RunRevertParams, RunRevertResult, SessionId,
};
use swivalctl::ClientError;

/// Which set: a run (or undo) id, a session's last run, or — with
/// neither — the latest run of the project the current directory is in
/// (`latest_run`, said on stderr).
pub async fn which(socket: &Path, id: Option<String>, session: Option<String>) -> Result<ChangesRef, ClientError> {
    if id.is_some() || session.is_some() {
        return Ok(ChangesRef { run_id: id, session_id: session.map(SessionId) });
    }
    let cwd = std::env::current_dir()
        .map_err(|e| ClientError::StartFailed(format!("cannot read the current directory: {e}")))?;
    let base = super::flags::base_dir(None, &cwd);
    let Some((run, session)) = latest_run(socket, &base).await? else {
        return Err(ClientError::Usage(format!(
            "no run in {} yet; name a run (`swivalctl diff RUN`) or a session (`--session ID`); `swivalctl sessions` lists them",
            base.display()
        )));
    };
    eprintln!("latest run of {}: {run} (session {session})", base.display());
    Ok(ChangesRef { run_id: Some(run.0), session_id: None })
}

/// The run started last in a session of the project `base` (not a
/// subagent's), with its session.
pub async fn latest_run(
    socket: &Path,
    base: &Path,
) -> Result<Option<(swival_protocol::RunId, SessionId)>, ClientError> {
    let client = connect(socket).await?;
    let base = base.canonicalize().unwrap_or_else(|_| base.to_owned());
    let list = client.list_sessions().await?;
    let mut latest: Option<(String, swival_protocol::RunId, SessionId)> = None;
    for s in list.sessions.iter().filter(|s| s.run_count > 0 && s.parent.is_none()) {
        if std::path::Path::new(&s.base_dir) != base {
            continue;
        }
        let detail = client.session(&s.session_id).await?;
        if let Some(run) = detail.runs.last() {
            if latest.as_ref().is_none_or(|(at, ..)| run.started_at > *at) {
                latest = Some((run.started_at.clone(), run.run_id.clone(), s.session_id.clone()));
            }
        }
    }
    Ok(latest.map(|(_, run, session)| (run, session)))
}

/// `swivalctl diff`.
pub async fn diff(socket: &Path, which: ChangesRef, stat: bool, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let changes = client.request::<m::RunChangesMethod>(&RunChangesParams { which, no_diff: stat }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&changes).expect("serializes"));
    } else {
        print!("{}", render_changes(&super::clean::value(changes), !stat));
    }
    Ok(ExitCode::SUCCESS)
}

/// `swivalctl undo`: exit 1 when it was refused.
pub async fn undo(socket: &Path, which: ChangesRef, force: bool, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let done = client.request::<m::RunRevert>(&RunRevertParams { which, force }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&done).expect("serializes"));
    } else {
        print!("{}", render_revert(&super::clean::value(done.clone())));
    }
    Ok(if done.applied && done.failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A change set as text: one line per file, then the diffs.
pub fn render_changes(c: &RunChanges, diffs: bool) -> String {
    let mut out = String::new();
    let what = match c.kind {
        swival_protocol::ChangeSetKind::Run => format!("run {}", c.id),
        swival_protocol::ChangeSetKind::Revert => {
            format!("undo {} (of {})", c.id, c.reverts.as_deref().unwrap_or("?"))
        }
    };
    let n = c.files.len();
    let _ = writeln!(out, "{what}: {n} file{} changed in {}", if n == 1 { "" } else { "s" }, c.root);
    if let Some(undo) = &c.reverted_by {
        let _ = writeln!(out, "(undone by {undo})");
    }
    let width = c.files.iter().map(|f| name(f).chars().count()).max().unwrap_or(0);
    for f in &c.files {
        let _ = writeln!(out, "  {:<8}  {:<width$}  {}", kind(f.kind), name(f), details(f));
    }
    if diffs {
        for f in c.files.iter().filter_map(|f| f.diff.as_deref()) {
            out.push_str(f);
            if !f.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

/// An undo's outcome as text.
pub fn render_revert(r: &RunRevertResult) -> String {
    let mut out = String::new();
    if r.applied && r.reverted.is_empty() && r.not_restorable.is_empty() && r.failed.is_empty() {
        let _ = writeln!(out, "nothing to undo: {} changed no file", r.id);
        return out;
    }
    if r.applied {
        let n = r.reverted.len();
        let _ = write!(out, "undid {}: {n} file{} put back", r.id, if n == 1 { "" } else { "s" });
        match &r.revert_id {
            Some(u) => {
                let _ = writeln!(out, " (to redo: swivalctl undo {u})");
            }
            None => out.push('\n'),
        }
        for p in &r.reverted {
            let _ = writeln!(out, "  {p}");
        }
    }
    if !r.conflicts.is_empty() {
        let n = r.conflicts.len();
        let left = if r.applied { "left as they are" } else { "so nothing was changed" };
        let _ = writeln!(out, "{n} file{} changed since {}, {left}:", if n == 1 { "" } else { "s" }, r.id);
        for c in &r.conflicts {
            let _ = writeln!(out, "  {}: {}", c.path, c.cause);
        }
        if !r.applied {
            let _ = writeln!(out, "to put back the others and leave these: swivalctl undo {} --force", r.id);
        }
    }
    for p in &r.not_restorable {
        let _ = writeln!(out, "  {p}: over the snapshot size limit, cannot be put back");
    }
    if !r.failed.is_empty() {
        let n = r.failed.len();
        let _ = writeln!(out, "{n} file{} could not be put back, left as they are:", if n == 1 { "" } else { "s" });
        for f in &r.failed {
            let _ = writeln!(out, "  {}: {}", f.path, f.cause);
        }
    }
    out
}

/// A kind, as a word.
fn kind(k: FileChangeKind) -> &'static str {
    match k {
        FileChangeKind::Created => "created",
        FileChangeKind::Modified => "modified",
        FileChangeKind::Deleted => "deleted",
        FileChangeKind::Renamed => "renamed",
    }
}

/// The file's name (`old → new` for a rename).
fn name(f: &ChangedFile) -> String {
    match &f.old_path {
        Some(old) => format!("{old} → {}", f.path),
        None => f.path.clone(),
    }
}

/// Who changed it, and what is special about it.
fn details(f: &ChangedFile) -> String {
    let mut parts: Vec<String> =
        f.by.iter()
            .map(|b| match b.label.is_empty() {
                true => format!("{}, turn {}", b.tool, b.turn),
                false => format!("{} {}, turn {}", b.tool, b.label, b.turn),
            })
            .collect();
    if f.binary {
        parts.push(format!("binary, {} → {} bytes", f.size_before.unwrap_or(0), f.size_after.unwrap_or(0)));
    }
    if let Some(why) = &f.not_restorable {
        parts.push(why.clone());
    }
    if f.shared {
        parts.push("also changed by another session's command at the same time".into());
    }
    parts.join("; ")
}
