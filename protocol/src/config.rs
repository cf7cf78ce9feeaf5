//! A configuration as the protocol carries it: Swival's keys.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Config keys by Swival's names (`model`, `max_turns`, `allowed_commands`…),
/// as a config file holds them: in a request, each key laid over the files'
/// (a `null` takes one out, back to the files' value; a key the daemon
/// does not know loads with a warning); in a result, the effective
/// configuration, secrets redacted. Each key's own type is checked by the
/// daemon's config layer, in Swival's words.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct ConfigKeys(pub serde_json::Map<String, Value>);

impl<'de> Deserialize<'de> for ConfigKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ConfigKeys, D::Error> {
        let kind = match Value::deserialize(d)? {
            Value::Object(map) => return Ok(ConfigKeys(map)),
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "a list",
        };
        Err(serde::de::Error::custom(format!("config: expected an object of config keys, got {kind}")))
    }
}

impl ConfigKeys {
    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The keys of a JSON object (the daemon's effective configuration);
    /// none for anything else.
    pub fn of(value: Value) -> ConfigKeys {
        match value {
            Value::Object(map) => ConfigKeys(map),
            _ => ConfigKeys::default(),
        }
    }

    /// The keys as one JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

impl From<serde_json::Map<String, Value>> for ConfigKeys {
    fn from(map: serde_json::Map<String, Value>) -> ConfigKeys {
        ConfigKeys(map)
    }
}

#[cfg(test)]
mod config_keys_tests {
    use super::*;
    use crate::session::SessionCreateParams;

    #[test]
    fn config_keys_are_an_object_and_anything_else_is_refused_in_words() {
        let p: SessionCreateParams = serde_json::from_str(r#"{"base_dir": "/p", "config": {"model": "m"}}"#).unwrap();
        assert_eq!(p.config.unwrap().get("model"), Some(&Value::from("m")));
        let none: SessionCreateParams = serde_json::from_str(r#"{"base_dir": "/p", "config": null}"#).unwrap();
        assert_eq!(none.config, None);
        let err = serde_json::from_str::<SessionCreateParams>(r#"{"base_dir": "/p", "config": ["m"]}"#).unwrap_err();
        assert!(err.to_string().starts_with("config: expected an object of config keys, got a list"), "{err}");
    }
}
