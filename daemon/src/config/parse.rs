//! Checking one value against its [`Kind`] and bringing it to its normal
//! form: the JSON shape `SessionConfig` deserializes from, with paths and
//! commands already resolved against the layer's directory.
//!
//! TOML and the request's JSON both arrive here as `serde_json::Value`
//! (see [`toml_to_json`]); type names in messages are Swival's (Python's):
//! `bool`, `int`, `float`, `str`, `list`, `dict`.

use super::command::{parse_command, resolve_path};
use super::schema::{self, Field, Kind, Support};
use super::types::Cidr;
use super::{ConfigError, Origin};
use serde_json::{Map, Value};

/// The Swival name of a value's type.
pub(super) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// Convert a parsed TOML value found at `key`. Dates and non-finite floats
/// have no place in this config and are refused here.
pub(super) fn toml_to_json(value: toml::Value, key: &str, origin: &Origin) -> Result<Value, ConfigError> {
    Ok(match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => return Err(origin.invalid(format!("'{key}' must be a finite number, got {f}"))),
        },
        toml::Value::Datetime(d) => {
            return Err(origin.invalid(format!(
                "'{key}' is a TOML date/time ({d}); no key takes one, quote it if a string was meant"
            )))
        }
        toml::Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| toml_to_json(v, &format!("{key}[{i}]"), origin))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => Value::Object(
            table
                .into_iter()
                .map(|(k, v)| {
                    let sub = format!("{key}.{k}");
                    toml_to_json(v, &sub, origin).map(|v| (k, v))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

fn wrong_type(kind: &Kind, key: &str, value: &Value, origin: &Origin) -> ConfigError {
    ConfigError::WrongType {
        origin: origin.label.clone(),
        key: key.to_owned(),
        expected: kind.expected(),
        got: type_name(value),
    }
}

/// Check `value` for `key` against `kind` and return its normal form.
pub(super) fn normalize(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    match kind {
        Kind::Bool => match value {
            Value::Bool(_) => Ok(value),
            other => Err(wrong_type(kind, key, &other, origin)),
        },
        Kind::Str => string(kind, key, value, origin).map(Value::String),
        Kind::Int { min } => int(kind, key, &value, *min, origin).map(Value::from),
        Kind::Float { positive } => float(kind, key, &value, *positive, origin).map(Value::from),
        Kind::Enum(names) => enum_value(kind, names, key, value, origin),
        Kind::StrList => list(kind, key, value, origin, |k, v| string(&Kind::Str, k, v, origin).map(Value::String)),
        Kind::EnumList(names) => list(kind, key, value, origin, |k, v| enum_value(&Kind::Str, names, k, v, origin)),
        Kind::Path => {
            let text = string(kind, key, value, origin)?;
            path_value(&text, key, origin)
        }
        Kind::PathList => list(kind, key, value, origin, |k, v| {
            let text = string(&Kind::Str, k, v, origin)?;
            path_value(&text, k, origin)
        }),
        Kind::Command => {
            let text = string(kind, key, value, origin)?;
            command_value(&text, key, origin)
        }
        Kind::CommandList => command_list(kind, key, value, origin),
        Kind::CommandTable => command_table(kind, key, value, origin),
        Kind::CommandPolicy => command_policy(kind, key, value, origin),
        Kind::CommandNames => command_names(kind, key, value, origin),
        Kind::HexKey => hex_key(kind, key, value, origin),
        Kind::Cidrs => list(kind, key, value, origin, |k, v| {
            let text = string(&Kind::Str, k, v, origin)?;
            let cidr: Cidr = text.parse().map_err(|e| origin.invalid(format!("'{k}': {e}")))?;
            Ok(Value::String(cidr.to_string()))
        }),
        Kind::Table => match value {
            Value::Object(_) => Ok(value),
            other => Err(wrong_type(kind, key, &other, origin)),
        },
        Kind::Section(fields) => {
            let map = object(kind, key, value, origin)?;
            table(fields, key, map, origin, false).map(Value::Object)
        }
        Kind::Tables(fields) | Kind::OpenTables(fields) => list(kind, key, value, origin, |k, v| {
            let map = object(&Kind::Table, k, v, origin)?;
            table(fields, k, map, origin, matches!(kind, Kind::OpenTables(_))).map(Value::Object)
        }),
        Kind::StrTable => str_table(kind, key, value, origin),
        Kind::NamedTables(fields) => named_tables(kind, fields, key, value, origin),
        // `Layer::from_map` reads profiles with [`profiles`] to keep the
        // warnings; here they are dropped.
        Kind::Profiles => profiles(key, value, origin, &mut Vec::new()).map(Value::Object),
    }
}

/// One of `names`.
fn enum_value(kind: &Kind, names: &[&str], key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    let text = string(kind, key, value, origin)?;
    if names.contains(&text.as_str()) {
        return Ok(Value::String(text));
    }
    let listed = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
    Err(origin.invalid(format!("'{key}' must be one of {listed}, got '{text}'{}", enum_hint(key, &text))))
}

/// One command line or a list of them, each as argv.
fn command_list(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    match value {
        Value::String(text) => Ok(Value::Array(vec![command_value(&text, key, origin)?])),
        Value::Array(_) => list(kind, key, value, origin, |k, v| {
            let text = string(&Kind::Str, k, v, origin)?;
            command_value(&text, k, origin)
        }),
        other => Err(wrong_type(kind, key, &other, origin)),
    }
}

/// Commands by name, each a command string (split as [`command_value`]
/// does) or an argv list taken as it is (a path-like program resolved the
/// same way).
fn command_table(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    let map = object(kind, key, value, origin)?;
    let mut out = Map::new();
    for (name, v) in map {
        let sub = format!("{key}.{name}");
        let command = match v {
            Value::String(text) => command_value(&text, &sub, origin)?,
            Value::Array(_) => {
                let argv = list(kind, &sub, v, origin, |k, w| string(&Kind::Str, k, w, origin).map(Value::String))?;
                let argv: Vec<String> = serde_json::from_value(argv).unwrap_or_default();
                let command = super::command::command_from_argv(argv, &format!("{sub} command"), origin)?;
                serde_json::to_value(command).map_err(|e| origin.invalid(format!("'{sub}': {e}")))?
            }
            other => return Err(wrong_type(&Kind::CommandList, &sub, &other, origin)),
        };
        out.insert(name, command);
    }
    Ok(Value::Object(out))
}

/// `all`, `none`, `ask`, or a list of command names.
fn command_policy(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    match value {
        Value::String(text) => match text.as_str() {
            "all" | "none" | "ask" => Ok(Value::String(text)),
            _ => Err(origin
                .invalid(format!("'{key}' must be 'all', 'none', 'ask', or a list of command names, got '{text}'"))),
        },
        Value::Array(_) => command_names(kind, key, value, origin),
        other => Err(wrong_type(kind, key, &other, origin)),
    }
}

/// A 16, 24 or 32-byte key in hex.
fn hex_key(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    let text = string(kind, key, value, origin)?;
    if matches!(text.len(), 32 | 48 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(Value::String(text));
    }
    Err(origin.invalid(format!(
        "'{key}' must be 32, 48 or 64 hex digits (a 16, 24 or 32-byte key), got {} characters",
        text.len()
    )))
}

/// A table of strings.
fn str_table(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    let map = object(kind, key, value, origin)?;
    for (k, v) in &map {
        if !v.is_string() {
            return Err(wrong_type(&Kind::Str, &format!("{key}.{k}"), v, origin));
        }
    }
    Ok(Value::Object(map))
}

/// Tables by name (`[mcp_servers.NAME]`), each checked against `fields`.
fn named_tables(
    kind: &Kind,
    fields: &'static [Field],
    key: &str,
    value: Value,
    origin: &Origin,
) -> Result<Value, ConfigError> {
    let map = object(kind, key, value, origin)?;
    let mut out = Map::new();
    for (name, v) in map {
        let sub = format!("{key}.{name}");
        let inner = object(&Kind::Table, &sub, v, origin)?;
        let checked = table(fields, &sub, inner, origin, true)?;
        if key == "mcp_servers" {
            super::mcp::check_server(&name, &checked, origin)?;
        }
        out.insert(name, Value::Object(checked));
    }
    Ok(Value::Object(out))
}

/// A hint after a bad enum value, for values Swival accepts and we do not.
fn enum_hint(key: &str, value: &str) -> &'static str {
    match key.rsplit('.').next().unwrap_or(key) {
        "provider" if schema::SWIVAL_ONLY_PROVIDERS.contains(&value) => {
            "; swivald does not support this Swival provider: use 'generic' with base_url for any OpenAI-compatible endpoint"
        }
        "sandbox" if matches!(value, "agentfs" | "nono") => {
            "; swivald confines commands itself: 'os' uses the kernel (Landlock), 'builtin' only checks paths in-process"
        }
        _ => "",
    }
}

fn string(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<String, ConfigError> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(wrong_type(kind, key, &other, origin)),
    }
}

fn int(kind: &Kind, key: &str, value: &Value, min: i64, origin: &Origin) -> Result<i64, ConfigError> {
    let n = match value {
        Value::Number(n) if !n.is_f64() => n,
        other => return Err(wrong_type(kind, key, other, origin)),
    };
    let n = n.as_i64().ok_or_else(|| origin.invalid(format!("'{key}' is out of range, got {n}")))?;
    if n < min {
        return Err(origin.invalid(format!("'{key}' must be at least {min}, got {n}")));
    }
    Ok(n)
}

fn float(kind: &Kind, key: &str, value: &Value, positive: bool, origin: &Origin) -> Result<f64, ConfigError> {
    let f = match value {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        other => return Err(wrong_type(kind, key, other, origin)),
    };
    if !f.is_finite() {
        return Err(origin.invalid(format!("'{key}' must be a finite number")));
    }
    if positive && f <= 0.0 {
        return Err(origin.invalid(format!("'{key}' must be greater than 0, got {f}")));
    }
    Ok(f)
}

fn object(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Map<String, Value>, ConfigError> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(wrong_type(kind, key, &other, origin)),
    }
}

