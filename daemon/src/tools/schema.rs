//! A built-in tool's JSON schema, with Swival's names, parameters and
//! descriptions (models and Swival's prompt assume them): generated from
//! its arguments' type ([`function`]) and shaped as Swival wrote it, key
//! order included (`tests/tests/tool_schemas.rs` holds them byte for
//! byte); the `#[schemars]` transforms the tools' types name live here.

use super::Tool;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A batch's `files` as offered: an array of `T`s. Made here rather than
/// as schemars's `Vec<T>`, which embeds the items' schema through `json!`
/// and so reorders its keys.
pub struct Requests<T>(std::marker::PhantomData<T>);

impl<T: JsonSchema> JsonSchema for Requests<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("Requests{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let items = generator.subschema_for::<T>().to_value();
        Schema::from(Map::from_iter([("type".to_owned(), "array".into()), ("items".to_owned(), items)]))
    }
}

/// The name of an OpenAI function tool's schema (`function.name`; read
/// by key, not by JSON pointer, which allocates each step of its path).
pub fn name_of(schema: &Value) -> Option<&str> {
    schema.get("function")?.get("name")?.as_str()
}

/// A built-in tool's schema as an OpenAI function tool: its name, its
/// description (the type's doc comment) and its parameters, generated
/// from the type, shaped as Swival wrote them and fitted to the session.
pub(super) fn function<T: Tool>(read_lines: usize) -> Value {
    let mut parameters = parameters::<T>();
    let description = match parameters.as_object_mut().and_then(|p| take(p, "description")) {
        Some(Value::String(d)) => d,
        _ => String::new(),
    };
    T::fit(&mut parameters, read_lines);
    let function = Function { name: T::NAME, description, parameters };
    serde_json::to_value(FunctionTool { kind: "function", function }).expect("tool schemas serialize")
}

/// An OpenAI function tool.
#[derive(Serialize)]
struct FunctionTool<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// The function.
    function: Function<'a>,
}

/// What the model calls.
#[derive(Serialize)]
struct Function<'a> {
    /// The tool's name.
    name: &'a str,
    /// What it does.
    description: String,
    /// Its arguments' JSON schema.
    parameters: Value,
}

/// The JSON schema of `T`, shaped as Swival's hand-written ones.
fn parameters<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    swival_shaped(&mut schema);
    schema
}

/// What schemars adds and Swival's schemas leave unsaid, taken out of a
/// schema and every schema in it: the `title`, integer `format`s, and the
/// `null` an optional argument allows or defaults to (it may be left out
/// instead).
fn swival_shaped(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else { return };
    take(obj, "title");
    take(obj, "format");
    if obj.get("default").is_some_and(Value::is_null) {
        take(obj, "default");
    }
    if let Some(Value::Array(types)) = obj.get("type") {
        let given: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        obj.insert("type".into(), if given.len() == 1 { given[0].clone() } else { Value::Array(given) });
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // An optional argument with subschemas: `anyOf` the schema or null.
    let nullable = match obj.get("anyOf") {
        Some(Value::Array(any)) if any.len() == 2 && any[1].get("type").is_some_and(|t| t == "null") => {
            Some(any[0].clone())
        }
        _ => None,
    };
    if let Some(Value::Object(inner)) = nullable {
        take(obj, "anyOf");
        let rest = std::mem::take(obj);
        obj.extend(inner);
        obj.extend(rest);
    }
    for key in ["items", "properties", "oneOf", "anyOf"] {
        match obj.get_mut(key) {
            Some(Value::Object(props)) if key == "properties" => props.values_mut().for_each(swival_shaped),
            Some(Value::Array(all)) => all.iter_mut().for_each(swival_shaped),
            Some(one @ Value::Object(_)) => swival_shaped(one),
            _ => {}
        }
    }
}

/// A field's transform putting its description after its bounds, where
/// Swival wrote it so: `#[schemars(transform = description_last)]`.
pub(super) fn description_last(schema: &mut Schema) {
    to_the_end(schema, "description");
}

/// A field's transform putting its items' schema after its description and
/// bounds, where Swival wrote it: `#[schemars(transform = items_last)]`.
pub(super) fn items_last(schema: &mut Schema) {
    to_the_end(schema, "items");
}

/// A field's transform putting its description, then its items' schema,
/// then its bounds, where Swival wrote them so:
/// `#[schemars(transform = items_between)]`.
pub(super) fn items_between(schema: &mut Schema) {
    to_the_end(schema, "items");
    to_the_end(schema, "maxItems");
}

/// Move `key` of `schema` after its other keys.
fn to_the_end(schema: &mut Schema, key: &str) {
    let Some(obj) = schema.as_object_mut() else { return };
    if let Some(value) = take(obj, key) {
        obj.insert(key.to_owned(), value);
    }
}

/// Remove `key` from `obj`, the other keys keeping their order (when
/// serde_json keeps order, its `remove` moves the last key into the gap).
fn take(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let value = obj.get(key).cloned();
    obj.retain(|k, _| k != key);
    value
}

/// The `limit` of a read (in `properties`) says it defaults to
/// `read_lines`, the session's `max_output_lines`.
pub(super) fn limit_defaults_to(properties: &mut Value, read_lines: usize) {
    let Some(limit) = properties.get_mut("limit").and_then(Value::as_object_mut) else { return };
    if let Some(Value::String(d)) = limit.get_mut("description") {
        d.push_str(&format!(" Defaults to {read_lines}."));
    }
    limit.insert("default".into(), read_lines.into());
}
