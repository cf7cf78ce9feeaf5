//! The session config options an editor shows and sets (ACP's
//! `configOptions`, `session/set_config_option`): the model and the
//! reasoning effort, changed for the session's next runs through the
//! daemon's `session/configure`.

use super::acp;
use serde_json::Value;

/// The reasoning efforts Swival's `--reasoning-effort` takes.
const EFFORTS: &[&str] = &["default", "none", "minimal", "low", "medium", "high", "xhigh"];

/// The options, from a session's effective config (as `session/get` shows
/// it) and the models its provider serves (`provider/models`; the current
/// model is offered whether listed or not).
pub fn config_options(config: &swival_protocol::ConfigKeys, served: &[String]) -> Vec<acp::SessionConfigOption> {
    let text = |k: &str| config.get(k).and_then(Value::as_str).map(str::to_owned);
    let model = text("model").unwrap_or_else(|| "default".to_owned());
    let effort = text("reasoning_effort").unwrap_or_else(|| "default".to_owned());
    let mut ids = vec![model.clone()];
    ids.extend(served.iter().filter(|m| **m != model).cloned());
    let models: Vec<acp::SessionConfigSelectOption> =
        ids.into_iter().map(|m| acp::SessionConfigSelectOption::new(m.clone(), m)).collect();
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

/// The models the session's provider serves, for the model option; none
/// when the server does not say within a few seconds (the editor still
/// gets the current model, and any id can be set).
pub async fn served_models(daemon: &swivalctl::Client, id: &swival_protocol::SessionId) -> Vec<String> {
    use swival_protocol::methods::typed::ProviderModelsMethod;
    let params = swival_protocol::ProviderModelsParams { session_id: Some(id.clone()), ..Default::default() };
    let asked = daemon.request::<ProviderModelsMethod>(&params);
    match tokio::time::timeout(std::time::Duration::from_secs(3), asked).await {
        Ok(Ok(listed)) => listed.models.into_iter().map(|m| m.id).collect(),
        _ => Vec::new(),
    }
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
