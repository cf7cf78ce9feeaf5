//! Which of the files a command would run ([`super::files`]) changed
//! during the session, and the contents an "always" answer was given
//! for. A file changed when the session's file tools wrote it, or when
//! its status-change time (ctime: set by the kernel on every write,
//! rename or new link, and never set back by an unprivileged process) is
//! later than the session's start — so a file a command wrote counts as
//! well as one a file tool wrote, whoever's command it was.
//!
//! An "always" answer given while a changed file was named covers that
//! file's content (its SHA-256) for the bucket; the next change is asked
//! again.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How much earlier than the session's start a ctime still counts as a
/// change: a file's times come from a coarse clock (a tick behind), and
/// some filesystems keep whole seconds.
const SLACK: Duration = Duration::from_secs(1);

/// A file a command would run that changed during the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The file.
    pub path: PathBuf,
    /// Its SHA-256 now; `None` when it cannot be read (not a regular
    /// file, too large), which no answer covers.
    pub sha256: Option<String>,
}

/// The session's record of changes and of what answers covered.
#[derive(Debug)]
pub struct Changes {
    /// Changes at or after this time are the session's.
    since: SystemTime,
    /// Files the session's file tools wrote (canonical).
    written: HashSet<PathBuf>,
    /// Per bucket, the SHA-256 of each changed file an "always" covered.
    covered: HashMap<String, HashMap<PathBuf, String>>,
}

impl Changes {
    /// Changes from `start` on (the session's start).
    pub fn new(start: SystemTime) -> Changes {
        Changes { since: start - SLACK, written: HashSet::new(), covered: HashMap::new() }
    }

    /// A file tool wrote `path`.
    pub fn wrote(&mut self, path: &Path) {
        self.written.insert(path.canonicalize().unwrap_or_else(|_| path.to_owned()));
    }

    /// The files among `files` that changed during the session and whose
    /// content no "always" for `bucket` covered. Missing files are left
    /// out; a file that cannot be read counts as changed.
    pub fn changed(&self, bucket: &str, files: &[PathBuf]) -> Vec<Changed> {
        let covered = self.covered.get(bucket);
        let mut out = Vec::new();
        for path in files {
            if !self.in_session(path) {
                continue;
            }
            let sha256 = crate::procs::pin::sha256_file(path).ok();
            let real = path.canonicalize().unwrap_or_else(|_| path.clone());
            if sha256.is_some() && covered.and_then(|c| c.get(&real)) == sha256.as_ref() {
                continue;
            }
            out.push(Changed { path: path.clone(), sha256 });
        }
        out
    }

    /// An "always" for `bucket` given while `changed` was shown.
    pub fn cover(&mut self, bucket: &str, changed: &[Changed]) {
        let covered = self.covered.entry(bucket.to_owned()).or_default();
        for c in changed {
            if let Some(sha) = &c.sha256 {
                covered.insert(c.path.canonicalize().unwrap_or_else(|_| c.path.clone()), sha.clone());
            }
        }
    }

    /// Whether `path` exists and changed during the session (the link
    /// itself, for a symbolic link, or the file it leads to). A directory
    /// does not run: its entries are listed when they do (hooks).
    fn in_session(&self, path: &Path) -> bool {
        let Ok(link) = path.symlink_metadata() else { return false };
        if path.is_dir() {
            return false;
        }
        let real = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        let recent = |m: &std::fs::Metadata| ctime(m) >= self.since;
        self.written.contains(&real) || recent(&link) || path.metadata().is_ok_and(|m| recent(&m))
    }
}

fn ctime(m: &std::fs::Metadata) -> SystemTime {
    let (secs, nanos) = (m.ctime(), m.ctime_nsec());
    let at = Duration::new(secs.unsigned_abs(), u32::try_from(nanos).unwrap_or(0));
    if secs >= 0 {
        SystemTime::UNIX_EPOCH + at
    } else {
        SystemTime::UNIX_EPOCH - at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_in_the_session_is_named_until_an_always_covers_its_content() {
        let d = tempfile::tempdir().unwrap();
        let (old, new, gone) = (d.path().join("old.py"), d.path().join("new.py"), d.path().join("gone.py"));
        std::fs::write(&old, "print(1)").unwrap();
        let mut changes = Changes::new(SystemTime::now() + 2 * SLACK);
        assert!(changes.changed("python3", &[old.clone(), gone.clone()]).is_empty(), "older than the session");
        let mut changes_now = Changes::new(SystemTime::now() - 2 * SLACK);
        std::fs::write(&new, "print(2)").unwrap();
        let named = changes_now.changed("python3", std::slice::from_ref(&new));
        assert_eq!(named.len(), 1);
        changes_now.cover("python3", &named);
        assert!(changes_now.changed("python3", std::slice::from_ref(&new)).is_empty(), "covered as it is");
        assert_eq!(changes_now.changed("bash", std::slice::from_ref(&new)).len(), 1, "for its bucket only");
        std::fs::write(&new, "print(3)").unwrap();
        assert_eq!(changes_now.changed("python3", std::slice::from_ref(&new)).len(), 1, "changed again");
        // A file tool's write counts whatever the clock says.
        changes.wrote(&old);
        assert_eq!(changes.changed("python3", &[old]).len(), 1);
    }
}
