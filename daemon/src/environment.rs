//! The daemon's own environment. Secrets the daemon reads from it (provider
//! keys, `SWIVAL_ENCRYPT_KEY`) are taken out at start, while the process
//! is still single-threaded, and kept here in memory only: no child the
//! daemon starts (scripts, the sandbox helper, commands) inherits them, and
//! their values are overwritten in the initial environment block, which is
//! what `/proc/<pid>/environ` shows.
//!
//! A run happens in its caller's environment ([`CallerEnv`]): the one
//! `swivalctl` or an editor sends with `session/create` or `run/start`, the
//! daemon's only when none was sent.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Variables taken out of the environment at start.
pub const SECRET_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "HF_TOKEN",
    "CHATGPT_API_KEY",
    crate::secrets::ENCRYPT_KEY_ENV,
];

/// The secrets taken at start, by name.
static TAKEN: OnceLock<HashMap<&'static str, String>> = OnceLock::new();

/// Move [`SECRET_VARS`] from the environment into memory. Call it first in
/// `main`, before any thread exists (changing the environment is only
/// sound then).
pub fn take_secrets() {
    let mut taken = HashMap::new();
    for name in SECRET_VARS {
        if let Ok(value) = std::env::var(name) {
            taken.insert(*name, value);
        }
        scrub(name);
        // Sound only because main calls this before the runtime or any
        // other thread starts: nothing reads the environment concurrently.
        std::env::remove_var(name);
    }
    let _ = TAKEN.set(taken);
}

/// Overwrite the value of `name` where the environment block holds it, so
/// the kernel's copy of the initial environment (`/proc/<pid>/environ`)
/// no longer shows it.
fn scrub(name: &str) {
    let Ok(key) = std::ffi::CString::new(name) else { return };
    // SAFETY: single-threaded (see take_secrets); getenv returns a pointer
    // to the NUL-terminated value inside the environment block, which is
    // writable process memory; only its own bytes are overwritten.
    unsafe {
        let value = libc::getenv(key.as_ptr());
        if !value.is_null() {
            let len = libc::strlen(value);
            std::ptr::write_bytes(value, b'*', len);
        }
    }
}

/// A secret variable: from what [`take_secrets`] took, or, in a process
/// that never took them (unit tests, the fuzz target), the environment.
pub fn secret(name: &str) -> Option<String> {
    match TAKEN.get() {
        Some(taken) => taken.get(name).cloned(),
        None => std::env::var(name).ok(),
    }
    .filter(|v| !v.is_empty())
}

/// Most variables a caller's environment may hold.
pub const MAX_CALLER_VARS: usize = 4096;
/// Most bytes of names and values a caller's environment may hold.
pub const MAX_CALLER_BYTES: usize = 1 << 20;

/// A child's environment, as the daemon starts it (`procs::Launch`).
#[derive(Debug, Clone)]
pub enum Env {
    /// The daemon's environment plus these (later entries win).
    Inherit(Vec<(String, OsString)>),
    /// Exactly these and nothing of the daemon's (later entries win).
    Exact(Vec<(String, OsString)>),
}

/// The environment a run happens in: the variables of the process that
/// asked for the session or the run (`swivalctl`, an editor), or the
/// daemon's own when the caller sent none. Held in memory only: never
/// stored, logged, reported or put in an event; `Debug` shows names only.
#[derive(Clone, Default)]
pub enum CallerEnv {
    /// No caller sent one: the daemon's environment, its secrets held
    /// apart (see [`secret`]).
    #[default]
    Daemon,
    /// The caller's variables.
    Caller(Arc<CallerVars>),
}

/// A caller's variables and their digest (which identifies them).
pub struct CallerVars {
    vars: BTreeMap<String, String>,
    digest: [u8; 32],
}

impl CallerVars {
    /// The digest of these variables.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }
}

