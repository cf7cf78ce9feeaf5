//! One project's snapshot store: a shadow git repository in the daemon's
//! state dir whose work tree is the project. A snapshot is a git tree:
//! only the files whose stat changed since the last one are hashed
//! (`diff-files` and `ls-files --others` find them, honouring the
//! project's ignore rules), so an unchanged project costs two processes.
//! The project's own `.git` is never read or written; `.swival/` is left
//! out; files over the size limit are kept by size and hash only; modes
//! git does not keep (0600) are kept beside the trees.

pub use super::blob::{blob_id, hex};
use super::git::{self, Git, GitError, Repo};
use super::ChangeError;
use crate::beneath::{self, Beneath, How, Kind, Meta};
use crate::store::{BigFile, FileState};
use crate::toolcall::Content;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most paths one snapshot may add: past it the project is too busy (or
/// too large) to snapshot, and the run's changes are not recorded.
const MAX_PATHS: usize = 200_000;

/// The attributes that keep bytes as they are: no line-ending or filter
/// conversion, whatever the project's `.gitattributes` say.
const ATTRIBUTES: &str = "* -text -filter -ident -working-tree-encoding -eol\n";

/// Settings written into the shadow repository's config.
const CONFIG: &str = "[core]\n\tautocrlf = false\n\tsafecrlf = false\n\tsymlinks = true\n\tfilemode = true\n\tfsmonitor = false\n\tuntrackedCache = true\n\tquotepath = false\n\thooksPath = /dev/null\n[gc]\n\tauto = 0\n";

/// What git does not keep, kept beside the trees.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Sidecar {
    /// Regular files whose permission bits are neither 0644 nor 0755.
    odd: BTreeMap<String, u32>,
    /// Files over the size limit.
    big: BTreeMap<String, Big>,
}

/// A file over the size limit, with the stat its hash was taken at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Big {
    /// Size and hash.
    file: BigFile,
    /// Its mode.
    mode: u32,
    /// mtime (ns) and inode when hashed.
    stamp: (i64, i64, u64),
}

/// The project at one moment.
#[derive(Debug, Clone)]
pub struct Snap {
    /// The git tree of every file under the size limit.
    pub tree: String,
    /// What git does not keep, then.
    side: Sidecar,
}

/// One path that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delta {
    /// Relative to the root.
    pub path: String,
    /// What was there in the first (`None`: nothing).
    pub before: Option<FileState>,
    /// What was there in the second.
    pub after: Option<FileState>,
}

/// A project's snapshot store.
#[derive(Debug)]
pub struct Shadow {
    /// The git program.
    git: Git,
    /// The shadow repository, its index and the project as work tree.
    repo: Repo,
    /// The project's root.
    pub root: PathBuf,
    /// The part of the root snapshotted (a pathspec; `.` for all).
    scope: String,
    /// Files over this many bytes are kept by size and hash only.
    max_file: u64,
    /// The sidecar now.
    side: Sidecar,
    /// The last snapshot's tree.
    last: Option<String>,
    /// Paths a snapshot once found, when more than a snapshot takes: the
    /// project is not snapshotted again (a home directory).
    too_many: Option<usize>,
}

