//! The read-before-write guard's memory: the files a session read or
//! wrote, and what this run wrote to each, by content hash.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Files read or written in this session (the read-before-write guard).
#[derive(Debug, Default)]
pub struct ReadTracker {
    /// Canonical paths.
    seen: HashSet<PathBuf>,
    /// A hash of what the session's last write or edit of each file left
    /// in it.
    written: HashMap<PathBuf, u64>,
    /// Hashes of the contents each file had before and after this run's
    /// writes and edits of it.
    had: HashMap<PathBuf, HashSet<u64>>,
}

impl ReadTracker {
    /// Remember that `p` was read or written.
    pub fn mark(&mut self, p: &Path) {
        self.seen.insert(p.to_owned());
    }

    /// Remember that a write or edit left `text` in `p`.
    pub fn wrote(&mut self, p: &Path, text: &[u8]) {
        self.mark(p);
        self.written.insert(p.to_owned(), text_hash(text));
    }

    /// Whether the session's last write or edit of `p` left `text` in it.
    pub fn wrote_last(&self, p: &Path, text: &[u8]) -> bool {
        self.written.get(p) == Some(&text_hash(text))
    }

    /// Note that a write or edit changed `p` from `before` (`None`: not
    /// known) to `after`; whether `after` is a content `p` already had in
    /// this run (a change undone: small models write two versions back and
    /// forth until the run is stuck).
    pub fn restored(&mut self, p: &Path, before: Option<&[u8]>, after: &[u8]) -> bool {
        let after = text_hash(after);
        let had = self.had.entry(p.to_owned()).or_default();
        let before = before.map(text_hash);
        let restored = before != Some(after) && had.contains(&after);
        had.extend(before);
        had.insert(after);
        restored
    }

    /// A new run: contents the files had in the last are forgotten.
    pub fn new_run(&mut self) {
        self.had.clear();
    }

    /// Whether `p` was read or written.
    pub fn seen(&self, p: &Path) -> bool {
        self.seen.contains(p)
    }

    /// Every path read or written.
    pub fn paths(&self) -> impl Iterator<Item = &PathBuf> {
        self.seen.iter()
    }
}

/// A hash of a file's bytes, to tell one text from another within the
/// daemon's life (not stable across builds).
pub fn text_hash(text: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}
