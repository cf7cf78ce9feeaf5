//! From a session's `mcp_servers` to what the pool runs: each server's
//! endpoint with its program located on the caller's PATH and its files
//! pinned (MCP server configs are policy, like hooks), and the pure rules
//! for what the model sees: `mcp__<server>__<tool>` names and schemas
//! providers accept (Swival's `_sanitize_tool_name` and `_convert_schema`).

use crate::config::{McpServerConfig, SessionConfig};
use crate::procs::pin;
use crate::procs::{locate, CallerEnv, Pinned};
use crate::sandbox::status::HelperPlan;
use crate::sandbox::CommandEnv;
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use swival_protocol::McpTransport;

/// How the daemon reaches one server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A program speaking MCP on stdin/stdout.
    Stdio {
        /// The located program, then its arguments.
        argv: Vec<String>,
        /// Variables set over the caller's environment (over the confined
        /// environment under `sandbox_mcp`).
        env: Vec<(String, String)>,
        /// Working directory.
        cwd: PathBuf,
        /// Run under the command sandbox (`sandbox_mcp`).
        confined: Option<Box<Confined>>,
    },
    /// A server speaking streamable HTTP.
    Http {
        /// Its endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
    /// A server that cannot be started, and why (reported when it is used).
    Broken(String),
}

/// How a stdio server runs under the command sandbox: through the helper
/// with the session's plan, in the commands' allow-listed environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Confined {
    /// The helper (swivald itself).
    pub helper: PathBuf,
    /// The session's plan (a private TMPDIR is added when the server starts).
    pub plan: HelperPlan,
    /// The environment the session's commands get.
    pub env: Vec<(String, OsString)>,
}

/// Put the stdio servers of `specs` under the command sandbox of
/// `commands`; where the OS sandbox cannot confine programs, such a server
/// does not start (never unconfined when confinement was asked for).
pub fn confine(specs: &mut [ServerSpec], commands: &CommandEnv) {
    for spec in specs {
        let Endpoint::Stdio { confined, .. } = &mut spec.key.endpoint else { continue };
        match &commands.plan {
            Some(plan) => {
                // The server reads and writes its own data, which the
                // model's commands can neither read nor write.
                let mut plan = plan.clone();
                let own = |p: &PathBuf| spec.data.iter().any(|d| d == p || canonical(d) == *p);
                plan.readonly_paths.retain(|p| !own(p));
                plan.hide_paths.retain(|p| !own(p));
                *confined =
                    Some(Box::new(Confined { helper: commands.helper.clone(), plan, env: commands.env.clone() }));
            }
            None => {
                let why = "sandbox_mcp is set but the command sandbox cannot confine programs here (sandbox = \"builtin\", or the kernel enforces nothing; see policy/status)";
                spec.key.endpoint = Endpoint::Broken(why.to_owned());
            }
        }
    }
}

/// `path` with symlinks resolved where it exists.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// What identifies one server process in the pool: its config, the base
/// dir and the environment it runs in. Sessions with equal keys share it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ServerKey {
    /// The server's name.
    pub name: String,
    /// How it is reached.
    pub endpoint: Endpoint,
    /// The session's base dir.
    pub base_dir: PathBuf,
    /// The caller's environment (stdio servers run in it).
    pub caller: CallerEnv,
}

impl std::fmt::Debug for ServerKey {
    /// No environment values, no header values: they may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerKey").field("name", &self.name).field("base_dir", &self.base_dir).finish()
    }
}

impl ServerKey {
    /// The command line or URL, for status and messages.
    pub fn display(&self) -> String {
        match &self.endpoint {
            Endpoint::Stdio { argv, confined: Some(_), .. } => format!("{} (sandboxed)", argv.join(" ")),
            Endpoint::Stdio { argv, .. } => argv.join(" "),
            Endpoint::Http { url, .. } => url.clone(),
            Endpoint::Broken(why) => format!("(cannot start: {why})"),
        }
    }

    /// How the daemon talks to it.
    pub fn transport(&self) -> McpTransport {
        match &self.endpoint {
            Endpoint::Http { .. } => McpTransport::StreamableHttp,
            _ => McpTransport::Stdio,
        }
    }
}

/// One configured server of a session.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Pool key.
    pub key: ServerKey,
    /// The files it runs, pinned when the session was built.
    pub pins: Vec<Pinned>,
    /// The other files its arguments and environment name (a database, a
    /// memory file, a log): its own data, which it writes itself — never
    /// pinned, kept from the model.
    pub data: Vec<PathBuf>,
}

/// The servers a session's config names (none under `no_mcp`), in name order.
pub fn specs(cfg: &SessionConfig, base_dir: &Path, env: &CallerEnv) -> Vec<ServerSpec> {
    if cfg.no_mcp {
        return Vec::new();
    }
    cfg.mcp_servers.iter().map(|(name, server)| spec(name, server, base_dir, env)).collect()
}

