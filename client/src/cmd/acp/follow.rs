//! One task per followed session: the daemon's events become updates
//! (replayed history first for `session/load`, then live), each run's end
//! goes to the prompt waiting for it, approvals become
//! `session/request_permission`, and, when the editor offers it, the
//! session's file reads are answered from the editor's buffers.

use super::acp;
use super::session::{commands_update, daemon_error, send, Bridge, Tracked};
use super::updates::{self, Forwarder};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client as Editor, Error};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use swival_protocol::{ApprovalDecision, Event, EventKind, RunEnd, RunId, SessionId};

/// A load's reply, owed once the history up to `last` seq is sent.
pub type Replay = (u64, Responder<acp::LoadSessionResponse>);

impl Bridge {
    /// Follow a session until the daemon connection ends or a later load
    /// replaces this follower. A failure is this session's alone: it is
    /// logged, never taken to the editor's other sessions.
    pub(super) async fn follow(
        self: &Arc<Self>,
        tracked: Arc<Tracked>,
        cx: ConnectionTo<Editor>,
        replay: Option<Replay>,
    ) {
        if let Err(e) = self.follow_events(&tracked, &cx, replay).await {
            eprintln!("swivalctl acp: stopped following session {}: {e}", tracked.id);
        }
        self.end_follow(&tracked);
    }

    /// Send a session's events from the first. With `replay`, the events
    /// up to its seq are history: the load is answered after them, and
    /// questions still open then go to the editor.
    async fn follow_events(
        self: &Arc<Self>,
        tracked: &Arc<Tracked>,
        cx: &ConnectionTo<Editor>,
        mut replay: Option<Replay>,
    ) -> Result<(), Error> {
        let mut forwarder = Forwarder::new(tracked.base_dir.clone());
        let mut events = match self.daemon.subscribe_events(&tracked.id, 1).await {
            Ok(s) => s,
            Err(e) => {
                return match replay.take() {
                    Some((_, r)) => r.respond_with_error(daemon_error(e)),
                    None => Err(daemon_error(e)),
                };
            }
        };
        if replay.as_ref().is_some_and(|(last, _)| *last == 0) {
            answer_load(cx, &tracked.id, &mut replay)?;
        }
        let mut open: Vec<Question> = Vec::new();
        while let Some(Ok(event)) = events.next().await {
            if tracked.retired.load(Ordering::Relaxed) {
                break;
            }
            let echo = replay.is_none() && self.own_prompt(tracked, &event);
            for update in forwarder.updates(&event) {
                if !(echo && matches!(update, acp::SessionUpdate::UserMessageChunk(_))) {
                    send(cx, &tracked.id, update)?;
                }
            }
            match Question::of(&event) {
                Some(q) if replay.is_none() => self.ask_editor(cx, &tracked.id, q),
                Some(q) => open.push(q),
                None => {}
            }
            match &event.kind {
                EventKind::ApprovalResolved { approval_id, .. } => open.retain(|q| q.approval_id != *approval_id),
                // A run that ended (or died with the daemon) answers nothing more.
                EventKind::RunFinished(end) => {
                    open.clear();
                    if let Some(run) = &event.run_id {
                        self.finished(tracked, run, end);
                    }
                }
                _ => {}
            }
            if replay.as_ref().is_some_and(|(last, _)| event.seq.0 >= *last) {
                answer_load(cx, &tracked.id, &mut replay)?;
                for q in open.drain(..) {
                    self.ask_editor(cx, &tracked.id, q);
                }
            }
        }
        Ok(())
    }

    /// Whether `event` starts a run of a prompt this bridge sent (the
    /// editor shows that prompt already; it is not echoed back).
    fn own_prompt(&self, tracked: &Tracked, event: &Event) -> bool {
        let EventKind::RunStarted { client_token: Some(token), .. } = &event.kind else { return false };
        let mut runs = tracked.runs.lock().expect("runs lock");
        match runs.own_prompts.iter().position(|t| t == token) {
            Some(i) => {
                runs.own_prompts.remove(i);
                true
            }
            None => false,
        }
    }

