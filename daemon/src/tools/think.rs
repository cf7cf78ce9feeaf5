//! `think`: Swival's structured scratchpad (`swival/thinking.py`). No side
//! effects beyond remembering thought numbers and branch names, so
//! revisions and branches can be checked against what exists.

use super::args::Later;
use super::schema::description_last;
use super::{CallInput, Tool, ToolBox, ToolError};
use crate::toolcall::ToolOutcome;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use swival_protocol::ToolKind;

/// Private scratchpad for planning, debugging, or weighing alternatives. Use before complex actions.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Think {
    /// Your current thinking step. Max 10000 characters.
    pub thought: String,
    /// Current step number (1-based). Optional — auto-increments if omitted.
    #[schemars(range(min = 1), transform = description_last)]
    pub thought_number: Option<i64>,
    /// Estimated total steps needed. Optional — defaults to 3 on first call, then carries forward.
    #[schemars(range(min = 1), transform = description_last)]
    pub total_thoughts: Option<i64>,
    /// true if you need more thinking steps, false when done. Optional — defaults to true.
    pub next_thought_needed: Option<bool>,
    /// Type of thought. 'new' (default): normal thinking step. 'revision': correct a previous thought (set revises_thought). 'branch': explore an alternative (set branch_from_thought + branch_id).
    #[schemars(with = "Option<Mode>")]
    pub mode: Later<Option<String>>,
    /// Which thought number is being revised. Used with mode="revision".
    #[schemars(range(min = 1), transform = description_last)]
    pub revises_thought: Option<i64>,
    /// Thought number to branch from. Used with mode="branch", together with branch_id.
    #[schemars(range(min = 1), transform = description_last)]
    pub branch_from_thought: Option<i64>,
    /// Label for the branch (e.g. 'approach-b'). Used with mode="branch", together with branch_from_thought.
    #[schemars(length(min = 1, max = 50), transform = description_last)]
    pub branch_id: Option<String>,
    /// Swival's older way to ask for a revision, read when `mode` is absent.
    #[schemars(skip)]
    pub is_revision: Later<Option<bool>>,
}

impl Tool for Think {
    const NAME: &'static str = "think";
    const KIND: ToolKind = ToolKind::Think;

    fn run(self, tb: &mut ToolBox, _call: &mut CallInput) -> Result<ToolOutcome, ToolError> {
        tb.thinking.call(&self).map(ToolOutcome::ok)
    }
}

/// Longest thought kept; longer ones are cut.
const MAX_THOUGHT_CHARS: usize = 10_000;
/// Most thoughts in one session.
const MAX_HISTORY: usize = 200;
/// Most named branches.
const MAX_BRANCHES: usize = 20;
/// Longest branch name.
const MAX_BRANCH_ID: usize = 50;

/// What `think` remembers across calls.
#[derive(Debug, Default)]
pub struct Thinking {
    /// `(thought_number, total_thoughts)` of every recorded thought.
    history: Vec<(i64, i64)>,
    /// Branch names, in order of creation.
    branches: Vec<String>,
}

/// What a thought does (its `mode`, as the model is offered it).
#[derive(Debug, Clone, Copy, PartialEq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    // A normal thinking step. (Plain comments: a documented variant would
    // be offered as a `oneOf` instead of Swival's `enum`.)
    New,
    // A correction of an earlier thought.
    Revision,
    // An alternative from an earlier thought.
    Branch,
}

/// What a `think` call answers (in this order, as Swival does).
#[derive(Serialize)]
struct Answer<'a> {
    /// The thought's number.
    thought_number: i64,
    /// The total expected.
    total_thoughts: i64,
    /// Whether more thinking follows.
    next_thought_needed: bool,
    /// The branch names so far.
    branches: &'a [String],
    /// Thoughts recorded, this one included.
    history_length: usize,
}

