//! Behaviour of [`super::load`]: layers, precedence, errors, sources,
//! profiles and kept keys. Script-running keys are in `scripts.rs`.

mod scripts;

use super::types::ReasoningEffort;
use super::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A project dir and a global config location inside one temp dir.
struct Fixture {
    /// Keeps the directory alive.
    _tmp: tempfile::TempDir,
    /// The session's base dir (holds swival.toml).
    base: PathBuf,
    /// The global config file path (in its own directory).
    global: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let base = root.join("project");
        let global = root.join("xdg/swival/config.toml");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(global.parent().unwrap()).unwrap();
        Fixture { _tmp: tmp, base, global }
    }

    fn global(self, text: &str) -> Fixture {
        std::fs::write(&self.global, text).unwrap();
        self
    }

    fn project(self, text: &str) -> Fixture {
        std::fs::write(self.project_path(), text).unwrap();
        self
    }

    fn project_path(&self) -> PathBuf {
        self.base.join(PROJECT_FILE)
    }

    fn load(&self, request: Option<Value>) -> Result<EffectiveConfig, ConfigError> {
        load(&self.base, Some(&self.global), request.as_ref())
    }

    fn config(&self, request: Option<Value>) -> SessionConfig {
        self.load(request).unwrap().config
    }

    fn error(&self, request: Option<Value>) -> String {
        self.load(request).unwrap_err().to_string()
    }
}

#[test]
fn defaults_apply_when_no_layer_sets_anything() {
    let cfg = Fixture::new().config(None);
    assert_eq!(cfg, SessionConfig::default());
    assert_eq!(cfg.provider, ProviderKind::Lmstudio);
    assert_eq!(cfg.max_output_tokens, 32768);
    assert_eq!(cfg.max_output_lines, 2000);
    assert_eq!(cfg.max_output_kb, 50);
    assert_eq!(cfg.max_turns, 100);
    assert_eq!(cfg.retries, 5);
    assert_eq!(cfg.provider_timeout, 900.0);
    assert_eq!(cfg.max_review_rounds, 5);
    assert_eq!(cfg.reviewer_timeout_s, 120.0);
    assert_eq!(cfg.sandbox, SandboxMode::Os);
    assert!(cfg.stream && !cfg.cache && !cfg.command_network);
    assert!(cfg.fetch_allow_networks.is_empty() && cfg.filter_stages().is_empty());
    assert_eq!(cfg.files_mode(), FilesMode::Some);
    assert_eq!(cfg.command_access(), CommandAccess::Off);
}

#[test]
fn missing_global_path_is_fine() {
    let f = Fixture::new();
    assert!(load(&f.base, None, None).is_ok());
}

#[test]
fn project_overrides_global() {
    let f = Fixture::new()
        .global("max_turns = 10\nmodel = \"g\"\nallowed_commands = [\"ls\", \"git\"]")
        .project("max_turns = 20\nallowed_commands = [\"cat\"]");
    let cfg = f.config(None);
    assert_eq!(cfg.max_turns, 20);
    assert_eq!(cfg.model.as_deref(), Some("g"));
    assert_eq!(cfg.allowed_commands, ["cat"], "a later list replaces the earlier one");
}

#[test]
fn request_overrides_project() {
    let f = Fixture::new().project("max_turns = 20\ntemperature = 0.5");
    let cfg = f.config(Some(json!({"max_turns": 3, "temperature": null})));
    assert_eq!(cfg.max_turns, 3);
    assert_eq!(cfg.temperature, Some(0.5), "null in the request means not given");
}

#[test]
fn unknown_key_in_a_file_warns_as_swival_does_and_is_ignored() {
    let f = Fixture::new().project("max_turn = 5\ndecision_model = \"m\"\ninitial_tool_choice = \"auto\"\n");
    let eff = f.load(None).unwrap();
    let file = f.project_path().display().to_string();
    assert_eq!(
        eff.warnings,
        [
            format!("{file}: unknown config key 'decision_model'"),
            format!("{file}: unknown config key 'initial_tool_choice'"),
            format!("{file}: unknown config key 'max_turn'; did you mean 'max_turns'?"),
        ]
    );
    assert_eq!(eff.config.max_turns, 100, "an unknown key sets nothing");
    assert!(!eff.sources.contains_key("decision_model") && !eff.config.kept.0.contains_key("decision_model"));
}

