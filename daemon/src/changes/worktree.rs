//! Sessions in their own git worktree: made from the user's HEAD on a
//! branch `swival/<session-id>` in a directory the daemon owns, committed
//! to that branch and applied back to the user's checkout as uncommitted
//! changes, and removed (their branch kept) once their session is gone.
//!
//! Every call runs in the user's repository with their own config (their
//! filters apply) and with hooks and signing off: nothing of the user's
//! runs because of a worktree. A conflict is decided by `git apply`'s exit
//! code, file by file, never by reading its words.

use super::git::{self, Git, GitError, Repo};
use crate::beneath::Beneath;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The daemon's own files in a project (history, spill files, the trash):
/// never committed from a worktree, never counted as the user's changes.
const OWN_FILES: &str = ":(top,exclude).swival";

/// Why a worktree could not be made, applied or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The directory is not in a git repository whose HEAD is a commit.
    #[error("{} is not a git repository with a commit; --worktree needs one", .0.display())]
    NotARepository(PathBuf),
    /// A directory could not be made.
    #[error("cannot create {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    /// git failed.
    #[error(transparent)]
    Git(#[from] GitError),
}

/// A worktree just made.
#[derive(Debug, Clone)]
pub struct Created {
    /// The top of the user's checkout.
    pub origin: PathBuf,
    /// The repository's common git directory.
    pub git_dir: PathBuf,
    /// The worktree's own git directory (in `git_dir`'s `worktrees/`).
    pub admin_dir: PathBuf,
    /// The worktree's directory.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
    /// The commit it starts from (the user's HEAD).
    pub base_commit: String,
    /// Files with uncommitted changes in the user's checkout (relative to
    /// its top), which the worktree does not have.
    pub uncommitted: Vec<PathBuf>,
}

/// What an apply did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// Whether the changes are now in the checkout.
    pub applied: bool,
    /// The files the changes touch.
    pub files: Vec<String>,
    /// When not applied, the files whose change does not apply.
    pub conflicts: Vec<String>,
}

/// A call in the user's repository at `cwd`, with their config.
fn user(cwd: &Path) -> Repo {
    Repo { user_config: true, cwd: cwd.to_owned(), ..Repo::default() }
}

/// A call in the worktree at `path` whose git directory is `admin`: named,
/// never found through the worktree's `.git` file, which the model could
/// have rewritten to point at a repository of its own making.
fn in_tree(path: &Path, admin: &Path) -> Repo {
    Repo {
        git_dir: Some(admin.to_owned()),
        work_tree: Some(path.to_owned()),
        cwd: path.to_owned(),
        user_config: true,
        ..Repo::default()
    }
}

/// The branch of session `sid`'s worktree.
pub fn branch_of(sid: &str) -> String {
    format!("swival/{sid}")
}

/// Where session `sid`'s worktree of the checkout topped at `origin`
/// goes: `<root>/<16 hex of sha256(origin)>/<sid>`.
pub fn location(root: &Path, origin: &Path, sid: &str) -> PathBuf {
    let digest = Sha256::digest(git::bytes_of(origin));
    root.join(&hex::encode(digest)[..16]).join(sid)
}

/// The checkout `dir` is in: its top, its common git directory and its
/// HEAD commit.
async fn origin_of(g: &Git, dir: &Path) -> Result<(PathBuf, PathBuf, String), WorktreeError> {
    let args = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "HEAD^{commit}"];
    let out = g.output(&user(dir), &args, b"").await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    match (out.code, lines.as_slice()) {
        (Some(0), [top, common, head]) => Ok((PathBuf::from(top), PathBuf::from(common), (*head).to_owned())),
        _ => Err(WorktreeError::NotARepository(dir.to_owned())),
    }
}

