//! `/goal` (Swival's): set, replace, pause, resume or clear the session's
//! goal, or show it. The daemon works on the goal; its runs show here as
//! they go, like any other client's (`Repl::background`).

use super::Repl;
use swival_protocol::methods::typed as m;
use swival_protocol::{GoalSetParams, GoalStatus, SessionRef};
use swivalctl::ClientError;

impl Repl {
    /// `/goal [<objective>|replace <objective>|pause|resume|clear]`.
    pub(super) async fn goal(&mut self, arg: &str) -> Result<(), ClientError> {
        let this = SessionRef { session_id: self.session.clone() };
        let (sub, rest) = arg.split_once(char::is_whitespace).unwrap_or((arg, ""));
        let rest = rest.trim();
        let local = ["clear", "remove", "drop", "pause", "resume"];
        if local.contains(&sub.to_lowercase().as_str()) && !rest.is_empty() {
            self.warn(&format!("/goal {sub} takes no argument"));
            return Ok(());
        }
        match sub.to_lowercase().as_str() {
            "" => {
                let goal = self.client.request::<m::GoalGet>(&this).await?.goal;
                match goal {
                    Some(g) => self.info(&crate::cmd::goal::block(&g)),
                    None => self.info("No goal is currently set."),
                }
            }
            "clear" | "remove" | "drop" => {
                let cleared = self.client.request::<m::GoalClear>(&this).await?.goal;
                self.info(if cleared.is_some() { "goal cleared" } else { "no goal to clear" });
            }
            "pause" | "resume" => {
                // Swival's words when there is nothing to pause or resume.
                let status = self.client.request::<m::GoalGet>(&this).await?.goal.map(|g| g.status);
                match (sub.to_lowercase().as_str(), status) {
                    ("pause", Some(GoalStatus::Active)) => {
                        self.client.request::<m::GoalPause>(&this).await?;
                        self.info("goal paused");
                    }
                    ("pause", _) => self.warn("no active goal to pause"),
                    (_, Some(GoalStatus::Paused | GoalStatus::Stuck)) => {
                        self.client.request::<m::GoalResume>(&this).await?;
                        self.info("goal resumed");
                    }
                    _ => self.warn("no paused goal to resume"),
                }
            }
            "replace" if rest.is_empty() => self.warn("/goal replace requires an objective"),
            "replace" => self.set_goal(rest, true).await?,
            _ => self.set_goal(arg, false).await?,
        }
        Ok(())
    }

    async fn set_goal(&mut self, objective: &str, replace: bool) -> Result<(), ClientError> {
        let params = GoalSetParams::new(self.session.clone(), objective, replace);
        self.client.request::<m::GoalSet>(&params).await?;
        self.info(
            "the daemon works on the goal now, run after run, also once this terminal is closed; \
             /goal shows it, /goal pause stops it",
        );
        Ok(())
    }
}