#[test]
fn kept_swival_key_loads_with_a_warning_that_it_is_ignored() {
    let f = Fixture::new().global("prompt_cache = true\nmax_turns = 4\n");
    let eff = f.load(None).unwrap();
    assert_eq!(
        eff.warnings,
        [format!("{}: prompt_cache is not supported by swivald and is ignored", f.global.display())]
    );
    assert_eq!(eff.config.kept.0["prompt_cache"], json!(true));
    assert_eq!(eff.config.max_turns, 4);
}

#[test]
fn keys_swivald_acts_on_and_profile_selection_give_no_warning() {
    let f = Fixture::new().project("max_turns = 4\nactive_profile = \"a\"\n[profiles.a]\nprovider = \"ollama\"\n");
    assert!(f.load(None).unwrap().warnings.is_empty());
}

#[test]
fn profile_keys_swival_allows_load_with_warnings_for_what_is_ignored() {
    let f =
        Fixture::new().project("[profiles.fast]\nprovider = \"ollama\"\nlocation = \"eu\"\ninstructions_full = true\n");
    let eff = f.load(Some(json!({"active_profile": "fast"}))).unwrap();
    let file = f.project_path().display().to_string();
    assert_eq!(
        eff.warnings,
        [
            format!("{file}: unknown config key 'profiles.fast.instructions_full'"),
            format!("{file}: profiles.fast.location is not supported by swivald and is ignored"),
        ]
    );
    assert_eq!(eff.config.provider, ProviderKind::Ollama);
    assert_eq!(eff.config.kept.0["location"], json!("eu"));
}

#[test]
fn server_and_skill_tables_take_fields_swival_ignores_but_audit_stays_strict() {
    let f = Fixture::new().project(
        "[mcp_servers.fs]\ncommand = \"mcp-fs\"\ndisabled = false\ncwd = \"/tmp\"\n\
         [a2a_servers.peer]\nurl = \"http://h\"\nnote = \"x\"\n\
         [[serve_skills]]\nid = \"s\"\ntags = [\"a\"]\n",
    );
    let cfg = f.config(None);
    let fs = &cfg.mcp_servers["fs"];
    assert_eq!((fs.command.as_deref(), fs.cwd.as_deref()), (Some("mcp-fs"), Some(std::path::Path::new("/tmp"))));
    assert_eq!(cfg.kept.0["a2a_servers"], json!({"peer": {"url": "http://h"}}));
    assert_eq!(cfg.kept.0["serve_skills"], json!([{"id": "s"}]));
    let f = Fixture::new().project("[mcp_servers.fs]\ncommand = 3\n");
    assert!(f.error(None).ends_with("'mcp_servers.fs.command' expected str, got int"), "{}", f.error(None));
    let f = Fixture::new().project("[audit]\nforce_reveiw = []\n");
    assert!(f.error(None).contains("unknown config key 'audit.force_reveiw'"), "{}", f.error(None));
}

#[test]
fn wrong_type_of_a_kept_or_profile_key_is_still_an_error() {
    let f = Fixture::new().project("prompt_cache = \"yes\"\n");
    assert_eq!(f.error(None), format!("{}: 'prompt_cache' expected bool, got str", f.project_path().display()));
    let f = Fixture::new().project("[profiles.a]\nprovider = \"ollama\"\ntemperature = \"hot\"\n");
    assert!(f.error(None).ends_with("'profiles.a.temperature' expected int or float, got str"), "{}", f.error(None));
}

#[test]
fn unknown_key_in_request_names_the_request() {
    let err = Fixture::new().error(Some(json!({"bogus_key_name": 1})));
    assert_eq!(err, "the session's flags: unknown config key 'bogus_key_name'; remove it");
}

