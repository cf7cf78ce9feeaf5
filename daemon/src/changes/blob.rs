//! Loose git objects written in-process, as `git hash-object -w` writes
//! them: a file tool's bracket starts no git process.

use std::path::Path;

/// Blobs up to this size are compressed on the calling thread; larger
/// ones off the runtime's threads.
pub(super) const INLINE_BLOB: usize = 256 * 1024;

/// Write `bytes` into `objects` as a loose git blob, as `git hash-object
/// -w` would, without starting git: a file tool's bracket costs no
/// process. Its id; a blob already there is not written again.
pub(super) fn write_blob(objects: &Path, bytes: &[u8]) -> std::io::Result<String> {
    let id = blob_id(bytes);
    let dir = objects.join(&id[..2]);
    let path = dir.join(&id[2..]);
    if path.exists() {
        return Ok(id);
    }
    let compressed = zlib(&[format!("blob {}\0", bytes.len()).as_bytes(), bytes])?;
    // Whole or not at all: written aside (read-only, as git writes
    // objects), then renamed into place. The fan-out directory is made
    // only when it is missing.
    let tmp = dir.join(format!("tmp_obj_{:016x}", rand::random::<u64>()));
    let create = || {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o444).open(&tmp)
    };
    let file = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&dir)?;
            create()
        }
        other => other,
    };
    let written = file
        .and_then(|mut f| std::io::Write::write_all(&mut f, &compressed))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| id)
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

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
