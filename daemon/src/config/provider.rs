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
            ProviderKind::Generic | ProviderKind::Command => None,
        }
    }

    /// A preset for a model server on this machine.
    pub fn is_local(self) -> bool {
        matches!(self, ProviderKind::Lmstudio | ProviderKind::Llamacpp | ProviderKind::Ollama)
    }

    /// The environment variable holding this provider's API key.
    pub fn key_env(self) -> Option<&'static str> {
        swival_protocol::provider_key_env(self.as_str())
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
        }
    }
}
