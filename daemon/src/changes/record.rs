//! Recording a run's changes. Each call that may change files is held in
//! a *bracket*, from before it runs to after; what it changed is folded
//! into the run's set (the first `before` and the last `after` of each
//! path). A file tool's bracket takes the tool's own [`Change`] (the bytes
//! it read and wrote), so it is exact and reads nothing again; a
//! command's takes a snapshot before and after and keeps everything that
//! changed while it ran. When another run's bracket in the same project overlapped in
//! time and saw the same path, which of them changed it is not known:
//! the path is marked `shared` in each inexact side, and undo leaves it
//! unless forced.

use super::shadow::{Delta, Held, Shadow, Snap};
use super::{gc, ChangeError};
use crate::store::{ChangeSetRow, FileRecord, Store};
use crate::toolcall::Change;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use swival_protocol::{ChangeSetKind, ChangeSource, SessionId};

/// One project: its snapshot store (opened on first use) and the brackets
/// of the runs working in it, behind one lock.
pub struct Project {
    /// Everything, behind the lock every snapshot holds.
    state: tokio::sync::Mutex<State>,
    /// What opening the store needs.
    open: (super::Git, PathBuf, PathBuf, String, u64),
    /// Held through a command's bracket when commands of the project's
    /// sessions run one at a time (`snapshot_exact_commands`).
    commands: Option<Arc<tokio::sync::Mutex<()>>>,
    /// The sets of runs recording here, not stored yet: a collection keeps
    /// what they name.
    recording: Mutex<Vec<std::sync::Weak<RunLog>>>,
}

/// A project's state.
struct State {
    /// The store, once opened.
    shadow: Option<Shadow>,
    /// A counter ordering bracket starts and ends.
    clock: u64,
    /// Brackets open now: start → run.
    open: BTreeMap<u64, Arc<RunLog>>,
    /// Brackets closed since the oldest open one started.
    closed: Vec<Closed>,
}

/// A closed bracket, kept while an open one may overlap it.
struct Closed {
    /// When it started and ended.
    span: (u64, u64),
    /// Its run.
    log: Arc<RunLog>,
    /// A file tool's (only the paths it named).
    exact: bool,
    /// The paths it saw change.
    paths: BTreeSet<String>,
}

/// One run's set as it grows.
struct RunLog {
    /// The run.
    run_id: String,
    /// Its session.
    session_id: SessionId,
    /// The files so far, and whether the set is stored already.
    folded: Mutex<(BTreeMap<String, FileRecord>, bool)>,
}

impl Project {
    /// A project whose store is `dir`, for `root` (snapshots cover `scope`).
    pub fn new(git: super::Git, dir: PathBuf, root: PathBuf, scope: String, max_file: u64, exact: bool) -> Project {
        let state = State { shadow: None, clock: 0, open: BTreeMap::new(), closed: Vec::new() };
        let commands = exact.then(Arc::default);
        let (open, recording) = ((git, dir, root, scope, max_file), Mutex::default());
        Project { state: tokio::sync::Mutex::new(state), open, commands, recording }
    }

    /// The project's root.
    pub fn root(&self) -> &std::path::Path {
        &self.open.2
    }

    /// Whether a run records changes here now.
    pub fn recording(&self) -> bool {
        self.recording.lock().expect("recording lock").iter().any(|log| log.strong_count() > 0)
    }

    /// The opened store, under the project's lock (held while the guard lives).
    pub async fn lock(&self) -> Result<Locked<'_>, ChangeError> {
        let mut guard = self.state.lock().await;
        opened(&mut guard, &self.open, true).await?;
        Ok(Locked { guard })
    }
}

