//! What a secret looks like: Swival's built-in token patterns (the list and
//! order of `fast_cipher.tokens`, which Swival uses) and the custom
//! `[[encrypt_secrets_patterns]]` entries, compiled once per shield.
//!
//! Three kinds: *simple* (literal prefix + a body over one alphabet within a
//! length range, plus a custom `body_regex` when given), *structured* (prefix + segments
//! with separators, each segment encrypted on its own: Slack, SendGrid) and
//! *heuristic* (no prefix: an exact-length run with high entropy, marked as
//! `[ENCRYPTED:<name>]` when encrypted).

use super::alphabet::{self, Alphabet};
use super::cipher::domain_large_enough;
use super::SecretsError;
use crate::config::SecretPattern;
use regex::Regex;
use std::sync::LazyLock;

/// One pattern, ready to scan with.
#[derive(Clone)]
pub(crate) struct TokenPattern {
    /// Pattern name; part of the encryption tweak and of heuristic markers.
    pub(crate) name: String,
    /// Literal prefix kept as is (empty for heuristic patterns).
    pub(crate) prefix: String,
    /// How the rest of the token is recognised.
    pub(crate) kind: Kind,
}

/// The three kinds of pattern.
#[derive(Clone)]
pub(crate) enum Kind {
    /// Prefix + body over one alphabet.
    Simple {
        /// Characters a body is made of (boxed: the lookup table is large).
        alphabet: Box<Alphabet>,
        /// Shortest body, in characters.
        min_body: usize,
        /// Longest body, in characters (`None`: unbounded).
        max_body: Option<usize>,
        /// A custom `body_regex` the body must also fully match. Swival's
        /// built-in body regexes are all `[<alphabet>]{min,max}`, so the length
        /// rule above is exactly them.
        validator: Option<Regex>,
    },
    /// Prefix + segments joined by a separator.
    Structured {
        /// Where a token may be (unanchored, for scanning).
        full: Regex,
        /// The same regex anchored at the start (for "is there one here?").
        anchored: Regex,
        /// A match followed by one of these characters is a longer word, not a token.
        trailing: &'static Alphabet,
        /// How the body splits into segments.
        structure: Structure,
    },
    /// No prefix: a whole word of exactly the right length and enough entropy.
    Heuristic {
        /// Characters the word is made of.
        alphabet: &'static Alphabet,
        /// Shortest word, in characters.
        min_len: usize,
        /// Longest word, in characters.
        max_len: usize,
        /// Lowest Shannon entropy (bits per character).
        min_entropy: f64,
        /// Fewest character classes (upper, lower, digit, other).
        min_classes: usize,
    },
}

/// How a structured token's body splits.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Structure {
    /// `<digits>-<digits>-<alnum>[-...]`: at least 3 segments, 20+ characters.
    Slack,
    /// `<22 base64url>.<43 base64url>`.
    SendGrid,
}

/// Structured segments shorter than this are left as they are (Swival's rule).
pub(crate) const MIN_SEGMENT_LENGTH: usize = 4;

impl Structure {
    /// Character between segments.
    pub(crate) fn separator(self) -> char {
        match self {
            Structure::Slack => '-',
            Structure::SendGrid => '.',
        }
    }

    /// The segments of `body` with the alphabet each is encrypted in, or
    /// `None` when `body` does not have this structure.
    pub(crate) fn parse(self, body: &str) -> Option<Vec<(&str, &'static Alphabet)>> {
        match self {
            Structure::Slack => {
                let parts: Vec<&str> = body.split('-').collect();
                if parts.len() < 3 || parts.iter().map(|p| p.len()).sum::<usize>() < 20 {
                    return None;
                }
                parts
                    .into_iter()
                    .map(|p| {
                        if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) {
                            Some((p, &*alphabet::DIGITS))
                        } else if !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric()) {
                            Some((p, &*alphabet::ALPHANUMERIC))
                        } else {
                            None
                        }
                    })
                    .collect()
            }
            Structure::SendGrid => {
                let (first, second) = body.split_once('.')?;
                (first.chars().count() == 22 && second.chars().count() == 43)
                    .then(|| vec![(first, &*alphabet::BASE64URL), (second, &*alphabet::BASE64URL)])
            }
        }
    }
}

