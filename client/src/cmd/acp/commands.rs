//! The slash commands the ACP agent answers without a run: the session's
//! policy, its last report, compaction, diff and undo, and its goal and
//! loops (work the daemon does in the background).

use super::session::Bridge;
use crate::cmd::slash::{self, Slash};
use swival_protocol::methods::typed as m;
use swival_protocol::{GoalSetParams, LoopListParams, SessionId, SessionRef};

impl Bridge {
    /// Answer a slash command without a run (`None`: not one of ours).
    pub(super) async fn slash_command(&self, id: &SessionId, text: &str) -> Option<String> {
        let (command, arg) = slash::parse(text.trim())?;
        let flag = |f: &str| arg.split_whitespace().any(|w| w == f);
        match command {
            Slash::Policy => Some(match self.daemon.policy_status(id).await {
                Ok(p) => format!("```json\n{}\n```", serde_json::to_string_pretty(&p).unwrap_or_default()),
                Err(e) => format!("Error: {e}"),
            }),
            Slash::Report => Some(self.last_report(id).await),
            Slash::Compact => Some(self.compact(id, flag("--drop")).await),
            Slash::Diff => Some(self.diff(id).await),
            Slash::Undo => Some(self.undo(id, flag("--force")).await),
            Slash::Goal => Some(self.goal(id, arg).await),
            Slash::Loops => Some(self.loops(id).await),
            _ => None,
        }
    }

    /// `/diff`: the last run's changes, the diffs in a fence.
    async fn diff(&self, id: &SessionId) -> String {
        let which = swival_protocol::ChangesRef { run_id: None, session_id: Some(id.clone()) };
        let params = swival_protocol::RunChangesParams { which, no_diff: false };
        match self.daemon.request::<swival_protocol::methods::typed::RunChangesMethod>(&params).await {
            Ok(c) => {
                let diffs: String = c.files.iter().filter_map(|f| f.diff.as_deref()).collect();
                let list = crate::cmd::changes::render_changes(&c, false);
                match diffs.is_empty() {
                    true => format!("```\n{list}```"),
                    false => format!("```\n{list}```\n```diff\n{diffs}```"),
                }
            }
            Err(e) => format!("Error: {e}"),
        }
    }

    /// `/undo [--force]`: put back the last run's changes.
    async fn undo(&self, id: &SessionId, force: bool) -> String {
        let which = swival_protocol::ChangesRef { run_id: None, session_id: Some(id.clone()) };
        let params = swival_protocol::RunRevertParams { which, force };
        match self.daemon.request::<swival_protocol::methods::typed::RunRevert>(&params).await {
            Ok(r) => format!("```\n{}```", crate::cmd::changes::render_revert(&r)),
            Err(e) => format!("Error: {e}"),
        }
    }

    /// `/compact [--drop]`: `session/compact`, in the REPL's words.
    async fn compact(&self, id: &SessionId, drop: bool) -> String {
        let params = swival_protocol::SessionCompactParams { session_id: id.clone(), drop };
        match self.daemon.request::<swival_protocol::methods::typed::SessionCompact>(&params).await {
            Ok(r) if r.strategy.is_empty() => "Nothing to compact.".into(),
            Ok(r) => format!("Compacted ({}): {} -> {} tokens.", r.strategy, r.tokens_before, r.tokens_after),
            Err(e) => format!("Error: {e}"),
        }
    }

    async fn last_report(&self, id: &SessionId) -> String {
        let detail = match self.daemon.session(id).await {
            Ok(d) => d,
            Err(e) => return format!("Error: {e}"),
        };
        let Some(run) = detail.runs.iter().rev().find(|r| !r.running) else {
            return "No run has finished in this session yet.".into();
        };
        match self.daemon.report(&run.run_id).await {
            // Through a JSON value, as the report has always been written.
            Ok(r) => {
                let stats = serde_json::to_value(&r.stats).unwrap_or_default();
                format!("```json\n{}\n```", serde_json::to_string_pretty(&stats).unwrap_or_default())
            }
            Err(e) => format!("Error: {e}"),
        }
    }

    /// `/goal [objective|replace objective|pause|resume|clear]`.
    async fn goal(&self, id: &SessionId, arg: &str) -> String {
        let this = SessionRef { session_id: id.clone() };
        let (sub, rest) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
        let result = match sub {
            "" => self.daemon.request::<m::GoalGet>(&this).await,
            "pause" => self.daemon.request::<m::GoalPause>(&this).await,
            "resume" => self.daemon.request::<m::GoalResume>(&this).await,
            "clear" | "remove" | "drop" => {
                return match self.daemon.request::<m::GoalClear>(&this).await {
                    Ok(r) if r.goal.is_some() => "goal cleared".into(),
                    Ok(_) => "no goal to clear".into(),
                    Err(e) => format!("Error: {e}"),
                }
            }
            _ => {
                let (replace, objective) = if sub == "replace" { (true, rest.trim()) } else { (false, arg) };
                let params = GoalSetParams::new(id.clone(), objective, replace);
                self.daemon.request::<m::GoalSet>(&params).await
            }
        };
        match result {
            Ok(r) => match r.goal {
                Some(g) => format!("```\n{}```", crate::cmd::goal::block(&g)),
                None => "No goal is currently set.".into(),
            },
            Err(e) => format!("Error: {e}"),
        }
    }

    /// `/loops`: the session's active loops.
    async fn loops(&self, id: &SessionId) -> String {
        let params = LoopListParams { session_id: Some(id.clone()), all: false };
        match self.daemon.request::<m::LoopList>(&params).await {
            Ok(r) => format!("```\n{}```", crate::cmd::loops::table(&r.loops)),
            Err(e) => format!("Error: {e}"),
        }
    }
}
