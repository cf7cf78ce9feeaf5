//! A stored change set as `run/changes` gives it: each file with its
//! kind (a deletion and a creation of the same content are a rename),
//! the calls that changed it, its sizes and modes, whether undo can put
//! it back, and a unified diff of text files (capped per file and in
//! all).

use super::{ChangeError, Changes};
use crate::store::{ChangeSetRow, FileRecord, FileState};
use std::collections::HashMap;
use swival_protocol::{ChangedFile, FileChangeKind, ReportChange, RunChanges, RunId};

/// Largest diff of one file, in bytes.
const MAX_FILE_DIFF: usize = 256 * 1024;
/// Largest diff of a whole set, in bytes.
const MAX_DIFF: usize = 4 * 1024 * 1024;

impl Changes {
    /// `run/changes` for a stored set.
    pub async fn show(&self, set: &ChangeSetRow, diff: bool) -> Result<RunChanges, ChangeError> {
        let ids: Vec<String> =
            set.files.iter().flat_map(|f| [&f.before, &f.after]).filter_map(|s| s.as_ref()?.blob.clone()).collect();
        let contents = if ids.is_empty() {
            HashMap::new()
        } else {
            let project = self.project_of(&set.root);
            let mut locked = project.lock().await?;
            self.contents(&set.root, &mut locked, &ids).await?
        };
        let mut budget = MAX_DIFF;
        let files = pair_renames(&set.files)
            .into_iter()
            .map(|(old, new)| file(old, new, &contents, diff, &mut budget))
            .collect();
        Ok(RunChanges {
            id: set.id.clone(),
            run_id: set.run_id.clone().map(RunId),
            session_id: set.session_id.clone(),
            kind: set.kind,
            reverts: set.reverts.clone(),
            reverted_by: set.reverted_by.clone(),
            root: set.root.clone(),
            files,
        })
    }
}

/// The report's list of a run's changed files.
pub fn report_list(set: &ChangeSetRow) -> Vec<ReportChange> {
    pair_renames(&set.files)
        .into_iter()
        .map(|(old, new)| ReportChange {
            path: new.path.clone(),
            kind: match (old, &new.before, &new.after) {
                (Some(_), _, _) => FileChangeKind::Renamed,
                (None, None, _) => FileChangeKind::Created,
                (None, _, None) => FileChangeKind::Deleted,
                _ => FileChangeKind::Modified,
            },
            old_path: old.map(|o| o.path.clone()),
        })
        .collect()
}

/// The records as entries: `(Some(deleted), created)` for a rename,
/// `(None, record)` otherwise.
fn pair_renames(files: &[FileRecord]) -> Vec<(Option<&FileRecord>, &FileRecord)> {
    let blob = |s: &Option<FileState>| s.as_ref().and_then(|s| s.blob.clone());
    let mut used = vec![false; files.len()];
    let mut out = Vec::new();
    for (i, created) in files.iter().enumerate() {
        if created.before.is_some() || created.after.is_none() {
            continue;
        }
        let gone = files.iter().enumerate().find(|(j, d)| {
            !used[*j] && d.after.is_none() && d.before.is_some() && blob(&d.before) == blob(&created.after)
        });
        if let Some((j, deleted)) = gone {
            used[i] = true;
            used[j] = true;
            out.push((Some(deleted), created));
        }
    }
    out.extend(files.iter().enumerate().filter(|(i, _)| !used[*i]).map(|(_, f)| (None, f)));
    out.sort_by(|a, b| a.1.path.cmp(&b.1.path));
    out
}

