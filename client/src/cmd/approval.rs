//! Command approvals asked on the terminal (`commands = "ask"`): the
//! question and the typed answer in the words `run` and the REPL share,
//! and `run`'s wait for that answer.

use std::io::IsTerminal;
use swival_protocol::{Event, EventKind, SessionId};
use swivalctl::Client;

/// Answer an `approval_requested` event on the terminal.
pub async fn answer_approval(client: &Client, session_id: &SessionId, event: &Event) {
    let EventKind::ApprovalRequested { approval_id, command, timeout_s, .. } = &event.kind else {
        return;
    };
    let decision = ask_terminal(&event.kind, *timeout_s).await;
    match client.approve(session_id, approval_id, decision).await {
        Ok(true) => {}
        Ok(false) => eprintln!("swivalctl: the answer came too late: `{command}` was rejected"),
        Err(e) => eprintln!("swivalctl: cannot pass the answer to swivald: {e}"),
    }
}

/// Ask on the terminal whether a command may run (`commands = "ask"`):
/// the command, its exact argv, why it is high-risk and the files it runs
/// that changed in the session. Without a terminal, on end of input, on
/// Ctrl-C, or with no answer before the daemon stops waiting, the answer
/// is no (Swival: EOF denies).
async fn ask_terminal(question: &EventKind, timeout_s: f64) -> swival_protocol::ApprovalDecision {
    use swival_protocol::ApprovalDecision as D;
    let EventKind::ApprovalRequested { command, every_time, .. } = question else {
        return D::RejectOnce;
    };
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "swivalctl: `{command}` needs approval (commands = \"ask\") and there is no terminal to ask on: rejected"
        );
        return D::RejectOnce;
    }
    let (lines, prompt) = approval_question(question);
    eprint!("{lines}{prompt}");
    let read = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line).unwrap_or_default()
    });
    let wait = std::time::Duration::from_secs_f64(timeout_s.max(0.0));
    let line = tokio::select! {
        l = read => l.unwrap_or_default(),
        _ = tokio::time::sleep(wait) => {
            eprintln!("\nno answer in time: rejected");
            return D::RejectOnce;
        }
        _ = tokio::signal::ctrl_c() => return D::RejectOnce,
    };
    approval_answer(&line, *every_time)
}

/// An approval's question: the lines that describe the command, and the
/// prompt with the keys (`run` and the REPL ask in the same words).
pub fn approval_question(question: &EventKind) -> (String, String) {
    let EventKind::ApprovalRequested {
        bucket,
        command,
        high_risk,
        argv,
        reason,
        changed_files,
        every_time,
        unseen_args,
        ..
    } = question
    else {
        return (String::new(), String::new());
    };
    let risk = if *high_risk { " [high risk]" } else { "" };
    let mut lines = format!("? Run `{command}`{risk}?\n");
    if !argv.is_empty() {
        lines.push_str(&format!("  argv: {}\n", serde_json::to_string(argv).unwrap_or_default()));
    }
    if !unseen_args.is_empty() {
        lines.push_str(&format!("  not approved before: {}\n", unseen_args.join(" ")));
    }
    if let Some(reason) = reason {
        lines.push_str(&format!("  why: {reason}\n"));
    }
    if !changed_files.is_empty() {
        lines.push_str(&format!("  changed in this session: {}\n", changed_files.join(", ")));
    }
    let always = match (*every_time, changed_files.is_empty()) {
        (true, _) => String::new(),
        (false, true) => " [a] always this command,".to_owned(),
        (false, false) => " [a] always this command with these files as they are,".to_owned(),
    };
    let asked = if *every_time { " (asked every time)" } else { "" };
    (lines, format!("  [y] once,{always} [n] no, [never] `{bucket}`{asked} (default no): "))
}

/// The decision a typed answer means (anything else is no).
pub fn approval_answer(line: &str, every_time: bool) -> swival_protocol::ApprovalDecision {
    use swival_protocol::ApprovalDecision as D;
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => D::AllowOnce,
        "a" | "always" if !every_time => D::AllowAlways,
        "never" => D::RejectAlways,
        _ => D::RejectOnce,
    }
}
