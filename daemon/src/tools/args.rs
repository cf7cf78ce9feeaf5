//! Reading tool arguments the way Swival does: numbers may arrive as
//! numeric strings, booleans as `"true"`, and a wrong type is an error that
//! names the argument.

use crate::toolcall::type_name;
use serde_json::Value;

/// An argument missing or of the wrong type; the message names it (the
/// model reads it after `error: `).
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    /// A required argument is absent or `null`.
    #[error("missing required argument '{key}'")]
    Missing { key: String },
    /// An argument of the wrong type; `got` describes what came.
    #[error("'{key}' must be {expected}, got {got}")]
    WrongType { key: String, expected: &'static str, got: String },
}

/// [`ArgError::WrongType`].
fn wrong(key: &str, expected: &'static str, got: impl ToString) -> ArgError {
    ArgError::WrongType { key: key.to_owned(), expected, got: got.to_string() }
}

/// A required string argument.
pub fn req_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ArgError> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(ArgError::Missing { key: key.to_owned() }),
        Some(other) => Err(wrong(key, "a string", type_name(other))),
    }
}

/// An optional string argument (`null` counts as absent).
pub fn opt_str<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ArgError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(wrong(key, "a string", type_name(other))),
    }
}

/// An optional integer argument; numeric strings are accepted, booleans
/// are not (a model sending `true` for a line number is a mistake).
pub fn opt_int(args: &Value, key: &str) -> Result<Option<i64>, ArgError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| wrong(key, "an integer", n)),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| wrong(key, "an integer", format!("\"{s}\""))),
        Some(other) => Err(wrong(key, "an integer", type_name(other))),
    }
}

/// An optional boolean argument; `"true"`/`"false"` and 0/1 are accepted.
pub fn opt_bool(args: &Value, key: &str) -> Result<Option<bool>, ArgError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(Value::Number(n)) if n.as_u64() == Some(1) => Ok(Some(true)),
        Some(Value::Number(n)) if n.as_u64() == Some(0) => Ok(Some(false)),
        Some(other) => Err(wrong(key, "true or false", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A refusal as the model reads it.
    fn shown(e: ArgError) -> String {
        format!("error: {e}")
    }

    #[test]
    fn integers_accept_numeric_strings_and_refuse_booleans() {
        let a = json!({"n": "12", "b": true, "f": 3.0});
        assert_eq!(opt_int(&a, "n").unwrap(), Some(12));
        assert_eq!(opt_int(&a, "f").unwrap(), Some(3));
        assert!(opt_int(&a, "b").map_err(shown).unwrap_err().contains("'b' must be an integer"));
        assert_eq!(opt_int(&a, "missing").unwrap(), None);
    }

    #[test]
    fn missing_required_string_names_the_argument() {
        assert!(req_str(&json!({}), "file_path").map_err(shown).unwrap_err().contains("'file_path'"));
    }
}