/// One entry of `run/changes`.
fn file(
    old: Option<&FileRecord>,
    new: &FileRecord,
    contents: &HashMap<String, Vec<u8>>,
    diff: bool,
    budget: &mut usize,
) -> ChangedFile {
    let before = old.map_or(&new.before, |o| &o.before);
    let kind = match (old, before, &new.after) {
        (Some(_), _, _) => FileChangeKind::Renamed,
        (None, None, _) => FileChangeKind::Created,
        (None, _, None) => FileChangeKind::Deleted,
        _ => FileChangeKind::Modified,
    };
    let bytes = |s: &Option<FileState>| s.as_ref().and_then(|s| contents.get(s.blob.as_ref()?)).map(Vec::as_slice);
    let (a, b) = (bytes(before), bytes(&new.after));
    let size = |s: &Option<FileState>, b: Option<&[u8]>| {
        s.as_ref().and_then(|s| s.big.as_ref().map(|big| big.size).or(b.map(|b| b.len() as u64)))
    };
    let binary = [a, b].into_iter().flatten().any(|b| b.iter().take(8000).any(|c| *c == 0));
    let big = [before, &new.after].into_iter().flatten().find_map(|s| s.big.as_ref());
    let mut by = old.map(|o| o.by.clone()).unwrap_or_default();
    by.extend(new.by.iter().filter(|c| !by.contains(c)).cloned().collect::<Vec<_>>());
    let text = (diff && !binary && big.is_none()).then(|| unified(&new.path, old.map(|o| o.path.as_str()), a, b));
    let diff = text.map(|t| cap(t, budget));
    ChangedFile {
        path: new.path.clone(),
        kind,
        old_path: old.map(|o| o.path.clone()),
        by,
        restorable: big.is_none(),
        not_restorable: big.map(|b| {
            format!(
                "over the snapshot size limit ({:.1} MB); recorded by size and SHA-256 ({}) only",
                b.size as f64 / 1e6,
                &b.sha256.get(..12).unwrap_or_default()
            )
        }),
        binary,
        size_before: size(before, a),
        size_after: size(&new.after, b),
        mode_before: before.as_ref().map(|s| s.mode),
        mode_after: new.after.as_ref().map(|s| s.mode),
        diff,
        shared: new.shared || old.is_some_and(|o| o.shared),
    }
}

/// A unified diff of a text file.
fn unified(path: &str, old_path: Option<&str>, a: Option<&[u8]>, b: Option<&[u8]>) -> String {
    let text = |x: Option<&[u8]>| String::from_utf8_lossy(x.unwrap_or_default()).into_owned();
    let (a, b) = (text(a), text(b));
    let from = format!("a/{}", old_path.unwrap_or(path));
    similar::TextDiff::from_lines(&a, &b)
        .unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{path}"))
        .to_string()
}

/// `text` within the file and total limits, marked when cut.
fn cap(mut text: String, budget: &mut usize) -> String {
    let limit = MAX_FILE_DIFF.min(*budget);
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[diff cut here: too long]\n");
    }
    *budget = budget.saturating_sub(text.len());
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(blob: &str) -> Option<FileState> {
        Some(FileState { blob: Some(blob.into()), mode: 0o100644, big: None })
    }

    fn record(path: &str, before: Option<FileState>, after: Option<FileState>) -> FileRecord {
        FileRecord { path: path.into(), before, after, by: vec![], shared: false }
    }

    #[test]
    fn a_deletion_and_a_creation_of_the_same_content_are_a_rename() {
        let files = [record("a", state("1"), None), record("b", None, state("1")), record("c", None, state("2"))];
        let pairs = pair_renames(&files);
        assert_eq!(pairs.len(), 2);
        assert_eq!((pairs[0].0.map(|o| o.path.as_str()), pairs[0].1.path.as_str()), (Some("a"), "b"));
        assert_eq!((pairs[1].0.is_none(), pairs[1].1.path.as_str()), (true, "c"));
    }

    #[test]
    fn kinds_and_diffs_follow_the_sides() {
        let contents = HashMap::from([("1".to_owned(), b"one\n".to_vec()), ("2".to_owned(), b"two\n".to_vec())]);
        let mut budget = MAX_DIFF;
        let m = file(None, &record("m", state("1"), state("2")), &contents, true, &mut budget);
        assert_eq!(m.kind, FileChangeKind::Modified);
        assert!(m.diff.unwrap().contains("-one\n+two\n"));
        let d = file(None, &record("d", state("1"), None), &contents, true, &mut budget);
        assert_eq!((d.kind, d.size_before, d.size_after), (FileChangeKind::Deleted, Some(4), None));
    }
}
