//! What runs change in their projects, seen and undone. Each project has a
//! snapshot store (`shadow.rs`: a shadow git repository in the daemon's
//! state dir, driven through the `git` program, `git.rs`). A run folds
//! what each call that may change files changed into its change set
//! (`record.rs`), stored with the run: a file tool's own account of it
//! (the contents it names kept in the database with the set), a command's
//! or an MCP tool's snapshots before and after; `show.rs` turns a set
//! into the list and diffs of `run/changes`, and `revert.rs` puts a set
//! back (`run/revert`), refusing files changed since.

mod blob;
mod gc;
pub mod git;
mod record;
mod revert;
mod shadow;
mod show;
pub mod worktree;

pub use record::{Bracket, Recorder};
pub use show::report_list;

use crate::store::Store;
use git::{Git, GitError};
use sha2::Digest as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why changes could not be recorded, shown or reverted.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    /// git failed or is missing.
    #[error(transparent)]
    Git(#[from] GitError),
    /// Reading or writing the store's files failed.
    #[error("the snapshot store: {0}")]
    Io(std::io::Error),
    /// More files changed at once than a snapshot takes.
    #[error("{0} files changed at once, more than a snapshot takes (200,000)")]
    TooMany(usize),
    /// A content the set needs is not in the store.
    #[error("its snapshot is gone (content {0} is missing from the snapshot store)")]
    Missing(String),
    /// The database failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A snapshot failed earlier in the run.
    #[error("a snapshot failed during the run: {0}")]
    Broken(String),
}

/// The daemon's snapshot stores, one per project root.
pub struct Changes {
    /// The git program.
    git: Git,
    /// Where the stores live (`<state>/snapshots`).
    dir: PathBuf,
    /// Files over this many bytes are kept by size and hash only.
    max_file: u64,
    /// Commands of a project's sessions run one at a time.
    exact_commands: bool,
    /// The database (change sets).
    store: Arc<Store>,
    /// Projects seen, by root.
    projects: Mutex<HashMap<PathBuf, Arc<record::Project>>>,
    /// The stores' disk use as last measured, and when (`daemon/status`
    /// reads it; a collection measures anew).
    measured: Mutex<Option<(std::time::Instant, u64)>>,
}

impl Changes {
    /// The stores under `dir`.
    pub fn new(dir: PathBuf, max_file: u64, exact_commands: bool, store: Arc<Store>) -> Changes {
        let (projects, measured) = (Mutex::default(), Mutex::default());
        Changes { git: Git::locate(), dir, max_file, exact_commands, store, projects, measured }
    }

    /// Whether changes can be recorded at all (git is there).
    pub fn available(&self) -> bool {
        self.git.available()
    }

    /// A recorder for one run in `base` (the session's base dir); `None`
    /// when git is missing.
    pub fn recorder(&self, base: &Path, run_id: &str, session_id: &swival_protocol::SessionId) -> Option<Recorder> {
        if !self.available() {
            return None;
        }
        let (root, scope) = root_of(base);
        // A home directory or `/` is no project: walking it would take
        // minutes and store everything.
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if root == Path::new("/") || home.is_some_and(|h| h == root) {
            return None;
        }
        let project = self.project(&root, scope);
        Some(Recorder::new(project, self.store.clone(), run_id, session_id))
    }

    /// The project at `root`, made on first use.
    fn project(&self, root: &Path, scope: String) -> Arc<record::Project> {
        let mut projects = self.projects.lock().expect("projects lock");
        let key = hex16(root);
        projects
            .entry(root.to_owned())
            .or_insert_with(|| {
                Arc::new(record::Project::new(
                    self.git.clone(),
                    self.dir.join(key),
                    root.to_owned(),
                    scope,
                    self.max_file,
                    self.exact_commands,
                ))
            })
            .clone()
    }

    /// The project a stored set belongs to (its root as recorded).
    fn project_of(&self, root: &str) -> Arc<record::Project> {
        self.project(Path::new(root), ".".to_owned())
    }

    /// The database.
    fn store(&self) -> &Store {
        &self.store
    }

    /// The contents `ids` name for project `root`: a file tool's from the
    /// database, the others from the project's snapshot store (`locked`).
    async fn contents(
        &self,
        root: &str,
        locked: &mut record::Locked<'_>,
        ids: &[String],
    ) -> Result<HashMap<String, Vec<u8>>, ChangeError> {
        let mut contents = self.store.change_blobs(root, ids)?;
        let rest: Vec<String> = ids.iter().filter(|id| !contents.contains_key(*id)).cloned().collect();
        if !rest.is_empty() {
            let (git, repo) = locked.shadow().git();
            contents.extend(shadow::blobs(git, repo, &rest).await?);
        }
        Ok(contents)
    }
}

/// One project's snapshot store on its own, for the benchmark (`bench
/// snapshots`): open it and take snapshots as a run's brackets do.
pub struct SnapshotStore(shadow::Shadow);

impl SnapshotStore {
    /// The store in `dir` for the project at `root`.
    pub async fn open(dir: &Path, root: &Path) -> Result<SnapshotStore, ChangeError> {
        let (root, scope) = root_of(root);
        Ok(SnapshotStore(shadow::Shadow::open(Git::locate(), dir, &root, scope, 10 * 1024 * 1024).await?))
    }

    /// Take a snapshot; its tree.
    pub async fn snapshot(&mut self) -> Result<String, ChangeError> {
        Ok(self.0.snapshot().await?.tree)
    }
}

/// The root a base dir's snapshots are kept for (the enclosing git
/// checkout, so its ignore rules apply, else the base itself) and the
/// base's place in it as a pathspec.
fn root_of(base: &Path) -> (PathBuf, String) {
    let root = base.ancestors().find(|d| d.join(".git").exists()).unwrap_or(base).to_owned();
    let scope = base.strip_prefix(&root).ok().filter(|r| !r.as_os_str().is_empty());
    (root.clone(), scope.map_or_else(|| ".".to_owned(), |s| s.to_string_lossy().into_owned()))
}

/// 16 hex digits of the SHA-256 of a path.
fn hex16(path: &Path) -> String {
    shadow::hex(&sha2::Sha256::digest(path.as_os_str().as_encoded_bytes()))[..16].to_owned()
}

/// `path` (absolute, or relative to `base`) relative to `root`, lexically;
/// `None` when it is outside.
pub fn relative(base: &Path, root: &Path, path: &str) -> Option<String> {
    let out = crate::beneath::lexical(&base.join(path));
    let rel = out.strip_prefix(root).ok()?;
    (!rel.as_os_str().is_empty()).then(|| rel.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_relative_to_the_root_lexically() {
        let (base, root) = (Path::new("/p/sub"), Path::new("/p"));
        assert_eq!(relative(base, root, "a.txt").as_deref(), Some("sub/a.txt"));
        assert_eq!(relative(base, root, "../b.txt").as_deref(), Some("b.txt"));
        assert_eq!(relative(base, root, "/p/c/d").as_deref(), Some("c/d"));
        assert_eq!(relative(base, root, "../../etc/passwd"), None);
        assert_eq!(relative(base, root, "/elsewhere"), None);
    }

    #[test]
    fn the_root_is_the_enclosing_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(root_of(&sub), (sub.clone(), ".".to_owned()));
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(root_of(&sub), (dir.path().to_owned(), "a/b".to_owned()));
    }
}