/// Make session `sid`'s worktree of the checkout `dir` is in, under `root`.
pub async fn create(g: &Git, root: &Path, dir: &Path, sid: &str) -> Result<Created, WorktreeError> {
    let (origin, git_dir, base_commit) = origin_of(g, dir).await?;
    let path = location(root, &origin, sid);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| WorktreeError::Io { path: parent.to_owned(), source })?;
    }
    let branch = branch_of(sid);
    let shown = path.display().to_string();
    let args = ["-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "-b", &branch, &shown, &base_commit];
    g.run(&user(&origin), &args, b"").await?;
    let path = path.canonicalize().unwrap_or(path);
    let admin = g.run(&user(&path), &["rev-parse", "--path-format=absolute", "--git-dir"], b"").await?;
    let admin_dir = PathBuf::from(String::from_utf8_lossy(&admin).trim());
    let status = ["status", "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--", ".", OWN_FILES];
    let uncommitted = match g.run(&user(&origin), &status, b"").await {
        // `XY path` records (`--no-renames`: one path each).
        Ok(out) => git::records(&out).filter_map(|r| r.get(3..)).map(git::path_of).collect(),
        Err(e) => {
            tracing::warn!("cannot list the uncommitted changes of {}: {e}", origin.display());
            Vec::new()
        }
    };
    Ok(Created { origin, git_dir, admin_dir, path, branch, base_commit, uncommitted })
}

/// Undo [`create`] (the session could not be made): the worktree and its
/// branch, which holds nothing yet, go.
pub async fn discard(g: &Git, made: &Created) {
    let shown = made.path.display().to_string();
    let origin = user(&made.origin);
    for args in [vec!["worktree", "remove", "--force", &shown], vec!["branch", "-D", &made.branch]] {
        if let Err(e) = g.run(&origin, &args, b"").await {
            tracing::warn!("cannot undo the worktree {shown}: {e}");
        }
    }
}

/// Commit everything in the worktree at `path` (git directory `admin`;
/// but the daemon's own files and what it carried from the checkout at
/// `origin`) to its branch, hooks and signing off; false when there was
/// nothing to commit.
pub async fn commit_work(
    g: &Git,
    path: &Path,
    admin: &Path,
    origin: &Path,
    message: &str,
) -> Result<bool, WorktreeError> {
    let repo = in_tree(path, admin);
    let mut pathspecs = b".\0".to_vec();
    pathspecs.extend_from_slice(OWN_FILES.as_bytes());
    pathspecs.push(0);
    for file in carried(g, &repo, path, origin).await? {
        pathspecs.extend_from_slice(b":(top,exclude,literal)");
        pathspecs.extend_from_slice(git::bytes_of(&file));
        pathspecs.push(0);
    }
    g.run(&repo, &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], &pathspecs).await?;
    let staged = g.output(&repo, &["diff", "--cached", "--quiet", "--no-ext-diff"], b"").await?;
    if staged.code == Some(0) {
        return Ok(false);
    }
    let args = ["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m"];
    let mut args = args.to_vec();
    args.push(message);
    g.run(&repo, &args, b"").await?;
    Ok(true)
}

/// Bytes of a file compared with the checkout's at most.
const CARRIED_MAX_BYTES: u64 = 1 << 20;