#[test]
fn wrong_type_fails_naming_key_expected_and_got() {
    let f = Fixture::new().global("max_turns = \"ten\"");
    assert_eq!(f.error(None), format!("{}: 'max_turns' expected int, got str", f.global.display()));
}

#[test]
fn bool_is_rejected_for_int_key() {
    let err = Fixture::new().error(Some(json!({"retries": true})));
    assert_eq!(err, "the session's flags: 'retries' expected int, got bool");
}

#[test]
fn bool_is_rejected_for_float_and_str_keys() {
    let f = Fixture::new();
    assert!(f.error(Some(json!({"temperature": false}))).ends_with("'temperature' expected int or float, got bool"));
    assert!(f.error(Some(json!({"model": true}))).ends_with("'model' expected str, got bool"));
}

#[test]
fn int_is_accepted_for_float_key() {
    let f = Fixture::new().project("temperature = 1\nprovider_timeout = 60");
    let cfg = f.config(None);
    assert_eq!(cfg.temperature, Some(1.0));
    assert_eq!(cfg.provider_timeout, 60.0);
}

#[test]
fn float_is_rejected_for_int_key() {
    let err = Fixture::new().error(Some(json!({"max_turns": 2.5})));
    assert_eq!(err, "the session's flags: 'max_turns' expected int, got float");
}

#[test]
fn list_element_of_wrong_type_names_its_index() {
    let f = Fixture::new().project("allowed_dirs = [\"a\", 3]");
    assert!(f.error(None).ends_with("'allowed_dirs[1]' expected str, got int"));
}

#[test]
fn out_of_range_value_is_refused() {
    let err = Fixture::new().error(Some(json!({"retries": 0})));
    assert_eq!(err, "the session's flags: 'retries' must be at least 1, got 0");
}

#[test]
fn enum_value_outside_the_set_lists_allowed_values() {
    let f = Fixture::new().project("provider = \"bedrock\"");
    let err = f.error(None);
    assert!(
        err.contains("'provider' must be one of 'lmstudio', 'llamacpp', 'ollama', 'openai', 'openrouter', 'generic', 'command', 'google', 'huggingface', 'applefm', got 'bedrock'"),
        "{err}"
    );
    assert!(err.contains("use 'generic'"), "{err}");
    let err = Fixture::new().error(Some(json!({"sandbox": "agentfs"})));
    assert!(err.contains("'sandbox' must be one of 'os', 'builtin', got 'agentfs'"), "{err}");
}

