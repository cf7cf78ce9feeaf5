//! Blobs written in-process, as a git pack: the contents a run's file
//! tools reported are kept in memory until the run ends (or grow past a
//! budget) and are then written as one pack and its index, two files
//! whatever their number, where `git` reads them as it reads its own. A
//! file tool call starts no git process and creates no file in the store.
//! The collection rewrites a pack to the objects it keeps.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Packs of more than this many bytes of content are compressed off the
/// runtime's threads.
pub(super) const INLINE_BLOB: usize = 256 * 1024;

/// A pack entry's type for a blob.
const BLOB: u8 = 3;

/// Write `blobs` (their ids and bytes) into `objects/pack` as one pack and
/// its index; nothing when there are none.
pub(super) fn write_pack(objects: &Path, blobs: &[(String, Arc<[u8]>)]) -> std::io::Result<()> {
    if blobs.is_empty() {
        return Ok(());
    }
    let mut entries = Vec::with_capacity(blobs.len());
    for (id, bytes) in blobs {
        let mut entry = entry_header(BLOB, bytes.len() as u64);
        entry.extend(zlib(&[bytes])?);
        entries.push((unhex(id)?, entry));
    }
    write_entries(&objects.join("pack"), entries)
}

/// Write a pack of `entries` (each an object's id and its packed bytes,
/// header and data) and its index into `dir`, whole or not at all: the
/// pack first, then the index that makes git see it.
fn write_entries(dir: &Path, mut entries: Vec<([u8; 20], Vec<u8>)>) -> std::io::Result<()> {
    use sha1::Digest as _;
    entries.sort_by_key(|e| e.0);
    entries.dedup_by(|a, b| a.0 == b.0);
    let mut pack = Vec::with_capacity(entries.iter().map(|e| e.1.len()).sum::<usize>() + 32);
    pack.extend(b"PACK");
    pack.extend(2u32.to_be_bytes());
    pack.extend((entries.len() as u32).to_be_bytes());
    let mut placed = Vec::with_capacity(entries.len());
    for (id, entry) in &entries {
        let offset = u32::try_from(pack.len()).map_err(|_| std::io::Error::other("a pack over 2 GiB"))?;
        let mut crc = flate2::Crc::new();
        crc.update(entry);
        placed.push((id, crc.sum(), offset));
        pack.extend(entry);
    }
    let pack_sum: [u8; 20] = sha1::Sha1::digest(&pack).into();
    pack.extend(pack_sum);
    let mut idx = Vec::with_capacity(1100 + entries.len() * 28);
    idx.extend(b"\xfftOc");
    idx.extend(2u32.to_be_bytes());
    for fan in 0..=255u8 {
        let count = placed.iter().filter(|(id, _, _)| id[0] <= fan).count() as u32;
        idx.extend(count.to_be_bytes());
    }
    placed.iter().for_each(|(id, _, _)| idx.extend(*id));
    placed.iter().for_each(|(_, crc, _)| idx.extend(crc.to_be_bytes()));
    placed.iter().for_each(|(_, _, offset)| idx.extend(offset.to_be_bytes()));
    idx.extend(pack_sum);
    let idx_sum: [u8; 20] = sha1::Sha1::digest(&idx).into();
    idx.extend(idx_sum);
    std::fs::create_dir_all(dir)?;
    let name = format!("pack-{}", hex(&pack_sum));
    put(&dir.join(format!("{name}.pack")), &pack)?;
    put(&dir.join(format!("{name}.idx")), &idx)
}

