//! Reading a tool's typed arguments the way Swival does: [`parse`] fills a
//! struct deriving `Deserialize` from the call's JSON object, field by
//! field in the order the struct declares them, so the first problem
//! reported is the first field's. Numbers may arrive as numeric strings,
//! booleans as `"true"` or 0/1, `null` counts as absent, keys the struct
//! does not name are ignored, and a missing or mistyped argument is an
//! [`ArgError`] that names it (the model reads it after `error: `).
//!
//! Field types: `String` (required), `Option<String>`, `Option<i64>`,
//! `Option<bool>`, and `serde_json::Value` or `Option<Value>` for an
//! argument the tool reads in its own lenient way. An argument Swival
//! checks only in some cases is a [`Later`], read when the tool gets to it.

use crate::toolcall::type_name;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{forward_to_deserialize_any, Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::marker::PhantomData;

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
    /// An argument the field's type refused in its own words.
    #[error("'{key}' is invalid: {message}")]
    Invalid { key: String, message: String },
}

impl de::Error for ArgError {
    fn custom<T: std::fmt::Display>(message: T) -> ArgError {
        // The key is filled in by the field being read.
        ArgError::Invalid { key: String::new(), message: message.to_string() }
    }
}

/// [`ArgError::WrongType`].
fn wrong(key: &str, expected: &'static str, got: impl ToString) -> ArgError {
    ArgError::WrongType { key: key.to_owned(), expected, got: got.to_string() }
}

/// The arguments `args` (a JSON object, as `parse_args` gives) as `T`.
pub fn parse<T: DeserializeOwned>(args: &Value) -> Result<T, ArgError> {
    let empty = Map::new();
    T::deserialize(Object(args.as_object().unwrap_or(&empty)))
}

/// An argument the tool checks only when it gets to it (Swival reads it
/// only in some cases, so a bad one is no error in the others). Its schema
/// is given with `#[schemars(with = ...)]` on the field.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Later<T> {
    /// The value as sent (`None`: absent or `null`).
    raw: Option<Value>,
    /// What it is read as.
    #[serde(skip)]
    read_as: PhantomData<T>,
}

impl<T> Default for Later<T> {
    /// Absent.
    fn default() -> Later<T> {
        Later { raw: None, read_as: PhantomData }
    }
}

impl<T: DeserializeOwned> Later<T> {
    /// The argument, named `key` in errors, as `T`.
    pub fn read(&self, key: &'static str) -> Result<T, ArgError> {
        T::deserialize(Field { key, value: self.raw.as_ref() })
    }
}

/// The call's arguments, deserialising a struct.
struct Object<'a>(&'a Map<String, Value>);

impl<'de> Deserializer<'de> for Object<'de> {
    type Error = ArgError;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        visitor.visit_map(Fields { map: self.0, fields: fields.iter(), current: None })
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_map(Fields { map: self.0, fields: [].iter(), current: None })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// Every field the struct declares, in order, present or not: an absent
/// one is read as absent, so a required field is reported in its turn.
struct Fields<'a> {
    /// The arguments.
    map: &'a Map<String, Value>,
    /// The fields still to read.
    fields: std::slice::Iter<'static, &'static str>,
    /// The field whose key was just given.
    current: Option<&'static str>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ArgError> {
        let Some(key) = self.fields.next() else { return Ok(None) };
        self.current = Some(key);
        seed.deserialize(IntoDeserializer::<ArgError>::into_deserializer(*key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ArgError> {
        let key = self.current.take().expect("a value follows its key");
        seed.deserialize(Field { key, value: self.map.get(key) })
    }
}

/// One argument (`None`: absent).
struct Field<'a> {
    /// Its name, for errors.
    key: &'static str,
    /// Its value as sent.
    value: Option<&'a Value>,
}