    /// Ask the editor to approve a call (`session/request_permission`)
    /// and pass its answer to the daemon. An editor that cancels the
    /// question, or fails to answer, rejects the call.
    fn ask_editor(self: &Arc<Self>, cx: &ConnectionTo<Editor>, session: &SessionId, q: Question) {
        // An "always" covers this command as it is (the changed files
        // only as they are now); a "never" the whole bucket.
        let allow_always = match q.changed_files.is_empty() {
            true => "Allow this command for the rest of this session".to_owned(),
            false => "Allow this command for the rest of this session, with these files as they are".to_owned(),
        };
        let reject_always = format!("Reject `{}` for the rest of this session", q.bucket);
        let mut options = vec![
            acp::PermissionOption::new("allow_once", "Allow once", acp::PermissionOptionKind::AllowOnce),
            acp::PermissionOption::new("allow_always", allow_always, acp::PermissionOptionKind::AllowAlways),
            acp::PermissionOption::new("reject_once", "Reject", acp::PermissionOptionKind::RejectOnce),
            acp::PermissionOption::new("reject_always", reject_always, acp::PermissionOptionKind::RejectAlways),
        ];
        if q.every_time {
            options.remove(1);
        }
        let risk = if q.high_risk { " (high risk)" } else { "" };
        let shown = q.details();
        let fields = acp::ToolCallUpdateFields::new()
            .title(format!("Approve `{}`{risk}?", q.bucket))
            .kind(acp::ToolKind::Execute)
            .status(acp::ToolCallStatus::Pending)
            .content(shown);
        let request = acp::RequestPermissionRequest::new(
            session.0.clone(),
            acp::ToolCallUpdate::new(q.tool_call_id.clone(), fields),
            options,
        );
        let (bridge, editor, session) = (self.clone(), cx.clone(), session.clone());
        let asked = cx.spawn(async move {
            let decision = match editor.send_request(request).block_task().await {
                Ok(r) => match r.outcome {
                    acp::RequestPermissionOutcome::Selected(s) => decision_of(&s.option_id.0),
                    _ => ApprovalDecision::RejectOnce,
                },
                Err(_) => ApprovalDecision::RejectOnce,
            };
            if let Err(e) = bridge.daemon.approve(&session, &q.approval_id, decision).await {
                eprintln!("swivalctl acp: cannot pass the answer to swivald: {e}");
            }
            Ok(())
        });
        if let Err(e) = asked {
            eprintln!("swivalctl acp: cannot ask the editor about `{}`: {e}", q.command);
        }
    }

    /// Answer the session's file reads from the editor's buffers
    /// (`fs/read_text_file`), for as long as the daemon connection lives.
    /// An editor that cannot read a file leaves it to the disk.
    pub(super) async fn serve_buffers(self: &Arc<Self>, session: &SessionId, cx: &ConnectionTo<Editor>) {
        if !self.editor_reads.load(Ordering::Relaxed) {
            return;
        }
        let mut reads = match self.daemon.serve_buffers(session).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("swivalctl acp: reads will not see unsaved buffers: {e}");
                return;
            }
        };
        let (bridge, editor, session) = (self.clone(), cx.clone(), session.clone());
        let served = cx.spawn(async move {
            while let Some(Ok(read)) = reads.next().await {
                let request = acp::ReadTextFileRequest::new(session.0.clone(), PathBuf::from(&read.path));
                let text = editor.send_request(request).block_task().await.ok().map(|r| r.content);
                if let Err(e) = bridge.daemon.respond_buffer(&read.request_id, text).await {
                    eprintln!("swivalctl acp: cannot pass a buffer to swivald: {e}");
                }
            }
            Ok(())
        });
        if let Err(e) = served {
            eprintln!("swivalctl acp: reads will not see unsaved buffers: {e}");
        }
    }

    /// Hand a run's end to the prompt waiting for it, or keep it for the
    /// prompt about to wait (only while one is in flight: ends of runs
    /// other clients started are not kept).
    fn finished(&self, tracked: &Tracked, run: &RunId, end: &RunEnd) {
        let mut runs = tracked.runs.lock().expect("runs lock");
        match runs.waiting.remove(run) {
            Some(tx) => {
                let _ = tx.send(end.clone());
            }
            None if runs.prompting => {
                runs.finished.insert(run.clone(), end.clone());
            }
            None => {}
        }
    }

    /// The follower ended: prompts waiting on it fail, and the session is
    /// forgotten unless a later load took its place.
    fn end_follow(&self, tracked: &Arc<Tracked>) {
        let mut runs = tracked.runs.lock().expect("runs lock");
        runs.gone = true;
        runs.waiting.clear();
        drop(runs);
        let mut sessions = self.sessions.lock().expect("sessions lock");
        if sessions.get(&tracked.id.0).is_some_and(|t| Arc::ptr_eq(t, tracked)) {
            sessions.remove(&tracked.id.0);
        }
    }
}

