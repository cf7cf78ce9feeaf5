//! `swivalctl acp`: an Agent Client Protocol agent on stdin/stdout whose
//! sessions are daemon sessions. An editor starts it and speaks ACP v1
//! (newline-delimited JSON-RPC); every ACP session is a swivald session
//! (the whole policy pipeline, persistence, several at once), and the
//! editor can load one again after a restart of either side.
//!
//! Shape: one task per session follows the daemon's events and turns them
//! into `session/update`s (`updates.rs`); a prompt starts a run and its
//! answer waits for that run's `run_finished` to pass through the same
//! task, so every update of a run reaches the editor before its stop
//! reason. Nothing but protocol messages is written on stdout.

mod commands;
mod follow;
mod options;
mod session;
mod updates;

use agent_client_protocol::v1::schema as acp;
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client as Editor, Stdio};
use session::Bridge;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// Serve ACP on stdin/stdout until the editor closes stdin. Runs in flight
/// go on in the daemon. With `log`, diagnostics are appended to that file
/// instead of stderr.
pub async fn serve(socket: &Path, log: Option<&Path>) -> ExitCode {
    if let Some(path) = log {
        if let Err(e) = log_to(path) {
            return super::fail(&format!("cannot write the log {}: {e}", path.display()));
        }
    }
    let daemon = match super::daemon::connect(socket).await {
        Ok(c) => c,
        Err(e) => return super::fail(&e),
    };
    let bridge = Arc::new(Bridge::new(daemon));
    match serve_on(bridge).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::fail(&e),
    }
}

/// Point stderr at `path` (appending, created 0600 if missing).
fn log_to(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
    nix::unistd::dup2_stderr(file).map_err(std::io::Error::from)
}

async fn serve_on(bridge: Arc<Bridge>) -> Result<(), agent_client_protocol::Error> {
    let (b1, b2, b3, b4, b5, b6) =
        (bridge.clone(), bridge.clone(), bridge.clone(), bridge.clone(), bridge.clone(), bridge.clone());
    let b7 = bridge;
    Agent
        .v1()
        .name("swivalctl")
        .on_receive_request(
            async move |req: acp::InitializeRequest, responder: Responder<acp::InitializeResponse>, _cx| {
                responder.respond(b1.initialize(&req))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: acp::AuthenticateRequest, responder: Responder<acp::AuthenticateResponse>, _cx| {
                responder.respond(acp::AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::NewSessionRequest,
                        responder: Responder<acp::NewSessionResponse>,
                        cx: ConnectionTo<Editor>| {
                let b = b2.clone();
                cx.clone().spawn(async move { b.new_session(req, responder, cx).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::LoadSessionRequest,
                        responder: Responder<acp::LoadSessionResponse>,
                        cx: ConnectionTo<Editor>| {
                let b = b3.clone();
                cx.clone().spawn(async move { b.load_session(req, responder, cx).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::ListSessionsRequest,
                        responder: Responder<acp::ListSessionsResponse>,
                        cx: ConnectionTo<Editor>| {
                let b = b4.clone();
                cx.spawn(async move { b.list_sessions(req, responder).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::PromptRequest,
                        responder: Responder<acp::PromptResponse>,
                        cx: ConnectionTo<Editor>| {
                b5.begin_prompt(&req.session_id);
                let b = b5.clone();
                cx.clone().spawn(async move { b.prompt(req, responder, cx).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: acp::SetSessionConfigOptionRequest,
                        responder: Responder<acp::SetSessionConfigOptionResponse>,
                        cx: ConnectionTo<Editor>| {
                let b = b7.clone();
                cx.spawn(async move { b.set_config_option(req, responder).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: acp::CancelNotification, cx: ConnectionTo<Editor>| {
                b6.note_cancel(&n.session_id);
                let b = b6.clone();
                cx.spawn(async move {
                    b.cancel(&n.session_id).await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
}
