//! Loop guards (Swival's `storm_breaker`, on by default): what keeps a
//! model — a small one especially — from repeating itself until
//! `max_turns`. Each is an entry of the nudge table (`nudge/mod.rs`),
//! turned off by its name in `disable_nudges`, all of them by
//! `storm_breaker = false`.
//!
//! - **Storm breaker** (Swival's): over a window of the last six calls, the
//!   third call with the same name and the same arguments is not run; its
//!   result says why. The model's notes (`think`, `todo`) are exempt while
//!   they succeed (the same note twice is no loop); one that failed twice
//!   with the same arguments is refused the third time as any call; a
//!   call that changes something (a write, an edit, a move, a delete, a
//!   command) clears the read-only calls before it from the window, so
//!   reading again after an edit is fine. Which tool does what is its
//!   [`ToolKind`] in the tool registry.
//! - **Error guardrail** (Swival's): per tool, keyed on the first line of
//!   the error; the second identical error in a row gets a nudge, the
//!   third and later a stop message. A success of the tool resets it.
//! - **Re-reads**: the same read-only call succeeding a third time with no
//!   change in between gets a nudge to use what it already returned.
//! - **Finishing**: a change that succeeded has a line added to its result
//!   saying to answer now if the task is done; after it, three turns of
//!   reads only get a nudge to answer.
//! - **Changes that change nothing**: a write or edit that left the file
//!   as it was, put it back to a content it had earlier in the run (two
//!   versions written back and forth), or could change nothing (edit_file
//!   with `old_string` equal to `new_string`) says so in its result (the
//!   tool decides: `ToolOutcome::futile`), counts as a refusal toward
//!   stuck, and the same call again is refused at once, until a change
//!   that changes something.
//! - **Stuck**: a run whose calls the storm breaker refused
//!   [`STUCK_REFUSALS`] times gets one last call without tools; its answer
//!   ends the run, and with none the run ends with an error that says so,
//!   instead of running on silently to `max_turns`.
//!
//! Nudges of one turn are joined into one synthetic user message, sent
//! after the turn's tool results.

use super::nudge::{storm, Switches};
use crate::toolcall::ToolOutcome;
use crate::tools::parsed::ParsedCall;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use swival_protocol::{InterventionKind, ToolKind};

/// Calls the storm breaker remembers.
const WINDOW: usize = 6;
/// The identical call refused: the third within the window.
const STORM_AT: usize = 3;
/// Successful identical read-only calls, with no change between, before
/// a nudge.
const REREAD_AT: u32 = 3;
/// Read-only turns after a successful change before the finishing nudge.
const IDLE_TURNS: u32 = 3;
/// Refused calls that end the run.
pub const STUCK_REFUSALS: u32 = 5;

/// Appended to the result of a change that succeeded.
pub const DONE_HINT: &str =
    "If this change completes the task, do not call another tool: reply now with a one-line summary of what you changed.";

/// Said to a stuck model before its last call, made without tools.
pub const STUCK_NUDGE: &str = "STOP: your last tool calls were refused as repeats, so tools are now off for this run. \
     Reply with your final answer: what you did, and what is left undone if anything.";

/// One intervention, for the event stream and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervention {
    /// The tool it is about (empty for the finishing nudge).
    pub tool: String,
    /// `nudge`, `stop` (Swival's guardrail levels), `storm`, `reread`,
    /// `finish` or `stuck`.
    pub level: InterventionKind,
    /// What the model is told.
    pub message: String,
}

/// A call the storm breaker refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The tool result the model gets instead.
    pub result: String,
    /// How many identical calls the window holds, this one included.
    pub count: usize,
    /// The first 12 hex digits of the SHA-256 of the canonical arguments.
    pub args_hash: String,
}

#[derive(Debug, Clone)]
struct Entry {
    key: String,
    read_only: bool,
}

