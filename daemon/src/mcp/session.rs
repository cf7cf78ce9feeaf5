//! A session's MCP tools: a lease on each server it names, the tools they
//! listed as `mcp__<server>__<tool>` schemas, and calls routed to them.
//! A call goes through the agent's one tool path like any other (hooks
//! may drop it before it gets here; its arguments were decrypted with the
//! rest of the reply); here the server's pinned files are checked, the
//! server started if it is not running, and the result shaped as Swival
//! does, with the `error:` convention.

use super::result::{guard, normalize};
use super::server::CallError;
use super::{Lease, McpPool, ServerSpec};
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// One server of the session.
#[derive(Debug)]
struct Attached {
    /// Its config, pins included.
    spec: ServerSpec,
    /// The session's hold on it.
    lease: Lease,
    /// Its tools as listed (`None` until it started once).
    tools: Option<Vec<Value>>,
}

/// Where a namespaced tool goes.
#[derive(Debug, Clone)]
struct Route {
    /// Index into `servers`.
    server: usize,
    /// The tool's name on the server.
    original: String,
}

/// A session's MCP servers and their tools.
#[derive(Debug, Default)]
pub struct SessionMcp {
    /// The daemon's pool (`None` when the session has no server).
    pool: Option<Arc<McpPool>>,
    /// The servers, in name order.
    servers: Vec<Attached>,
    /// The schemas the model sees.
    schemas: Vec<Value>,
    /// Namespaced name → server and tool.
    routes: HashMap<String, Route>,
    /// Where spill files go.
    base_dir: PathBuf,
}

impl SessionMcp {
    /// The session's view of `specs`, leasing each server from `pool`.
    pub fn new(pool: &Arc<McpPool>, specs: Vec<ServerSpec>, base_dir: PathBuf) -> SessionMcp {
        let servers: Vec<Attached> =
            specs.into_iter().map(|spec| Attached { lease: pool.lease(&spec.key), spec, tools: None }).collect();
        let pool = (!servers.is_empty()).then(|| pool.clone());
        SessionMcp { pool, servers, schemas: Vec::new(), routes: HashMap::new(), base_dir }
    }

    /// Start the servers that have not listed their tools yet; returns a
    /// warning for each one that could not start (its tools are missing
    /// until a later run starts it).
    pub async fn prepare(&mut self) -> Vec<String> {
        let Some(pool) = self.pool.clone().filter(|p| !p.stopped()) else { return Vec::new() };
        let mut warnings = Vec::new();
        let mut changed = false;
        for s in self.servers.iter_mut().filter(|s| s.tools.is_none()) {
            let settings = &pool.settings;
            let server = &s.lease.server;
            match server.connect(&s.spec.pins, &settings.pid_dir, settings.start_timeout).await {
                Ok(conn) => {
                    s.tools = Some(conn.tools.clone());
                    changed = true;
                }
                Err(why) => warnings.push(format!("MCP server '{}' could not start: {why}", s.spec.key.name)),
            }
        }
        if changed {
            warnings.extend(self.route());
        }
        warnings
    }

    /// Build schemas and routes; a server whose tools collide with
    /// another's after sanitizing loses all its tools (Swival's rule).
    fn route(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        let (mut schemas, mut routes) = (Vec::new(), HashMap::new());
        for (i, s) in self.servers.iter().enumerate() {
            let name = &s.spec.key.name;
            let listed: Vec<_> =
                s.tools.iter().flatten().filter_map(|t| super::spec::function_schema(name, t)).collect();
            let clash: Vec<&String> = listed
                .iter()
                .enumerate()
                .filter(|(j, (n, ..))| routes.contains_key(n) || listed[..*j].iter().any(|(m, ..)| m == n))
                .map(|(_, (n, ..))| n)
                .collect();
            if !clash.is_empty() {
                let list = clash.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ");
                warnings.push(format!(
                    "MCP server '{name}': tool name collision after sanitization ({list}), skipping all its tools"
                ));
                continue;
            }
            for (namespaced, original, schema) in listed {
                routes.insert(namespaced, Route { server: i, original });
                schemas.push(schema);
            }
        }
        self.schemas = schemas;
        self.routes = routes;
        warnings
    }

    /// The schemas offered to the model.
    pub fn schemas(&self) -> &[Value] {
        &self.schemas
    }

    /// Each server's tools as the model calls them, with their
    /// descriptions (for the system prompt).
    pub fn tool_info(&self) -> Vec<(String, Vec<(String, String)>)> {
        let mut info: Vec<(String, Vec<(String, String)>)> =
            self.servers.iter().map(|s| (s.spec.key.name.clone(), Vec::new())).collect();
        for schema in &self.schemas {
            let f = &schema["function"];
            let name = f["name"].as_str().unwrap_or_default();
            if let Some(route) = self.routes.get(name) {
                info[route.server].1.push((name.to_owned(), f["description"].as_str().unwrap_or_default().to_owned()));
            }
        }
        info
    }

    /// Whether `name` is one of this session's MCP tools.
    pub fn owns(&self, name: &str) -> bool {
        self.routes.contains_key(name)
    }

    /// Run one call; the result is what the model sees.
    pub async fn call(&self, name: &str, raw_args: &str, cancel: &CancellationToken) -> String {
        let (Some(route), Some(pool)) = (self.routes.get(name), &self.pool) else {
            return format!("error: unknown MCP tool: {name}");
        };
        let s = &self.servers[route.server];
        let server_name = &s.spec.key.name;
        if let Err(e) = crate::procs::pin::verify_all(&s.spec.pins) {
            return format!("error: MCP server '{server_name}' was not called: {e}");
        }
        let args = match crate::tools::parse_args(raw_args) {
            Ok(Value::Object(map)) => map,
            Ok(_) => unreachable!("parse_args returns objects"),
            Err(e) => return e,
        };
        if pool.stopped() {
            return "error: the daemon is stopping".to_owned();
        }
        let settings = &pool.settings;
        let server = &s.lease.server;
        let conn = match server.for_call(&s.spec.pins, &settings.pid_dir, settings.start_timeout).await {
            Ok(conn) => conn,
            Err(why) => {
                return format!(
                    "error: MCP server '{server_name}' failed: {why}; it will be started again on the next call"
                )
            }
        };
        match server.call(conn, &route.original, args, settings.call_timeout, cancel).await {
            Ok(result) => guard(normalize(&result), name, &self.base_dir),
            Err(CallError::Refused(why)) => format!("error: {why}"),
            Err(CallError::Failed(why)) => {
                format!("error: MCP server '{server_name}' failed: {why}; it will be started again on the next call")
            }
            Err(CallError::Timeout(t)) => {
                format!("error: MCP tool {name} timed out after {}s", t.as_secs_f64())
            }
            Err(CallError::Cancelled) => "error: cancelled".to_owned(),
        }
    }
}