/// Why a caller's environment (`env` of `session/create` or `run/start`)
/// was refused.
#[derive(Debug, thiserror::Error)]
pub enum CallerEnvError {
    /// More than [`MAX_CALLER_VARS`] variables.
    #[error("env has {0} variables; at most {MAX_CALLER_VARS} are accepted: send fewer")]
    TooMany(usize),
    /// More than [`MAX_CALLER_BYTES`] bytes of names and values.
    #[error("env holds {0} bytes; at most {MAX_CALLER_BYTES} are accepted: send fewer")]
    TooLarge(usize),
    /// A name that is empty or holds `=` or NUL.
    #[error("env: {0:?} is not a variable name (empty, or holds '=' or NUL)")]
    BadName(String),
    /// A value holding NUL.
    #[error("env: the value of {0} holds a NUL byte")]
    NulInValue(String),
}

impl CallerEnv {
    /// Check a caller's variables: names without `=` or NUL, values
    /// without NUL, within [`MAX_CALLER_VARS`] and [`MAX_CALLER_BYTES`].
    pub fn check(vars: BTreeMap<String, String>) -> Result<CallerVars, CallerEnvError> {
        if vars.len() > MAX_CALLER_VARS {
            return Err(CallerEnvError::TooMany(vars.len()));
        }
        let bytes: usize = vars.iter().map(|(k, v)| k.len() + v.len()).sum();
        if bytes > MAX_CALLER_BYTES {
            return Err(CallerEnvError::TooLarge(bytes));
        }
        let mut hash = Sha256::new();
        for (k, v) in &vars {
            if k.is_empty() || k.contains('=') || k.contains('\0') {
                return Err(CallerEnvError::BadName(k.clone()));
            }
            if v.contains('\0') {
                return Err(CallerEnvError::NulInValue(k.clone()));
            }
            hash.update(k.as_bytes());
            hash.update([0]);
            hash.update(v.as_bytes());
            hash.update([0]);
        }
        Ok(CallerVars { vars, digest: hash.finalize().into() })
    }

    /// Whether a caller sent this environment.
    pub fn is_caller(&self) -> bool {
        matches!(self, CallerEnv::Caller(_))
    }

    /// A variable, or `None` when it is unset. Secrets the daemon took
    /// from its own environment are not here: see [`CallerEnv::secret`].
    pub fn var(&self, name: &str) -> Option<String> {
        match self {
            CallerEnv::Daemon => std::env::var(name).ok(),
            CallerEnv::Caller(c) => c.vars.get(name).cloned(),
        }
    }

    /// A secret (a provider key, `SWIVAL_ENCRYPT_KEY`): the caller's, or
    /// the one the daemon took from its environment at start. Empty is
    /// unset.
    pub fn secret(&self, name: &str) -> Option<String> {
        match self {
            CallerEnv::Daemon => secret(name),
            CallerEnv::Caller(c) => c.vars.get(name).filter(|v| !v.is_empty()).cloned(),
        }
    }

    /// `PATH` (empty when unset).
    pub fn path(&self) -> OsString {
        match self {
            CallerEnv::Daemon => std::env::var_os("PATH").unwrap_or_default(),
            CallerEnv::Caller(c) => c.vars.get("PATH").map(OsString::from).unwrap_or_default(),
        }
    }

    /// `HOME`, when set and absolute.
    pub fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from).filter(|h| h.is_absolute())
    }

    /// Every variable, for picking the part model commands get.
    pub fn vars_os(&self) -> Vec<(OsString, OsString)> {
        match self {
            CallerEnv::Daemon => std::env::vars_os().collect(),
            CallerEnv::Caller(c) => c.vars.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The variables' names, sorted (what may be shown of them).
    pub fn names(&self) -> Vec<String> {
        match self {
            CallerEnv::Daemon => {
                let mut names: Vec<String> = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()).collect();
                names.sort();
                names
            }
            CallerEnv::Caller(c) => c.vars.keys().cloned().collect(),
        }
    }

    /// The whole environment of a policy script (Swival's contract: the
    /// parent's full environment, `extra` — Swival's own `SWIVAL_*`
    /// variables — winning).
    pub fn script_env(&self, extra: &[(String, String)]) -> Env {
        let extra = extra.iter().map(|(k, v)| (k.clone(), OsString::from(v)));
        match self {
            CallerEnv::Daemon => Env::Inherit(extra.collect()),
            CallerEnv::Caller(c) => {
                Env::Exact(c.vars.iter().map(|(k, v)| (k.clone(), OsString::from(v))).chain(extra).collect())
            }
        }
    }
}