/// The guards of one run.
#[derive(Debug)]
pub struct Guards {
    /// Which guards are on.
    switches: Switches,
    window: VecDeque<Entry>,
    /// Per tool: the first line of its last error and how often in a row.
    errors: HashMap<String, (String, u32)>,
    /// Successful read-only calls since the last change, by key.
    reads: HashMap<String, u32>,
    /// Whether a change succeeded, and read-only turns since.
    changed: bool,
    idle_turns: u32,
    finish_sent: bool,
    /// Calls that gained nothing since the last real change, by key.
    futile: HashSet<String>,
    /// The model's notes that failed, by key, and how often in a row.
    failed_notes: HashMap<String, usize>,
    /// Calls refused in this run, and calls that gained nothing.
    pub refused: u32,
    /// This turn's nudges.
    pending: Vec<Intervention>,
    /// Whether this turn changed something or did more than read.
    turn_busy: bool,
}

impl Guards {
    /// Guards for one run, those `switches` has on.
    pub fn new(switches: Switches) -> Guards {
        Guards {
            switches,
            window: VecDeque::with_capacity(WINDOW),
            errors: HashMap::new(),
            reads: HashMap::new(),
            changed: false,
            idle_turns: 0,
            finish_sent: false,
            futile: HashSet::new(),
            failed_notes: HashMap::new(),
            refused: 0,
            pending: Vec::new(),
            turn_busy: false,
        }
    }

    /// Before running a call: `Some` when it must not run.
    pub fn before(&mut self, call: &ParsedCall) -> Option<Refusal> {
        let (name, raw_args, kind) = (call.name.as_str(), call.raw.as_str(), call.kind);
        let storm = self.switches.on(InterventionKind::Storm);
        let unchanged = self.switches.on(InterventionKind::Unchanged);
        if !(storm || unchanged) {
            return None;
        }
        let key = call.key.clone();
        if kind.is_bookkeeping() {
            // A note is refused only as a failure repeated.
            let failed = self.failed_notes.get(&key).copied().unwrap_or(0);
            return (storm && failed + 1 >= STORM_AT).then(|| self.refuse(name, raw_args, &key, failed + 1, false));
        }
        let mutating = kind.changes_files();
        if mutating {
            self.window.retain(|e| !e.read_only);
        }
        let count = 1 + self.window.iter().filter(|e| e.key == key).count();
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(Entry { key: key.clone(), read_only: !mutating });
        // A call that gained nothing gains nothing the second time either.
        let refused = (storm && count >= STORM_AT) || (unchanged && self.futile.contains(&key));
        if !refused {
            return None;
        }
        Some(self.refuse(name, raw_args, &key, count, !mutating))
    }

    /// Refuse the call of `name` with `raw_args` (its `key`), the `count`th
    /// alike: counted toward stuck, and the result that says why (for a
    /// read, `after_read`, with the next step named).
    fn refuse(&mut self, name: &str, raw_args: &str, key: &str, count: usize, after_read: bool) -> Refusal {
        self.refused += 1;
        let hash = Sha256::digest(key.as_bytes());
        let args_hash: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
        Refusal { result: storm::words(name, raw_args, count, after_read), count, args_hash }
    }