/// Check a list and normalize each element with `each(key[i], element)`.
fn list(
    kind: &Kind,
    key: &str,
    value: Value,
    origin: &Origin,
    mut each: impl FnMut(&str, Value) -> Result<Value, ConfigError>,
) -> Result<Value, ConfigError> {
    let items = match value {
        Value::Array(items) => items,
        other => return Err(wrong_type(kind, key, &other, origin)),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, v)| each(&format!("{key}[{i}]"), v))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

fn path_value(text: &str, key: &str, origin: &Origin) -> Result<Value, ConfigError> {
    resolve_path(text, key, origin).map(|p| Value::String(p.to_string_lossy().into_owned()))
}

fn command_value(text: &str, key: &str, origin: &Origin) -> Result<Value, ConfigError> {
    let command = parse_command(text, key, origin)?;
    serde_json::to_value(command).map_err(|e| origin.invalid(format!("'{key}': {e}")))
}

/// Bare program names for the `run_command` whitelist.
fn command_names(kind: &Kind, key: &str, value: Value, origin: &Origin) -> Result<Value, ConfigError> {
    list(kind, key, value, origin, |k, v| {
        let name = string(&Kind::Str, k, v, origin)?;
        if name.is_empty() || name.contains(['/', '\\']) || name.chars().any(char::is_whitespace) {
            return Err(origin.invalid(format!(
                "'{k}' must be a bare program name such as \"git\" (no path, no spaces), got {name:?}"
            )));
        }
        Ok(Value::String(name))
    })
}