/// `bytes` at `path`, read-only as git writes its objects: written aside,
/// then renamed into place.
fn put(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmp = path.with_extension(format!("tmp{:016x}", rand::random::<u64>()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A pack entry's header: its type and size, seven bits a byte after
/// the first four.
fn entry_header(kind: u8, size: u64) -> Vec<u8> {
    let mut out = vec![(kind << 4) | (size & 0x0f) as u8];
    let mut rest = size >> 4;
    while rest > 0 {
        *out.last_mut().expect("one byte at least") |= 0x80;
        out.push((rest & 0x7f) as u8);
        rest >>= 7;
    }
    out
}

/// The objects of every pack in `objects/pack`, for the collection.
pub(super) fn packed(objects: &Path) -> std::io::Result<Vec<(std::path::PathBuf, Vec<Placed>)>> {
    let dir = objects.join("pack");
    let Ok(listing) = std::fs::read_dir(&dir) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for entry in listing {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "idx") {
            let placed = read_index(&std::fs::read(&path)?)?;
            out.push((path.with_extension(""), placed));
        }
    }
    Ok(out)
}

/// One object of a pack: its id, its entry's CRC-32 and offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Placed {
    /// The object's id.
    pub id: [u8; 20],
    /// The CRC-32 of its entry.
    crc: u32,
    /// Where its entry starts in the pack.
    offset: u64,
}

/// The objects a version-2 pack index lists.
fn read_index(idx: &[u8]) -> std::io::Result<Vec<Placed>> {
    let bad = || std::io::Error::other("not a version 2 pack index");
    if idx.len() < 8 + 1024 || &idx[..4] != b"\xfftOc" || idx[4..8] != 2u32.to_be_bytes() {
        return Err(bad());
    }
    let word = |at: usize| idx.get(at..at + 4).map(|w| u32::from_be_bytes(w.try_into().expect("four bytes")));
    let count = word(8 + 255 * 4).ok_or_else(bad)? as usize;
    let (ids, crcs) = (8 + 1024, 8 + 1024 + count * 20);
    let (offsets, large) = (crcs + count * 4, crcs + count * 8);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let id = idx.get(ids + i * 20..ids + i * 20 + 20).ok_or_else(bad)?.try_into().expect("20 bytes");
        let crc = word(crcs + i * 4).ok_or_else(bad)?;
        let small = word(offsets + i * 4).ok_or_else(bad)?;
        let offset = match small & 0x8000_0000 {
            0 => u64::from(small),
            _ => {
                let at = large + (small & 0x7fff_ffff) as usize * 8;
                u64::from_be_bytes(idx.get(at..at + 8).ok_or_else(bad)?.try_into().expect("8 bytes"))
            }
        };
        out.push(Placed { id, crc, offset });
    }
    Ok(out)
}

/// Keep only the objects of pack `base` (`.pack`, `.idx`) that `keep`
/// names: the pack stays when it keeps all, goes when it keeps none, and
/// is written again with the ones it keeps otherwise (a pack holding
/// deltas, which git's own repacking makes, stays whole). How many
/// objects went.
pub(super) fn prune_pack(base: &Path, placed: &[Placed], keep: &HashSet<String>) -> std::io::Result<u64> {
    let kept: Vec<&Placed> = placed.iter().filter(|p| keep.contains(&hex(&p.id))).collect();
    let gone = (placed.len() - kept.len()) as u64;
    if gone == 0 {
        return Ok(0);
    }
    let (pack_path, idx_path) = (base.with_extension("pack"), base.with_extension("idx"));
    if !kept.is_empty() {
        let pack = std::fs::read(&pack_path)?;
        let mut starts: Vec<u64> = placed.iter().map(|p| p.offset).collect();
        starts.sort_unstable();
        let end_of = |offset: u64| starts.iter().find(|&&s| s > offset).copied().unwrap_or(pack.len() as u64 - 20);
        let mut entries = Vec::with_capacity(kept.len());
        for p in kept {
            let entry = pack
                .get(p.offset as usize..end_of(p.offset) as usize)
                .ok_or_else(|| std::io::Error::other(format!("{} does not match its index", pack_path.display())))?;
            let mut crc = flate2::Crc::new();
            crc.update(entry);
            // A delta (6, 7) names another object: such a pack is not ours.
            if crc.sum() != p.crc || matches!((entry[0] >> 4) & 7, 6 | 7) {
                return Ok(0);
            }
            entries.push((p.id, entry.to_vec()));
        }
        write_entries(base.parent().expect("a pack is in a directory"), entries)?;
    }
    // The index first: without it git no longer looks at the pack.
    std::fs::remove_file(&idx_path)?;
    std::fs::remove_file(&pack_path)?;
    Ok(gone)
}

thread_local! {
    /// A compressor per thread, reset for each object: making one zeroes a
    /// few hundred KiB, more than compressing a small file costs.
    static ZLIB: std::cell::RefCell<flate2::Compress> =
        std::cell::RefCell::new(flate2::Compress::new(flate2::Compression::fast(), true));
}