fn answer_load(cx: &ConnectionTo<Editor>, id: &SessionId, replay: &mut Option<Replay>) -> Result<(), Error> {
    if let Some((_, r)) = replay.take() {
        r.respond(acp::LoadSessionResponse::new())?;
        send(cx, id, commands_update())?;
    }
    Ok(())
}

/// A call waiting for the user's approval.
struct Question {
    approval_id: String,
    tool_call_id: String,
    bucket: String,
    command: String,
    high_risk: bool,
    /// The exact argv, why it is high-risk, the files it runs that
    /// changed in the session.
    argv: Vec<String>,
    reason: Option<String>,
    changed_files: Vec<String>,
    /// No "always" is offered: the daemon would take it as once.
    every_time: bool,
    /// Words an earlier "always" in the bucket did not see.
    unseen_args: Vec<String>,
}

impl Question {
    fn of(event: &Event) -> Option<Question> {
        let EventKind::ApprovalRequested {
            approval_id,
            tool_call_id,
            bucket,
            command,
            high_risk,
            argv,
            reason,
            changed_files,
            every_time,
            unseen_args,
            ..
        } = &event.kind
        else {
            return None;
        };
        Some(Question {
            approval_id: approval_id.clone(),
            tool_call_id: updates::call_id(event, tool_call_id),
            bucket: bucket.clone(),
            command: command.clone(),
            high_risk: *high_risk,
            argv: argv.clone(),
            reason: reason.clone(),
            changed_files: changed_files.clone(),
            every_time: *every_time,
            unseen_args: unseen_args.clone(),
        })
    }

    /// What the editor shows: the command, then (a second block) its
    /// exact argv, the reason, the changed files.
    fn details(&self) -> Vec<acp::ToolCallContent> {
        let block = |text: String| acp::ToolCallContent::from(acp::ContentBlock::from(text));
        let mut more = Vec::new();
        if !self.argv.is_empty() {
            more.push(format!("argv: `{}`", serde_json::to_string(&self.argv).unwrap_or_default()));
        }
        if !self.unseen_args.is_empty() {
            more.push(format!("Not approved before: `{}`", self.unseen_args.join(" ")));
        }
        if let Some(reason) = &self.reason {
            more.push(format!("High risk: {reason}"));
        }
        if !self.changed_files.is_empty() {
            more.push(format!("Changed in this session: {}", self.changed_files.join(", ")));
        }
        if self.every_time {
            more.push("Asked every time: no \"always\" for this kind of command.".to_owned());
        }
        let mut shown = vec![block(format!("```\n{}\n```", self.command))];
        if !more.is_empty() {
            shown.push(block(more.join("\n\n")));
        }
        shown
    }
}

fn decision_of(option: &str) -> ApprovalDecision {
    match option {
        "allow_once" => ApprovalDecision::AllowOnce,
        "allow_always" => ApprovalDecision::AllowAlways,
        "reject_always" => ApprovalDecision::RejectAlways,
        _ => ApprovalDecision::RejectOnce,
    }
}
