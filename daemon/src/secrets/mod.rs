//! Secret encryption (`encrypt_secrets`, Swival's `swival/secrets.py`): API
//! keys and tokens in outbound messages are replaced by format-preserving
//! ciphertexts before the provider sees them, and the ciphertexts the model
//! writes back are turned into the real values before tools run.
//!
//! A [`SecretShield`] lives as long as its session. Outbound, it finds tokens
//! with Swival's patterns ([`patterns`], [`scan`]) and replaces each by a
//! token of the same shape: the prefix is kept and the body is encrypted with
//! FF1 over AES within the body's own alphabet and length ([`cipher`]), so
//! `sk-proj-AbC…` becomes `sk-proj-XyZ…`. Prefix-less (heuristic) tokens are
//! written `[ENCRYPTED:<pattern>]<body>`, as Swival does. Encryption is
//! deterministic for a key and tweak, so a secret gets the same ciphertext on
//! every call of the session and the model can refer to it consistently.
//! Every ciphertext emitted is remembered with its plaintext; inbound,
//! [`SecretShield::decrypt_text`] replaces only those (a token the model
//! invents, or alters, passes through unchanged).
//!
//! The key is 16, 24 or 32 bytes (`encrypt_secrets_key`, else
//! [`ENCRYPT_KEY_ENV`]); without one each shield draws a random key that is
//! never stored. Key schedules and remembered plaintexts are zeroed on drop.
//! Everything here is pure and synchronous.

mod alphabet;
mod cipher;
mod patterns;
mod scan;
#[cfg(test)]
mod tests;

use crate::config::SecretPattern;
use cipher::BodyCipher;
use patterns::{Kind, TokenPattern, MIN_SEGMENT_LENGTH};
use scan::{PatternSet, Span};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use zeroize::{Zeroize, Zeroizing};

/// Environment variable that may hold the hex key (when the config has none).
pub const ENCRYPT_KEY_ENV: &str = "SWIVAL_ENCRYPT_KEY";

/// Why a shield could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The key is not hexadecimal.
    #[error("encrypt_secrets_key is not valid hex ({0}); give 32, 48 or 64 hex digits")]
    KeyNotHex(String),
    /// The key has the wrong size.
    #[error("encrypt_secrets_key must be 16, 24 or 32 bytes (32, 48 or 64 hex digits), not {0} bytes")]
    KeyLength(usize),
    /// A custom pattern cannot be used.
    #[error("invalid encrypt_secrets_patterns entry {name:?}: {problem}")]
    Pattern {
        /// The entry's `name`.
        name: String,
        /// What is wrong with it and how to fix it.
        problem: String,
    },
    /// The cipher refused its parameters.
    #[error("the secret cipher could not be set up: {0}")]
    Cipher(String),
}

/// Decode a hex key (`encrypt_secrets_key` or [`ENCRYPT_KEY_ENV`]); the bytes
/// are zeroed when dropped.
pub fn parse_key_hex(key_hex: &str) -> Result<Zeroizing<Vec<u8>>, SecretsError> {
    let key = Zeroizing::new(hex::decode(key_hex.trim()).map_err(|e| SecretsError::KeyNotHex(e.to_string()))?);
    match key.len() {
        16 | 24 | 32 => Ok(key),
        n => Err(SecretsError::KeyLength(n)),
    }
}

/// One session's secret encryption: the cipher, the patterns, and the
/// registry of every ciphertext it emitted.
pub struct SecretShield {
    /// Custom patterns first, then Swival's built-ins.
    patterns: PatternSet,
    /// FF1 tweak of each pattern: its name, or name + 0x00 + the user tweak.
    tweaks: Vec<Vec<u8>>,
    /// FF1 engines under the session key.
    cipher: BodyCipher,
    /// Ciphertext → plaintext of every token this shield replaced.
    registry: HashMap<String, String>,
    /// Registry ciphertexts, longest first (a longer one is restored before
    /// any shorter one it might contain).
    ciphertexts: Vec<String>,
    /// Per pattern: plaintext token → its replacement, so tokens seen on an
    /// earlier call are not encrypted again.
    memo: Vec<HashMap<String, String>>,
}

impl fmt::Debug for SecretShield {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretShield")
            .field("patterns", &self.patterns.len())
            .field("known_secrets", &self.registry.len())
            .finish_non_exhaustive()
    }
}

impl Drop for SecretShield {
    fn drop(&mut self) {
        for (_, mut plaintext) in self.registry.drain() {
            plaintext.zeroize();
        }
        for memo in &mut self.memo {
            for (mut plaintext, _) in memo.drain() {
                plaintext.zeroize();
            }
        }
    }
}

