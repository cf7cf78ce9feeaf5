//! Swival's notes of a session's project (`notes/`) through the API:
//! `memory/add` appends to MEMORY.md, `continue/clear` removes the
//! continue file (Swival's `/clear`), and `continue/save` writes it from an
//! idle session's conversation (Swival's REPL exit), as a job of the
//! session's actor since it reads the conversation and the todo list.

use super::compact::{Between, Ended};
use super::SessionError;
use super::{check_base_dir, random_id, Command, Sessions};
use crate::agent;
use crate::notes::{memory, resume, NoteError};
use std::path::PathBuf;
use swival_protocol::{ContinueClearParams, ContinueClearResult, ContinueSaveResult};
use swival_protocol::{MemoryAddParams, MemoryAddResult, RunId, SessionId};

/// A note that could not be written or removed, as the caller's error.
fn refused(e: NoteError) -> SessionError {
    SessionError::Refused(e.to_string())
}

impl Between {
    /// `continue/save`: write the continue file from the conversation.
    pub async fn save_continue(self) -> Ended<ContinueSaveResult> {
        let Between { shared, session, cancel, parts } = self;
        let id = RunId(random_id("n_"));
        let ctx = session.context(&shared, &id, "", &cancel);
        let state = parts.into();
        let written = agent::save_continue(ctx, &state);
        Ended { parts: Some(state.into()), result: Ok(ContinueSaveResult { written }) }
    }
}

impl Sessions {
    /// The project a notes call names: its session's base dir, or the
    /// base dir given.
    fn notes_base(&self, session: Option<&SessionId>, base_dir: Option<&str>) -> Result<PathBuf, SessionError> {
        match (session, base_dir) {
            (Some(id), _) => Ok(self.inspect(id)?.base_dir.clone()),
            (None, Some(dir)) => check_base_dir(dir),
            (None, None) => Err(SessionError::Config("this method needs session_id or base_dir".into())),
        }
    }

    /// `memory/add`: append a note to the project's MEMORY.md.
    pub fn add_memory(&self, p: &MemoryAddParams) -> Result<MemoryAddResult, SessionError> {
        if p.text.trim().is_empty() {
            return Err(SessionError::Refused("memory/add needs a non-empty text".into()));
        }
        let base = self.notes_base(p.session_id.as_ref(), p.base_dir.as_deref())?;
        let appended = memory::add(&base, &p.text, p.heading.as_deref()).map_err(refused)?;
        let path = base.join(".swival/memory/MEMORY.md").display().to_string();
        Ok(MemoryAddResult { path, appended })
    }

    /// `continue/clear`: remove the project's continue file.
    pub fn clear_continue(&self, p: &ContinueClearParams) -> Result<ContinueClearResult, SessionError> {
        let base = self.notes_base(p.session_id.as_ref(), p.base_dir.as_deref())?;
        Ok(ContinueClearResult { removed: resume::clear(&base).map_err(refused)? })
    }

    /// `continue/save`: write the continue file of an idle session.
    pub async fn save_continue(&self, id: &SessionId) -> Result<ContinueSaveResult, SessionError> {
        self.ask_idle(id, |reply| Command::SaveContinue { reply }).await
    }
}
