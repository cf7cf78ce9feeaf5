//! A session's settings after `session/create`: `session/configure`
//! changes an idle session's config request between runs, and
//! `session/create`'s `from` starts a new session from another one's.
//!
//! A session's config request (the `session/create` config, secrets held
//! in memory by `caller.rs`) is one of its config layers, over the files:
//! both change it key by key ([`overlay`]) and check the result exactly as
//! `session/create` checks a request, against the project file as the
//! session accepted it (trust is never asked again, nor given by a
//! configure). A configured session keeps the scripts it pinned at their
//! hashes; what the new config adds is pinned now. A session started from
//! another holds its pins too.
//!
//! A configure is checked here and committed by the session's actor while
//! it is idle ([`Reconfigure`]); the actor then leaves memory, so the next
//! use loads the session from the store, conversation and all, under the
//! new config.

use super::mailbox::{Command, Gone, Reconfigure, Refused};
use super::{caller, Found, Session, SessionError, Sessions, Shared};
use crate::config::EffectiveConfig;
use crate::environment::CallerEnv;
use crate::message::Message;
use crate::store::SessionRow;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use swival_protocol::{SessionConfigureParams, SessionConfigureResult, SessionFrom, SessionId};

impl Reconfigure {
    /// Whether session `id`'s config request is still the one this was
    /// made from (no other configure came first).
    pub fn is_current(&self, shared: &Shared, id: &SessionId) -> Result<bool, SessionError> {
        let row = shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        Ok(full_request(shared, &row) == self.based_on)
    }
}

/// Where a new session starts: a fresh one from its request alone, one
/// started `from` another from that one's settings.
pub(super) struct Seed {
    /// The config request, secrets in.
    pub request: Option<Value>,
    /// The caller's environment.
    pub env: CallerEnv,
    /// The project config content accepted before (the source's).
    pub accepted: Option<String>,
    /// The pins its pipeline is held to (the source's).
    pub pins: HashMap<String, String>,
    /// The conversation it starts with.
    pub messages: Vec<Message>,
}

/// A stored session's whole config request: the stored one with the
/// secrets held in memory put back.
pub(super) fn full_request(shared: &Shared, row: &SessionRow) -> Value {
    let mut request = row.request.clone();
    shared.callers.get(&row.id).restore(&mut request);
    request
}

/// `config` laid over a config request key by key: a key it sets replaces
/// the request's, a `null` takes it out (back to the files' value).
fn overlay(request: &Value, config: Option<&Value>) -> Result<Value, SessionError> {
    let mut merged = request.as_object().cloned().unwrap_or_default();
    match config {
        None | Some(Value::Null) => {}
        Some(Value::Object(keys)) => {
            for (key, value) in keys {
                match value {
                    Value::Null => merged.remove(key),
                    value => merged.insert(key.clone(), value.clone()),
                };
            }
        }
        Some(_) => {
            return Err(SessionError::Config(format!(
                "{}: expected an object of config keys",
                crate::config::REQUEST_LABEL
            )))
        }
    }
    Ok(Value::Object(merged))
}

/// Add `dirs` to the request's `key` list (`allowed_dirs`,
/// `allowed_dirs_ro`): to the list `config` sets there, else to the
/// session's list now (whichever layer set it); each directory once. They
/// are then checked as `session/create` checks that key.
fn add_dirs(request: &mut Map<String, Value>, config: Option<&Value>, key: &str, now: &[PathBuf], dirs: &[String]) {
    if dirs.is_empty() {
        return;
    }
    let mut list: Vec<Value> = match config.and_then(|c| c.get(key)).filter(|v| !v.is_null()) {
        Some(Value::Array(set)) => set.clone(),
        // A wrong type is for the check to name.
        Some(_) => return,
        None => now.iter().map(|d| Value::from(d.display().to_string())).collect(),
    };
    for dir in dirs {
        let dir = Value::from(dir.as_str());
        if !list.contains(&dir) {
            list.push(dir);
        }
    }
    request.insert(key.to_owned(), Value::Array(list));
}

/// The keys whose values differ between two effective configs.
fn changed_keys(before: &Value, after: &Value) -> Vec<String> {
    let empty = Map::new();
    let (before, after) = (before.as_object().unwrap_or(&empty), after.as_object().unwrap_or(&empty));
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter().filter(|k| before.get(*k) != after.get(*k)).cloned().collect()
}