impl Project {
    /// Collect the project's store, keeping the blobs in `keep` (what its
    /// stored sets name), those the sets of runs still recording name and
    /// those its index holds; removed whole when nothing is kept and no run
    /// records here. Under the project's lock, and only with no call being
    /// recorded: an open bracket's snapshot must stay readable.
    pub async fn collect(&self, keep: HashSet<String>, store: &Store) -> Result<gc::Collected, ChangeError> {
        let mut state = self.state.lock().await;
        if !state.open.is_empty() {
            return Ok(gc::Collected::Busy);
        }
        // With no bracket open, no closed one can overlap one.
        state.closed.clear();
        let dir = self.open.1.clone();
        let mut keep = keep;
        let live = {
            let mut recording = self.recording.lock().expect("recording lock");
            recording.retain(|log| log.strong_count() > 0);
            for log in recording.iter().filter_map(std::sync::Weak::upgrade) {
                let folded = log.folded.lock().expect("run log lock");
                let states = folded.0.values().flat_map(|r| [&r.before, &r.after]).flatten();
                keep.extend(states.filter_map(|s| s.blob.clone()));
            }
            !recording.is_empty()
        };
        // A file tool's contents, in the database.
        let root = self.root().to_string_lossy().into_owned();
        let dropped = store.prune_change_blobs(root, keep.clone()).await?;
        if keep.is_empty() && !live {
            state.shadow = None;
            return match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ChangeError::Io(e)),
                _ => Ok(gc::Collected::Removed),
            };
        }
        let shadow = opened(&mut state, &self.open, true).await?;
        keep.extend(shadow.indexed_blobs().await?);
        // The last snapshot's tree goes too: the next one writes its own.
        shadow.forget_last();
        let removed = tokio::task::spawn_blocking(move || gc::prune_objects(&dir.join("objects"), &keep))
            .await
            .map_err(|e| ChangeError::Io(std::io::Error::other(e)))?
            .map_err(ChangeError::Io)?;
        Ok(gc::Collected::Kept(removed + dropped))
    }
}

/// A project's store, locked.
pub struct Locked<'a> {
    /// The state, holding the opened store.
    guard: tokio::sync::MutexGuard<'a, State>,
}

impl Locked<'_> {
    /// The store.
    pub fn shadow(&mut self) -> &mut Shadow {
        self.guard.shadow.as_mut().expect("opened by Project::lock")
    }
}

/// The store of `state`, opened if it is not yet; with `check`, made
/// again when it was removed under the daemon (its sets are gone with it).
/// A file tool's bracket does not check: it only adds blobs, which a store
/// made again later keeps.
async fn opened<'a>(
    state: &'a mut State,
    (git, dir, root, scope, max): &(super::Git, PathBuf, PathBuf, String, u64),
    check: bool,
) -> Result<&'a mut Shadow, ChangeError> {
    if check && state.shadow.is_some() && !dir.join("HEAD").exists() {
        state.shadow = None;
    }
    if state.shadow.is_none() {
        state.shadow = Some(Shadow::open(git.clone(), dir, root, scope.clone(), *max).await?);
    }
    Ok(state.shadow.as_mut().expect("opened"))
}

/// What was seen before a call.
pub struct Bracket {
    /// When it started.
    start: u64,
    /// The project's command turn, held until the bracket closes.
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
    /// The whole project, or the paths a file tool names.
    seen: Seen,
}

/// A bracket's first look.
enum Seen {
    /// A snapshot of the whole project (a command, an MCP tool).
    Project(Snap),
    /// Nothing: a file tool says what it changed (its [`Change`]).
    Exact,
}

/// Records one run's changes.
pub struct Recorder {
    /// The run's project.
    project: Arc<Project>,
    /// The database.
    store: Arc<Store>,
    /// The run's set.
    log: Arc<RunLog>,
    /// Why the set is incomplete, once a snapshot failed.
    broken: Mutex<Option<String>>,
    /// The contents file tools reported, by blob id, not stored yet.
    pending: Mutex<Pending>,
}

/// Contents waiting to be stored with the run's set.
#[derive(Default)]
struct Pending {
    /// By blob id.
    blobs: std::collections::HashMap<String, Arc<[u8]>>,
    /// Their size.
    bytes: usize,
}

/// Pending contents over this size are stored at once, whatever the run
/// still does.
const PENDING_BUDGET: usize = 32 * 1024 * 1024;

impl Recorder {
    /// A recorder for run `run_id` in `project`.
    pub(super) fn new(project: Arc<Project>, store: Arc<Store>, run_id: &str, session_id: &SessionId) -> Recorder {
        let log = RunLog { run_id: run_id.to_owned(), session_id: session_id.clone(), folded: Mutex::default() };
        let log = Arc::new(log);
        let mut recording = project.recording.lock().expect("recording lock");
        recording.retain(|log| log.strong_count() > 0);
        recording.push(Arc::downgrade(&log));
        drop(recording);
        Recorder { project, store, log, broken: Mutex::new(None), pending: Mutex::default() }
    }

    /// The project's root (paths in the set are relative to it).
    pub fn root(&self) -> &std::path::Path {
        self.project.root()
    }

