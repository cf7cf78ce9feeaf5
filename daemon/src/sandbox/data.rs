//! A policy program's data file belongs to that program: a filter's rules,
//! an MCP server's database or memory file. The model may neither read
//! nor write it, nor plant something in its place before the program
//! opens it (a symlink at a not-yet-existing path would make the server
//! write `~/.ssh/authorized_keys`, or hand back `~/.ssh/id_rsa`).
//!
//! At session start each data file under a directory commands can write
//! is *secured*: every directory on the way to it is checked (no symlink)
//! and created when missing, and a missing file is created empty, so it
//! has a name to hide. It is then hidden from commands like a credential
//! store (covered in their mount namespace, its directories pinned in
//! place so no rename moves it: `linux/mounts.rs`) and from the file tools
//! (refused for reads and writes). A data file outside every writable
//! directory is out of the commands' reach by Landlock already; one that
//! exists is checked the same way. A data file whose path holds a symlink,
//! or is not a regular file, is refused: the session does not start, and
//! the error names it.

use crate::beneath::{Beneath, How, Kind};
use std::path::{Path, PathBuf};

/// Why a data file cannot be protected.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A symlink, a FIFO or another non-file is where the data file or a
    /// directory above it should be.
    #[error(
        "data file {path} of a policy program cannot be protected: {why}; remove what is there (the model may have planted it) or point the program at another file"
    )]
    Unsafe {
        /// The data file.
        path: String,
        /// What is wrong.
        why: Unsafe,
    },
}

/// What is wrong on a data file's way.
#[derive(Debug, thiserror::Error)]
pub enum Unsafe {
    /// The file (or what is at its name) is not what it should be.
    #[error("it is a {0}")]
    Kind(&'static str),
    /// A whole writable directory was named.
    #[error("it is a whole writable directory")]
    WholeDir,
    /// Missing, and no file can be made for it (no extension says it is
    /// one; it may be meant as a directory).
    #[error("it does not exist, and its name does not say whether the program wants a file or a directory there; create it before the session")]
    Missing,
    /// Opening or making something beneath its directory failed (a
    /// symlink on the way, among others).
    #[error(transparent)]
    Beneath(#[from] crate::beneath::Error),
}

/// Why a data file is not protected now (`guarded`).
#[derive(Debug, thiserror::Error)]
pub enum Unguarded {
    /// A symlink on its way.
    #[error("{} is a symlink", .0.display())]
    Symlink(PathBuf),
    /// Commands are not confined by the kernel.
    #[error("commands are not confined by the kernel here (see not_enforced)")]
    Unconfined,
    /// Commands could reach it.
    #[error("commands could reach it: it is not hidden (no user namespaces?)")]
    NotHidden,
    /// Neither a file nor a directory.
    #[error("it is not a regular file")]
    NotRegular,
    /// Missing, and not created.
    #[error("it does not exist yet and its name has no extension, so it was not created empty to be protected; create it before the session")]
    Missing,
}

/// Make each of `data` safe to hide: see the module. `writable` are the
/// directories the model's commands may write (canonical).
pub fn secure(data: &[PathBuf], writable: &[PathBuf]) -> Result<(), DataError> {
    for path in data {
        secure_one(path, writable).map_err(|why| DataError::Unsafe { path: path.display().to_string(), why })?;
    }
    Ok(())
}

fn secure_one(path: &Path, writable: &[PathBuf]) -> Result<(), Unsafe> {
    let Some(root) = writable.iter().filter(|w| path.starts_with(w)).max_by_key(|w| w.as_os_str().len()) else {
        return check_outside(path);
    };
    let rel = path.strip_prefix(root).unwrap_or(path);
    if rel.as_os_str().is_empty() {
        return Err(Unsafe::WholeDir);
    }
    let dir = Beneath::open(root)?;
    match dir.metadata(rel) {
        Ok(meta) if meta.kind == Kind::File || meta.kind == Kind::Dir => return Ok(()),
        Ok(meta) => return Err(Unsafe::Kind(kind_name(meta.kind))),
        Err(e) if !e.is_not_found() => return Err(e.into()),
        Err(_) => {}
    }
    if rel.extension().is_none() {
        // A file or a directory? Creating the wrong one would break the
        // program, and leaving the name free would let the model take it.
        return Err(Unsafe::Missing);
    }
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.mkdir_all(parent)?;
    }
    dir.open_file(rel, How::CreateNew)?;
    Ok(())
}

/// A data file outside every writable directory: the model cannot create
/// or change anything there; what exists must still not be a symlink.
fn check_outside(path: &Path) -> Result<(), Unsafe> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Unsafe::Kind("symlink")),
        _ => Ok(()),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Symlink => "symlink",
        Kind::Dir => "directory",
        Kind::File => "file",
        Kind::Other => "FIFO, socket or device",
    }
}

/// Whether `path` is protected as the session's sandbox stands, and if
/// not, why: hidden from commands (`hidden`, with user namespaces) or out
/// of their reach (`writable`, with Landlock), a regular file or
/// directory with no symlink on its way.
pub fn guarded(path: &Path, hidden: &[PathBuf], writable: &[PathBuf], confined: bool) -> Result<(), Unguarded> {
    if let Some(link) = crate::beneath::first_symlink(Path::new("/"), path) {
        return Err(Unguarded::Symlink(link));
    }
    if !confined {
        return Err(Unguarded::Unconfined);
    }
    if !writable.iter().any(|w| path.starts_with(w)) {
        return Ok(());
    }
    if !hidden.iter().any(|h| path.starts_with(h)) {
        return Err(Unguarded::NotHidden);
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() || m.is_dir() => Ok(()),
        Ok(_) => Err(Unguarded::NotRegular),
        Err(_) => Err(Unguarded::Missing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().canonicalize().unwrap();
        (d, p)
    }

    #[test]
    fn a_missing_data_file_and_its_directories_are_created_empty() {
        let (_d, base) = root();
        let data = base.join("state/db/memory.jsonl");
        secure(std::slice::from_ref(&data), std::slice::from_ref(&base)).unwrap();
        assert_eq!(std::fs::read(&data).unwrap(), b"");
        let hidden = [data.clone()];
        assert!(guarded(&data, &hidden, std::slice::from_ref(&base), true).is_ok());
        assert!(guarded(&data, &[], std::slice::from_ref(&base), true).is_err(), "not hidden");
    }

    #[test]
    fn a_planted_link_at_the_file_or_above_it_is_refused_and_nothing_outside_changes() {
        let (_d, base) = root();
        let outside = base.join("outside");
        std::fs::create_dir(&outside).unwrap();
        let project = base.join("p");
        std::fs::create_dir(&project).unwrap();
        std::os::unix::fs::symlink(outside.join("authorized_keys"), project.join("graph.jsonl")).unwrap();
        let err = secure(&[project.join("graph.jsonl")], std::slice::from_ref(&project)).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        std::os::unix::fs::symlink(&outside, project.join("state")).unwrap();
        let err = secure(&[project.join("state/x.db")], std::slice::from_ref(&project)).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "nothing made outside");
    }

    #[test]
    fn a_fifo_is_refused_and_an_existing_file_is_kept() {
        let (_d, base) = root();
        nix::unistd::mkfifo(&base.join("rules.txt"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(secure(&[base.join("rules.txt")], std::slice::from_ref(&base)).is_err());
        std::fs::write(base.join("kept.db"), "data").unwrap();
        secure(&[base.join("kept.db")], std::slice::from_ref(&base)).unwrap();
        assert_eq!(std::fs::read(base.join("kept.db")).unwrap(), b"data");
    }
}