impl Sessions {
    /// `session/configure`: check the change against the session as it is
    /// now, and have its actor commit it while idle (refused as busy
    /// during a run or a compaction). Nothing changes unless all of it is
    /// valid.
    pub async fn configure(&self, p: SessionConfigureParams) -> Result<SessionConfigureResult, SessionError> {
        loop {
            let handle = match self.find(&p.session_id)? {
                Found::Live(handle) => handle,
                Found::Closed => return Err(SessionError::Closed(p.session_id.clone())),
            };
            let (change, result) = self.reconfigure(&handle.session, &p)?;
            let change = Box::new(change);
            match handle.ask(|reply| Command::Configure { change, reply }).await {
                Ok(Ok(())) => return Ok(result),
                Ok(Err(Refused::Session(e))) => return Err(e),
                // Another copy, or another configure came first: again,
                // from the session as it is now.
                Ok(Err(Refused::Reload)) | Err(Gone) => {}
            }
        }
    }

    /// The change `p` asks of session `now`, checked as `session/create`
    /// checks a session (config, directories, scripts), and what
    /// `session/configure` answers once it is committed.
    fn reconfigure(
        &self,
        now: &Session,
        p: &SessionConfigureParams,
    ) -> Result<(Reconfigure, SessionConfigureResult), SessionError> {
        let id = &now.id;
        let row = self.shared.store.session(id)?.ok_or_else(|| SessionError::NotFound(id.clone()))?;
        let based_on = full_request(&self.shared, &row);
        let asked = p.config.as_ref().map(swival_protocol::ConfigKeys::to_value);
        let mut request = overlay(&based_on, asked.as_ref())?;
        if let Value::Object(keys) = &mut request {
            let cfg = &now.config.config;
            add_dirs(keys, asked.as_ref(), "allowed_dirs", &cfg.allowed_dirs, &p.add_dirs);
            add_dirs(keys, asked.as_ref(), "allowed_dirs_ro", &cfg.allowed_dirs_ro, &p.add_dirs_ro);
        }
        let mut effective = self.effective(&row, &request)?;
        let config_warnings = std::mem::take(&mut effective.warnings);
        let config = public_config(&effective);
        let changed = changed_keys(&public_config(&now.config), &config);
        let secrets = caller::take_secrets(&mut request);
        let next = SessionRow { request, config: config.clone(), ..row };
        // Built only to be checked: the next use builds it again.
        let pins = self.shared.store.session_pins(id)?;
        let (session, _) = self.build(&next, effective, Vec::new(), self.shared.callers.get(id).env, &pins, true)?;
        let warnings = session.warnings(config_warnings);
        let change = Reconfigure {
            based_on,
            request: next.request,
            secrets,
            config,
            pins: session.pins(),
            changed: changed.clone(),
        };
        Ok((change, SessionConfigureResult { changed, config: swival_protocol::ConfigKeys::of(next.config), warnings }))
    }

    /// The effective config of stored session `row` under config request
    /// `request` (secrets in), with its project file as the session
    /// accepted it: a project file changed since needs the user's trust
    /// again.
    pub(super) fn effective(&self, row: &SessionRow, request: &Value) -> Result<EffectiveConfig, SessionError> {
        let base = Path::new(&row.base_dir);
        let accepted = self.shared.store.session_project(&row.id)?;
        let (project, _) = self.admit_project(base, false, accepted.as_deref())?;
        let request = Some(request).filter(|r| !r.is_null());
        crate::config::load_with(base, self.shared.settings.global_config.as_deref(), project.as_ref(), request)
            .map_err(|e| SessionError::Config(e.to_string()))
    }