#[test]
fn enum_names_in_the_table_match_the_types() {
    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(names: &[&str]) {
        for name in names {
            let value: T = serde_json::from_value(json!(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(serde_json::to_value(value).unwrap(), json!(name));
        }
    }
    round_trip::<ProviderKind>(schema::PROVIDER_NAMES);
    round_trip::<FilesMode>(FilesMode::NAMES);
    round_trip::<SandboxMode>(SandboxMode::NAMES);
    round_trip::<ReasoningEffort>(ReasoningEffort::NAMES);
    round_trip::<ProcessMode>(ProcessMode::NAMES);
    round_trip::<HookPoint>(HookPoint::NAMES);
    round_trip::<OnFailure>(OnFailure::NAMES);
}

#[test]
fn key_table_matches_session_config_fields() {
    let Value::Object(fields) = serde_json::to_value(SessionConfig::default()).unwrap() else {
        panic!("SessionConfig serializes as an object");
    };
    let mut fields: Vec<&str> = fields.keys().map(String::as_str).collect();
    let mut acted: Vec<&str> =
        schema::KEYS.iter().filter(|k| k.support == schema::Support::Acted).map(|k| k.name).collect();
    fields.sort_unstable();
    acted.sort_unstable();
    assert_eq!(fields, acted);
}

#[test]
fn system_prompt_with_no_system_prompt_is_refused() {
    let f = Fixture::new().project("system_prompt = \"be brief\"\nno_system_prompt = true");
    assert_eq!(
        f.error(None),
        format!(
            "{}: 'system_prompt' and 'no_system_prompt' are mutually exclusive; remove one",
            f.project_path().display()
        )
    );
}

#[test]
fn system_prompt_conflict_across_layers_names_both() {
    let f = Fixture::new().global("system_prompt = \"be brief\"");
    let err = f.error(Some(json!({"no_system_prompt": true})));
    assert!(err.starts_with(&format!("{} and the session's flags: ", f.global.display())), "{err}");
}

#[test]
fn sources_record_which_layer_set_each_key() {
    let f = Fixture::new().global("max_turns = 7\nmodel = \"m\"").project("max_turns = 8\nnetwork = \"none\"");
    let eff = f.load(Some(json!({"yolo": true}))).unwrap();
    let project = f.project_path().display().to_string();
    assert_eq!(eff.sources["max_turns"], project);
    assert_eq!(eff.sources["model"], f.global.display().to_string());
    assert_eq!(eff.sources["yolo"], "request");
    assert_eq!(eff.sources["retries"], "default");
    assert_eq!(eff.sources["network"], project, "kept Swival keys are recorded too");
    assert!(!eff.sources.contains_key("aws_profile"), "unset kept keys are not listed");
}

#[test]
fn invalid_toml_names_the_file() {
    let f = Fixture::new().project("max_turns = = 3");
    assert!(f.error(None).starts_with(&format!("{}: invalid TOML: ", f.project_path().display())));
}

#[test]
fn request_that_is_not_an_object_is_refused() {
    let err = Fixture::new().error(Some(json!(["max_turns"])));
    assert_eq!(err, "the session's flags: expected an object of config keys, got list");
}

#[test]
fn active_profile_sits_between_project_and_request() {
    let f = Fixture::new()
        .global("[profiles.fast]\nprovider = \"openai\"\nmodel = \"small\"\ntemperature = 0.1\n")
        .project("active_profile = \"fast\"\nmodel = \"project-model\"\n[profiles.fast]\nmodel = \"smaller\"\n");
    let eff = f.load(Some(json!({"temperature": 0.9}))).unwrap();
    assert_eq!(eff.config.provider, ProviderKind::Openai);
    assert_eq!(eff.config.model.as_deref(), Some("smaller"));
    assert_eq!(eff.config.temperature, Some(0.9));
    assert_eq!(eff.sources["model"], format!("{} [profiles.fast]", f.project_path().display()));
    assert_eq!(eff.sources["provider"], format!("{} [profiles.fast]", f.global.display()));
}

#[test]
fn unknown_active_profile_is_refused() {
    let f = Fixture::new().project("[profiles.a]\nprovider = \"ollama\"\n");
    let err = f.error(Some(json!({"active_profile": "b"})));
    assert!(err.starts_with("the session's flags: profile 'b' not found. Known profiles: a"), "{err}");
}

#[test]
fn non_llm_key_in_profile_is_refused() {
    let f = Fixture::new().project("[profiles.a]\nprovider = \"ollama\"\nyolo = true\n");
    assert!(f.error(None).contains("profiles.a: 'yolo' is not allowed in a profile"));
}

#[test]
fn kept_swival_keys_are_kept_and_checked() {
    let f = Fixture::new()
        .project("no_skills = true\nskills_dir = [\"sk\"]\ncolor = true\n[mcp_servers.a]\ncommand = \"x\"\n");
    let cfg = f.config(Some(json!({"mcp_servers": {"b": {"url": "http://h", "headers": {"Authorization": "t"}}}})));
    assert_eq!(cfg.kept.0["color"], json!(true));
    assert!(cfg.no_skills);
    assert_eq!(cfg.skills_dir, [f.base.join("sk")], "relative to the project");
    assert_eq!(cfg.mcp_servers.keys().collect::<Vec<_>>(), ["a", "b"], "server tables merge by name");
    assert!(Fixture::new()
        .error(Some(json!({"lifecycle_timeout": "x"})))
        .contains("'lifecycle_timeout' expected int, got str"));
}

#[test]
fn serialized_config_hides_secrets() {
    let cfg = Fixture::new().config(Some(json!({
        "api_key": "sk-live-123",
        "encrypt_secrets_key": "00112233445566778899aabbccddeeff",
        "mcp_servers": {"a": {"command": "x", "env": {"TOKEN": "hush"}}},
    })));
    assert_eq!(cfg.api_key.as_ref().unwrap().expose(), "sk-live-123");
    let text = serde_json::to_string(&cfg).unwrap();
    for secret in ["sk-live-123", "00112233445566778899aabbccddeeff", "hush"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(!format!("{cfg:?}").contains("sk-live-123"));
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["mcp_servers"]["a"]["env"]["TOKEN"], "<redacted>");
    assert!(!format!("{cfg:?}").contains("hush"));
}

#[test]
fn bad_encryption_key_is_refused() {
    let err = Fixture::new().error(Some(json!({"encrypt_secrets_key": "abc"})));
    assert!(err.contains("must be 32, 48 or 64 hex digits"), "{err}");
}

#[test]
fn fetch_allow_networks_are_parsed_as_cidrs() {
    let cfg = Fixture::new().config(Some(json!({"fetch_allow_networks": ["10.1.2.3/8", "fd00::/8", "192.168.1.5"]})));
    let nets: Vec<String> = cfg.fetch_allow_networks.iter().map(ToString::to_string).collect();
    assert_eq!(nets, ["10.0.0.0/8", "fd00::/8", "192.168.1.5/32"]);
    assert!(cfg.fetch_allow_networks[0].contains("10.200.0.1".parse().unwrap()));
    assert!(cfg.fetch_allow_networks[0].contains("::ffff:10.0.0.1".parse().unwrap()));
    assert!(!cfg.fetch_allow_networks[0].contains("11.0.0.1".parse().unwrap()));
    assert!(cfg.fetch_allow_networks[1].contains("fd12::1".parse().unwrap()));
    let err = Fixture::new().error(Some(json!({"fetch_allow_networks": ["10.0.0.0/33"]})));
    assert!(err.contains("'fetch_allow_networks[0]'"), "{err}");
}

#[test]
fn read_named_files_is_on_by_default_and_any_layer_turns_it_off_without_a_warning() {
    assert!(Fixture::new().config(None).read_named_files);
    let f = Fixture::new().project("read_named_files = false\n");
    let eff = f.load(None).unwrap();
    assert!(!eff.config.read_named_files);
    assert!(eff.warnings.is_empty(), "{:?}", eff.warnings);
    assert_eq!(eff.sources["read_named_files"], f.project_path().display().to_string());
    assert!(f.config(Some(json!({"read_named_files": true}))).read_named_files, "the request wins");
    let err = Fixture::new().error(Some(json!({"read_named_files": "no"})));
    assert!(err.contains("'read_named_files' expected bool, got str"), "{err}");
}

#[test]
fn lean_tools_follow_a_local_provider_unless_a_layer_says_otherwise() {
    let lean = |request: Value| Fixture::new().config(Some(request)).offers_lean_tools();
    for local in ["llamacpp", "lmstudio", "ollama"] {
        assert!(lean(json!({"provider": local})), "{local}");
    }
    for remote in ["openai", "openrouter"] {
        assert!(!lean(json!({"provider": remote})), "{remote}");
    }
    assert!(!lean(json!({"provider": "generic", "base_url": "http://127.0.0.1:1/v1"})));
    assert!(!lean(json!({"provider": "llamacpp", "lean_tools": false})), "the request wins");
    assert!(lean(json!({"provider": "openai", "lean_tools": true})));
    let f = Fixture::new().project("lean_tools = false\n");
    let eff = f.load(Some(json!({"provider": "llamacpp"}))).unwrap();
    assert!(!eff.config.offers_lean_tools(), "a project layer wins over the provider's default");
    assert!(eff.warnings.is_empty(), "{:?}", eff.warnings);
    assert_eq!(eff.sources["lean_tools"], f.project_path().display().to_string());
    let err = Fixture::new().error(Some(json!({"lean_tools": "yes"})));
    assert!(err.contains("'lean_tools' expected bool, got str"), "{err}");
}

#[test]
fn global_config_path_ends_in_swival_config_toml() {
    assert!(global_config_path().ends_with(Path::new("swival/config.toml")));
}