/// `parts`, one after the other, as one zlib stream.
fn zlib(parts: &[&[u8]]) -> std::io::Result<Vec<u8>> {
    use flate2::{FlushCompress, Status};
    ZLIB.with_borrow_mut(|z| {
        z.reset();
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut out = Vec::with_capacity(total / 2 + 128);
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            let flush = if last { FlushCompress::Finish } else { FlushCompress::None };
            let start = z.total_in();
            loop {
                if out.len() == out.capacity() {
                    out.reserve(out.capacity().max(4096));
                }
                let done = usize::try_from(z.total_in() - start).unwrap_or(part.len()).min(part.len());
                let status = z.compress_vec(&part[done..], &mut out, flush).map_err(std::io::Error::other)?;
                let consumed = z.total_in() - start == part.len() as u64;
                match status {
                    Status::StreamEnd => break,
                    _ if consumed && !last => break,
                    _ => {}
                }
            }
        }
        Ok(out)
    })
}

/// The git blob id of `bytes`.
pub fn blob_id(bytes: &[u8]) -> String {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex(&h.finalize())
}

/// The 20 bytes a 40-digit hex id stands for.
fn unhex(id: &str) -> std::io::Result<[u8; 20]> {
    let bad = || std::io::Error::other(format!("not an object id: {id}"));
    let mut out = [0u8; 20];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(id.get(i * 2..i * 2 + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// git in the bare repository `dir`, through the daemon's own runner:
    /// whether it succeeded, and its output.
    async fn git(dir: &Path, args: &[&str]) -> (bool, Vec<u8>) {
        let repo = super::super::git::Repo {
            git_dir: Some(dir.to_owned()),
            work_tree: None,
            index: None,
            cwd: dir.to_owned(),
            user_config: false,
        };
        match super::super::git::Git::locate().run(&repo, args, b"").await {
            Ok(out) => (true, out),
            Err(_) => (false, Vec::new()),
        }
    }

    #[tokio::test]
    async fn a_pack_written_in_process_is_read_by_git_and_collected_to_what_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert!(git(dir.path(), &["init", "-q", "--bare"]).await.0);
        let objects = dir.path().join("objects");
        // Sizes across the entry header's one, two and three bytes.
        let contents: Vec<Vec<u8>> = [0usize, 15, 16, 2000, 300_000]
            .iter()
            .map(|&n| (0..n).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1]).collect())
            .collect();
        let blobs: Vec<(String, Arc<[u8]>)> = contents.iter().map(|c| (blob_id(c), Arc::from(&c[..]))).collect();
        write_pack(&objects, &blobs).unwrap();
        assert!(git(dir.path(), &["fsck", "--strict"]).await.0, "git finds the pack sound");
        for (id, bytes) in &blobs {
            assert_eq!(git(dir.path(), &["cat-file", "blob", id]).await, (true, bytes.to_vec()), "{id}");
        }
        let packs = packed(&objects).unwrap();
        assert_eq!(packs.len(), 1);
        assert_eq!(packs[0].1.len(), blobs.len());
        // Keeping all changes nothing; keeping two writes the pack again.
        let all: HashSet<String> = blobs.iter().map(|b| b.0.clone()).collect();
        assert_eq!(prune_pack(&packs[0].0, &packs[0].1, &all).unwrap(), 0);
        let two: HashSet<String> = [blobs[1].0.clone(), blobs[4].0.clone()].into();
        assert_eq!(prune_pack(&packs[0].0, &packs[0].1, &two).unwrap(), 3);
        assert!(git(dir.path(), &["fsck", "--strict"]).await.0);
        for (i, (id, _)) in blobs.iter().enumerate() {
            assert_eq!(git(dir.path(), &["cat-file", "-e", id]).await.0, i == 1 || i == 4, "{id}");
        }
        // Keeping none removes it.
        let packs = packed(&objects).unwrap();
        assert_eq!(prune_pack(&packs[0].0, &packs[0].1, &HashSet::new()).unwrap(), 2);
        assert!(packed(&objects).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(objects.join("pack")).unwrap().count(), 0, "no file left");
    }

    #[test]
    fn entry_headers_carry_type_and_size_in_sevens() {
        assert_eq!(entry_header(BLOB, 15), vec![0x3f]);
        assert_eq!(entry_header(BLOB, 16), vec![0xb0, 0x01]);
        assert_eq!(entry_header(BLOB, 300_000), vec![0xb0, 0xbe, 0x92, 0x01]);
    }
}