impl TokenPattern {
    /// Whether `body` (what follows the prefix) is a complete token body of
    /// this pattern. Heuristic patterns have no separate body rule.
    pub(crate) fn body_valid(&self, body: &str) -> bool {
        match &self.kind {
            Kind::Simple { alphabet, min_body, max_body, validator } => {
                let len = alphabet.body_len(body);
                len >= *min_body
                    && max_body.is_none_or(|max| len <= max)
                    && validator.as_ref().is_none_or(|v| v.is_match(body))
            }
            Kind::Structured { structure, .. } => structure.parse(body).is_some(),
            Kind::Heuristic { .. } => false,
        }
    }

    /// The alphabet radixes this pattern encrypts in.
    pub(crate) fn radixes(&self) -> Vec<u32> {
        match &self.kind {
            Kind::Simple { alphabet, .. } => vec![alphabet.radix()],
            Kind::Structured { .. } => {
                vec![alphabet::DIGITS.radix(), alphabet::ALPHANUMERIC.radix(), alphabet::BASE64URL.radix()]
            }
            Kind::Heuristic { alphabet, .. } => vec![alphabet.radix()],
        }
    }
}

/// A built-in simple pattern: Swival's body regex `[<alphabet>]{min,max}`.
fn simple(name: &str, prefix: &str, alphabet: &Alphabet, min_body: usize, max_body: Option<usize>) -> TokenPattern {
    TokenPattern {
        name: name.into(),
        prefix: prefix.into(),
        kind: Kind::Simple { alphabet: Box::new(alphabet.clone()), min_body, max_body, validator: None },
    }
}

/// A built-in structured pattern.
fn structured(name: &str, prefix: &str, full: &str, trailing: &'static Alphabet, structure: Structure) -> TokenPattern {
    let compile = |re: &str| Regex::new(re).unwrap_or_else(|e| panic!("built-in pattern {name}: {e}"));
    TokenPattern {
        name: name.into(),
        prefix: prefix.into(),
        kind: Kind::Structured {
            full: compile(full),
            anchored: compile(&format!(r"\A(?:{full})")),
            trailing,
            structure,
        },
    }
}

/// A built-in heuristic pattern.
fn heuristic(name: &str, alphabet: &'static Alphabet, len: usize) -> TokenPattern {
    TokenPattern {
        name: name.into(),
        prefix: String::new(),
        kind: Kind::Heuristic { alphabet, min_len: len, max_len: len, min_entropy: 4.0, min_classes: 3 },
    }
}

/// Swival's built-in patterns, in Swival's order (longest prefix first; the
/// order breaks ties between candidates at one position). Compiled once:
/// every shield (one per report written without a session key, too) starts
/// from a copy, which shares the compiled regexes.
pub(crate) fn builtin() -> Vec<TokenPattern> {
    static BUILTIN: LazyLock<Vec<TokenPattern>> = LazyLock::new(compile_builtin);
    BUILTIN.clone()
}

