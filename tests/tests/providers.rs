//! Swival's OpenAI-compatible presets beyond the local ones: `google`
//! (Gemini's OpenAI endpoint), `huggingface` (HF's router) and `applefm`
//! (Apple's on-device server). Each through the daemon's one provider path:
//! its key from the caller's environment by Swival's variable names, a
//! filter that sees every request (told the provider as Swival tells it),
//! a tool call and an answer; the presets' URLs pointed at the mock.

use serde_json::json;
use std::path::Path;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::{script, Daemon, TestEnv};

/// A filter that logs the provider it is told and passes messages through.
const LOGGING_FILTER: &str = r#"#!/usr/bin/env python3
import json, os, sys
req = json.load(sys.stdin)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "providers.log"), "a") as f:
    f.write(req["provider"] + "\n")
print(json.dumps({"messages": req["messages"]}))
"#;

/// `swivalctl run --trust` of `task` in `p` with `toml` as its config and
/// `vars` in the caller's environment: exit code and stderr.
fn run(env: &TestEnv, daemon: &Daemon, p: &Path, toml: &str, vars: &[(&str, &str)], task: &str) -> (i32, String) {
    let filter = script(p, "log.py", LOGGING_FILTER);
    std::fs::write(p.join("swival.toml"), format!("{toml}\nllm_filter = \"{}\"\n", filter.display())).unwrap();
    let mut cmd = env.swivalctl(daemon, p);
    cmd.args(["run", "--trust", task]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn logged(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p.join("providers.log")).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// The model's steps: a write, then the answer.
fn write_then_answer() -> Vec<Step> {
    vec![
        Step::tool_call("w", "write_file", json!({"file_path": "made.txt", "content": "made\n"})),
        Step::text("made it"),
    ]
}

#[test]
fn google_takes_gemini_then_google_key_and_is_told_to_filters_as_generic() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("g");
    let mock = MockProvider::start(write_then_answer());
    let toml = format!("provider = \"google\"\nbase_url = \"{}\"\nmodel = \"gemini-2.5-flash\"", mock.base_url());
    let (code, err) = run(&env, &daemon, &p, &toml, &[("GOOGLE_API_KEY", "AIza-google")], "make made.txt");
    assert_eq!(code, 0, "{err}");
    assert!(p.join("made.txt").exists());
    let headers = mock.request_headers();
    assert!(headers.iter().all(|h| h["authorization"] == "Bearer AIza-google"), "{headers:?}");
    assert_eq!(mock.requests()[0]["model"], "gemini-2.5-flash");
    assert_eq!(logged(&p), ["generic", "generic"], "Swival routes google as generic and says so");

    // GEMINI_API_KEY comes first.
    mock.push(Step::text("again"));
    let keys = [("GOOGLE_API_KEY", "AIza-google"), ("GEMINI_API_KEY", "AIza-gemini")];
    let (code, err) = run(&env, &daemon, &p, &toml, &keys, "once more");
    assert_eq!(code, 0, "{err}");
    assert_eq!(mock.request_headers().last().unwrap()["authorization"], "Bearer AIza-gemini");
}

#[test]
fn huggingface_takes_hf_token_and_an_org_model_name() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("hf");
    let mock = MockProvider::start(write_then_answer());
    let toml = format!("provider = \"huggingface\"\nbase_url = \"{}\"\nmodel = \"Qwen/Qwen3-8B\"", mock.base_url());
    let (code, err) = run(&env, &daemon, &p, &toml, &[("HF_TOKEN", "hf_token_value")], "make made.txt");
    assert_eq!(code, 0, "{err}");
    assert!(p.join("made.txt").exists());
    assert!(mock.request_headers().iter().all(|h| h["authorization"] == "Bearer hf_token_value"));
    assert_eq!(mock.requests()[0]["model"], "Qwen/Qwen3-8B");
    assert_eq!(logged(&p), ["huggingface", "huggingface"]);
}

#[test]
fn applefm_always_streams_and_finds_its_model_on_the_server() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("fm");
    let mock = MockProvider::start(write_then_answer());
    // `stream = false` is not what Apple's server speaks: it streams anyway.
    let toml = format!("provider = \"applefm\"\nbase_url = \"{}\"\nstream = false", mock.base_url());
    let (code, err) = run(&env, &daemon, &p, &toml, &[], "make made.txt");
    assert_eq!(code, 0, "{err}");
    assert!(p.join("made.txt").exists());
    let requests = mock.requests();
    assert!(requests.iter().all(|r| r["stream"] == true), "{requests:?}");
    assert_eq!(logged(&p), ["applefm", "applefm"]);
}

