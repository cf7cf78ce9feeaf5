//! Reading one layer (a TOML file or the request's JSON object), merging
//! the layers in precedence order, and the checks that span keys or layers.
//!
//! Each layer is checked and normalized on its own, against its own
//! directory, before merging; merging then only decides which layer's
//! value wins for each key and remembers that layer as the key's source.

use super::command::parse_command;
use super::parse::{ignored_warning, normalize, profiles, toml_to_json, type_name, unknown_warning};
use super::schema::{self, Kind, Support};
use super::stages::ProcessMode;
use super::types::{KeptKeys, SessionConfig};
use super::ProviderKind;
use super::{ConfigError, EffectiveConfig, Origin, SOURCE_DEFAULT, SOURCE_REQUEST};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One layer's keys, checked and in normal form.
pub(super) struct Layer {
    /// Where the values came from.
    origin: Arc<Origin>,
    /// Top-level keys (Swival's `commands` list form is stored as `allowed_commands`).
    values: BTreeMap<String, Value>,
    /// `[profiles.NAME]` tables, by name.
    profiles: BTreeMap<String, Map<String, Value>>,
    /// Keys that load but do nothing: Swival keys swivald ignores, and
    /// (in a file) keys nobody knows.
    warnings: Vec<String>,
}

impl Layer {
    /// Read a TOML config file; `None` when it does not exist.
    pub(super) fn from_file(path: &Path, origin: Origin) -> Result<Option<Layer>, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ConfigError::Read { path: path.to_owned(), source }),
        };
        Layer::from_text(path, &text, origin).map(Some)
    }

    /// A TOML config file's content, read by the caller.
    pub(super) fn from_text(path: &Path, text: &str, origin: Origin) -> Result<Layer, ConfigError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Toml {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let mut map = Map::new();
        for (key, value) in table {
            let value = toml_to_json(value, &key, &origin)?;
            map.insert(key, value);
        }
        Layer::from_map(map, origin)
    }

    /// The servers of an MCP JSON file, as a layer setting `mcp_servers`.
    pub(super) fn from_mcp_json(json: &super::McpJson) -> Result<Layer, ConfigError> {
        let origin = Origin::file(&json.path);
        let servers = json.servers()?;
        let mut values = BTreeMap::new();
        values.insert("mcp_servers".to_owned(), servers);
        Ok(Layer { origin: Arc::new(origin), values, profiles: BTreeMap::new(), warnings: Vec::new() })
    }

    /// A key's normal value in this layer.
    pub(super) fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// The `config` object of `session/create`; `null` means no keys.
    pub(super) fn from_request(value: &Value, origin: Origin) -> Result<Layer, ConfigError> {
        match value {
            Value::Object(map) => Layer::from_map(map.clone(), origin),
            Value::Null => Layer::from_map(Map::new(), origin),
            other => Err(origin.invalid(format!("expected an object of config keys, got {}", type_name(other)))),
        }
    }

    fn from_map(map: Map<String, Value>, origin: Origin) -> Result<Layer, ConfigError> {
        let is_set = |k: &str| map.get(k).is_some_and(|v| !v.is_null());
        if map.get("commands").is_some_and(Value::is_array) && is_set("allowed_commands") {
            return Err(origin
                .invalid("'commands' (list form) and 'allowed_commands' both set the command whitelist; keep one"));
        }
        // A file may hold keys of a newer Swival (they warn, as in Swival);
        // the request is swivald's own API, where a typo is an error.
        let lenient = origin.source != SOURCE_REQUEST;
        let mut layer = Layer {
            origin: Arc::new(origin),
            values: BTreeMap::new(),
            profiles: BTreeMap::new(),
            warnings: Vec::new(),
        };
        for (key, value) in map {
            if value.is_null() {
                continue;
            }
            let label = &layer.origin.label;
            let Some(spec) = schema::key(&key) else {
                let hint = schema::unknown_key_hint(&key, schema::KEYS.iter().map(|k| k.name));
                if lenient {
                    let hint = if hint.starts_with("; did you mean") { hint.as_str() } else { "" };
                    layer.warnings.push(unknown_warning(label, &key, hint));
                    continue;
                }
                return Err(ConfigError::UnknownKey { origin: label.clone(), hint, key });
            };
            if spec.support == Support::Kept {
                layer.warnings.push(ignored_warning(label, &key));
            }
            if let Kind::Profiles = spec.kind {
                for (name, body) in profiles(&key, value, &layer.origin, &mut layer.warnings)? {
                    if let Value::Object(body) = body {
                        layer.profiles.insert(name, body);
                    }
                }
                continue;
            }
            match (&spec.kind, normalize(&spec.kind, &key, value, &layer.origin)?) {
                (Kind::CommandPolicy, names @ Value::Array(_)) => {
                    layer.values.insert("allowed_commands".to_owned(), names);
                }
                (_, normal) => {
                    layer.values.insert(key, normal);
                }
            }
        }
        Ok(layer)
    }
}

