//! `/loop [interval] <prompt>`, `/loops`, `/unloop <id|all>` (Swival's):
//! loops the daemon owns for this session, each firing in a fresh
//! worktree; their events show here as they happen. And the inbox's new
//! entries, shown at each prompt.

use super::Repl;
use swival_protocol::methods::typed as m;
use swival_protocol::{InboxListParams, LoopAddParams, LoopListParams, LoopRemoveParams, Schedule};
use swivalctl::ClientError;

impl Repl {
    /// `/loop [interval] <prompt>`.
    pub(super) async fn add_loop(&mut self, arg: &str) -> Result<(), ClientError> {
        let (every, prompt) = match crate::cmd::interval::split(arg) {
            Ok(split) => split,
            Err(e) => {
                self.warn(&e);
                return Ok(());
            }
        };
        let schedule = Schedule { every_s: Some(every), cron: None, at: None };
        let params = LoopAddParams {
            session_id: self.session.clone(),
            prompt,
            schedule,
            budget: Default::default(),
            webhook: None,
        };
        let added = self.client.request::<m::LoopAdd>(&params).await?.loop_;
        if every < 60 {
            let tag = format!("[loop {}]", added.loop_id);
            self.warn(&format!("{tag} interval is below 60s, will fire ~{} times per hour", 3600 / every.max(1)));
        }
        Ok(())
    }

    /// `/loops`.
    pub(super) async fn list_loops(&mut self) -> Result<(), ClientError> {
        let params = LoopListParams { session_id: Some(self.session.clone()), all: false };
        let loops = self.client.request::<m::LoopList>(&params).await?.loops;
        self.info(crate::cmd::loops::table(&loops).trim_end());
        Ok(())
    }

    /// `/unloop <id|all>`.
    pub(super) async fn unloop(&mut self, arg: &str) -> Result<(), ClientError> {
        if arg.is_empty() {
            self.warn("usage: /unloop <id|all>");
            return Ok(());
        }
        let all = arg == "all";
        let params =
            LoopRemoveParams { session_id: Some(self.session.clone()), loop_id: (!all).then(|| arg.to_owned()), all };
        let removed = self.client.request::<m::LoopRemove>(&params).await?.removed;
        if all {
            let n = removed.len();
            self.info(&format!("cancelled {n} loop{}", if n == 1 { "" } else { "s" }));
        }
        Ok(())
    }

    /// Show the inbox entries written since the last shown (none at
    /// `start`: only what comes while the REPL is open); the last seq.
    pub(super) async fn inbox_news(&mut self, start: bool) -> u64 {
        let after = if start { None } else { Some(self.inbox_seq) };
        let params = InboxListParams { after_seq: after, limit: Some(if start { 1 } else { 20 }) };
        let Ok(news) = self.client.request::<m::InboxList>(&params).await else { return self.inbox_seq };
        if !start {
            for e in news.entries.iter().rev() {
                let text = format!("» inbox {}", crate::cmd::inbox::entry(e));
                self.info(text.trim_end());
            }
        }
        news.last_seq
    }
}
