//! Provider progress (streamed text, retries) turned into the run's
//! events, with text deltas coalesced: every event is a stored row.

use super::EventSink;
use crate::provider::CallObserver;
use std::time::Duration;
use swival_protocol::{EventKind, RunId};

/// Streamed text is stored and sent at most this often (the first piece
/// after a quiet spell goes at once)...
const DELTA_INTERVAL: Duration = Duration::from_millis(16);
/// ...unless this much is waiting.
const DELTA_BYTES: usize = 1024;

/// Forwards provider progress to the event log. Text deltas are coalesced
/// (every event is a stored row): a piece goes out at once when the last
/// went out at least [`DELTA_INTERVAL`] ago or [`DELTA_BYTES`] are
/// waiting; the rest waits for the next piece or [`Observer::flush`].
pub(super) struct Observer<'a> {
    /// Where events go.
    pub events: &'a dyn EventSink,
    /// The run.
    pub run_id: &'a RunId,
    /// The turn.
    pub turn: u64,
    /// Whether text deltas may be shown.
    pub stream_text: bool,
    /// Text not sent yet, and when text last went out.
    pub pending: std::sync::Mutex<(String, Option<std::time::Instant>)>,
}

impl Observer<'_> {
    /// Send whatever text is waiting.
    pub fn flush(&self) {
        let text = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.1 = Some(std::time::Instant::now());
            std::mem::take(&mut p.0)
        };
        if !text.is_empty() {
            self.events.emit(Some(self.run_id), EventKind::TextDelta { turn: self.turn, text });
        }
    }
}

impl CallObserver for Observer<'_> {
    fn text_delta(&self, text: &str) {
        if !self.stream_text {
            return;
        }
        let due = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.0.push_str(text);
            p.0.len() >= DELTA_BYTES || p.1.is_none_or(|at| at.elapsed() >= DELTA_INTERVAL)
        };
        if due {
            self.flush();
        }
    }

    fn retry(&self, attempt: u32, delay: Duration, reason: &str) {
        self.flush();
        let kind = EventKind::Retry {
            turn: self.turn,
            attempt: attempt.into(),
            delay_s: delay.as_secs_f64(),
            reason: reason.to_owned(),
        };
        self.events.emit(Some(self.run_id), kind);
    }
}