impl<'a> Field<'a> {
    /// The value, `null` counting as absent.
    fn given(&self) -> Option<&'a Value> {
        self.value.filter(|v| !v.is_null())
    }

    fn missing(&self) -> ArgError {
        ArgError::Missing { key: self.key.to_owned() }
    }

    /// An integer; numeric strings and whole floats are accepted, booleans
    /// are not (a model sending `true` for a line number is a mistake).
    fn integer(&self) -> Result<i64, ArgError> {
        match self.given().ok_or_else(|| self.missing())? {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(|| wrong(self.key, "an integer", n)),
            Value::String(s) => s.trim().parse().map_err(|_| wrong(self.key, "an integer", format!("\"{s}\""))),
            other => Err(wrong(self.key, "an integer", type_name(other))),
        }
    }

    /// A boolean; `"true"`/`"false"` and 0/1 are accepted.
    fn boolean(&self) -> Result<bool, ArgError> {
        match self.given().ok_or_else(|| self.missing())? {
            Value::Bool(b) => Ok(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
            Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
            other => Err(wrong(self.key, "true or false", other)),
        }
    }

    /// A string.
    fn string(&self) -> Result<&'a str, ArgError> {
        match self.given().ok_or_else(|| self.missing())? {
            Value::String(s) => Ok(s),
            other => Err(wrong(self.key, "a string", type_name(other))),
        }
    }

    /// An error of the field's own type, named after the field.
    fn named(&self, e: ArgError) -> ArgError {
        match e {
            ArgError::Invalid { key, message } if key.is_empty() => {
                ArgError::Invalid { key: self.key.to_owned(), message }
            }
            other => other,
        }
    }
}

impl<'de> Deserializer<'de> for Field<'de> {
    type Error = ArgError;

    /// A `Value` takes whatever came (`null` when absent); other types
    /// read it as serde_json would.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self.value {
            None => visitor.visit_unit(),
            Some(v) => v.deserialize_any(visitor).map_err(|e| self.named(de::Error::custom(e))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        match self.given() {
            None => visitor.visit_none(),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_borrowed_str(self.string()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        let n = self.integer()?;
        visitor.visit_i64(n).map_err(|e| self.named(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        visitor.visit_bool(self.boolean()?)
    }

    serde::forward_to_deserialize_any! {
        i8 i16 i32 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit unit_struct
        newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A refusal as the model reads it.
    fn shown<T: std::fmt::Debug>(r: Result<T, ArgError>) -> String {
        format!("error: {}", r.unwrap_err())
    }

    #[derive(Debug, Deserialize)]
    struct Window {
        file_path: String,
        offset: Option<i64>,
        wrap: Option<bool>,
        raw: Option<Value>,
        later: Later<Option<i64>>,
    }

    #[test]
    fn integers_accept_numeric_strings_and_whole_floats_and_refuse_booleans() {
        let w: Window = parse(&json!({"file_path": "a", "offset": " 12 "})).unwrap();
        assert_eq!(w.offset, Some(12));
        let w: Window = parse(&json!({"file_path": "a", "offset": 3.0, "wrap": "TRUE"})).unwrap();
        assert_eq!((w.offset, w.wrap), (Some(3), Some(true)));
        let bad = shown(parse::<Window>(&json!({"file_path": "a", "offset": true})));
        assert_eq!(bad, "error: 'offset' must be an integer, got a boolean");
        assert_eq!(
            shown(parse::<Window>(&json!({"file_path": "a", "wrap": 2}))),
            "error: 'wrap' must be true or false, got 2"
        );
    }

    #[test]
    fn fields_are_checked_in_the_order_declared_and_null_is_absent() {
        let both = json!({"offset": "x", "file_path": 1});
        assert_eq!(shown(parse::<Window>(&both)), "error: 'file_path' must be a string, got a number");
        let missing = json!({"file_path": null, "offset": "x"});
        assert_eq!(shown(parse::<Window>(&missing)), "error: missing required argument 'file_path'");
        let w: Window = parse(&json!({"file_path": "a", "offset": null, "raw": null, "other": 1})).unwrap();
        assert!(w.offset.is_none() && w.raw.is_none());
    }

    #[test]
    fn a_later_argument_is_an_error_only_when_read() {
        let w: Window = parse(&json!({"file_path": "a", "later": "x", "raw": [1]})).unwrap();
        assert_eq!((w.file_path.as_str(), w.raw), ("a", Some(json!([1]))));
        assert_eq!(shown(w.later.read("later")), "error: 'later' must be an integer, got \"x\"");
        let w: Window = parse(&json!({"file_path": "a"})).unwrap();
        assert_eq!(w.later.read("later").unwrap(), None);
    }
}
