//! Secret encryption: the provider never sees a real key; the model's
//! replies carrying ciphertexts are turned back before tools run.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

const OPENAI: &str = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl";
const GITHUB: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";

/// The token in `text` that starts with `prefix` and has `len` characters.
fn token(text: &str, prefix: &str, len: usize) -> String {
    let at = text.find(prefix).unwrap_or_else(|| panic!("no {prefix} token in {text}"));
    text[at..at + len].to_owned()
}

#[test]
fn keys_never_reach_the_provider_and_ciphertexts_in_tool_calls_write_the_real_key() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("p");
    let mock = MockProvider::start(vec![Step::text("noted")]);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "encrypt_secrets": true});
    let mut c = daemon.nd();
    let sid = c.ok("session/create", json!({"base_dir": p, "config": cfg}))["session_id"].clone();
    let task = format!("store these: {OPENAI} and {GITHUB} and {AWS}");
    let run = c.ok("run/start", json!({"session_id": sid, "task": task}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    let sent = mock.requests_text();
    for key in [OPENAI, GITHUB, AWS] {
        assert!(!sent.contains(key), "the provider saw {key}");
    }
    // Same shape: prefix, length and alphabet kept.
    let body = mock.requests()[0]["messages"].to_string();
    let enc_openai = token(&body, "sk-proj-", OPENAI.len());
    let enc_github = token(&body, "ghp_", GITHUB.len());
    let enc_aws = token(&body, "AKIA", AWS.len());
    for (enc, real) in [(&enc_openai, OPENAI), (&enc_github, GITHUB), (&enc_aws, AWS)] {
        assert_ne!(enc, real);
        assert!(enc.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_'), "{enc}");
    }

    // The model writes the ciphertext it saw; the file gets the real key.
    mock.push(Step::tool_call(
        "w",
        "write_file",
        json!({"file_path": ".env", "content": format!("OPENAI_API_KEY={enc_openai}\n")}),
    ));
    mock.push(Step::text("written"));
    let run = c.ok("run/start", json!({"session_id": sid, "task": "write the OpenAI key to .env"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");
    assert_eq!(std::fs::read_to_string(p.join(".env")).unwrap(), format!("OPENAI_API_KEY={OPENAI}\n"));
    let sent = mock.requests_text();
    assert!(!sent.contains(OPENAI), "the tool result or the replayed call leaked the key");
    let report = c.ok("report/get", json!({"run_id": run})).to_string();
    assert!(!report.contains(OPENAI), "the report holds the plaintext key");
}