impl PartialEq for CallerEnv {
    fn eq(&self, other: &CallerEnv) -> bool {
        match (self, other) {
            (CallerEnv::Daemon, CallerEnv::Daemon) => true,
            (CallerEnv::Caller(a), CallerEnv::Caller(b)) => a.digest == b.digest,
            _ => false,
        }
    }
}

impl Eq for CallerEnv {}

impl std::hash::Hash for CallerEnv {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            CallerEnv::Daemon => state.write_u8(0),
            CallerEnv::Caller(c) => c.digest.hash(state),
        }
    }
}

impl std::fmt::Debug for CallerEnv {
    /// Names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallerEnv::Daemon => f.write_str("CallerEnv::Daemon"),
            CallerEnv::Caller(c) => {
                f.debug_tuple("CallerEnv::Caller").field(&c.vars.keys().collect::<Vec<_>>()).finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(pairs: &[(&str, &str)]) -> CallerEnv {
        let vars = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        CallerEnv::Caller(Arc::new(CallerEnv::check(vars).unwrap()))
    }

    #[test]
    fn debug_shows_names_never_values() {
        let env = caller(&[("OPENAI_API_KEY", "sk-very-secret"), ("PATH", "/bin")]);
        let shown = format!("{env:?}");
        assert!(shown.contains("OPENAI_API_KEY") && shown.contains("PATH"), "{shown}");
        assert!(!shown.contains("sk-very-secret") && !shown.contains("/bin"), "{shown}");
    }

    #[test]
    fn equal_variables_are_the_same_environment() {
        assert_eq!(caller(&[("A", "1"), ("B", "2")]), caller(&[("B", "2"), ("A", "1")]));
        assert_ne!(caller(&[("A", "1")]), caller(&[("A", "2")]));
        // A name and value pair cannot be confused with another split.
        assert_ne!(caller(&[("AB", "C")]), caller(&[("A", "BC")]));
        assert_ne!(caller(&[]), CallerEnv::Daemon);
    }

    #[test]
    fn bad_variables_are_refused_by_name() {
        let bad = |k: &str, v: &str| CallerEnv::check([(k.to_owned(), v.to_owned())].into()).err().unwrap().to_string();
        assert!(bad("A=B", "x").contains("\"A=B\""));
        assert!(bad("", "x").contains("not a variable name"));
        assert!(bad("K", "a\0b").contains("value of K"));
        let many = (0..=MAX_CALLER_VARS).map(|i| (format!("V{i}"), String::new())).collect();
        assert!(CallerEnv::check(many).err().unwrap().to_string().contains("at most 4096"));
    }

    #[test]
    fn script_env_is_the_callers_with_swival_variables_winning() {
        let env = caller(&[("FOO", "1"), ("SWIVAL_TASK", "from caller")]);
        let Env::Exact(vars) = env.script_env(&[("SWIVAL_TASK".into(), "the task".into())]) else {
            panic!("a caller's environment is exact");
        };
        let last = |k: &str| vars.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(last("FOO"), Some("1".into()));
        assert_eq!(last("SWIVAL_TASK"), Some("the task".into()));
        assert!(matches!(CallerEnv::Daemon.script_env(&[]), Env::Inherit(_)));
    }

    #[test]
    fn secrets_come_from_the_caller_and_empty_is_unset() {
        let env = caller(&[("OPENROUTER_API_KEY", "k1"), ("OPENAI_API_KEY", "")]);
        assert_eq!(env.secret("OPENROUTER_API_KEY").as_deref(), Some("k1"));
        assert_eq!(env.secret("OPENAI_API_KEY"), None);
        assert_eq!(env.path(), OsString::new());
    }
}