/// The untracked files of the worktree at `path` that the checkout at
/// `origin` has byte for byte (the context a worktree session carries,
/// `session::carry`): not the session's work, and applying them would
/// only collide with the user's own copies. Both sides are read without
/// following a symlink.
async fn carried(g: &Git, repo: &Repo, path: &Path, origin: &Path) -> Result<Vec<PathBuf>, WorktreeError> {
    let others = ["ls-files", "-z", "--others", "--exclude-standard", "--", ".", OWN_FILES];
    let out = g.run(repo, &others, b"").await?;
    let files: Vec<PathBuf> = git::records(&out).map(git::path_of).collect();
    if files.is_empty() {
        return Ok(files);
    }
    let (Ok(work), Ok(checkout)) = (Beneath::open(path), Beneath::open(origin)) else {
        return Ok(Vec::new());
    };
    let same =
        |f: &PathBuf| match (work.read_regular(f, CARRIED_MAX_BYTES), checkout.read_regular(f, CARRIED_MAX_BYTES)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
    Ok(files.into_iter().filter(same).collect())
}

/// The commit `branch` points at, in the checkout at `origin`.
pub async fn branch_head(g: &Git, origin: &Path, branch: &str) -> Result<String, WorktreeError> {
    let spec = format!("refs/heads/{branch}^{{commit}}");
    let out = g.run(&user(origin), &["rev-parse", "--verify", "-q", &spec], b"").await?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Apply the changes from commit `from` to commit `to` to the working
/// tree of the checkout at `origin` (its index untouched), all or
/// nothing; when they do not apply, the files that conflict.
pub async fn apply(g: &Git, origin: &Path, from: &str, to: &str) -> Result<Applied, WorktreeError> {
    let repo = user(origin);
    let diff = ["diff", "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"];
    let mut args = diff.to_vec();
    args.extend(["--src-prefix=a/", "--dst-prefix=b/", from, to]);
    let patch = g.run(&repo, &args, b"").await?;
    let names = g.run(&repo, &["diff", "--name-only", "-z", "--no-renames", from, to], b"").await?;
    let files: Vec<String> = git::records(&names).map(|f| git::path_of(f).to_string_lossy().into_owned()).collect();
    if patch.is_empty() {
        return Ok(Applied { applied: true, files, conflicts: Vec::new() });
    }
    let check = g.output(&repo, &["apply", "--check"], &patch).await?;
    if check.code == Some(0) {
        g.run(&repo, &["apply"], &patch).await?;
        return Ok(Applied { applied: true, files, conflicts: Vec::new() });
    }
    let mut conflicts = Vec::new();
    for file in &files {
        let include = format!("--include={}", glob_escaped(file));
        let one = g.output(&repo, &["apply", "--check", &include], &patch).await?;
        if one.code != Some(0) {
            conflicts.push(file.clone());
        }
    }
    Ok(Applied { applied: false, files, conflicts })
}

/// `path` as a pattern `--include` matches literally.
fn glob_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Remove the worktree at `path` (git directory `admin`, of the
/// repository `common`, made from the checkout at `origin`) after
/// committing its work to its branch, then prune the repository's worktree
/// records. A worktree already gone is only pruned.
pub async fn remove(g: &Git, path: &Path, admin: &Path, common: &Path, origin: &Path) -> Result<(), WorktreeError> {
    let repo = Repo { git_dir: Some(common.to_owned()), cwd: common.to_owned(), user_config: true, ..Repo::default() };
    if path.is_dir() {
        commit_work(g, path, admin, origin, "swivald: the work of a deleted session").await?;
        let shown = path.display().to_string();
        g.run(&repo, &["worktree", "remove", "--force", &shown], b"").await?;
        if let Some(parent) = path.parent() {
            // The repository's directory goes with its last worktree.
            let _ = std::fs::remove_dir(parent);
        }
    }
    g.run(&repo, &["worktree", "prune"], b"").await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_goes_under_the_hash_of_its_checkout() {
        let a = location(Path::new("/w"), Path::new("/home/u/p"), "s_1");
        let b = location(Path::new("/w"), Path::new("/home/u/q"), "s_1");
        assert_eq!(a.file_name().unwrap(), "s_1");
        assert_eq!(a.parent().unwrap().file_name().unwrap().len(), 16);
        assert_ne!(a, b);
        assert_eq!(a, location(Path::new("/w"), Path::new("/home/u/p"), "s_1"));
    }

    #[test]
    fn include_patterns_match_paths_literally() {
        assert_eq!(glob_escaped("a/b.rs"), "a/b.rs");
        assert_eq!(glob_escaped("x[1]*?.txt"), "x\\[1\\]\\*\\?.txt");
    }
}
