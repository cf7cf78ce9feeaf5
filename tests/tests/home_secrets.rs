//! The secrets a developer's home holds stay out of the model's reach: a
//! whitelisted interpreter reads nothing from any credential store of any
//! category, `files = "all"` file tools refuse them with the reason, and
//! `policy/status` names what is hidden.

use serde_json::json;
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;

/// One well-known path of every category, and those the red team read.
const STORES: &[&str] = &[
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/k.key",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".composer/auth.json",
    ".aws/credentials",
    ".config/gcloud/credentials.db",
    ".azure/msal_token_cache.json",
    ".config/doctl/config.yaml",
    ".fly/config.yml",
    ".terraform.d/credentials.tfrc.json",
    ".pulumi/credentials.json",
    ".docker/config.json",
    ".config/containers/auth.json",
    ".kube/config",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".config/glab-cli/config.yml",
    ".netrc",
    ".password-store/github.gpg",
    ".config/op/config",
    ".config/Bitwarden CLI/data.json",
    ".local/share/keyrings/login.keyring",
    ".local/share/kwalletd/kdewallet.kwl",
    ".mozilla/firefox/abc.default/cookies.sqlite",
    ".mozilla/firefox/abc.default/logins.json",
    ".config/google-chrome/Default/Cookies",
    ".config/chromium/Default/Login Data",
    ".config/BraveSoftware/Brave-Browser/Default/Cookies",
    ".config/microsoft-edge/Default/Cookies",
    ".config/vivaldi/Default/Local Storage/leveldb/000003.log",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".psql_history",
    ".local/share/fish/fish_history",
];

/// A python3 program that prints whatever it can read of each path.
fn reader(home: &std::path::Path) -> String {
    let paths: Vec<String> = STORES.iter().map(|p| home.join(p).display().to_string()).collect();
    format!(
        "import json\nfor p in {}:\n    try:\n        print(p, open(p).read())\n    except Exception as e:\n        print(p, 'unreadable:', type(e).__name__)\n",
        serde_json::to_string(&paths).unwrap()
    )
}

#[test]
fn no_credential_store_of_any_category_reaches_the_model() {
    let env = TestEnv::new();
    let home = env.root().join("home");
    for (i, p) in STORES.iter().enumerate() {
        let path = home.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET-{i}-TOKEN")).unwrap();
    }
    let daemon = env.start_daemon();
    let mut c = daemon.nd();
    let mut steps = vec![Step::tool_call("py", "run_command", json!({"command": ["python3", "-c", reader(&home)]}))];
    for (i, p) in STORES.iter().enumerate() {
        let file = home.join(p).display().to_string();
        steps.push(Step::tool_call(&format!("r{i}"), "read_file", json!({"file_path": file})));
    }
    steps.push(Step::text("done"));
    let mock = MockProvider::start(steps);
    let cfg = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m", "files": "all",
                     "allowed_commands": ["python3"], "max_turns": 100});
    let sid = c.ok("session/create", json!({"base_dir": env.project("p"), "config": cfg}))["session_id"].clone();
    let run = c.ok("run/start", json!({"session_id": sid, "task": "read"}))["run_id"].clone();
    assert_eq!(c.ok("run/wait", json!({"run_id": run}))["outcome"], "success");

    let sent = mock.requests_text();
    assert!(!sent.contains("-TOKEN"), "a secret reached the provider");
    let tools = mock.tool_results();
    // Each store reads as missing (a hidden directory) or empty (a hidden file).
    let lines: Vec<&str> = tools["py"].lines().filter(|l| l.starts_with(home.to_str().unwrap())).collect();
    assert_eq!(lines.len(), STORES.len(), "{}", tools["py"]);
    for line in lines {
        assert!(
            line.ends_with("unreadable: FileNotFoundError") || line.ends_with(' ') || !line.contains(" "),
            "{line}"
        );
    }
    for i in 0..STORES.len() {
        let r = &tools[&format!("r{i}")];
        assert!(r.starts_with("error:") && r.contains("hidden"), "{}: {r}", STORES[i]);
    }
    let st = c.ok("policy/status", json!({"session_id": sid}));
    let enforced = st["sandbox"]["enforced"].to_string();
    for category in ["package-registry tokens", "browser profiles", "password managers", "shell and REPL histories"] {
        assert!(enforced.contains(category), "{category} missing from {enforced}");
    }
    assert!(enforced.contains(&home.join(".npmrc").display().to_string()), "{enforced}");
}
