//! `/status` and `/model` as a user reads them, in a real terminal (tmux):
//! `/status` names the model, provider and endpoint, the context used of
//! the model's window with its share, the commands mode, the last run and
//! the session; a gauge (`ctx N%`) and the wall time follow each run;
//! `/model` with no name lists what the server offers (its `/v1/models`,
//! through a typed daemon method) and `/model N` picks by number. Keys
//! typed while a `!!` command or a slash command runs reach the next
//! prompt.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::tmux::{shell_line, Tmux};
use swival_tests::TestEnv;

/// The lines of `screen` from the last one containing `mark`.
fn after(screen: &str, mark: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().rposition(|l| l.contains(mark)).unwrap_or(0);
    lines[at..].join("\n")
}

#[test]
fn status_gives_the_endpoint_the_context_share_and_the_commands_mode_and_a_gauge_follows_each_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("hello back")]).with_model("m").with_context_length(4_000);
    let p = env.project("p");
    let config = format!(
        "provider = \"generic\"\nbase_url = \"{}\"\ncommands = \"ask\"\n[model_prices.m]\ninput = 3.0\noutput = 15.0\n",
        mock.base_url()
    );
    env.global_config(&config);
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.at_prompt("hello");
    let screen = tmux.wait_for("ctx ");
    let gauge = after(&screen, "hello back");
    assert!(
        gauge.lines().any(|l| l.trim_start().starts_with("ctx ") && l.contains("% · ") && l.ends_with('s')),
        "{gauge}"
    );
    tmux.at_prompt("/status");
    let screen = tmux.wait_for("(1 run)");
    let status = after(&screen, "/status");
    assert!(status.contains(&format!("(provider: generic, {}", mock.base_url())), "the endpoint: {status}");
    assert!(status.contains(" / 4,000 tokens (") && status.contains("%)"), "the share of the window: {status}");
    assert!(status.contains("commands: ask"), "the commands mode: {status}");
    assert!(status.contains("last run: success, 1 turns"), "{status}");
    assert!(status.contains(", cost $0.0"), "the run's cost by model_prices: {status}");
    assert!(status.contains("session: s_"), "{status}");
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn model_lists_the_servers_models_and_a_number_picks_one_for_the_next_run() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("first"), Step::text("second")])
        .with_model("small-coder")
        .with_more_models(&["big-coder", "tiny-chat"]);
    let p = env.project("p");
    env.global_config(&format!(
        "provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"small-coder\"\n",
        mock.base_url()
    ));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    tmux.at_prompt("one");
    tmux.wait_for("first");
    tmux.at_prompt("/model");
    let screen = tmux.wait_for("/model N or /model NAME switches");
    let listed = after(&screen, "models at ");
    assert!(listed.contains(&format!("models at {}", mock.base_url())), "{listed}");
    assert!(listed.contains("*  1. small-coder  (32768 tokens)"), "the one in use marked: {listed}");
    assert!(listed.contains("   2. big-coder") && listed.contains("   3. tiny-chat"), "{listed}");
    tmux.at_prompt("/model 2");
    tmux.wait_for("changed: model");
    tmux.at_prompt("two");
    tmux.wait_for("second");
    mock.wait_for_requests(2);
    let requests = mock.requests();
    assert_eq!(
        (requests[0]["model"].clone(), requests[1]["model"].clone()),
        (json!("small-coder"), json!("big-coder"))
    );
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
}

#[test]
fn text_typed_while_a_shell_command_runs_reaches_the_next_prompt() {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(vec![Step::text("got it")]).with_model("m");
    let p = env.project("p");
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\n", mock.base_url()));
    let tmux = Tmux::new(&env);
    tmux.start(&shell_line(&env, &daemon.socket, &p, "repl"));
    // The command runs until the test lets it end, so the keys are typed
    // while it runs, whatever the machine's speed.
    tmux.at_prompt("!! while [ ! -e go ]; do sleep 0.05; done; echo shell done");
    tmux.wait_for("$ while");
    tmux.run(&["send-keys", "-t", "t", "-l", "typed ahead"]);
    std::fs::write(p.join("go"), "").unwrap();
    tmux.wait_for("shell done");
    let screen = tmux.wait_for("swival> typed ahead");
    assert!(screen.contains("exit 0"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("got it");
    mock.wait_for_requests(1);
    let users: Vec<String> = mock.texts_of(0);
    assert!(users.iter().any(|t| t == "typed ahead"), "the typed line is the task: {users:?}");
    tmux.at_prompt("/exit");
    tmux.wait_for("EXIT=0");
}
