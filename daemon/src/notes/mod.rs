//! Swival's notes in a project's `.swival/`: the model's memory
//! (`.swival/memory/MEMORY.md`, [`memory`]) and the continue-here file a
//! run leaves when it stops before its end (`.swival/continue.md`,
//! [`resume`]).
//!
//! The model can write `.swival/`, so every read, write and removal here
//! goes through [`crate::beneath`] from the base dir: a `.swival`, a
//! `memory` directory or a note that is a symlink is refused
//! ([`NoteError::Symlink`]), never followed, and nothing outside the base
//! dir is read, written or removed through it.

pub mod memory;
pub mod resume;
mod tokens;

use crate::beneath::{self, swival_dir, How, Missing};
use std::io::Read as _;
use std::path::Path;

/// Why a note could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NoteError {
    /// A symlink on the way (`.swival`, `memory` or the file itself).
    #[error("{0} is a symlink and was not followed; delete it to use this file")]
    Symlink(String),
    /// The file is not a regular file (a directory, a FIFO).
    #[error("{0} is not a regular file")]
    NotAFile(String),
    /// Any other I/O failure.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
}

impl NoteError {
    /// The error for `e`, met on the note `name` (`.swival/...`).
    fn from_beneath(name: &str, e: beneath::Error) -> NoteError {
        match e {
            beneath::Error::Symlink(_) => NoteError::Symlink(name.to_owned()),
            beneath::Error::Io(io) => NoteError::Io(name.to_owned(), io),
            other => NoteError::Io(name.to_owned(), other.into()),
        }
    }
}

/// A note's path under `.swival/`, as directories and a file name.
struct Note {
    /// Its name as shown to the user (`.swival/continue.md`).
    shown: &'static str,
    /// Its path under `.swival/`.
    rel: &'static str,
}

/// A note's text and modification time, read beneath `base` (at most
/// `limit` bytes, lossily decoded); `None` when it or `.swival` does not
/// exist.
fn read(base: &Path, note: &Note, limit: u64) -> Result<Option<(String, std::time::SystemTime)>, NoteError> {
    let fail = |e| NoteError::from_beneath(note.shown, e);
    let dir = match swival_dir(base, Missing::Fail) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    let file = match dir.open_file(Path::new(note.rel), How::Read) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    let meta = beneath::Meta::of(&file).map_err(|e| NoteError::Io(note.shown.to_owned(), e))?;
    if meta.kind != beneath::Kind::File {
        return Err(NoteError::NotAFile(note.shown.to_owned()));
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).map_err(|e| NoteError::Io(note.shown.to_owned(), e))?;
    Ok(Some((String::from_utf8_lossy(&bytes).into_owned(), meta.modified)))
}

/// Replace a note with `text` beneath `base`, creating `.swival` and the
/// note's directory when missing; a note that is a symlink is refused
/// (not replaced, so what the model planted stays for the user to see).
fn write(base: &Path, note: &Note, text: &str) -> Result<(), NoteError> {
    let fail = |e| NoteError::from_beneath(note.shown, e);
    let dir = swival_dir(base, Missing::Create).map_err(fail)?;
    let rel = Path::new(note.rel);
    match dir.metadata(rel) {
        Ok(meta) if meta.kind == beneath::Kind::Symlink => return Err(NoteError::Symlink(note.shown.to_owned())),
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(fail(e)),
    }
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        dir.mkdir_all(parent).map_err(fail)?;
    }
    dir.replace(rel, text.as_bytes()).map_err(fail)
}

/// Remove a note beneath `base` (a symlink there is removed itself, never
/// followed); whether there was one.
fn remove(base: &Path, note: &Note) -> Result<bool, NoteError> {
    let fail = |e| NoteError::from_beneath(note.shown, e);
    let dir = match swival_dir(base, Missing::Fail) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(fail(e)),
    };
    match dir.remove_file(Path::new(note.rel)) {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(fail(e)),
    }
}
