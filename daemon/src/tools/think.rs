//! `think`: Swival's structured scratchpad (`swival/thinking.py`). No side
//! effects beyond remembering thought numbers and branch names, so
//! revisions and branches can be checked against what exists.

use super::args::{opt_bool, opt_int, opt_str, req_str};
use super::ToolError;
use serde_json::{json, Value};

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

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    New,
    Revision,
    Branch,
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
    pub fn call(&mut self, args: &Value) -> Result<String, ToolError> {
        if self.history.len() >= MAX_HISTORY {
            return Err(ToolError::refused(format!(
                "thinking history full ({MAX_HISTORY} steps max); act on what you have"
            )));
        }
        let _thought: String = req_str(args, "thought")?.chars().take(MAX_THOUGHT_CHARS).collect();
        let mut revises = opt_int(args, "revises_thought")?;
        let mut branch_from = opt_int(args, "branch_from_thought")?;
        let mut branch_id = opt_str(args, "branch_id")?.map(str::trim);
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
        let number = opt_int(args, "thought_number")?.unwrap_or(self.history.len() as i64 + 1);
        let total =
            opt_int(args, "total_thoughts")?.or_else(|| self.history.last().map(|&(_, t)| t)).unwrap_or(3).max(number);
        let next = opt_bool(args, "next_thought_needed")?.unwrap_or(true);
        self.history.push((number, total));
        Ok(json!({
            "thought_number": number,
            "total_thoughts": total,
            "next_thought_needed": next,
            "branches": self.branches,
            "history_length": self.history.len(),
        })
        .to_string())
    }
}

/// Swival infers the mode from the fields when `mode` is absent; fields
/// that do not belong to the mode are then dropped (models often send a
/// full template with defaults).
fn infer_mode(args: &Value, has_revises: bool, has_branch: bool) -> Result<Mode, ToolError> {
    Ok(match opt_str(args, "mode")? {
        Some("revision") => Mode::Revision,
        Some("branch") => Mode::Branch,
        Some(_) => Mode::New,
        None => match opt_bool(args, "is_revision")? {
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

    #[test]
    fn numbers_auto_increment_and_total_carries_forward() {
        let mut t = Thinking::default();
        let r: Value = serde_json::from_str(&t.call(&json!({"thought": "a"})).unwrap()).unwrap();
        assert_eq!(
            r,
            json!({"thought_number": 1, "total_thoughts": 3, "next_thought_needed": true, "branches": [], "history_length": 1})
        );
        t.call(&json!({"thought": "b", "total_thoughts": 5})).unwrap();
        let r: Value = serde_json::from_str(&t.call(&json!({"thought": "c"})).unwrap()).unwrap();
        assert_eq!(r["thought_number"], 3);
        assert_eq!(r["total_thoughts"], 5);
    }

    #[test]
    fn revisions_and_branches_must_name_recorded_thoughts() {
        let mut t = Thinking::default();
        t.call(&json!({"thought": "a"})).unwrap();
        let err = t.call(&json!({"thought": "b", "mode": "revision", "revises_thought": 9})).unwrap_err().render();
        assert!(err.contains("revises_thought=9 not found"), "{err}");
        let out = t.call(&json!({"thought": "b", "branch_from_thought": 1, "branch_id": "alt"})).unwrap();
        assert!(out.contains("\"branches\":[\"alt\"]"), "{out}");
        // A template with is_revision=false and stray fields is a new thought.
        t.call(&json!({"thought": "c", "is_revision": false, "revises_thought": 42})).unwrap();
    }
}
