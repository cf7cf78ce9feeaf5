//! What a caller sends that is held in memory only, per session: its
//! environment and the secrets of its config request (`api_key`,
//! `encrypt_secrets_key`, each MCP server's `env` and `headers`). The store keeps the request without them; a
//! session loaded again gets them back from here, and after a restart from
//! whoever continues it (`run/start` with `env`).
//!
//! Environments are shared: sessions started from one shell hold one copy.

use super::SessionId;
use crate::environment::{CallerEnv, CallerVars};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Config keys whose values are secrets, kept out of the stored request.
const SECRET_KEYS: &[&str] = &["api_key", "encrypt_secrets_key"];

/// One session's caller context.
#[derive(Debug, Clone, Default)]
pub(super) struct Caller {
    /// The environment its runs happen in.
    pub env: CallerEnv,
    /// Secret keys taken out of its config request, by JSON pointer.
    pub secrets: Vec<(String, Value)>,
}

impl Caller {
    /// Put the secrets back into a request read from the store.
    pub fn restore(&self, request: &mut Value) {
        for (pointer, value) in &self.secrets {
            let (parent, key) = pointer.rsplit_once('/').expect("pointers start with /");
            if let Some(obj) = request.pointer_mut(parent).and_then(Value::as_object_mut) {
                obj.insert(key.to_owned(), value.clone());
            }
        }
    }
}

/// Take the secret keys out of a config request (top level and in each
/// profile), returning them by JSON pointer.
pub(super) fn take_secrets(request: &mut Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut take = |obj: &mut Map<String, Value>, prefix: &str| {
        for key in SECRET_KEYS {
            if let Some(v) = obj.remove(*key) {
                out.push((format!("{prefix}/{key}"), v));
            }
        }
    };
    let Some(top) = request.as_object_mut() else { return Vec::new() };
    take(top, "");
    if let Some(profiles) = top.get_mut("profiles").and_then(Value::as_object_mut) {
        for (name, profile) in profiles.iter_mut() {
            if let Some(p) = profile.as_object_mut() {
                // JSON pointer escaping of the profile name.
                let name = name.replace('~', "~0").replace('/', "~1");
                take(p, &format!("/profiles/{name}"));
            }
        }
    }
    // An MCP server's environment and headers carry its tokens.
    if let Some(servers) = top.get_mut("mcp_servers").and_then(Value::as_object_mut) {
        for (name, server) in servers.iter_mut() {
            let name = name.replace('~', "~0").replace('/', "~1");
            for key in ["env", "headers"] {
                if let Some(v) = server.as_object_mut().and_then(|s| s.remove(key)) {
                    out.push((format!("/mcp_servers/{name}/{key}"), v));
                }
            }
        }
    }
    out
}

/// Every session's caller context.
#[derive(Default)]
pub(super) struct Callers {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_session: HashMap<SessionId, Caller>,
    /// One copy of each environment in use, by digest.
    shared: HashMap<[u8; 32], Weak<CallerVars>>,
}

impl Callers {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The environment these variables make, shared with every session
    /// that has the same.
    pub fn share(&self, vars: CallerVars) -> CallerEnv {
        let mut inner = self.inner();
        let digest = vars.digest();
        if let Some(env) = inner.shared.get(&digest).and_then(Weak::upgrade) {
            return CallerEnv::Caller(env);
        }
        if inner.shared.len() > 2 * inner.by_session.len() + 16 {
            inner.shared.retain(|_, w| w.strong_count() > 0);
        }
        let env = Arc::new(vars);
        inner.shared.insert(digest, Arc::downgrade(&env));
        CallerEnv::Caller(env)
    }

    /// A session's caller context (the daemon's environment and no
    /// secrets when none is held).
    pub fn get(&self, id: &SessionId) -> Caller {
        self.inner().by_session.get(id).cloned().unwrap_or_default()
    }

    /// Hold `caller` for session `id`.
    pub fn set(&self, id: &SessionId, caller: Caller) {
        if caller.env.is_caller() || !caller.secrets.is_empty() {
            self.inner().by_session.insert(id.clone(), caller);
        } else {
            self.inner().by_session.remove(id);
        }
    }

    /// Give session `id` a new environment; true when it differs from the
    /// one held.
    pub fn set_env(&self, id: &SessionId, env: CallerEnv) -> bool {
        let mut caller = self.get(id);
        if caller.env == env {
            return false;
        }
        caller.env = env;
        self.set(id, caller);
        true
    }

    /// Forget a closed session.
    pub fn forget(&self, id: &SessionId) {
        self.inner().by_session.remove(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_leave_the_request_and_come_back() {
        let original = json!({
            "model": "m", "api_key": "sk-1", "profiles": {"a/b": {"api_key": "sk-2", "model": "x"}},
            "mcp_servers": {"s": {"command": "x", "env": {"T": "sk-3"}, "headers": {"A": "sk-4"}}},
        });
        let mut stored = original.clone();
        let secrets = take_secrets(&mut stored);
        assert!(!stored.to_string().contains("sk-"), "{stored}");
        let caller = Caller { env: CallerEnv::Daemon, secrets };
        caller.restore(&mut stored);
        assert_eq!(stored, original);
    }

    #[test]
    fn one_copy_per_environment() {
        let callers = Callers::default();
        let vars = || CallerEnv::check([("A".to_owned(), "1".to_owned())].into()).unwrap();
        let (CallerEnv::Caller(a), CallerEnv::Caller(b)) = (callers.share(vars()), callers.share(vars())) else {
            panic!("caller environments");
        };
        assert!(Arc::ptr_eq(&a, &b));
    }
}