/// The winning value of one key and who set it.
#[derive(Debug, Clone)]
struct Entry {
    /// The value in normal form.
    value: Value,
    /// The layer it came from (for its directory and error label).
    origin: Arc<Origin>,
    /// What `sources` records (the layer's source, plus the profile if any).
    source: String,
}

impl Entry {
    fn new(value: Value, origin: &Arc<Origin>, source: String) -> Entry {
        Entry { value, origin: Arc::clone(origin), source }
    }
}

/// Merge file layers (lowest first), the selected profile, then the request.
pub(super) fn merge(files: Vec<Layer>, request: Option<Layer>) -> Result<EffectiveConfig, ConfigError> {
    let profiles = merge_profiles(files.iter().chain(request.iter()))?;
    let mut entries = BTreeMap::new();
    for layer in &files {
        overlay(&mut entries, layer);
    }
    // Selection: the request's active_profile (`--profile`), else the files'.
    let chosen = request
        .as_ref()
        .and_then(|r| r.values.get("active_profile").map(|v| (v.clone(), r.origin.clone())))
        .or_else(|| entries.get("active_profile").map(|e| (e.value.clone(), e.origin.clone())));
    let active = chosen.as_ref().and_then(|(name, _)| name.as_str().map(str::to_owned));
    if let Some((name, origin)) = chosen {
        let name = name.as_str().unwrap_or_default();
        let Some(body) = profiles.get(name) else {
            let known: Vec<&str> = profiles.keys().map(String::as_str).collect();
            let known = if known.is_empty() { "(none defined)".to_owned() } else { known.join(", ") };
            return Err(origin.invalid(format!(
                "profile '{name}' not found. Known profiles: {known}; define [profiles.{name}] or fix active_profile"
            )));
        };
        for (key, entry) in body.iter().filter(|(k, _)| k.as_str() != "description") {
            entries.insert(key.clone(), entry.clone());
        }
    }
    if let Some(request) = &request {
        overlay(&mut entries, request);
    }
    let mut effective = finish(entries)?;
    effective.warnings = files.iter().chain(request.iter()).flat_map(|l| l.warnings.iter().cloned()).collect();
    effective.profiles = profiles
        .iter()
        .map(|(name, body)| {
            let text = |k: &str| body.get(k).and_then(|e| e.value.as_str()).map(str::to_owned);
            swival_protocol::ProfileInfo {
                name: name.clone(),
                provider: text("provider").unwrap_or_default(),
                model: text("model"),
                description: text("description"),
                active: active.as_deref() == Some(name.as_str()),
            }
        })
        .collect();
    Ok(effective)
}

/// Merge same-named profiles key by key across layers (later wins); every
/// merged profile must name its provider, as Swival requires.
fn merge_profiles<'a>(
    layers: impl Iterator<Item = &'a Layer>,
) -> Result<BTreeMap<String, BTreeMap<String, Entry>>, ConfigError> {
    let mut profiles: BTreeMap<String, BTreeMap<String, Entry>> = BTreeMap::new();
    let mut last_origin = BTreeMap::new();
    for layer in layers {
        for (name, body) in &layer.profiles {
            let source = format!("{} [profiles.{name}]", layer.origin.source);
            let merged = profiles.entry(name.clone()).or_default();
            for (key, value) in body {
                merged.insert(key.clone(), Entry::new(value.clone(), &layer.origin, source.clone()));
            }
            last_origin.insert(name.clone(), Arc::clone(&layer.origin));
        }
    }
    for (name, body) in &profiles {
        if !body.contains_key("provider") {
            return Err(last_origin[name]
                .invalid(format!("profiles.{name}: 'provider' is required (after merging all config layers)")));
        }
    }
    Ok(profiles)
}

/// Lay `layer` over `entries`: each key it sets replaces the earlier value,
/// except server tables and command tables, which merge by name.
fn overlay(entries: &mut BTreeMap<String, Entry>, layer: &Layer) {
    for (key, value) in &layer.values {
        let by_name = matches!(schema::key(key).map(|s| &s.kind), Some(Kind::NamedTables(_) | Kind::CommandTable));
        let value = match (entries.get(key).map(|e| &e.value), value) {
            (Some(Value::Object(old)), Value::Object(new)) if by_name => {
                let mut merged = old.clone();
                merged.extend(new.clone());
                Value::Object(merged)
            }
            _ => value.clone(),
        };
        entries.insert(key.clone(), Entry::new(value, &layer.origin, layer.origin.source.clone()));
    }
}