impl Thinking {
    /// Recorded thought numbers, sorted.
    fn numbers(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.history.iter().map(|&(t, _)| t).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Check a branch's fields and remember its name.
    fn branch(&mut self, from: Option<i64>, id: Option<&str>) -> Result<(), ToolError> {
        let (Some(from), Some(id)) = (from, id) else {
            return Err(ToolError::refused("branch mode requires branch_from_thought and branch_id. Both branch_from_thought and branch_id must be set together"));
        };
        if id.is_empty() {
            return Err(ToolError::refused("branch_id must not be blank"));
        }
        if id.chars().count() > MAX_BRANCH_ID {
            return Err(ToolError::refused(format!("branch_id exceeds {MAX_BRANCH_ID} character limit")));
        }
        let valid = self.numbers();
        if !valid.contains(&from) {
            let last = valid.last().copied().unwrap_or(1);
            return Err(ToolError::refused(format!("branch_from_thought={from} not found in history; valid thought numbers: {valid:?}. Use branch_from_thought={last}")));
        }
        if !self.branches.iter().any(|b| b == id) {
            if self.branches.len() >= MAX_BRANCHES {
                return Err(ToolError::refused(format!("too many branches ({MAX_BRANCHES} max)")));
            }
            self.branches.push(id.to_owned());
        }
        Ok(())
    }

    /// Run one `think` call.
    pub fn call(&mut self, args: &Think) -> Result<String, ToolError> {
        if self.history.len() >= MAX_HISTORY {
            return Err(ToolError::refused(format!(
                "thinking history full ({MAX_HISTORY} steps max); act on what you have"
            )));
        }
        let _thought: String = args.thought.chars().take(MAX_THOUGHT_CHARS).collect();
        let mut revises = args.revises_thought;
        let mut branch_from = args.branch_from_thought;
        let mut branch_id = args.branch_id.as_deref().map(str::trim);
        let mode = if self.history.is_empty() {
            // Nothing to revise or branch from yet.
            Mode::New
        } else {
            infer_mode(args, revises.is_some(), branch_from.is_some() || branch_id.is_some())?
        };
        match mode {
            Mode::New => (revises, branch_from, branch_id) = (None, None, None),
            Mode::Revision => (branch_from, branch_id) = (None, None),
            Mode::Branch => revises = None,
        }
        let valid = self.numbers();
        let last = valid.last().copied().unwrap_or(1);
        match (mode, revises) {
            (Mode::Revision, None) => return Err(ToolError::refused(format!("revision mode requires revises_thought; valid thought numbers: {valid:?}. Use mode=\"revision\" with revises_thought={last}, or omit mode for a normal thought"))),
            (_, Some(r)) if !valid.contains(&r) => return Err(ToolError::refused(format!("revises_thought={r} not found in history; valid thought numbers: {valid:?}. Omit revises_thought for a normal thought, or use revises_thought={last}"))),
            _ => {}
        }
        if mode == Mode::Branch {
            self.branch(branch_from, branch_id)?;
        }
        let number = args.thought_number.unwrap_or(self.history.len() as i64 + 1);
        let total = args.total_thoughts.or_else(|| self.history.last().map(|&(_, t)| t)).unwrap_or(3).max(number);
        let next = args.next_thought_needed.unwrap_or(true);
        self.history.push((number, total));
        let answer = Answer {
            thought_number: number,
            total_thoughts: total,
            next_thought_needed: next,
            branches: &self.branches,
            history_length: self.history.len(),
        };
        Ok(super::json_text(&answer))
    }
}

/// Swival infers the mode from the fields when `mode` is absent; fields
/// that do not belong to the mode are then dropped (models often send a
/// full template with defaults).
fn infer_mode(args: &Think, has_revises: bool, has_branch: bool) -> Result<Mode, ToolError> {
    Ok(match args.mode.read("mode")?.as_deref() {
        Some("revision") => Mode::Revision,
        Some("branch") => Mode::Branch,
        Some(_) => Mode::New,
        None => match args.is_revision.read("is_revision")? {
            Some(true) => Mode::Revision,
            Some(false) => Mode::New,
            None if has_branch => Mode::Branch,
            None if has_revises => Mode::Revision,
            None => Mode::New,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn numbers_auto_increment_and_total_carries_forward() {
        let mut t = Thinking::default();
        let r: Value = serde_json::from_str(&t.call(&args!({"thought": "a"})).unwrap()).unwrap();
        assert_eq!(
            r,
            json!({"thought_number": 1, "total_thoughts": 3, "next_thought_needed": true, "branches": [], "history_length": 1})
        );
        t.call(&args!({"thought": "b", "total_thoughts": 5})).unwrap();
        let r: Value = serde_json::from_str(&t.call(&args!({"thought": "c"})).unwrap()).unwrap();
        assert_eq!(r["thought_number"], 3);
        assert_eq!(r["total_thoughts"], 5);
    }

    #[test]
    fn revisions_and_branches_must_name_recorded_thoughts() {
        let mut t = Thinking::default();
        t.call(&args!({"thought": "a"})).unwrap();
        let err = t.call(&args!({"thought": "b", "mode": "revision", "revises_thought": 9})).unwrap_err().render();
        assert!(err.contains("revises_thought=9 not found"), "{err}");
        let out = t.call(&args!({"thought": "b", "branch_from_thought": 1, "branch_id": "alt"})).unwrap();
        assert!(out.contains("\"branches\":[\"alt\"]"), "{out}");
        // A template with is_revision=false and stray fields is a new thought.
        t.call(&args!({"thought": "c", "is_revision": false, "revises_thought": 42})).unwrap();
    }
}