    /// Where `session/create` starts: `config` and the caller's `env`
    /// alone, or, `from` a session in the same `base`, that session's
    /// config request with `config` over it, its caller context (unless
    /// `env` is sent), the project content it accepted, its pins and, for
    /// a fork, a copy of its conversation. The source is not changed.
    pub(super) fn seed(
        &self,
        base: &Path,
        config: Option<Value>,
        env: Option<BTreeMap<String, String>>,
        from: Option<&SessionFrom>,
    ) -> Result<Seed, SessionError> {
        let env = self.caller_env(env)?;
        let Some(from) = from else {
            let env = env.unwrap_or_default();
            return Ok(Seed { request: config, env, accepted: None, pins: HashMap::new(), messages: Vec::new() });
        };
        let source = &from.session_id;
        let row = self.shared.store.session(source)?.ok_or_else(|| SessionError::NotFound(source.clone()))?;
        if Path::new(&row.base_dir) != base {
            return Err(SessionError::Config(format!(
                "session {source} works in {}, not in {}: a session started from it keeps its base_dir; pass {} \
                 as base_dir, or leave `from` out to start a session of its own",
                row.base_dir,
                base.display(),
                row.base_dir
            )));
        }
        let store = &self.shared.store;
        Ok(Seed {
            request: Some(overlay(&full_request(&self.shared, &row), config.as_ref())?),
            env: env.unwrap_or_else(|| self.shared.callers.get(source).env),
            accepted: store.session_project(source)?,
            pins: store.session_pins(source)?,
            messages: if from.conversation { store.messages(source)? } else { Vec::new() },
        })
    }
}

impl Sessions {
    /// `provider/models`: what the session's provider offers, asked with
    /// the session's settings and key (a picker for `model`); without a
    /// session, the provider `base_dir`'s config names, asked with the
    /// caller's keys.
    pub async fn models(
        &self,
        p: swival_protocol::ProviderModelsParams,
    ) -> Result<swival_protocol::ProviderModels, SessionError> {
        let (cfg, base, env) = match (&p.session_id, &p.base_dir) {
            (Some(id), _) => {
                let session = self.inspect(id)?;
                (session.config.config.clone(), session.base_dir.clone(), session.env.clone())
            }
            (None, Some(base_dir)) => {
                let effective = self.resolve_config(base_dir, p.config.as_ref())?;
                let env = self.caller_env(p.env)?.unwrap_or_default();
                (effective.config, std::path::PathBuf::from(base_dir), env)
            }
            (None, None) => {
                return Err(SessionError::Refused(
                    "provider/models needs session_id, or base_dir (with config and env)".into(),
                ))
            }
        };
        let settings = crate::agent::provider_settings(&cfg, &base, &env, Default::default())
            .map_err(|e| SessionError::Config(e.to_string()))?;
        let base_url = settings.base_url.clone();
        let provider = crate::provider::Provider::new(self.shared.http(), settings);
        let listed = provider.models().await.map_err(|e| {
            SessionError::Setup(format!("cannot list the models of {base_url}: {e}; name one with /model NAME"))
        })?;
        let models = listed
            .into_iter()
            .map(|m| swival_protocol::ModelInfo { id: m.id, context_window: m.context_window })
            .collect();
        Ok(swival_protocol::ProviderModels { base_url, current: cfg.model.clone(), models })
    }
}

/// The effective config as shown to clients: the API key is never echoed.
pub fn public_config(effective: &EffectiveConfig) -> Value {
    let mut v = serde_json::to_value(&effective.config).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        for key in ["api_key", "encrypt_secrets_key"] {
            if obj.get(key).is_some_and(|k| !k.is_null()) {
                obj.insert(key.into(), Value::String("(set)".into()));
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_configure_replaces_keys_and_null_takes_one_out() {
        let request = json!({"model": "a", "max_turns": 5});
        let merged = overlay(&request, Some(&json!({"model": "b", "max_turns": null, "seed": 1}))).unwrap();
        assert_eq!(merged, json!({"model": "b", "seed": 1}));
        assert_eq!(overlay(&Value::Null, None).unwrap(), json!({}));
        assert!(overlay(&request, Some(&json!([1]))).is_err());
    }

    #[test]
    fn added_dirs_extend_the_list_in_force_each_once() {
        let mut request = Map::new();
        let now = [PathBuf::from("/a")];
        add_dirs(&mut request, None, "allowed_dirs", &now, &["/b".into(), "/a".into(), "/b".into()]);
        assert_eq!(request["allowed_dirs"], json!(["/a", "/b"]));
        let config = json!({"allowed_dirs": ["/c"]});
        add_dirs(&mut request, Some(&config), "allowed_dirs", &now, &["/d".into()]);
        assert_eq!(request["allowed_dirs"], json!(["/c", "/d"]));
    }

    #[test]
    fn changed_keys_are_those_whose_values_differ() {
        let before = json!({"model": "a", "max_turns": 5, "gone": 1});
        let after = json!({"model": "b", "max_turns": 5, "new": 2});
        assert_eq!(changed_keys(&before, &after), ["gone", "model", "new"]);
    }
}
