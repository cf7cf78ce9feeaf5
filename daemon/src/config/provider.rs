//! Which provider a session talks to, as the config names it, with each
//! kind's defaults (base URL, key variable). It lives with the config that
//! names it so that config depends on no provider code.

use serde::{Deserialize, Serialize};

/// Which kind of provider, with its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// LM Studio on this machine (the default).
    Lmstudio,
    /// llama.cpp's server.
    Llamacpp,
    /// Ollama's OpenAI-compatible endpoint.
    Ollama,
    /// api.openai.com.
    Openai,
    /// openrouter.ai.
    Openrouter,
    /// Any OpenAI-compatible server at `base_url`.
    Generic,
    /// An external program (Swival's `command` provider).
    Command,
    /// Gemini through Google's OpenAI-compatible endpoint.
    Google,
    /// Hugging Face's router (`org/model` names).
    Huggingface,
    /// Apple's on-device model server on this machine (port 1976).
    Applefm,
}

impl ProviderKind {
    /// The preset base URL, when the provider has one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::Lmstudio => Some("http://127.0.0.1:1234/v1"),
            ProviderKind::Llamacpp => Some("http://127.0.0.1:8080/v1"),
            ProviderKind::Ollama => Some("http://127.0.0.1:11434/v1"),
            ProviderKind::Openai => Some("https://api.openai.com/v1"),
            ProviderKind::Openrouter => Some("https://openrouter.ai/api/v1"),
            ProviderKind::Google => Some("https://generativelanguage.googleapis.com/v1beta/openai"),
            ProviderKind::Huggingface => Some("https://router.huggingface.co/v1"),
            ProviderKind::Applefm => Some("http://127.0.0.1:1976/v1"),
            ProviderKind::Generic | ProviderKind::Command => None,
        }
    }

    /// A preset for a model server on this machine.
    pub fn is_local(self) -> bool {
        matches!(self, ProviderKind::Lmstudio | ProviderKind::Llamacpp | ProviderKind::Ollama | ProviderKind::Applefm)
    }

    /// The environment variables that may hold this provider's API key, in
    /// the order they are tried (Swival's; Google's own name too).
    pub fn key_envs(self) -> &'static [&'static str] {
        match self {
            ProviderKind::Google => &["GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"],
            ProviderKind::Openai | ProviderKind::Generic => &["OPENAI_API_KEY"],
            ProviderKind::Openrouter => &["OPENROUTER_API_KEY"],
            ProviderKind::Huggingface => &["HF_TOKEN"],
            _ => &[],
        }
    }

    /// The model used when none is configured and the server lists none
    /// (Swival's default for Apple's server).
    pub fn default_model(self) -> Option<&'static str> {
        (self == ProviderKind::Applefm).then_some("pcc")
    }

    /// The context window when neither config nor server says (Swival's
    /// for Apple's models: 4096 for `system`, 32768 otherwise).
    pub fn default_context_window(self, model: &str) -> Option<u64> {
        (self == ProviderKind::Applefm).then_some(if model == "system" { 4096 } else { 32768 })
    }

    /// Whether `model` must be configured: the server's list is a catalogue
    /// to choose from, not the model it runs.
    pub fn needs_model(self) -> bool {
        matches!(self, ProviderKind::Google | ProviderKind::Huggingface | ProviderKind::Command)
    }

    /// The provider as filters and hooks are told it: Swival routes
    /// `google` as `generic` and says so.
    pub fn wire_name(self) -> &'static str {
        match self {
            ProviderKind::Google => "generic",
            other => other.as_str(),
        }
    }

    /// Name as written in config.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Lmstudio => "lmstudio",
            ProviderKind::Llamacpp => "llamacpp",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Openai => "openai",
            ProviderKind::Openrouter => "openrouter",
            ProviderKind::Generic => "generic",
            ProviderKind::Command => "command",
            ProviderKind::Google => "google",
            ProviderKind::Huggingface => "huggingface",
            ProviderKind::Applefm => "applefm",
        }
    }
}

/// A model's price, US dollars per million tokens (`model_prices`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Prompt tokens the server processed.
    pub input: f64,
    /// Prompt tokens it served from its cache (`input` when not given).
    pub cached_input: Option<f64>,
    /// Completion tokens.
    pub output: f64,
}

impl Price {
    /// `model`'s entry of a `model_prices` table: `Ok(None)` when it has
    /// none, the error naming what is wrong with it otherwise.
    pub fn of(table: &serde_json::Map<String, serde_json::Value>, model: &str) -> Result<Option<Price>, String> {
        let Some(entry) = table.get(model) else { return Ok(None) };
        let field = |k: &str| match entry.get(k) {
            None => Ok(None),
            Some(v) => match v.as_f64().filter(|n| n.is_finite() && *n >= 0.0) {
                Some(n) => Ok(Some(n)),
                None => {
                    Err(format!("model_prices.{model:?}.{k} must be a number of dollars per million tokens, 0 or more"))
                }
            },
        };
        let (Some(input), Some(output)) = (field("input")?, field("output")?) else {
            return Err(format!("model_prices.{model:?} needs input and output, in dollars per million tokens"));
        };
        Ok(Some(Price { input, cached_input: field("cached_input")?, output }))
    }

    /// What `prompt` tokens (`cached` of them from the server's cache) and
    /// `completion` tokens cost, in dollars.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> f64 {
        let fresh = prompt.saturating_sub(cached) as f64;
        let cached_price = self.cached_input.unwrap_or(self.input);
        (fresh * self.input + cached as f64 * cached_price + completion as f64 * self.output) / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_price_is_read_checked_and_applied() {
        let table = json!({"m": {"input": 2.0, "output": 8.0, "cached_input": 0.5}, "bad": {"input": -1, "output": 1}, "half": {"input": 1}});
        let table = table.as_object().unwrap();
        let p = Price::of(table, "m").unwrap().unwrap();
        assert!((p.cost(1_000_000, 400_000, 500_000) - (1.2 + 0.2 + 4.0)).abs() < 1e-9);
        assert_eq!(Price::of(table, "other").unwrap(), None);
        assert!(Price::of(table, "bad").unwrap_err().contains("input must be a number"));
        assert!(Price::of(table, "half").unwrap_err().contains("needs input and output"));
    }
}