impl SecretShield {
    /// A shield keyed with `key` (16, 24 or 32 bytes; `None`: 32 random
    /// bytes, kept nowhere), mixing `tweak` into every encryption, with the
    /// `custom` patterns tried before the built-in ones.
    pub fn new(key: Option<&[u8]>, tweak: Option<&str>, custom: &[SecretPattern]) -> Result<Self, SecretsError> {
        let patterns = if custom.is_empty() {
            builtin_set().clone()
        } else {
            let mut list = custom.iter().map(patterns::custom).collect::<Result<Vec<_>, _>>()?;
            list.extend(patterns::builtin());
            PatternSet::new(list)
        };
        let random;
        let key = match key {
            Some(key) => key,
            None => {
                random = Zeroizing::new(rand::random::<[u8; 32]>());
                &random[..]
            }
        };
        let cipher = BodyCipher::new(key, patterns.iter().flat_map(TokenPattern::radixes))?;
        let tweaks = patterns
            .iter()
            .map(|p| {
                let mut t = p.name.as_bytes().to_vec();
                if let Some(user) = tweak.filter(|t| !t.is_empty()) {
                    t.push(0);
                    t.extend_from_slice(user.as_bytes());
                }
                t
            })
            .collect();
        let memo = patterns.iter().map(|_| HashMap::new()).collect();
        Ok(SecretShield { patterns, tweaks, cipher, registry: HashMap::new(), ciphertexts: Vec::new(), memo })
    }

    /// [`SecretShield::new`] from the config's strings: `key_hex` is
    /// `encrypt_secrets_key` (or, when unset, [`ENCRYPT_KEY_ENV`]).
    pub fn from_hex_key(
        key_hex: Option<&str>,
        tweak: Option<&str>,
        custom: &[SecretPattern],
    ) -> Result<Self, SecretsError> {
        let key = key_hex.map(parse_key_hex).transpose()?;
        SecretShield::new(key.as_deref().map(Vec::as_slice), tweak, custom)
    }

    /// How many distinct secrets this shield has replaced so far.
    #[cfg(test)]
    pub fn known_secrets(&self) -> usize {
        self.registry.len()
    }

    /// `text` with every secret replaced by its ciphertext (remembered for
    /// [`SecretShield::decrypt_text`]).
    pub fn encrypt_text(&mut self, text: &str) -> String {
        let spans = scan::scan(text, &self.patterns);
        if spans.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len() + 32);
        let mut last = 0;
        for span in spans {
            out.push_str(&text[last..span.start]);
            out.push_str(&self.replacement(text, span));
            last = span.end;
        }
        out.push_str(&text[last..]);
        out
    }

    /// A copy of `messages` as it may be sent: for `system`, `user`, `tool`
    /// and `assistant` messages the string `content` and the `text` of text
    /// parts are encrypted, and so are an assistant's
    /// `tool_calls[].function.arguments`. Nothing else is touched (ids, names,
    /// images, other keys).
    pub fn encrypt_messages(&mut self, messages: &[Value]) -> Vec<Value> {
        messages
            .iter()
            .map(|message| {
                let mut message = message.clone();
                if let Some(obj) = message.as_object_mut() {
                    let role = obj.get("role").and_then(Value::as_str).unwrap_or_default().to_owned();
                    if matches!(role.as_str(), "system" | "user" | "tool" | "assistant") {
                        map_content(obj, &mut |s| self.encrypt_text(s));
                    }
                    if role == "assistant" {
                        map_tool_arguments(obj, &mut |s| self.encrypt_text(s));
                    }
                }
                message
            })
            .collect()
    }

    /// `value` with every string value (not object keys) encrypted: reports
    /// and traces are written this way.
    #[cfg(test)]
    pub fn encrypt_json(&mut self, value: &Value) -> Value {
        let mut value = value.clone();
        self.encrypt_json_in_place(&mut value);
        value
    }

    /// [`SecretShield::encrypt_json`] on `value` itself: only strings that
    /// hold a secret are rewritten.
    pub fn encrypt_json_in_place(&mut self, value: &mut Value) {
        match value {
            Value::String(s) if !scan::scan(s, &self.patterns).is_empty() => *s = self.encrypt_text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.encrypt_json_in_place(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.encrypt_json_in_place(v)),
            _ => {}
        }
    }

    /// [`SecretShield::encrypt_json_in_place`] for a session without a
    /// shield (reports are written with known credentials encrypted all the
    /// same): a shield of its own, under a random key kept nowhere, is built
    /// only when some string holds a secret.
    pub fn encrypt_json_unkeyed(value: &mut Value) {
        if !holds_secret(value, builtin_set()) {
            return;
        }
        match SecretShield::new(None, None, &[]) {
            Ok(mut shield) => shield.encrypt_json_in_place(value),
            // Never let a secret through: the strings that hold one go.
            Err(e) => redact_json(value, builtin_set(), &e.to_string()),
        }
    }

    /// `text` with every ciphertext this shield emitted replaced by its
    /// plaintext (plain substring replacement, no parsing): used on the
    /// model's reply text and tool-call arguments before anything else sees them.
    pub fn decrypt_text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for ciphertext in &self.ciphertexts {
            if out.contains(ciphertext.as_str()) {
                out = out.replace(ciphertext.as_str(), &self.registry[ciphertext]);
            }
        }
        out
    }

    /// A copy of a reply message with [`SecretShield::decrypt_text`] applied
    /// to its `content` (string or text parts) and each
    /// `tool_calls[].function.arguments`.
    #[cfg(test)]
    pub fn decrypt_message(&self, message: &Value) -> Value {
        let mut message = message.clone();
        if let Some(obj) = message.as_object_mut() {
            map_content(obj, &mut |s| self.decrypt_text(s));
            map_tool_arguments(obj, &mut |s| self.decrypt_text(s));
        }
        message
    }

    /// What replaces the token at `span`, remembered in the registry.
    fn replacement(&mut self, text: &str, span: Span) -> String {
        let token = &text[span.start..span.end];
        if let Some(known) = self.memo[span.pattern].get(token) {
            return known.clone();
        }
        let encrypted = match self.encrypt_token(text, span) {
            Some(ciphertext) => ciphertext,
            // Unreachable with validated patterns; never let a secret through.
            None => format!("[REDACTED:{}]", self.patterns[span.pattern].name),
        };
        if encrypted != token && !encrypted.starts_with("[REDACTED:") && !self.registry.contains_key(&encrypted) {
            self.registry.insert(encrypted.clone(), token.to_owned());
            let at = self.ciphertexts.partition_point(|c| c.len() >= encrypted.len());
            self.ciphertexts.insert(at, encrypted.clone());
        }
        self.memo[span.pattern].insert(token.to_owned(), encrypted.clone());
        encrypted
    }

    /// The ciphertext of one token; `None` if the cipher refused a body.
    fn encrypt_token(&self, text: &str, span: Span) -> Option<String> {
        let pattern = &self.patterns[span.pattern];
        let tweak = &self.tweaks[span.pattern];
        let body = &text[span.body_start..span.end];
        match &pattern.kind {
            Kind::Simple { alphabet, .. } => {
                Some(format!("{}{}", pattern.prefix, self.cipher.encrypt(alphabet, tweak, body)?))
            }
            Kind::Heuristic { alphabet, .. } => {
                Some(format!("[ENCRYPTED:{}]{}", pattern.name, self.cipher.encrypt(alphabet, tweak, body)?))
            }
            Kind::Structured { structure, .. } => {
                // A span whose body lost its shape (Swival keeps it as is).
                let Some(segments) = structure.parse(body) else { return Some(text[span.start..span.end].to_owned()) };
                let mut out = pattern.prefix.clone();
                for (i, (segment, alphabet)) in segments.into_iter().enumerate() {
                    if i > 0 {
                        out.push(structure.separator());
                    }
                    let long_enough = segment.chars().count() >= MIN_SEGMENT_LENGTH
                        && cipher::domain_large_enough(alphabet.radix(), segment.chars().count());
                    if long_enough {
                        out.push_str(&self.cipher.encrypt(alphabet, tweak, segment)?);
                    } else {
                        out.push_str(segment);
                    }
                }
                Some(out)
            }
        }
    }
}