    /// Give up recording this run (a snapshot failed): its set is not
    /// stored. Whether it was still recording.
    pub fn fail(&self, e: &ChangeError) -> bool {
        let mut broken = self.broken.lock().expect("recorder lock");
        let first = broken.is_none();
        broken.get_or_insert_with(|| e.to_string());
        first
    }

    /// Whether a snapshot failed.
    pub fn failed(&self) -> bool {
        self.broken.lock().expect("recorder lock").is_some()
    }

    /// Open a bracket before a call: a file tool's (`exact`: it will say
    /// what it changed), or one that looks at the whole project.
    pub async fn before(&self, exact: bool) -> Result<Bracket, ChangeError> {
        // A command waits for another session's command in the project to
        // end, so each change has one author.
        let turn = match (exact, &self.project.commands) {
            (false, Some(commands)) => Some(commands.clone().lock_owned().await),
            _ => None,
        };
        let mut state = self.project.state.lock().await;
        let seen = match exact {
            true => Seen::Exact,
            false => Seen::Project(opened(&mut state, &self.project.open, true).await?.snapshot().await?),
        };
        let start = state.clock;
        state.clock += 1;
        state.open.insert(start, self.log.clone());
        Ok(Bracket { start, _turn: turn, seen })
    }

    /// Close the bracket after the call, and fold what it changed: the
    /// file tool's `change`, or what differs in the project now.
    pub async fn after(&self, bracket: Bracket, by: ChangeSource, change: Option<&Change>) -> Result<(), ChangeError> {
        let mut state = self.project.state.lock().await;
        state.open.remove(&bracket.start);
        let result = self.close(&mut state, bracket, by, change).await;
        // Brackets closed before every open one started overlap none.
        let oldest = state.open.keys().next().copied().unwrap_or(u64::MAX);
        state.closed.retain(|c| c.span.1 > oldest);
        result
    }

    /// The work of [`Recorder::after`], under the lock.
    async fn close(
        &self,
        state: &mut State,
        bracket: Bracket,
        by: ChangeSource,
        change: Option<&Change>,
    ) -> Result<(), ChangeError> {
        let (deltas, exact) = match bracket.seen {
            Seen::Project(snap) => {
                let shadow = opened(state, &self.project.open, true).await?;
                let now = shadow.snapshot().await?;
                (shadow.diff(&snap, &now).await?, false)
            }
            Seen::Exact => match change {
                Some(change) => {
                    let shadow = opened(state, &self.project.open, false).await?;
                    let (deltas, blobs) = deltas(shadow, change).await?;
                    self.hold(blobs).await?;
                    (deltas, true)
                }
                None => (Vec::new(), true),
            },
        };
        let end = state.clock;
        state.clock += 1;
        let paths: BTreeSet<String> = deltas.iter().map(|d: &Delta| d.path.clone()).collect();
        self.fold(deltas, by);
        let mut mine = BTreeSet::new();
        for other in state.closed.iter().filter(|c| c.log.run_id != self.log.run_id && c.span.1 > bracket.start) {
            let both: Vec<String> = paths.intersection(&other.paths).cloned().collect();
            if both.is_empty() {
                continue;
            }
            if !exact || other.exact {
                mine.extend(both.iter().cloned());
            }
            if !other.exact || exact {
                mark_shared(&other.log, &self.store, both).await?;
            }
        }
        mark_shared(&self.log, &self.store, mine.into_iter().collect()).await?;
        state.closed.push(Closed { span: (bracket.start, end), log: self.log.clone(), exact, paths });
        Ok(())
    }

    /// Take the project's first snapshot now if it has none yet, so the
    /// first command of a run does not wait for it (the provider's first
    /// reply takes longer). Errors are left for the brackets to meet.
    pub fn warm(&self) {
        let project = self.project.clone();
        tokio::spawn(async move {
            let mut state = project.state.lock().await;
            if let Ok(shadow) = opened(&mut state, &project.open, true).await {
                if !shadow.warm() {
                    let _ = shadow.snapshot().await;
                }
            }
        });
    }

    /// Keep `blobs` for the run's end; store all that wait at once when
    /// they grow past [`PENDING_BUDGET`].
    async fn hold(&self, blobs: Vec<(String, Arc<[u8]>)>) -> Result<(), ChangeError> {
        let full = {
            let mut pending = self.pending.lock().expect("pending lock");
            for (id, bytes) in blobs {
                pending.bytes += bytes.len();
                pending.blobs.insert(id, bytes);
            }
            match pending.bytes > PENDING_BUDGET {
                true => std::mem::take(&mut *pending).blobs.into_iter().collect(),
                false => Vec::new(),
            }
        };
        if full.is_empty() {
            return Ok(());
        }
        let root = self.project.root().to_string_lossy().into_owned();
        Ok(self.store.put_change_blobs(root, full).await?)
    }

