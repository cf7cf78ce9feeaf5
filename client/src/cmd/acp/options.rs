//! The session config options an editor shows and sets (ACP's
//! `configOptions`, `session/set_config_option`): the model and the
//! reasoning effort, changed for the session's next runs through the
//! daemon's `session/configure`.

use super::acp;
use serde_json::Value;

/// The reasoning efforts Swival's `--reasoning-effort` takes.
const EFFORTS: &[&str] = &["default", "none", "minimal", "low", "medium", "high", "xhigh"];

/// The options, from a session's effective config (as `session/get` shows it).
pub fn config_options(config: &Value) -> Vec<acp::SessionConfigOption> {
    let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
    let model = text("model").unwrap_or_else(|| "default".to_owned());
    let effort = text("reasoning_effort").unwrap_or_else(|| "default".to_owned());
    let models = vec![acp::SessionConfigSelectOption::new(model.clone(), model.clone())];
    let efforts: Vec<acp::SessionConfigSelectOption> =
        EFFORTS.iter().map(|e| acp::SessionConfigSelectOption::new(*e, *e)).collect();
    vec![
        acp::SessionConfigOption::select("model", "Model", model, models)
            .category(acp::SessionConfigOptionCategory::Model)
            .description("The model the session's next runs use (any id the provider knows)".to_owned()),
        acp::SessionConfigOption::select("reasoning_effort", "Reasoning", effort, efforts)
            .category(acp::SessionConfigOptionCategory::ThoughtLevel)
            .description("The reasoning effort asked of the model".to_owned()),
    ]
}

/// The config key and value a `session/set_config_option` sets, or why
/// it cannot.
pub fn config_change(req: &acp::SetSessionConfigOptionRequest) -> Result<(String, String), String> {
    let acp::SessionConfigOptionValue::ValueId { value } = &req.value else {
        return Err(format!("option {} takes one of its values, not a boolean", req.config_id.0));
    };
    let value = value.0.to_string();
    match &*req.config_id.0 {
        "model" => Ok(("model".into(), value)),
        "reasoning_effort" if is_effort(&value) => Ok(("reasoning_effort".into(), value)),
        "reasoning_effort" => Err(format!("reasoning_effort is one of {}, not {value}", EFFORTS.join(", "))),
        other => Err(format!("no config option {other}: this agent has model and reasoning_effort")),
    }
}

/// Whether the editor chose one of the efforts offered.
fn is_effort(chosen: &str) -> bool {
    EFFORTS.contains(&chosen)
}