fn compile_builtin() -> Vec<TokenPattern> {
    use alphabet::{ALPHANUMERIC, ALPHANUMERIC_LOWER, ALPHANUMERIC_UPPER, BASE64, BASE64URL, HEX_LOWER};
    let slack = |prefix: &str, name: &str| {
        let full = format!(r"{}[0-9]+-[0-9]+-[A-Za-z0-9]+", regex::escape(prefix));
        structured(name, prefix, &full, &ALPHANUMERIC, Structure::Slack)
    };
    vec![
        simple("anthropic", "sk-ant-api03-", &BASE64URL, 80, None), // [A-Za-z0-9_-]{80,}
        simple("openai", "sk-proj-", &BASE64URL, 48, None),         // [A-Za-z0-9_-]{48,}
        simple("openai-legacy", "sk-", &ALPHANUMERIC, 48, Some(48)), // [A-Za-z0-9]{48}
        simple("stripe-secret-live", "sk_live_", &ALPHANUMERIC, 24, None), // [A-Za-z0-9]{24,}
        simple("stripe-publish-live", "pk_live_", &ALPHANUMERIC, 24, None), // [A-Za-z0-9]{24,}
        simple("stripe-secret-test", "sk_test_", &ALPHANUMERIC, 24, None), // [A-Za-z0-9]{24,}
        simple("stripe-publish-test", "pk_test_", &ALPHANUMERIC, 24, None), // [A-Za-z0-9]{24,}
        simple("vercel", "vercel_", &BASE64URL, 20, None),          // [A-Za-z0-9_-]{20,}
        simple("gitlab", "glpat-", &BASE64URL, 20, Some(20)),       // [A-Za-z0-9_-]{20}
        simple("datadog", "ddapi_", &ALPHANUMERIC_LOWER, 40, Some(40)), // [a-z0-9]{40}
        simple("pypi", "pypi-", &BASE64URL, 50, None),              // [A-Za-z0-9_-]{50,}
        slack("xoxb-", "slack-bot"),
        slack("xoxp-", "slack-user"),
        simple("github-pat", "ghp_", &ALPHANUMERIC, 36, Some(36)), // [A-Za-z0-9]{36}
        simple("github-oauth", "gho_", &ALPHANUMERIC, 36, Some(36)), // [A-Za-z0-9]{36}
        simple("github-user", "ghu_", &ALPHANUMERIC, 36, Some(36)), // [A-Za-z0-9]{36}
        simple("github-server", "ghs_", &ALPHANUMERIC, 36, Some(36)), // [A-Za-z0-9]{36}
        simple("github-refresh", "ghr_", &ALPHANUMERIC, 36, Some(36)), // [A-Za-z0-9]{36}
        simple("aws-access-key", "AKIA", &ALPHANUMERIC_UPPER, 16, Some(16)), // [A-Z0-9]{16}
        simple("google-api", "AIza", &BASE64URL, 35, Some(35)),    // [A-Za-z0-9_-]{35}
        simple("npm", "npm_", &ALPHANUMERIC, 36, Some(36)),        // [A-Za-z0-9]{36}
        simple("supabase", "sbp_", &HEX_LOWER, 40, Some(40)),      // [a-f0-9]{40}
        simple("grafana", "glc_", &BASE64URL, 30, None),           // [A-Za-z0-9_-]{30,}
        simple("huggingface", "hf_", &ALPHANUMERIC, 34, Some(34)), // [A-Za-z0-9]{34}
        structured("sendgrid", "SG.", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", &BASE64URL, Structure::SendGrid),
        simple("twilio", "SK", &HEX_LOWER, 32, Some(32)), // [a-f0-9]{32}
        heuristic("fastly", &BASE64URL, 32),
        heuristic("aws-secret-key", &BASE64, 40),
    ]
}

/// A custom `[[encrypt_secrets_patterns]]` entry with Swival's defaults:
/// alphanumeric body, `min_body_length = len(prefix) + 8`. `body_alphabet` is
/// either one of Swival's alphabet names (`ALPHANUMERIC`, `BASE64URL`, ...) or
/// the literal characters; without `body_regex` any run of the alphabet at
/// least `min_body_length` long is a body.
pub(crate) fn custom(entry: &SecretPattern) -> Result<TokenPattern, SecretsError> {
    let problem = |problem: String| SecretsError::Pattern { name: entry.name.clone(), problem };
    let prefix = entry.prefix.clone().unwrap_or_default();
    if prefix.is_empty() {
        return Err(problem("`prefix` is required and must not be empty".into()));
    }
    let alphabet = match entry.body_alphabet.as_deref() {
        None => alphabet::ALPHANUMERIC.clone(),
        Some(name_or_chars) => match Alphabet::named(name_or_chars) {
            Some(named) => named.clone(),
            None => Alphabet::new(name_or_chars).map_err(|e| problem(e.to_string()))?,
        },
    };
    let min_body = match entry.min_body_length {
        Some(n) => n as usize,
        None => prefix.chars().count() + 8,
    };
    if !domain_large_enough(alphabet.radix(), min_body) {
        let shortest = (2..).find(|&n| domain_large_enough(alphabet.radix(), n)).unwrap_or(usize::MAX);
        return Err(problem(format!(
            "min_body_length {min_body} is too short to encrypt over a {}-character alphabet; use at least {shortest}",
            alphabet.radix()
        )));
    }
    let validator = match entry.body_regex.as_deref() {
        None => None,
        Some(re) => Some(
            Regex::new(&format!(r"\A(?:{re})\z")).map_err(|e| problem(format!("body_regex does not compile: {e}")))?,
        ),
    };
    let alphabet = Box::new(alphabet);
    Ok(TokenPattern {
        name: entry.name.clone(),
        prefix,
        kind: Kind::Simple { alphabet, min_body, max_body: None, validator },
    })
}