impl Shadow {
    /// Open the store of `root` in `dir`, creating it if needed; snapshots
    /// cover `scope` (a directory under the root, `.` for all of it).
    pub async fn open(git: Git, dir: &Path, root: &Path, scope: String, max_file: u64) -> Result<Shadow, ChangeError> {
        let repo = Repo {
            git_dir: Some(dir.to_owned()),
            work_tree: Some(root.to_owned()),
            index: Some(dir.join("index")),
            cwd: root.to_owned(),
            user_config: false,
        };
        if !dir.join("HEAD").exists() {
            create(&git, &repo, dir, root).await?;
        }
        let side = std::fs::read(dir.join("swivald.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Ok(Shadow { git, repo, root: root.to_owned(), scope, max_file, side, last: None, too_many: None })
    }

    /// Whether a snapshot was taken since the store was opened.
    pub fn warm(&self) -> bool {
        self.last.is_some()
    }

    /// The blobs the index holds: what the next snapshot builds on.
    pub async fn indexed_blobs(&self) -> Result<Vec<String>, ChangeError> {
        let out = self.git.run(&self.repo, &["ls-files", "-s", "-z"], b"").await?;
        let entries = git::records(&out).filter_map(|r| std::str::from_utf8(r).ok());
        Ok(entries.filter_map(|e| e.split(' ').nth(1).map(str::to_owned)).collect())
    }

    /// Forget the last snapshot's tree (collected): the next snapshot
    /// writes its tree again.
    pub fn forget_last(&mut self) {
        self.last = None;
    }

    /// The shadow repository (for reading blobs).
    pub fn git(&self) -> (&Git, &Repo) {
        (&self.git, &self.repo)
    }

    /// Take a snapshot: hash what changed since the last one.
    pub async fn snapshot(&mut self) -> Result<Snap, ChangeError> {
        if let Some(n) = self.too_many {
            return Err(ChangeError::TooMany(n));
        }
        let scope = self.scope.as_str();
        let changed = ["diff-files", "--name-only", "-z", "--", scope];
        let new = ["ls-files", "--others", "--exclude-standard", "-z", "--", scope];
        let (modified, untracked) =
            tokio::try_join!(self.git.run(&self.repo, &changed, b""), self.git.run(&self.repo, &new, b""))?;
        let tracked: BTreeSet<&[u8]> = git::records(&modified).collect();
        let seen: BTreeSet<String> = tracked
            .iter()
            .copied()
            .chain(git::records(&untracked))
            .filter(|p| !p.ends_with(b"/"))
            .filter_map(|p| std::str::from_utf8(p).ok().map(str::to_owned))
            .collect();
        if seen.len() > MAX_PATHS {
            self.too_many = Some(seen.len());
            return Err(ChangeError::TooMany(seen.len()));
        }
        let before = self.side.clone();
        let (mut update, mut force) = (Vec::new(), Vec::new());
        for path in &seen {
            match self.look(path).await {
                Seen::Indexable => update.push(path.as_str()),
                // Out of the index: a big file, a path under a directory
                // swapped for a link or a file (git will not look beyond
                // it), a file become a directory.
                Seen::Big | Seen::Other | Seen::Beyond => {
                    if tracked.contains(path.as_bytes()) {
                        force.push(path.as_str());
                    }
                }
            }
        }
        self.forget_gone_big(&seen);
        self.index(&["update-index", "--force-remove", "-z", "--stdin"], &force).await?;
        // `--replace`: a link or file where a directory of indexed files
        // was (or the other way round) takes their place.
        self.index(&["update-index", "--add", "--remove", "--replace", "-z", "--stdin"], &update).await?;
        let tree = match (&self.last, update.is_empty() && force.is_empty()) {
            (Some(tree), true) => tree.clone(),
            _ => String::from_utf8_lossy(&self.git.run(&self.repo, &["write-tree"], b"").await?).trim().to_owned(),
        };
        self.last = Some(tree.clone());
        if self.side != before {
            let dir = self.repo.git_dir.as_deref().expect("a shadow has its own git dir");
            let bytes = serde_json::to_vec(&self.side).expect("a sidecar serializes");
            std::fs::write(dir.join("swivald.json"), bytes).map_err(ChangeError::Io)?;
        }
        Ok(Snap { tree, side: self.side.clone() })
    }

    /// The state of a content a file tool reported (its [`Change`]), and
    /// the bytes to store as its blob: the bytes it held (by digest when
    /// over the size limit), or what is at a path of the project now (read
    /// beneath the root, no symlink on the way followed). `None` for
    /// nothing there, or a path outside the project. Nothing is written:
    /// the run's recorder stores the contents its set names with the set.
    pub async fn content(&self, content: &Content) -> Result<Option<Held>, ChangeError> {
        match content {
            Content::Bytes { bytes, mode } if bytes.len() as u64 > self.max_file => {
                let big = BigFile { size: bytes.len() as u64, sha256: hex(&sha2::Sha256::digest(bytes)) };
                Ok(Some((FileState { blob: None, mode: *mode, big: Some(big) }, None)))
            }
            Content::Bytes { bytes, mode } => Ok(held(Ok(bytes.clone()), *mode).await),
            Content::Digest { size, sha256, mode } => {
                let big = BigFile { size: *size, sha256: sha256.clone() };
                Ok(Some((FileState { blob: None, mode: *mode, big: Some(big) }, None)))
            }
            Content::At(path) => match path.strip_prefix(&self.root) {
                Ok(rel) if !rel.as_os_str().is_empty() => {
                    let root = Beneath::open(&self.root).map_err(|e| ChangeError::Io(e.into()))?;
                    Ok(self.state(&root, rel).await)
                }
                _ => Ok(None),
            },
        }
    }

    /// What is at `rel` now (see [`Shadow::content`]).
    async fn state(&self, root: &Beneath, rel: &Path) -> Option<Held> {
        // One open, without blocking and following no symlink: a file is
        // read through the descriptor its type and size were read from.
        let file = match root.open_file(rel, How::Read) {
            Ok(file) => file,
            // A link: recorded as what it is when it is the path itself,
            // nothing when it is on the way there.
            Err(beneath::Error::Symlink(_)) => match root.metadata(rel) {
                Ok(meta) if meta.kind == Kind::Symlink => {
                    return held(root.read_link(rel).map(Arc::from), 0o120000).await
                }
                _ => return None,
            },
            Err(_) => return None,
        };
        let meta = Meta::of(&file).ok()?;
        match meta.kind {
            Kind::File if meta.len > self.max_file => {
                // Through the descriptor its type and size were read from.
                let mut file = file;
                let hashed = tokio::task::spawn_blocking(move || {
                    let mut hasher = sha2::Sha256::new();
                    std::io::copy(&mut file, &mut hasher).map(|_| hex(&hasher.finalize()))
                });
                let sha256 = hashed.await.ok().and_then(Result::ok).unwrap_or_default();
                let big = BigFile { size: meta.len, sha256 };
                Some((FileState { blob: None, mode: meta.mode, big: Some(big) }, None))
            }
            Kind::File => {
                // Read to its end however it changed since (a plain read
                // loop: `File`'s own asks the kernel for the size again).
                let mut bytes = Vec::with_capacity(meta.len as usize);
                let read = std::io::Read::read_to_end(&mut std::io::Read::take(&file, u64::MAX), &mut bytes)
                    .map(|_| Arc::from(bytes));
                held(read.map_err(beneath::Error::Io), meta.mode).await
            }
            Kind::Symlink | Kind::Dir | Kind::Other => None,
        }
    }

    /// Look at one changed path: note its mode or size, and say whether
    /// git should index it.
    async fn look(&mut self, path: &str) -> Seen {
        let full = self.root.join(path);
        if !under_directories(&self.root, path) {
            self.side.odd.remove(path);
            self.side.big.remove(path);
            return Seen::Beyond;
        }
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            self.side.odd.remove(path);
            self.side.big.remove(path);
            // Gone: `update-index --remove` drops it.
            return Seen::Indexable;
        };
        let kind = meta.file_type();
        if kind.is_file() && meta.len() > self.max_file {
            self.side.odd.remove(path);
            let stamp = (meta.mtime(), meta.mtime_nsec(), meta.ino());
            if self.side.big.get(path).is_some_and(|b| b.stamp == stamp && b.file.size == meta.len()) {
                return Seen::Big;
            }
            // Unreadable: recorded by size alone.
            let sha256: String = hash_file(full).await.unwrap_or_default();
            let file = BigFile { size: meta.len(), sha256 };
            self.side.big.insert(path.to_owned(), Big { file, mode: meta.mode(), stamp });
            return Seen::Big;
        }
        if !kind.is_file() && !kind.is_symlink() {
            return Seen::Other;
        }
        self.side.big.remove(path);
        let perm = meta.mode() & 0o7777;
        match kind.is_file() && perm != 0o644 && perm != 0o755 {
            true => self.side.odd.insert(path.to_owned(), meta.mode()),
            false => self.side.odd.remove(path),
        };
        Seen::Indexable
    }

    /// Drop big files that are no longer there.
    fn forget_gone_big(&mut self, seen: &BTreeSet<String>) {
        let root = &self.root;
        self.side.big.retain(|p, _| seen.contains(p) || std::fs::symlink_metadata(root.join(p)).is_ok());
    }

    /// Run an `update-index` reading `paths` from stdin (nothing for none).
    async fn index(&self, args: &[&str], paths: &[&str]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        let input: Vec<u8> = paths.iter().flat_map(|p| p.bytes().chain([0])).collect();
        self.git.run(&self.repo, args, &input).await.map(drop)
    }

    /// The paths that differ between `a` and `b`, with both sides.
    pub async fn diff(&self, a: &Snap, b: &Snap) -> Result<Vec<Delta>, ChangeError> {
        let mut sides: BTreeMap<String, (Option<FileState>, Option<FileState>)> = BTreeMap::new();
        if a.tree != b.tree {
            let args = ["diff-tree", "-r", "-z", "--no-renames", "--raw", a.tree.as_str(), b.tree.as_str()];
            let out = self.git.run(&self.repo, &args, b"").await?;
            for (path, before, after) in parse_raw(&out) {
                sides.insert(path, (before, after));
            }
        }
        let big_paths: BTreeSet<&String> = a.side.big.keys().chain(b.side.big.keys()).collect();
        for path in big_paths {
            let (x, y) = (a.side.big.get(path), b.side.big.get(path));
            if x.map(|v| &v.file) != y.map(|v| &v.file) {
                let entry = sides.entry(path.clone()).or_default();
                entry.0 = entry.0.take().or_else(|| x.map(big_state));
                entry.1 = entry.1.take().or_else(|| y.map(big_state));
            }
        }
        let odd_paths: BTreeSet<&String> = a.side.odd.keys().chain(b.side.odd.keys()).collect();
        let mut deltas = Vec::new();
        for (path, (before, after)) in sides {
            let before = before.map(|s| with_mode(s, a.side.odd.get(&path)));
            let after = after.map(|s| with_mode(s, b.side.odd.get(&path)));
            deltas.push(Delta { path, before, after });
        }
        // A mode change alone (0644 to 0600) is invisible to git.
        for path in odd_paths {
            if a.side.odd.get(path) != b.side.odd.get(path) && !deltas.iter().any(|d| &d.path == path) {
                let blob = self.blob_at(&b.tree, path).await?;
                if let Some((blob, mode)) = blob {
                    let state =
                        |odd: Option<&u32>| with_mode(FileState { blob: Some(blob.clone()), mode, big: None }, odd);
                    let before = state(a.side.odd.get(path));
                    let after = state(b.side.odd.get(path));
                    deltas.push(Delta { path: path.clone(), before: Some(before), after: Some(after) });
                }
            }
        }
        deltas.sort_by(|x, y| x.path.cmp(&y.path));
        Ok(deltas)
    }

    /// The blob and git mode of `path` in `tree`, if it has one.
    async fn blob_at(&self, tree: &str, path: &str) -> Result<Option<(String, u32)>, ChangeError> {
        let out = self.git.run(&self.repo, &["ls-tree", "-z", tree, "--", path], b"").await?;
        let entry = git::records(&out).next().and_then(|r| std::str::from_utf8(r).ok());
        Ok(entry.and_then(|e| {
            let mut words = e.split(['\t', ' ']);
            let mode = u32::from_str_radix(words.next()?, 8).ok()?;
            let _kind = words.next()?;
            Some((words.next()?.to_owned(), mode))
        }))
    }
}

/// What one changed path is, for the index.
enum Seen {
    /// A file or symlink under the limit, or gone: index it.
    Indexable,
    /// A file over the limit: kept out of the index.
    Big,
    /// A directory, socket or fifo: not snapshotted.
    Other,
    /// Under something that is no longer a directory (a link, a file):
    /// gone from the project, whatever lies beyond.
    Beyond,
}

/// Contents over this size are hashed off the runtime's threads.
const INLINE_BLOB: usize = 256 * 1024;

/// A content's state, and the bytes its blob is to hold (`None` for a
/// file kept by digest).
pub type Held = (FileState, Option<Arc<[u8]>>);

/// `bytes` read for a path, with its blob id: its state, and the bytes
/// to store. `None` when it could not be read (gone or unreadable in
/// between: nothing recorded for it).
async fn held(bytes: Result<Arc<[u8]>, beneath::Error>, mode: u32) -> Option<Held> {
    let bytes = bytes.ok()?;
    let blob = match bytes.len() > INLINE_BLOB {
        true => {
            let hashed = bytes.clone();
            tokio::task::spawn_blocking(move || blob_id(&hashed)).await.ok()?
        }
        false => blob_id(&bytes),
    };
    Some((FileState { blob: Some(blob), mode, big: None }, Some(bytes)))
}

/// Whether every directory on `path`'s way from `root` is a directory, not
/// a link to one: what lies beyond a link is not the project's.
fn under_directories(root: &Path, path: &str) -> bool {
    let mut at = root.to_owned();
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.into_iter().all(|part| {
        at.push(part);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
}

/// A big file's state.
fn big_state(big: &Big) -> FileState {
    FileState { blob: None, mode: big.mode, big: Some(big.file.clone()) }
}

/// A regular file's real mode when git's (0644/0755) is not all of it.
fn with_mode(mut state: FileState, odd: Option<&u32>) -> FileState {
    if let Some(mode) = odd.filter(|_| state.mode & 0o170000 == 0o100000 && state.blob.is_some()) {
        state.mode = *mode;
    }
    state
}

/// Parse `diff-tree -z --raw`: `:old new a b S\0path\0` records.
fn parse_raw(out: &[u8]) -> Vec<(String, Option<FileState>, Option<FileState>)> {
    let mut records = git::records(out);
    let mut deltas = Vec::new();
    while let (Some(header), Some(path)) = (records.next(), records.next()) {
        let (Ok(header), Ok(path)) = (std::str::from_utf8(header), std::str::from_utf8(path)) else { continue };
        let words: Vec<&str> = header.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_id, new_id, ..] = words[..] else { continue };
        let side = |mode: &str, id: &str| {
            let mode = u32::from_str_radix(mode, 8).ok().filter(|m| *m != 0)?;
            Some(FileState { blob: Some(id.to_owned()), mode, big: None })
        };
        deltas.push((path.to_owned(), side(old_mode, old_id), side(new_mode, new_id)));
    }
    deltas
}

/// SHA-256 of a file, hex, off the runtime's threads.
async fn hash_file(path: PathBuf) -> std::io::Result<String> {
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Without blocking: a FIFO the model made is not a file to hash.
        let mut file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let mut hasher = sha2::Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(hex(&hasher.finalize()))
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Make the shadow repository: `git init`, then settings that keep bytes
/// exact and leave out the daemon's own files.
async fn create(git: &Git, repo: &Repo, dir: &Path, root: &Path) -> Result<(), ChangeError> {
    std::fs::create_dir_all(dir).map_err(ChangeError::Io)?;
    git.run(repo, &["init", "-q"], b"").await?;
    let io = ChangeError::Io;
    let mut config = std::fs::read_to_string(dir.join("config")).unwrap_or_default();
    config.push_str(CONFIG);
    std::fs::write(dir.join("config"), config).map_err(io)?;
    std::fs::create_dir_all(dir.join("info")).map_err(io)?;
    std::fs::write(dir.join("info/attributes"), ATTRIBUTES).map_err(io)?;
    let mut exclude = String::from(".swival/\n");
    if let Ok(own) = crate::beneath::read_small(&root.join(".git/info/exclude"), 1 << 20) {
        exclude.push_str(&own);
    }
    std::fs::write(dir.join("info/exclude"), exclude).map_err(io)?;
    std::fs::write(dir.join("root"), root.as_os_str().as_encoded_bytes()).map_err(io)
}

/// Read blobs from the store: id → bytes. A missing blob is an error.
pub async fn blobs(git: &Git, repo: &Repo, ids: &[String]) -> Result<HashMap<String, Vec<u8>>, ChangeError> {
    let wanted: BTreeSet<&String> = ids.iter().collect();
    if wanted.is_empty() {
        return Ok(HashMap::new());
    }
    let input: String = wanted.iter().map(|id| format!("{id}\n")).collect();
    let out = git.run(repo, &["cat-file", "--batch"], input.as_bytes()).await?;
    let mut found = HashMap::new();
    let mut rest = &out[..];
    for id in wanted {
        let line_end = rest.iter().position(|b| *b == b'\n').ok_or_else(|| ChangeError::Missing(id.clone()))?;
        let header = String::from_utf8_lossy(&rest[..line_end]).to_string();
        let mut words = header.split(' ');
        let (_, kind, size) = (words.next(), words.next(), words.next().and_then(|s| s.parse::<usize>().ok()));
        let (Some("blob"), Some(size)) = (kind, size) else {
            return Err(ChangeError::Missing(id.clone()));
        };
        let body = rest.get(line_end + 1..line_end + 1 + size).ok_or_else(|| ChangeError::Missing(id.clone()))?;
        found.insert(id.clone(), body.to_vec());
        rest = rest.get(line_end + 2 + size..).unwrap_or_default();
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_diff_records_read_as_deltas() {
        let out = b":000000 100644 0000000000000000000000000000000000000000 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 A\0new.txt\0:100755 000000 aaaa bbbb D\0old.sh\0";
        let d = parse_raw(out);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, "new.txt");
        assert!(d[0].1.is_none());
        assert_eq!(d[0].2.as_ref().unwrap().mode, 0o100644);
        assert_eq!(d[1].1.as_ref().unwrap().mode, 0o100755);
        assert!(d[1].2.is_none());
    }

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(blob_id(b"hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn an_odd_mode_replaces_gits_for_regular_files_only() {
        let file = FileState { blob: Some("x".into()), mode: 0o100644, big: None };
        assert_eq!(with_mode(file.clone(), Some(&0o100600)).mode, 0o100600);
        let link = FileState { mode: 0o120000, ..file };
        assert_eq!(with_mode(link, Some(&0o100600)).mode, 0o120000);
    }

    #[tokio::test]
    async fn a_tools_content_is_held_by_digest_over_the_limit_and_read_where_it_lies() {
        let (store, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = root.path().canonicalize().unwrap();
        let shadow = Shadow::open(Git::locate(), store.path(), &root, ".".into(), 8).await.unwrap();
        let (state, bytes) = shadow.content(&Content::file(&b"1234"[..], 0o100755)).await.unwrap().unwrap();
        assert_eq!(state, FileState { blob: Some(blob_id(b"1234")), mode: 0o100755, big: None });
        assert_eq!(bytes.as_deref(), Some(&b"1234"[..]), "the bytes to pack");
        // Over the limit: by its size and SHA-256, nothing to store.
        let (over, bytes) = shadow.content(&Content::file(&b"123456789"[..], 0o100644)).await.unwrap().unwrap();
        let big = BigFile { size: 9, sha256: hex(&sha2::Sha256::digest(b"123456789")) };
        assert_eq!((over.blob, over.big, bytes), (None, Some(big), None));
        // Where it lies: a file, a link as a link, nothing outside the root.
        std::fs::write(root.join("a"), "x").unwrap();
        std::os::unix::fs::symlink("a", root.join("l")).unwrap();
        let at = |p: PathBuf| Content::At(p);
        assert_eq!(shadow.content(&at(root.join("a"))).await.unwrap().unwrap().0.blob, Some(blob_id(b"x")));
        let (link, _) = shadow.content(&at(root.join("l"))).await.unwrap().unwrap();
        assert_eq!((link.blob, link.mode), (Some(blob_id(b"a")), 0o120000));
        for outside in [root.clone(), root.join("missing"), PathBuf::from("/etc/hostname")] {
            assert_eq!(shadow.content(&at(outside.clone())).await.unwrap(), None, "{}", outside.display());
        }
    }
}
