//! `swivalctl inbox` (what background work did: goals, loop firings,
//! detached runs, approvals waiting) and `swivalctl approve` (answer an
//! approval a background run waits for).

use super::daemon::connect;
use std::path::Path;
use std::process::ExitCode;
use swival_protocol::methods::typed as m;
use swival_protocol::{ApprovalDecision, ApproveParams, InboxEntry, InboxListParams, InboxTrigger, SessionId};
use swivalctl::ClientError;

/// `swivalctl inbox`.
pub async fn list(socket: &Path, limit: u64, json: bool) -> Result<ExitCode, ClientError> {
    let client = connect(socket).await?;
    let r = client.request::<m::InboxList>(&InboxListParams { after_seq: None, limit: Some(limit) }).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r.entries).expect("entries serialize"));
        return Ok(ExitCode::SUCCESS);
    }
    if r.entries.is_empty() {
        println!("The inbox is empty: nothing ran in the background yet.");
    }
    for e in &r.entries {
        print!("{}", entry(e));
    }
    Ok(ExitCode::SUCCESS)
}

/// One entry in a few lines: what ran, how it ended, what changed, and
/// the commands to see it or bring it in.
pub fn entry(e: &InboxEntry) -> String {
    let trigger = match (e.trigger, &e.source_id) {
        (InboxTrigger::Goal, Some(id)) => format!("goal {id}"),
        (InboxTrigger::Loop, Some(id)) => format!("loop {id}"),
        (InboxTrigger::Detached, _) => "detached run".into(),
        (_, None) => "background".into(),
    };
    let title: String = e.title.chars().take(80).collect();
    let title = title.replace('\n', " ");
    let mut out = format!("#{} {}  {trigger}  {}  {}\n", e.seq, e.created_at, e.outcome, super::clean::text(&title));
    let run = e.run_id.as_ref().map(|r| format!(" run {r}")).unwrap_or_default();
    let mut facts = vec![format!("session {}{run}", e.session_id)];
    // File names are the model's: cleaned, one line.
    let shown = |f: &String| super::clean::text(&f.replace(['\n', '\r'], " ")).into_owned();
    match e.files.len() {
        0 => {}
        n if n <= 3 => facts.push(format!("changed {}", e.files.iter().map(shown).collect::<Vec<_>>().join(", "))),
        n => facts.push(format!("changed {n} files")),
    }
    if let Some(t) = e.tokens {
        facts.push(format!("{t} tokens"));
    }
    if let Some(c) = e.cost_usd {
        facts.push(format!("${c:.4}"));
    }
    out += &format!("    {}\n", facts.join(" · "));
    if let Some(detail) = &e.detail {
        // A command waiting for approval is shown whole: a cut one could
        // hide what it runs.
        let cut = e.approval_id.is_none() && detail.chars().count() > 200;
        let detail: String = if cut { detail.chars().take(200).chain(['…']).collect() } else { detail.clone() };
        out += &format!("    {}\n", super::clean::text(&detail.replace(['\n', '\r'], " ")));
    }
    let s = &e.session_id;
    if let Some(id) = &e.approval_id {
        out += &format!("    answer: swivalctl approve {s} {id} allow|deny\n");
    } else if !e.files.is_empty() {
        let runs: Vec<String> = e.changed_by.iter().map(|r| format!("swivalctl diff {r}")).collect();
        let see = if runs.is_empty() { format!("swivalctl diff --session {s}") } else { runs.join("; ") };
        let bring = if e.worktree { format!(" · bring in: swivalctl apply {s}") } else { String::new() };
        out += &format!("    see: {see}{bring}\n");
    }
    out
}

/// `swivalctl approve SESSION APPROVAL allow|deny [--always]`.
pub async fn approve(
    socket: &Path,
    session: String,
    approval: String,
    answer: &str,
    always: bool,
) -> Result<ExitCode, ClientError> {
    let decision = match (answer, always) {
        ("allow", false) => ApprovalDecision::AllowOnce,
        ("allow", true) => ApprovalDecision::AllowAlways,
        ("deny", false) => ApprovalDecision::RejectOnce,
        ("deny", true) => ApprovalDecision::RejectAlways,
        _ => {
            eprintln!("swivalctl: error: answer allow or deny, not {answer:?}");
            return Ok(ExitCode::from(2));
        }
    };
    let client = connect(socket).await?;
    // Say what is approved, whole, from the inbox entry that asked.
    let listed = client.request::<m::InboxList>(&InboxListParams { after_seq: None, limit: Some(1000) }).await?;
    let asked = listed.entries.iter().find(|e| e.approval_id.as_deref() == Some(approval.as_str()));
    if let Some(detail) = asked.and_then(|e| e.detail.as_deref()) {
        eprintln!("{answer}: {}", super::clean::text(detail));
    }
    let params = ApproveParams { session_id: SessionId(session), approval_id: approval.clone(), decision };
    if client.request::<m::RunApprove>(&params).await?.accepted {
        println!("answered {approval}");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("swivalctl: nothing waits for {approval} any more (answered, timed out, or its run ended)");
        Ok(ExitCode::FAILURE)
    }
}