fn spec(name: &str, server: &McpServerConfig, base_dir: &Path, env: &CallerEnv) -> ServerSpec {
    let key =
        |endpoint| ServerKey { name: name.to_owned(), endpoint, base_dir: base_dir.to_owned(), caller: env.clone() };
    let declared = server.kind.as_deref().or(server.transport.as_deref()).map(|t| t.trim().to_lowercase());
    if let Some(url) = &server.url {
        if declared.as_deref() == Some("sse") {
            let why = "the HTTP+SSE transport of MCP 2024-11-05 is not supported; use the server's streamable HTTP endpoint (type = \"http\")";
            return ServerSpec { key: key(Endpoint::Broken(why.to_owned())), pins: Vec::new(), data: Vec::new() };
        }
        let headers = server.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        return ServerSpec {
            key: key(Endpoint::Http { url: url.clone(), headers }),
            pins: Vec::new(),
            data: Vec::new(),
        };
    }
    let command = server.command.clone().unwrap_or_default();
    let cwd = server.cwd.clone().unwrap_or_else(|| base_dir.to_owned());
    let path = env.path();
    // A relative path names a file from the server's working directory.
    let located = if command.contains('/') && !Path::new(&command).is_absolute() {
        locate(&cwd.join(&command).to_string_lossy(), &path)
    } else {
        locate(&command, &path)
    };
    let Some(program) = located else {
        let why = format!("executable not found or not executable: {command}");
        return ServerSpec { key: key(Endpoint::Broken(why)), pins: Vec::new(), data: Vec::new() };
    };
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(server.args.iter().cloned());
    let files = pin::classify(&argv, &cwd, &path);
    let pins = files.code.iter().filter_map(|p| Pinned::new(p)).collect();
    // A path in a variable (`MEMORY_FILE_PATH`) is data the same way.
    let mut data = files.data;
    for value in server.env.values() {
        if let Some(p) = pin::data_of(&[String::new(), value.clone()], &cwd).pop() {
            data.push(p);
        }
    }
    let env_vars = server.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    ServerSpec { key: key(Endpoint::Stdio { argv, env: env_vars, cwd, confined: None }), pins, data }
}

/// Swival's `_sanitize_tool_name`: characters outside `[a-zA-Z0-9_-]`
/// become `_`, runs of `_` collapse, `_` and `-` are trimmed at both ends.
pub fn sanitize_tool_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_matches(|c| c == '_' || c == '-').to_owned()
}

/// How the names of MCP tools begin.
const PREFIX: &str = "mcp__";

/// The name the model sees for `tool` of `server`.
pub fn namespaced(server: &str, tool: &str) -> String {
    format!("{PREFIX}{server}__{}", sanitize_tool_name(tool))
}

/// Whether `name` is an MCP tool's, as [`namespaced`] makes them.
pub fn is_namespaced(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// An MCP tool (its JSON as listed) as an OpenAI function schema, with
/// Swival's repairs: a `type` and `properties` when missing, no `$schema`
/// or `$id` (providers reject them). `None` for a tool without a name.
pub fn function_schema(server: &str, tool: &Value) -> Option<(String, String, Value)> {
    let original = tool.get("name")?.as_str()?.to_owned();
    let mut params = tool.get("inputSchema").cloned().filter(Value::is_object).unwrap_or_else(|| json!({}));
    let obj = params.as_object_mut().expect("object");
    obj.entry("type").or_insert_with(|| json!("object"));
    obj.entry("properties").or_insert_with(|| json!({}));
    obj.remove("$schema");
    obj.remove("$id");
    let name = namespaced(server, &original);
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| format!("MCP tool from {server}"));
    let schema =
        json!({"type": "function", "function": {"name": name, "description": description, "parameters": params}});
    Some((name, original, schema))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_sanitized_as_swival_does() {
        assert_eq!(sanitize_tool_name("get.weather now"), "get_weather_now");
        assert_eq!(sanitize_tool_name("__a__b__"), "a_b");
        assert_eq!(sanitize_tool_name("-x-"), "x");
        assert_eq!(namespaced("fs", "read file"), "mcp__fs__read_file");
    }

    #[test]
    fn schemas_get_a_type_and_lose_keys_providers_reject() {
        let tool = json!({"name": "echo", "inputSchema": {"$schema": "s", "$id": "i", "required": ["m"]}});
        let (name, original, schema) = function_schema("ev", &tool).unwrap();
        assert_eq!((name.as_str(), original.as_str()), ("mcp__ev__echo", "echo"));
        let params = &schema["function"]["parameters"];
        assert_eq!(params, &json!({"type": "object", "properties": {}, "required": ["m"]}));
        assert_eq!(schema["function"]["description"], "MCP tool from ev");
        assert!(function_schema("ev", &json!({"description": "no name"})).is_none());
    }

    #[test]
    fn a_missing_program_or_the_old_sse_transport_is_a_broken_server() {
        let env = CallerEnv::default();
        let mut cfg = SessionConfig::default();
        cfg.mcp_servers
            .insert("a".into(), McpServerConfig { command: Some("no-such-program-xyz".into()), ..Default::default() });
        cfg.mcp_servers.insert(
            "b".into(),
            McpServerConfig { url: Some("http://x".into()), kind: Some("sse".into()), ..Default::default() },
        );
        let specs = specs(&cfg, Path::new("/tmp"), &env);
        assert!(matches!(&specs[0].key.endpoint, Endpoint::Broken(w) if w.contains("not found")));
        assert!(matches!(&specs[1].key.endpoint, Endpoint::Broken(w) if w.contains("HTTP+SSE")));
        cfg.no_mcp = true;
        assert!(super::specs(&cfg, Path::new("/tmp"), &env).is_empty());
    }
}