    /// After a call ran: note its result; a nudge it earns is sent after
    /// the turn's results. A change that succeeded gets a hint to append
    /// to its result: small models keep calling tools after the change
    /// that finished the task.
    pub fn after(&mut self, call: &ParsedCall, outcome: &ToolOutcome) -> Option<&'static str> {
        let (name, failed, kind) = (call.name.as_str(), outcome.failed, call.kind);
        let mutating = kind.changes_files();
        if kind.is_bookkeeping() {
            let key = call.key.clone();
            match failed {
                true => *self.failed_notes.entry(key).or_insert(0) += 1,
                false => _ = self.failed_notes.remove(&key),
            }
        }
        if !kind.is_bookkeeping() && (mutating || failed) {
            self.turn_busy = true;
        }
        if outcome.futile.is_some() && self.switches.on(InterventionKind::Unchanged) {
            self.futile.insert(call.key.clone());
            self.refused += 1;
            // Not a change: no reset, no push to finish.
            if !failed {
                return None;
            }
        }
        if failed {
            self.failed_call(name, &outcome.text);
            return None;
        }
        self.errors.remove(name);
        if mutating {
            self.reads.clear();
            self.futile.clear();
            self.changed = true;
            self.idle_turns = 0;
            self.finish_sent = false;
            // A change noted as possibly not what the task wanted gets no
            // push to finish: the note asks for another change.
            let hint = kind != ToolKind::Execute && !outcome.warned && self.switches.on(InterventionKind::DoneHint);
            return hint.then_some(DONE_HINT);
        }
        if kind.is_bookkeeping() {
            return None;
        }
        let n = self.reads.entry(call.key.clone()).or_insert(0);
        *n += 1;
        if *n == REREAD_AT && self.switches.on(InterventionKind::Reread) {
            self.pending.push(Intervention {
                tool: name.to_owned(),
                level: InterventionKind::Reread,
                message: format!(
                    "Note: `{name}` with {} has now returned the same result {REREAD_AT} times and nothing \
                     changed in between. Use the result you already have: make the change the task needs, \
                     or give your final answer.",
                    storm::shown(&call.raw)
                ),
            });
        }
        None
    }

    /// Swival's error guardrail: the second identical error of `name` in a
    /// row earns a nudge, the third and later a stop message.
    fn failed_call(&mut self, name: &str, text: &str) {
        let first = text.lines().next().unwrap_or_default().to_owned();
        let entry = self.errors.entry(name.to_owned()).or_insert_with(|| (String::new(), 0));
        if entry.0 == first {
            entry.1 += 1;
        } else {
            *entry = (first.clone(), 1);
        }
        let n = entry.1;
        if n == 2 && self.switches.on(InterventionKind::Nudge) {
            self.pending.push(Intervention {
                tool: name.to_owned(),
                level: InterventionKind::Nudge,
                message: format!(
                    "IMPORTANT: You have called `{name}` 2 times with the same error. The error is: {first}\n\
                     Do not repeat that call: fix your tool call as the error says (it names the call to \
                     make next), or use another tool."
                ),
            });
        } else if n >= 3 && self.switches.on(InterventionKind::Stop) {
            self.pending.push(Intervention {
                tool: name.to_owned(),
                level: InterventionKind::Stop,
                message: format!(
                    "STOP: You have failed to use `{name}` correctly {n} times in a row with the same error: \
                     {first}\nDo NOT call `{name}` again with the same arguments. Do what the error says \
                     first, use a different tool, or give your final answer."
                ),
            });
        }
    }

    /// A refused call, for the error guardrail's sake: nothing ran.
    pub fn refused_call(&mut self) {
        self.turn_busy = true;
    }

    /// The end of a turn that ran tools: the nudges it earned, joined into
    /// one message, and what each was.
    pub fn end_turn(&mut self) -> (Option<String>, Vec<Intervention>) {
        if self.switches.on(InterventionKind::Finish) && self.changed && !self.turn_busy && !self.finish_sent {
            self.idle_turns += 1;
            if self.idle_turns >= IDLE_TURNS {
                self.finish_sent = true;
                self.pending.push(Intervention {
                    tool: String::new(),
                    level: InterventionKind::Finish,
                    message: format!(
                        "Your change was made and the last {IDLE_TURNS} turns only read. If the task is done, \
                         reply now with your final answer (a short summary of what you changed) and call no \
                         more tools; if not, make the next change."
                    ),
                });
            }
        } else if self.turn_busy {
            self.idle_turns = 0;
        }
        self.turn_busy = false;
        let given = std::mem::take(&mut self.pending);
        let text =
            (!given.is_empty()).then(|| given.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("\n\n"));
        (text, given)
    }

    /// Why the run must end now, when it must.
    pub fn stuck(&self) -> Option<String> {
        (self.switches.on(InterventionKind::Stuck) && self.refused >= STUCK_REFUSALS).then(|| {
            format!(
                "the model is stuck: the repeat-loop guard refused {} identical tool calls in this run; \
                 stopping instead of running on to max_turns. Try a larger model or a more specific task.",
                self.refused
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guards called with a call's name and text, read as the agent
    /// reads a call.
    trait Raw {
        fn before_raw(&mut self, name: &str, raw: &str) -> Option<Refusal>;
        fn after_raw(&mut self, name: &str, raw: &str, outcome: &ToolOutcome) -> Option<&'static str>;
    }

    impl Raw for Guards {
        fn before_raw(&mut self, name: &str, raw: &str) -> Option<Refusal> {
            self.before(&ParsedCall::read("c", name, raw))
        }

        fn after_raw(&mut self, name: &str, raw: &str, outcome: &ToolOutcome) -> Option<&'static str> {
            self.after(&ParsedCall::read("c", name, raw), outcome)
        }
    }

    const EDIT: &str = r#"{"file_path": "a.py", "old_string": "x", "new_string": "y"}"#;
    const UNREAD: &str =
        "error: cannot edit a.py: it has not been read yet; call read_file with {\"file_path\": \"a.py\"} first";

    /// Every guard off, as `storm_breaker = false` has them.
    fn off() -> Switches {
        let config = crate::config::SessionConfig { storm_breaker: false, ..Default::default() };
        Switches::new(&config)
    }

    /// What a call gave: here, a failure when it reads as one.
    fn gave(text: &str) -> ToolOutcome {
        match text.starts_with("error:") {
            true => ToolOutcome::failed(text.to_owned()),
            false => ToolOutcome::ok(text.to_owned()),
        }
    }

    #[test]
    fn the_third_identical_call_is_refused_and_names_itself() {
        let mut g = Guards::new(Switches::all_on());
        assert!(g.before_raw("edit_file", EDIT).is_none());
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        // The same call written with other spacing and key order is the same call.
        let same = r#"{"new_string":"y","old_string":"x","file_path":"a.py"}"#;
        assert!(g.before_raw("edit_file", same).is_none());
        g.after_raw("edit_file", same, &gave(UNREAD));
        let refusal = g.before_raw("edit_file", EDIT).expect("third identical call refused");
        assert_eq!(refusal.count, 3);
        assert_eq!(refusal.args_hash.len(), 12);
        assert!(refusal
            .result
            .starts_with("error: repeat-loop guard tripped — edit_file was called with identical arguments 3 times."));
        assert!(refusal.result.contains("a.py"), "{}", refusal.result);
        assert!(!refusal.result.contains("make it now"), "an edit is not told to edit: {}", refusal.result);
    }

    #[test]
    fn a_refused_read_names_the_edit_to_make_or_the_answer_to_give() {
        let mut g = Guards::new(Switches::all_on());
        let read = r#"{"file_path": "deploy.yaml", "offset": 1, "limit": 2000}"#;
        for _ in 0..2 {
            assert!(g.before_raw("read_file", read).is_none());
            g.after_raw("read_file", read, &gave("1: replicas: 2"));
        }
        let refusal = g.before_raw("read_file", read).expect("third identical read refused").result;
        assert!(
            refusal.contains("make it now: edit_file with file_path \"deploy.yaml\", old_string one line copied"),
            "{refusal}"
        );
        assert!(refusal.ends_with("reply now with the answer as text and call no tool."), "{refusal}");
        let grep = r#"{"pattern": "PORT"}"#;
        for _ in 0..2 {
            g.before_raw("grep", grep);
        }
        let refusal = g.before_raw("grep", grep).expect("refused").result;
        assert!(refusal.contains("make it now: edit_file or write_file."), "{refusal}");
    }

    #[test]
    fn second_identical_error_nudges_third_stops_and_a_success_resets() {
        let mut g = Guards::new(Switches::all_on());
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        assert!(g.end_turn().0.is_none());
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        let (text, given) = g.end_turn();
        assert_eq!(given[0].level, InterventionKind::Nudge);
        assert!(text.unwrap().starts_with("IMPORTANT: You have called `edit_file` 2 times with the same error."));
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        assert_eq!(g.end_turn().1[0].level, InterventionKind::Stop);
        g.after_raw("edit_file", EDIT, &gave("Edited a.py"));
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        assert!(g.end_turn().1.is_empty(), "a success resets the count");
    }

    #[test]
    fn a_change_clears_earlier_reads_from_the_window() {
        let mut g = Guards::new(Switches::all_on());
        let read = r#"{"file_path": "a.py"}"#;
        for _ in 0..2 {
            assert!(g.before_raw("read_file", read).is_none());
            g.after_raw("read_file", read, &gave("1: x"));
        }
        assert!(g.before_raw("edit_file", EDIT).is_none());
        g.after_raw("edit_file", EDIT, &gave("Edited a.py"));
        assert!(g.before_raw("read_file", read).is_none(), "reading after an edit is fine");
    }

    #[test]
    fn a_call_that_changed_nothing_counts_toward_stuck_and_is_refused_at_once_until_a_real_change() {
        let mut g = Guards::new(Switches::all_on());
        let noop = r#"{"file_path": "a.py", "old_string": "x", "new_string": "x"}"#;
        assert!(g.before_raw("edit_file", noop).is_none());
        let told = "error: edit_file: old_string and new_string are identical (in a.py)";
        g.after_raw("edit_file", noop, &ToolOutcome::failed(told.into()).with_futile(Some(told.into())));
        assert_eq!(g.refused, 1);
        let refusal = g.before_raw("edit_file", noop).expect("the second no-op is refused");
        assert_eq!(refusal.count, 2);
        assert!(refusal.result.contains("called with identical arguments 2 times"), "{}", refusal.result);
        // A write that put back an earlier content: counted, no push to finish.
        let back = r#"{"file_path": "a.py", "content": "x = 1"}"#;
        assert!(g.before_raw("write_file", back).is_none());
        let restored = ToolOutcome::warned("Wrote 5 bytes".into()).with_futile(Some("back".into()));
        assert_eq!(g.after_raw("write_file", back, &restored), None);
        assert_eq!(g.refused, 3, "the no-op, its refused repeat and the write");
        assert!(g.before_raw("write_file", back).is_some(), "the same write again is refused");
        // A real change clears them.
        assert_eq!(g.after_raw("edit_file", EDIT, &gave("Edited a.py")), Some(DONE_HINT));
        assert!(g.futile.is_empty());
    }

    #[test]
    fn think_and_todo_are_never_refused_and_disabled_guards_do_nothing() {
        let mut g = Guards::new(Switches::all_on());
        for _ in 0..5 {
            assert!(g.before_raw("think", r#"{"thought": "hm"}"#).is_none());
        }
        let mut off = Guards::new(off());
        for _ in 0..5 {
            assert!(off.before_raw("edit_file", EDIT).is_none());
            off.after_raw("edit_file", EDIT, &gave(UNREAD));
        }
        assert_eq!(off.end_turn(), (None, Vec::new()));
    }

    #[test]
    fn a_change_that_succeeded_gets_the_done_hint_a_failure_or_a_read_does_not() {
        let mut g = Guards::new(Switches::all_on());
        assert_eq!(g.after_raw("edit_file", EDIT, &gave("Edited a.py")), Some(DONE_HINT));
        let noted = "Wrote 3 bytes to a.py\n[checksum=0]\nNote: this replaced the whole file";
        assert_eq!(
            g.after_raw("write_file", EDIT, &ToolOutcome::warned(noted.into())),
            None,
            "a noted change is not pushed to finish"
        );
        assert_eq!(g.after_raw("edit_file", EDIT, &gave(UNREAD)), None);
        assert_eq!(g.after_raw("read_file", r#"{"file_path": "a.py"}"#, &gave("1: x")), None);
        assert_eq!(Guards::new(off()).after_raw("edit_file", EDIT, &gave("Edited a.py")), None);
    }

    #[test]
    fn reads_only_after_a_change_earn_one_finishing_nudge() {
        let mut g = Guards::new(Switches::all_on());
        g.after_raw("edit_file", EDIT, &gave("Edited a.py"));
        assert!(g.end_turn().0.is_none());
        for i in 0..2 {
            g.after_raw("read_file", &format!(r#"{{"file_path": "f{i}"}}"#), &gave("1: x"));
            assert!(g.end_turn().0.is_none());
        }
        g.after_raw("grep", r#"{"pattern": "y"}"#, &gave("a.py:1: y"));
        let (text, given) = g.end_turn();
        assert_eq!(given[0].level, InterventionKind::Finish);
        assert!(text.unwrap().contains("final answer"));
        g.after_raw("read_file", r#"{"file_path": "z"}"#, &gave("1: x"));
        assert!(g.end_turn().0.is_none(), "once per change");
    }

    #[test]
    fn the_same_read_a_third_time_earns_a_nudge_and_refusals_add_up_to_stuck() {
        let mut g = Guards::new(Switches::all_on());
        let read = r#"{"file_path": "a.py"}"#;
        for _ in 0..3 {
            g.after_raw("read_file", read, &gave("1: x"));
        }
        assert_eq!(g.end_turn().1[0].level, InterventionKind::Reread);
        let mut s = Guards::new(Switches::all_on());
        for _ in 0..2 {
            s.before_raw("edit_file", EDIT);
        }
        for _ in 0..STUCK_REFUSALS {
            assert!(s.stuck().is_none());
            assert!(s.before_raw("edit_file", EDIT).is_some());
        }
        assert!(s.stuck().unwrap().contains("the model is stuck"));
    }

    #[test]
    fn each_guard_turned_off_by_name_stays_quiet_and_the_others_still_act() {
        let read = r#"{"file_path": "a.py"}"#;
        let mut g = Guards::new(Switches::with_off(&[InterventionKind::Reread]));
        for _ in 0..3 {
            g.after_raw("read_file", read, &gave("1: x"));
        }
        assert!(g.end_turn().1.is_empty(), "no re-read nudge");
        assert!(g.before_raw("read_file", read).is_none() && g.before_raw("read_file", read).is_none());
        assert!(g.before_raw("read_file", read).is_some(), "the storm breaker still refuses");
        let mut g = Guards::new(Switches::with_off(&[InterventionKind::Storm]));
        for _ in 0..4 {
            assert!(g.before_raw("edit_file", EDIT).is_none(), "no storm refusal");
        }
        let mut g = Guards::new(Switches::with_off(&[InterventionKind::DoneHint]));
        assert_eq!(g.after_raw("edit_file", EDIT, &gave("Edited a.py")), None);
        let mut g = Guards::new(Switches::with_off(&[InterventionKind::Nudge]));
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        assert!(g.end_turn().1.is_empty(), "no nudge at the second error");
        g.after_raw("edit_file", EDIT, &gave(UNREAD));
        assert_eq!(g.end_turn().1[0].level, InterventionKind::Stop, "the stop still comes");
        let mut g = Guards::new(Switches::with_off(&[InterventionKind::Stuck]));
        for _ in 0..(STUCK_REFUSALS + 2) {
            g.before_raw("edit_file", EDIT);
        }
        assert!(g.stuck().is_none(), "never stuck");
    }

    #[test]
    fn a_note_that_keeps_failing_the_same_way_is_refused_and_counts_toward_stuck() {
        let mut g = Guards::new(Switches::all_on());
        let done = r#"{"action": "done", "tasks": "nothing changed"}"#;
        let missing = "error: no task matching 'nothing changed'";
        for _ in 0..2 {
            assert!(g.before_raw("todo", done).is_none());
            g.after_raw("todo", done, &gave(missing));
        }
        let refusal = g.before_raw("todo", done).expect("the third identical failure is refused");
        assert_eq!(refusal.count, 3);
        assert!(refusal.result.contains("todo was called with identical arguments 3 times"), "{}", refusal.result);
        for _ in 0..STUCK_REFUSALS - 1 {
            assert!(g.before_raw("todo", done).is_some());
        }
        assert!(g.stuck().is_some(), "refusals add up to stuck");
        // A note that succeeds is never refused, and a success forgets the failures.
        let add = r#"{"action": "add", "tasks": "x"}"#;
        let mut g = Guards::new(Switches::all_on());
        g.after_raw("todo", add, &gave(missing));
        g.after_raw("todo", add, &gave(missing));
        g.after_raw("todo", add, &gave("added"));
        for _ in 0..5 {
            assert!(g.before_raw("todo", add).is_none());
            g.after_raw("todo", add, &gave("added"));
        }
    }
}
