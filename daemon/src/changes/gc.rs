//! Collecting the snapshot stores (`snapshots/gc`, `swivalctl gc`, and
//! after every prune of old sessions). A store keeps the objects the
//! change sets still stored name, so `diff` and `undo` of every stored run
//! work, and the blobs its index holds (the next snapshot builds on them);
//! every other object goes: the trees of past snapshots, the contents only
//! pruned sessions named. A store no stored set names is removed whole
//! (its next run starts it again). A project with a call being recorded is
//! left for the next collection.

use super::{ChangeError, Changes};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use swival_protocol::SnapshotGcResult;

/// How long a measure of the stores' disk use is shown before it is taken
/// again.
const MEASURE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// What collecting one project's store did.
pub enum Collected {
    /// A call was being recorded: left as it was.
    Busy,
    /// No stored set names it: removed.
    Removed,
    /// Kept, with this many objects deleted.
    Kept(u64),
}

impl Changes {
    /// Collect every project's store.
    pub async fn collect(&self) -> Result<SnapshotGcResult, ChangeError> {
        let bytes_before = self.measure().await;
        let mut out = SnapshotGcResult {
            stores: 0,
            stores_removed: 0,
            objects_removed: 0,
            bytes_before,
            bytes_after: 0,
            busy: Vec::new(),
        };
        let roots = self.store_roots();
        // Contents kept in the database for a project whose store is gone
        // (removed by hand): what no stored set names goes, unless a run
        // records there now.
        for root in self.store().change_blob_roots()?.into_iter().filter(|r| !roots.contains(r)) {
            if self.recording_in(&root) {
                out.busy.push(root);
                continue;
            }
            let keep = self.store().blobs_of(&root)?;
            out.objects_removed += self.store().prune_change_blobs(root, keep).await?;
        }
        for root in roots {
            out.stores += 1;
            let keep = self.store().blobs_of(&root)?;
            match self.project_of(&root).collect(keep, self.store()).await? {
                Collected::Busy => out.busy.push(root),
                Collected::Removed => out.stores_removed += 1,
                Collected::Kept(n) => out.objects_removed += n,
            }
        }
        out.bytes_after = self.measure().await;
        Ok(out)
    }

    /// Whether a run records changes in the project at `root` now.
    fn recording_in(&self, root: &str) -> bool {
        let projects = self.projects.lock().expect("projects lock");
        projects.get(Path::new(root)).is_some_and(|p| p.recording())
    }

    /// The snapshot stores' disk use, in bytes, as measured within the last
    /// [`MEASURE_EVERY`]: `daemon/status` does not walk the stores each time
    /// it is asked.
    pub async fn disk_use(&self) -> u64 {
        let fresh = *self.measured.lock().expect("measured lock");
        match fresh {
            Some((at, bytes)) if at.elapsed() < MEASURE_EVERY => bytes,
            _ => self.measure().await,
        }
    }

    /// Walk the stores for their disk use now, and keep it.
    async fn measure(&self) -> u64 {
        let dir = self.dir.clone();
        let stores = tokio::task::spawn_blocking(move || disk_use(&dir)).await.unwrap_or(0);
        // With a file tool's contents, kept in the database.
        let bytes = stores + self.store().change_blob_bytes().unwrap_or(0);
        *self.measured.lock().expect("measured lock") = Some((std::time::Instant::now(), bytes));
        bytes
    }

    /// The project root of every store on disk.
    fn store_roots(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let stores = entries.filter_map(|e| Some(e.ok()?.path()));
        let roots = stores.filter_map(|dir| std::fs::read(dir.join("root")).ok());
        roots.filter_map(|r| String::from_utf8(r).ok()).collect()
    }
}

/// Delete the loose objects under `objects` that `keep` does not name, and
/// the fan-out directories left empty; how many were deleted.
pub fn prune_objects(objects: &Path, keep: &HashSet<String>) -> std::io::Result<u64> {
    let mut removed = 0;
    for fan in std::fs::read_dir(objects)? {
        let fan = fan?.path();
        let Some(prefix) = fan.file_name().and_then(|n| n.to_str()).filter(|n| is_fan_out(n)) else { continue };
        let prefix = prefix.to_owned();
        for object in std::fs::read_dir(&fan)? {
            let object = object?.path();
            let Some(rest) = object.file_name().and_then(|n| n.to_str()) else { continue };
            if !keep.contains(&format!("{prefix}{rest}")) {
                std::fs::remove_file(&object)?;
                removed += 1;
            }
        }
        // Only when empty.
        let _ = std::fs::remove_dir(&fan);
    }
    Ok(removed)
}

/// Whether `name` is a loose-object directory (two hex digits).
fn is_fan_out(name: &str) -> bool {
    name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The disk use of everything under `dir`, in bytes (blocks, as `du`).
fn disk_use(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else { continue };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_objects_kept_stay_and_empty_fan_outs_go() {
        let dir = tempfile::tempdir().unwrap();
        let objects = dir.path();
        for id in ["aa11", "aa22", "bb33"] {
            std::fs::create_dir_all(objects.join(&id[..2])).unwrap();
            std::fs::write(objects.join(&id[..2]).join(&id[2..]), id).unwrap();
        }
        std::fs::create_dir_all(objects.join("info")).unwrap();
        std::fs::write(objects.join("info/packs"), "").unwrap();
        let keep: HashSet<String> = ["aa22".to_owned()].into();
        assert_eq!(prune_objects(objects, &keep).unwrap(), 2);
        assert!(objects.join("aa/22").exists());
        assert!(!objects.join("aa/11").exists());
        assert!(!objects.join("bb").exists(), "an emptied fan-out directory goes");
        assert!(objects.join("info/packs").exists(), "what is not an object stays");
    }
}