/// Check a table against its fields: missing required ones are errors,
/// unknown ones too unless `open` (then they are dropped); `null` fields
/// count as absent.
fn table(
    fields: &'static [Field],
    key: &str,
    map: Map<String, Value>,
    origin: &Origin,
    open: bool,
) -> Result<Map<String, Value>, ConfigError> {
    let mut out = Map::new();
    for (name, value) in map {
        if value.is_null() {
            continue;
        }
        let sub = format!("{key}.{name}");
        let Some(spec) = schema::field_of(fields, &name) else {
            if open {
                continue;
            }
            return Err(ConfigError::UnknownKey {
                origin: origin.label.clone(),
                hint: schema::unknown_key_hint(&name, fields.iter().map(|f| f.name)),
                key: sub,
            });
        };
        out.insert(name, normalize(&spec.kind, &sub, value, origin)?);
    }
    if let Some(missing) = fields.iter().find(|f| f.required && !out.contains_key(f.name)) {
        return Err(origin.invalid(format!("{key}: missing required key '{}'", missing.name)));
    }
    Ok(out)
}

/// `[profiles.NAME]` tables, by name. Warnings (for keys Swival knows
/// and swivald ignores, and for keys neither knows) go to `warnings`.
pub(super) fn profiles(
    key: &str,
    value: Value,
    origin: &Origin,
    warnings: &mut Vec<String>,
) -> Result<Map<String, Value>, ConfigError> {
    let map = object(&Kind::Profiles, key, value, origin)?;
    let mut out = Map::new();
    for (name, v) in map {
        let sub = format!("{key}.{name}");
        let inner = object(&Kind::Table, &sub, v, origin)?;
        out.insert(name, Value::Object(profile(&sub, inner, origin, warnings)?));
    }
    Ok(out)
}

