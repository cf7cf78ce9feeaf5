//! Where the loop's events go. The agent only emits; storing, ordering and
//! fanning out belong to whoever owns the session (`session::events`
//! implements this for a session's log), so the loop does not depend on
//! how sessions are kept.

use crate::report::RunRecord;
use swival_protocol::{EventKind, RunId};

/// Receives the events of a run as the loop produces them.
pub trait EventSink: Send + Sync {
    /// Record `kind` as an event of `run` (`None`: of the session). Must
    /// not wait: the loop emits on its hot path (text deltas).
    fn emit(&self, run: Option<&RunId>, kind: EventKind);
}

/// Emit `kind` as an event of `run`, folded into the run's `record` on
/// the way: the event log and the report are fed this one value, so
/// nothing is recorded beside the events by hand.
pub fn emit_recorded(events: &dyn EventSink, run: &RunId, record: &mut RunRecord, kind: EventKind) {
    record.apply(&kind);
    events.emit(Some(run), kind);
}