    /// Fold one bracket's differences into the set.
    fn fold(&self, deltas: Vec<Delta>, by: ChangeSource) {
        let mut folded = self.log.folded.lock().expect("run log lock");
        for Delta { path, before, after } in deltas {
            let record = folded.0.entry(path.clone()).or_insert_with(|| FileRecord {
                path,
                before,
                after: None,
                by: Vec::new(),
                shared: false,
            });
            record.after = after;
            if !record.by.contains(&by) {
                record.by.push(by.clone());
            }
        }
    }

    /// Store the run's set (paths changed and changed back are left out).
    pub async fn finish(&self) -> Result<ChangeSetRow, ChangeError> {
        if let Some(why) = self.broken.lock().expect("recorder lock").clone() {
            return Err(ChangeError::Broken(why));
        }
        // Under the project's lock, so a bracket of another run closing now
        // marks this set either before it is stored or in the store.
        let _state = self.project.state.lock().await;
        let files: Vec<FileRecord> = {
            let mut folded = self.log.folded.lock().expect("run log lock");
            folded.1 = true;
            folded.0.values().filter(|r| r.before != r.after).cloned().collect()
        };
        // The contents the set names, stored with it; those a later call of
        // the run replaced are dropped.
        let named: std::collections::HashSet<&String> =
            files.iter().flat_map(|r| [&r.before, &r.after]).flatten().filter_map(|s| s.blob.as_ref()).collect();
        let blobs: Vec<(String, Arc<[u8]>)> = {
            let pending = std::mem::take(&mut *self.pending.lock().expect("pending lock"));
            pending.blobs.into_iter().filter(|(id, _)| named.contains(id)).collect()
        };
        let row = ChangeSetRow {
            id: self.log.run_id.clone(),
            session_id: self.log.session_id.clone(),
            run_id: Some(self.log.run_id.clone()),
            root: self.project.root().to_string_lossy().into_owned(),
            kind: ChangeSetKind::Run,
            reverts: None,
            reverted_by: None,
            created_at: crate::clock::now(),
            files,
        };
        self.store.put_change_set(row.clone(), blobs).await?;
        Ok(row)
    }
}

/// What a file tool's `change` did to the project's paths (the file it
/// names, and the one it was moved from, which now holds nothing), and
/// the contents to store. Paths outside the project are left out.
async fn deltas(shadow: &Shadow, change: &Change) -> Result<(Vec<Delta>, Vec<(String, Arc<[u8]>)>), ChangeError> {
    let rel = |path: &std::path::Path| {
        let rel = path.strip_prefix(&shadow.root).ok().filter(|r| !r.as_os_str().is_empty())?;
        Some(rel.to_string_lossy().into_owned())
    };
    let mut blobs = Vec::new();
    let mut held = |held: Option<Held>| {
        let (state, bytes) = held?;
        if let (Some(id), Some(bytes)) = (&state.blob, bytes) {
            blobs.push((id.clone(), bytes));
        }
        Some(state)
    };
    let after = match &change.after {
        Some(content) => held(shadow.content(content).await?),
        None => None,
    };
    let mut deltas = Vec::new();
    if let Some(from) = change.moved_from.as_deref().and_then(rel) {
        deltas.push(Delta { path: from, before: after.clone(), after: None });
    }
    if let Some(path) = rel(&change.path) {
        let before = match &change.before {
            Some(content) => held(shadow.content(content).await?),
            None => None,
        };
        deltas.push(Delta { path, before, after });
    }
    deltas.retain(|d| d.before != d.after);
    Ok((deltas, blobs))
}

/// Mark `paths` shared in a run's set: in memory while the run goes on,
/// in the store once it is stored.
async fn mark_shared(log: &RunLog, store: &Store, paths: Vec<String>) -> Result<(), ChangeError> {
    if paths.is_empty() {
        return Ok(());
    }
    let stored = {
        let mut folded = log.folded.lock().expect("run log lock");
        for path in &paths {
            if let Some(r) = folded.0.get_mut(path) {
                r.shared = true;
            }
        }
        folded.1
    };
    if stored {
        store.mark_shared(&log.run_id, paths).await?;
    }
    Ok(())
}