/// One `[profiles.NAME]` table: only LLM keys, each checked like the
/// top-level key of the same name. A top-level key that is not an LLM key
/// is an error, as in Swival; a key no table knows is dropped with
/// Swival's unknown-key warning (Swival refuses it; ours is lenient so a
/// newer Swival's profile still loads).
fn profile(
    key: &str,
    map: Map<String, Value>,
    origin: &Origin,
    warnings: &mut Vec<String>,
) -> Result<Map<String, Value>, ConfigError> {
    let mut out = Map::new();
    for (name, value) in map {
        if value.is_null() {
            continue;
        }
        let sub = format!("{key}.{name}");
        let spec = schema::key(&name);
        let normal = match (name.as_str(), spec) {
            ("description", _) => normalize(&Kind::Str, &sub, value, origin)?,
            (_, Some(spec)) if schema::PROFILE_KEYS.contains(&name.as_str()) => {
                let normal = normalize(&spec.kind, &sub, value, origin)?;
                if spec.support == Support::Kept {
                    warnings.push(ignored_warning(&origin.label, &sub));
                }
                normal
            }
            (_, Some(_)) => {
                return Err(origin.invalid(format!(
                    "{key}: '{name}' is not allowed in a profile. Profiles only support LLM-related keys: {}",
                    schema::PROFILE_KEYS.join(", ")
                )))
            }
            (_, None) => {
                warnings.push(unknown_warning(&origin.label, &sub, ""));
                continue;
            }
        };
        out.insert(name, normal);
    }
    Ok(out)
}

/// The warning for a key Swival has and swivald does not act on.
pub(super) fn ignored_warning(label: &str, key: &str) -> String {
    format!("{label}: {key} is not supported by swivald and is ignored")
}

/// Swival's warning for a key it does not know (`hint`: `; did you mean
/// 'x'?` or nothing).
pub(super) fn unknown_warning(label: &str, key: &str, hint: &str) -> String {
    format!("{label}: unknown config key '{key}'{hint}")
}