/// Swival's built-in patterns, with their prefix automaton built once.
fn builtin_set() -> &'static PatternSet {
    static BUILTIN: std::sync::LazyLock<PatternSet> = std::sync::LazyLock::new(|| PatternSet::new(patterns::builtin()));
    &BUILTIN
}

/// Whether any string value in `value` holds a token of `patterns`.
fn holds_secret(value: &Value, patterns: &PatternSet) -> bool {
    match value {
        Value::String(s) => !scan::scan(s, patterns).is_empty(),
        Value::Array(items) => items.iter().any(|v| holds_secret(v, patterns)),
        Value::Object(map) => map.values().any(|v| holds_secret(v, patterns)),
        _ => false,
    }
}

/// Replace every string value holding a token of `patterns` with a notice
/// saying `why` it could not be encrypted.
fn redact_json(value: &mut Value, patterns: &PatternSet, why: &str) {
    match value {
        Value::String(s) if !scan::scan(s, patterns).is_empty() => {
            *s = format!("[REDACTED: holds a secret that could not be encrypted: {why}]")
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json(v, patterns, why)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_json(v, patterns, why)),
        _ => {}
    }
}

/// Apply `f` to a message's string `content` or to the `text` of its
/// `{"type": "text"}` parts.
fn map_content(message: &mut Map<String, Value>, f: &mut dyn FnMut(&str) -> String) {
    match message.get_mut("content") {
        Some(Value::String(s)) => *s = f(s),
        Some(Value::Array(parts)) => {
            for part in parts.iter_mut().filter_map(Value::as_object_mut) {
                if part.get("type").and_then(Value::as_str) == Some("text") {
                    if let Some(Value::String(s)) = part.get_mut("text") {
                        *s = f(s);
                    }
                }
            }
        }
        _ => {}
    }
}

/// Apply `f` to each `tool_calls[].function.arguments` string of a message.
fn map_tool_arguments(message: &mut Map<String, Value>, f: &mut dyn FnMut(&str) -> String) {
    let Some(Value::Array(calls)) = message.get_mut("tool_calls") else { return };
    for call in calls {
        if let Some(Value::String(args)) = call.get_mut("function").and_then(|func| func.get_mut("arguments")) {
            *args = f(args);
        }
    }
}
