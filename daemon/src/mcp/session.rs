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
use crate::toolcall::ToolOutcome;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Rough tokens of schemas: four characters a token, as Swival's fallback.
fn tokens(schemas: &[&Value]) -> u64 {
    schemas.iter().map(|v| v.to_string().len() as u64).sum::<u64>() / 4
}

/// One server of the session.
#[derive(Debug)]
struct Attached {
    /// Its config, pins included.
    spec: ServerSpec,
    /// The session's hold on it.
    lease: Lease,
    /// Its tools as listed (`None` until it started once).
    tools: Option<Vec<Value>>,
    /// Its tools were dropped to fit the context window.
    dropped: bool,
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
        let servers: Vec<Attached> = specs
            .into_iter()
            .map(|spec| Attached { lease: pool.lease(&spec.key), spec, tools: None, dropped: false })
            .collect();
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
        for (i, s) in self.servers.iter().enumerate().filter(|(_, s)| !s.dropped) {
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

    /// Swival's schema budget (§5.1): with `builtin` offered too, MCP
    /// schemas past 30 % of a `window`-token context get a warning, and past
    /// 50 % the costliest server's tools are dropped until they fit; the
    /// messages say what happened.
    pub fn fit(&mut self, window: u64, builtin: &[Value]) -> Vec<String> {
        let of = |this: &SessionMcp, i: usize| tokens(&this.schemas_of(i));
        let total = |this: &SessionMcp| tokens(&builtin.iter().chain(&this.schemas).collect::<Vec<_>>());
        let mut out = Vec::new();
        if self.schemas.is_empty() || total(self) <= window * 3 / 10 {
            return out;
        }
        let costs: Vec<String> = (0..self.servers.len())
            .filter(|i| !self.servers[*i].dropped)
            .map(|i| {
                let own = self.schemas_of(i);
                format!("  {}: ~{} tokens ({} tools)", self.servers[i].spec.key.name, tokens(&own), own.len())
            })
            .collect();
        let used = total(self);
        out.push(format!(
            "MCP tool schemas use ~{used} tokens ({}% of context):\n{}",
            used * 100 / window.max(1),
            costs.join("\n")
        ));
        while total(self) > window / 2 {
            let worst = (0..self.servers.len())
                .filter(|i| !self.servers[*i].dropped)
                .map(|i| (of(self, i), i))
                .filter(|(t, _)| *t > 0)
                .max();
            let Some((cost, i)) = worst else { break };
            self.servers[i].dropped = true;
            out.extend(self.route());
            out.push(format!(
                "Dropped MCP server '{}' tools (~{cost} tokens) to stay under 50% context budget. Remaining: ~{} tokens.",
                self.servers[i].spec.key.name,
                total(self)
            ));
        }
        out
    }

    /// The schemas of server `i`'s tools.
    fn schemas_of(&self, i: usize) -> Vec<&Value> {
        let server = |s: &Value| s["function"]["name"].as_str().and_then(|n| self.routes.get(n)).map(|r| r.server);
        self.schemas.iter().filter(|s| server(s) == Some(i)).collect()
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
    pub async fn call(&self, name: &str, raw_args: &str, cancel: &CancellationToken) -> ToolOutcome {
        let (Some(route), Some(pool)) = (self.routes.get(name), &self.pool) else {
            return ToolOutcome::failed(format!("error: unknown MCP tool: {name}"));
        };
        let s = &self.servers[route.server];
        let server_name = &s.spec.key.name;
        if let Err(e) = crate::procs::pin::verify_all(&s.spec.pins) {
            return ToolOutcome::failed(format!("error: MCP server '{server_name}' was not called: {e}"));
        }
        let args = match crate::toolcall::parse_args(raw_args) {
            Ok(Value::Object(map)) => map,
            Ok(_) => unreachable!("parse_args returns objects"),
            Err(e) => return e.into(),
        };
        if pool.stopped() {
            return ToolOutcome::failed("error: the daemon is stopping".to_owned());
        }
        let settings = &pool.settings;
        let server = &s.lease.server;
        let conn = match server.for_call(&s.spec.pins, &settings.pid_dir, settings.start_timeout).await {
            Ok(conn) => conn,
            Err(why) => {
                return ToolOutcome::failed(format!(
                    "error: MCP server '{server_name}' failed: {why}; it will be started again on the next call"
                ))
            }
        };
        let failed = match server.call(conn, &route.original, args, settings.call_timeout, cancel).await {
            Ok(result) => return guard(normalize(&result), name, &self.base_dir),
            Err(CallError::Refused(why)) => format!("error: {why}"),
            Err(CallError::Failed(why)) => {
                format!("error: MCP server '{server_name}' failed: {why}; it will be started again on the next call")
            }
            Err(CallError::Timeout(t)) => {
                format!("error: MCP tool {name} timed out after {}s", t.as_secs_f64())
            }
            Err(CallError::Cancelled) => "error: cancelled".to_owned(),
        };
        ToolOutcome::failed(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::spec::{Endpoint, ServerKey};
    use crate::mcp::McpSettings;
    use serde_json::json;
    use std::time::Duration;

    /// A session with servers that listed `n` tools each, described by `desc_len` characters.
    fn session(pool_dir: &std::path::Path, servers: &[(&str, usize, usize)]) -> SessionMcp {
        let pool = McpPool::new(McpSettings {
            idle: Duration::from_secs(60),
            call_timeout: Duration::from_secs(60),
            start_timeout: Duration::from_secs(60),
            pid_dir: pool_dir.to_owned(),
        });
        let specs = servers
            .iter()
            .map(|(name, ..)| ServerSpec {
                key: ServerKey {
                    name: (*name).to_owned(),
                    endpoint: Endpoint::Broken("test".into()),
                    base_dir: pool_dir.to_owned(),
                    caller: Default::default(),
                },
                pins: Vec::new(),
                data: Vec::new(),
            })
            .collect();
        let mut mcp = SessionMcp::new(&pool, specs, pool_dir.to_owned());
        for (s, (_, n, desc_len)) in mcp.servers.iter_mut().zip(servers) {
            s.tools =
                Some((0..*n).map(|i| json!({"name": format!("t{i}"), "description": "d".repeat(*desc_len)})).collect());
        }
        mcp.route();
        mcp
    }

    #[test]
    fn schemas_past_half_the_context_drop_the_costliest_server() {
        let dir = tempfile::tempdir().unwrap();
        let mut mcp = session(dir.path(), &[("big", 10, 400), ("small", 1, 10)]);
        assert!(mcp.fit(100_000, &[]).is_empty(), "well under 30 %: nothing said");
        let said = mcp.fit(2_000, &[]);
        assert!(said[0].starts_with("MCP tool schemas use ~"), "{said:?}");
        assert!(said[0].contains("big: ~") && said[0].contains("(10 tools)"), "{said:?}");
        assert!(said[1].starts_with("Dropped MCP server 'big' tools"), "{said:?}");
        assert!(mcp.owns("mcp__small__t0") && !mcp.owns("mcp__big__t0"));
        assert_eq!(mcp.schemas().len(), 1);
        assert_eq!(mcp.tool_info()[0].1.len(), 0, "the prompt no longer lists them");
    }

    #[test]
    fn colliding_tool_names_skip_the_later_server() {
        let dir = tempfile::tempdir().unwrap();
        let mut mcp = session(dir.path(), &[("a", 1, 1)]);
        mcp.servers[0].tools = Some(vec![json!({"name": "x y"}), json!({"name": "x_y"})]);
        let said = mcp.route();
        assert!(said[0].contains("tool name collision after sanitization (mcp__a__x_y)"), "{said:?}");
        assert!(mcp.schemas().is_empty());
    }
}