#[test]
fn google_and_huggingface_without_a_model_are_refused_naming_the_key() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    for (provider, example) in [("google", "gemini-2.5-flash"), ("huggingface", "org/model")] {
        let p = env.project(provider);
        let toml = format!("provider = \"{provider}\"\nbase_url = \"http://127.0.0.1:9/v1\"");
        let (code, err) = run(&env, &daemon, &p, &toml, &[], "task");
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(&format!("provider '{provider}' needs model, e.g. model = \"{example}\"")), "{err}");
    }
}

#[test]
fn swivalctl_models_lists_what_the_projects_provider_serves() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("m");
    let mock = MockProvider::start(Vec::new()).with_more_models(&["second", "third"]).with_context_length(65536);
    let toml = format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"second\"\n", mock.base_url());
    std::fs::write(p.join("swival.toml"), toml).unwrap();
    let out = env.swivalctl(&daemon, &p).args(["models"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("2. second") && text.contains("(configured)") && text.contains("3. third"), "{text}");
    let json = env.swivalctl(&daemon, &p).args(["models", "--json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(listed["current"], "second");
    assert_eq!(listed["models"].as_array().unwrap().len(), 3, "{listed:#}");
    // No session and no project: the error says what to send.
    let r = daemon.nd().call("provider/models", json!({}));
    assert!(r["error"]["message"].as_str().unwrap().contains("needs session_id, or base_dir"), "{r}");
}

#[test]
fn list_profiles_names_each_profile_and_marks_the_one_in_use() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    env.global_config(concat!(
        "active_profile = \"fast\"\n",
        "[profiles.fast]\nprovider = \"generic\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"small\"\ndescription = \"quick answers\"\n",
        "[profiles.big]\nprovider = \"openrouter\"\nmodel = \"org/large\"\n",
    ));
    let p = env.project("profiles");
    let out = env.swivalctl(&daemon, &p).args(["run", "--list-profiles"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("* fast: generic / small  quick answers"), "{text}");
    assert!(text.contains("  big: openrouter / org/large"), "{text}");
    let out = env.swivalctl(&daemon, &p).args(["run", "--profile", "big", "--list-profiles"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("* big: openrouter") && text.contains("  fast: generic"), "{text}");
}

#[test]
fn model_prices_give_a_runs_cost_in_its_result_report_and_closing_lines() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let p = env.project("cost");
    let mock = MockProvider::start(write_then_answer());
    let toml = format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n[model_prices.m]\ninput = 3.0\noutput = 15.0\n",
        mock.base_url()
    );
    std::fs::write(p.join("swival.toml"), toml).unwrap();
    let out = env.swivalctl(&daemon, &p).args(["run", "--trust", "--json", "make made.txt"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut c = daemon.nd();
    let sessions = c.ok("session/list", json!({}))["sessions"].clone();
    let detail = c.ok("session/get", json!({"session_id": sessions[0]["session_id"]}));
    let run = detail["runs"][0]["run_id"].clone();
    let result = c.ok("run/wait", json!({"run_id": run}));
    let stats = &result["stats"];
    let (prompt, completion) = (stats["prompt_tokens"].as_f64().unwrap(), stats["completion_tokens"].as_f64().unwrap());
    assert!(completion > 0.0, "{stats}");
    // A streaming server is asked for its count only when a cost is wanted.
    assert_eq!(mock.requests()[0]["stream_options"], json!({"include_usage": true}));
    let expected = (prompt * 3.0 + completion * 15.0) / 1e6;
    assert!((stats["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-12, "{stats}");
    let report = c.ok("report/get", json!({"run_id": run}));
    assert_eq!(report["stats"]["cost_usd"], stats["cost_usd"], "{report:#}");
    // Shown after a run that is not --json.
    mock.push(Step::text("again"));
    let out = env.swivalctl(&daemon, &p).args(["run", "--trust", "again"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("◆ cost $0.0"), "{}", String::from_utf8_lossy(&out.stderr));
    // Summed per session, and over them.
    let out = env.swivalctl(&daemon, &p).args(["sessions", "--here", "--cost"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.matches("    cost $0.").count() == 2, "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("over 2 priced session(s) of 2"), "{text}");
    let listed = c.ok("session/list", json!({}));
    let first = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == sessions[0]["session_id"])
        .unwrap()
        .clone();
    assert!((first["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-12, "{first}");
    // A price that is not one is refused, naming the key.
    std::fs::write(p.join("swival.toml"), "provider = \"generic\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n[model_prices.m]\ninput = \"cheap\"\noutput = 1\n").unwrap();
    let out = env.swivalctl(&daemon, &p).args(["run", "--trust", "x"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("model_prices") && err.contains("input must be a number"), "{err}");
}