/// Build the typed config from the merged entries, then run the checks
/// that span keys, and record sources.
fn finish(entries: BTreeMap<String, Entry>) -> Result<EffectiveConfig, ConfigError> {
    let mut acted = Map::new();
    let mut kept = BTreeMap::new();
    for (key, entry) in &entries {
        match schema::key(key).map(|s| s.support) {
            Some(Support::Acted) => acted.insert(key.clone(), entry.value.clone()),
            _ => kept.insert(key.clone(), entry.value.clone()),
        };
    }
    // The key table and the struct are kept in step by tests; a failure
    // here is a bug in swivald, not in the user's config.
    let mut config: SessionConfig = serde_json::from_value(Value::Object(acted)).map_err(|e| ConfigError::Invalid {
        origin: "swivald".to_owned(),
        message: format!("internal error while building the session config ({e}); please report it"),
    })?;
    config.kept = KeptKeys(kept);
    if config.provider == ProviderKind::Command {
        if let (Some(model), Some(entry)) = (&config.model, entries.get("model")) {
            config.model_command = Some(parse_command(model, "model", &entry.origin)?);
        }
    }
    check_combinations(&config, &entries)?;
    let mut sources: BTreeMap<String, String> = schema::KEYS
        .iter()
        .filter(|k| k.support == Support::Acted)
        .map(|k| (k.name.to_owned(), SOURCE_DEFAULT.to_owned()))
        .collect();
    for (key, entry) in entries {
        sources.insert(key, entry.source);
    }
    Ok(EffectiveConfig { config, sources, warnings: Vec::new(), profiles: Vec::new() })
}

/// The checks no single value can fail: conflicting keys, possibly from
/// different layers. The message names every layer involved.
fn check_combinations(config: &SessionConfig, entries: &BTreeMap<String, Entry>) -> Result<(), ConfigError> {
    let fail = |keys: &[&str], message: String| {
        let mut labels: Vec<&str> = Vec::new();
        for entry in keys.iter().filter_map(|k| entries.get(*k)) {
            if !labels.contains(&entry.origin.label.as_str()) {
                labels.push(&entry.origin.label);
            }
        }
        let origin = if labels.is_empty() { "built-in defaults".to_owned() } else { labels.join(" and ") };
        Err(ConfigError::Invalid { origin, message })
    };
    if config.no_system_prompt && config.system_prompt.as_deref().is_some_and(|p| !p.is_empty()) {
        return fail(
            &["system_prompt", "no_system_prompt"],
            "'system_prompt' and 'no_system_prompt' are mutually exclusive; remove one".to_owned(),
        );
    }
    // Only a max_output_tokens someone set conflicts (as in Swival): the
    // default is clamped to the window at call time.
    if let (Some(context), true) = (config.max_context_tokens, entries.contains_key("max_output_tokens")) {
        if config.max_output_tokens > context {
            return fail(
                &["max_output_tokens", "max_context_tokens"],
                format!(
                    "'max_output_tokens' ({}) must not exceed 'max_context_tokens' ({context})",
                    config.max_output_tokens
                ),
            );
        }
    }
    if config.provider == ProviderKind::Generic && config.base_url.is_none() {
        return fail(
            &["provider"],
            "provider 'generic' needs base_url, e.g. base_url = \"http://127.0.0.1:8000/v1\"".to_owned(),
        );
    }
    if config.provider == ProviderKind::Command && config.model.is_none() {
        return fail(
            &["provider"],
            "provider 'command' needs model = the command that reads the transcript and prints the reply".to_owned(),
        );
    }
    if let Some(table) = &config.model_prices {
        for model in table.keys() {
            if let Err(why) = super::provider::Price::of(table, model) {
                return fail(&["model_prices"], why);
            }
        }
    }
    if config.provider.needs_model() && config.model.is_none() {
        let name = config.provider.as_str();
        let example = if config.provider == ProviderKind::Google { "gemini-2.5-flash" } else { "org/model" };
        return fail(&["provider"], format!("provider '{name}' needs model, e.g. model = \"{example}\" (or --model)"));
    }
    let stages = config.filters.iter().map(|f| ("filters", f.mode, f.prespawn));
    let hooks = config.hooks.iter().map(|h| ("hooks", h.mode, h.prespawn));
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for (key, mode, prespawn) in stages.chain(hooks) {
        let i = index.entry(key).or_default();
        if mode == ProcessMode::Persistent && prespawn > 0 {
            return fail(
                &[key],
                format!("{key}[{i}]: prespawn applies to mode = \"oneshot\" only; remove prespawn or the mode"),
            );
        }
        *i += 1;
    }
    Ok(())
}
