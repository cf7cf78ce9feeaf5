//! What a job between runs (a compaction, a restore, a resume's summary)
//! shares: the events it emits are the session's, and how it fails.

use super::turns::CallError;
use super::EventSink;
use swival_protocol::{EventKind, FailureKind, RunId};

/// Why a compaction between runs did not happen.
#[derive(Debug)]
pub enum CompactError {
    /// Cancelled (the session closed, or the daemon is stopping).
    Cancelled,
    /// It failed: why, as a kind and in words.
    Failed(FailureKind, String),
}

impl From<CallError> for CompactError {
    fn from(e: CallError) -> CompactError {
        match e {
            CallError::Cancelled => CompactError::Cancelled,
            CallError::Failed(kind, why) => CompactError::Failed(kind, why),
            CallError::Overflow(why) | CallError::Unreadable(why) => CompactError::Failed(FailureKind::Provider, why),
            CallError::Blocked(why) => CompactError::Failed(FailureKind::HookBlocked, why),
        }
    }
}

/// The events of a job between runs belong to the session, not to a run:
/// every event its calls emit goes out without a run id.
pub(super) struct SessionEvents<'a>(pub(super) &'a dyn EventSink);

impl EventSink for SessionEvents<'_> {
    fn emit(&self, _run: Option<&RunId>, kind: EventKind) {
        self.0.emit(None, kind);
    }
}
