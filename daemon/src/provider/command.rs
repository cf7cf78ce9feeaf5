//! Swival's `command` provider: the transcript as plain text on stdin, the
//! reply on stdout.

use super::{ChatRequest, ProviderError, ProviderSettings, Reply};
use crate::procs;
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the external command may take.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Largest reply read from it.
const MAX_STDOUT: usize = 8 * 1024 * 1024;

/// The conversation in Swival's plain-text transcript form: `[role]` blocks
/// separated by blank lines, tool results as `[tool:<name>]`.
pub fn transcript(messages: &[Value]) -> String {
    let mut names = std::collections::HashMap::new();
    let mut blocks = Vec::new();
    for m in messages {
        for tc in m.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(id), Some(name)) =
                (tc.get("id").and_then(Value::as_str), tc.pointer("/function/name").and_then(Value::as_str))
            {
                names.insert(id.to_owned(), name.to_owned());
            }
        }
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        let content = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|p| p.get("text").and_then(Value::as_str).unwrap_or("[image omitted]"))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if content.trim().is_empty() {
            continue;
        }
        let header = if role == "tool" {
            let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
            format!("[tool:{}]", names.get(id).map(String::as_str).unwrap_or("unknown"))
        } else {
            format!("[{role}]")
        };
        blocks.push(format!("{header}\n{content}"));
    }
    blocks.join("\n\n")
}

/// Run the command once.
pub async fn call(
    settings: &ProviderSettings,
    req: &ChatRequest<'_>,
    cancel: &CancellationToken,
) -> Result<Reply, ProviderError> {
    let argv = settings.command.as_deref().filter(|a| !a.is_empty()).ok_or_else(|| {
        ProviderError::Config("provider = \"command\" needs `model` set to the command to run".into())
    })?;
    let input = transcript(&req.messages.to_values());
    let out = match &settings.runner {
        // Through the daemon's runner: counted under `max_children`.
        Some(runner) => {
            let script = procs::Script {
                argv: argv.to_vec(),
                cwd: settings.cwd.clone(),
                base: settings.env.clone(),
                env: Vec::new(),
                pins: settings.command_pins.clone(),
            };
            let call = procs::Call {
                script: &script,
                mode: procs::Mode::Oneshot,
                input: input.as_bytes(),
                timeout: TIMEOUT,
                max_stdout: MAX_STDOUT,
            };
            // Boxed: this future sits deep inside a run's, whose size a
            // debug build's worker stack has to hold.
            Box::pin(runner.call(call, cancel)).await
        }
        None => {
            let job = procs::OneShot {
                argv,
                stdin: input.as_bytes(),
                cwd: &settings.cwd,
                base: &settings.env,
                env: &[],
                pins: &settings.command_pins,
                timeout: TIMEOUT,
                max_stdout: MAX_STDOUT,
            };
            procs::run(job, cancel).await
        }
    };
    let out = out.map_err(|e| match e {
        procs::ProcError::Cancelled { .. } => ProviderError::Cancelled,
        other => ProviderError::Command(other.to_string()),
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.code != Some(0) {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let detail = if stderr.is_empty() { stdout } else { stderr };
        return Err(ProviderError::Command(format!("{} exited with {:?}: {detail}", argv[0], out.code)));
    }
    if stdout.is_empty() {
        return Err(ProviderError::Command(format!("{} printed nothing", argv[0])));
    }
    Ok(Reply {
        content: Some(stdout),
        tool_calls: Vec::new(),
        finish_reason: Some(super::FinishReason::Stop),
        usage: None,
        timings: None,
        runaway: None,
        reasoning: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn transcript_uses_swivals_blocks() {
        let msgs = vec![
            json!({"role": "system", "content": "sys"}),
            json!({"role": "user", "content": "task"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "1: hello"}),
        ];
        assert_eq!(transcript(&msgs), "[system]\nsys\n\n[user]\ntask\n\n[tool:read_file]\n1: hello");
    }
}
