//! `fetch_url` (SPEC §6, Swival's contract): GET an http(s) URL and return
//! it as readable text. Before every hop the name is resolved once, every
//! address is checked ([`super::ssrf`]), and the connection is pinned to
//! those checked addresses (reqwest's resolve override, no proxy), so a
//! second DNS answer cannot redirect it (DNS rebinding). Redirects are
//! followed by hand, at most 10, each hop checked the same way. Binary
//! content is refused, bodies are capped at 5 MB, HTML is converted to
//! text, and large results are spilled like command output.

use super::spill::{self, Untrusted};
use super::ssrf::{check_address, Blocked};
use crate::config::Cidr;
use crate::toolcall::ToolOutcome;
use reqwest::header::{HeaderValue, ACCEPT, ACCEPT_LANGUAGE, CONTENT_TYPE, LOCATION};
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;
use url::{Host, Url};

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 10;
/// Raw body bytes read at most.
pub const MAX_BODY: usize = 5 * 1024 * 1024;
/// Default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest timeout the model may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(120);
/// Window checked for NUL bytes (binary content).
const SNIFF: usize = 8192;
/// Non-`text/*` types that are text.
const TEXT_TYPES: &[&str] = &[
    "application/json",
    "application/xml",
    "application/xhtml+xml",
    "application/javascript",
    "application/ecmascript",
    "application/rss+xml",
    "application/atom+xml",
];
const USER_AGENT: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36";

/// Why a fetch failed: the model reads `error: ` and this message.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No `url`.
    #[error("url must be a non-empty string")]
    NoUrl,
    /// A `format` that is not one of the three.
    #[error("invalid format '{0}', must be 'markdown', 'text', or 'html'")]
    Format(String),
    /// A `timeout` that is not a number; the type as Swival names it.
    #[error("timeout must be a number, got {0}")]
    Timeout(&'static str),
    /// Not a URL.
    #[error("invalid url '{url}': {source}")]
    InvalidUrl { url: String, source: url::ParseError },
    /// Neither http nor https.
    #[error("url scheme '{0}' is not allowed, must be http or https")]
    Scheme(String),
    /// A URL without a host.
    #[error("could not parse hostname from url")]
    NoHost,
    /// The name did not resolve.
    #[error("could not resolve hostname '{name}': {source}")]
    Resolve { name: String, source: std::io::Error },
    /// The name resolved to nothing.
    #[error("could not resolve hostname '{0}': no addresses")]
    NoAddresses(String),
    /// An address in the forbidden ranges.
    #[error(transparent)]
    Blocked(#[from] Blocked),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The connection or request failed; the whole error chain.
    #[error("could not connect to {host}: {chain}")]
    Connect { host: String, chain: String },
    /// More than [`MAX_REDIRECTS`] hops.
    #[error("too many redirects (limit is {MAX_REDIRECTS})")]
    TooManyRedirects,
    /// A redirect that says nowhere.
    #[error("HTTP {0} redirect without a Location header")]
    NoLocation(u16),
    /// A redirect to something that is not a URL.
    #[error("bad redirect location '{location}': {source}")]
    BadLocation { location: String, source: url::ParseError },
    /// A status other than success or redirect.
    #[error("HTTP {code} — {reason}")]
    Status { code: u16, reason: &'static str },
    /// A content type that is not text.
    #[error("binary content (content-type: {0}), cannot display as text")]
    BinaryType(String),
    /// NUL bytes in the body.
    #[error("binary content detected (null bytes found), cannot display as text")]
    BinaryBody,
    /// More than [`MAX_BODY`] bytes.
    #[error("response too large (more than {MAX_BODY} bytes, limit is 5MB)")]
    TooLarge,
    /// The body could not be read; the whole error chain.
    #[error("reading the response failed: {0}")]
    Read(String),
}

/// What a session fixes once for `fetch_url`.
#[derive(Debug, Clone)]
pub struct FetchEnv {
    /// Where large results are spilled (`<base>/.swival/`).
    pub base_dir: PathBuf,
    /// Networks reachable despite the SSRF ranges (`fetch_allow_networks`).
    pub allow_networks: Vec<Cidr>,
    /// Bytes shown inline at most (`max_output_kb` × 1024).
    pub max_inline: usize,
}

/// How the page is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchFormat {
    /// HTML converted to Markdown-style text; Markdown as is.
    #[default]
    Markdown,
    /// HTML converted to plain text.
    Text,
    /// The body as received.
    Html,
}

/// A checked `fetch_url` call.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchCall {
    /// The URL as the model gave it.
    pub url: String,
    /// Output format.
    pub format: FetchFormat,
    /// Whole-request timeout.
    pub timeout: Duration,
}

/// Check the model's `fetch_url` arguments (`url`, `format`, `timeout`).
pub fn parse_call(args: &Value) -> Result<FetchCall, FetchError> {
    let url = match args.get("url") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        _ => return Err(FetchError::NoUrl),
    };
    let format = match args.get("format") {
        None | Some(Value::Null) => FetchFormat::Markdown,
        Some(Value::String(s)) if s == "markdown" => FetchFormat::Markdown,
        Some(Value::String(s)) if s == "text" => FetchFormat::Text,
        Some(Value::String(s)) if s == "html" => FetchFormat::Html,
        Some(other) => {
            let shown = other.as_str().map_or_else(|| other.to_string(), str::to_owned);
            return Err(FetchError::Format(shown));
        }
    };
    let timeout = match args.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(Value::Number(n)) => {
            let secs = n.as_f64().unwrap_or(DEFAULT_TIMEOUT.as_secs_f64());
            Duration::from_secs_f64(secs.clamp(1.0, MAX_TIMEOUT.as_secs_f64()))
        }
        Some(other) => {
            let kind = match other {
                Value::Bool(_) => "bool",
                Value::String(_) => "str",
                Value::Array(_) => "list",
                _ => "dict",
            };
            return Err(FetchError::Timeout(kind));
        }
    };
    Ok(FetchCall { url, format, timeout })
}

/// The `fetch_url` tool: check the arguments, fetch, return the result.
pub async fn fetch_url_tool(env: &FetchEnv, args: &Value) -> ToolOutcome {
    match parse_call(args) {
        Ok(call) => fetch_url(env, &call.url, call.format, call.timeout).await,
        Err(e) => ToolOutcome::failed(format!("error: {e}")),
    }
}

/// Fetch `url` and return the tool result: the page behind Swival's
/// untrusted-content header, or a failure with its `error: …` line.
pub async fn fetch_url(env: &FetchEnv, url: &str, format: FetchFormat, timeout: Duration) -> ToolOutcome {
    let text = match tokio::time::timeout(timeout, fetch(env, url, format)).await {
        Err(_) => return ToolOutcome::failed(format!("error: request timed out after {} seconds", trim_secs(timeout))),
        Ok(Err(e)) => return ToolOutcome::failed(format!("error: {e}")),
        Ok(Ok(text)) => text,
    };
    let header = spill::untrusted_header(super::FETCH_TOOL, url);
    if text.len() <= env.max_inline {
        return ToolOutcome::ok(header + &text);
    }
    let untrusted = Untrusted { source: super::FETCH_TOOL, origin: url };
    ToolOutcome::ok(header + &spill::save_large_output(&text, &env.base_dir, env.max_inline, false, Some(untrusted)))
}

/// POST `body` (JSON) to `url` through the same checks as `fetch_url`:
/// http or https, every address checked against the SSRF ranges (less
/// `allow`), pinned, no proxy, no redirect followed. The status code.
pub async fn post_json(url: &str, body: String, allow: &[Cidr], timeout: Duration) -> Result<u16, FetchError> {
    let url = parse_url(url)?;
    let pinned = check_hop(&url, allow).await?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let send = client(&pinned)?.post(url).header(CONTENT_TYPE, "application/json").body(body).send();
    match tokio::time::timeout(timeout, send).await {
        Ok(Ok(resp)) => Ok(resp.status().as_u16()),
        Ok(Err(e)) => Err(FetchError::Connect { host, chain: chain(&e) }),
        Err(_) => Err(FetchError::Connect { host, chain: format!("no answer within {} s", timeout.as_secs()) }),
    }
}

/// Whether `url` could be posted to: http or https with a host.
pub fn check_webhook(url: &str) -> Result<(), FetchError> {
    let parsed = parse_url(url)?;
    match parsed.scheme() {
        "http" | "https" if parsed.host().is_some() => Ok(()),
        "http" | "https" => Err(FetchError::NoHost),
        other => Err(FetchError::Scheme(other.to_owned())),
    }
}

/// Follow the hops by hand and convert the final body.
async fn fetch(env: &FetchEnv, original: &str, format: FetchFormat) -> Result<String, FetchError> {
    let mut url = parse_url(original)?;
    for hop in 0..=MAX_REDIRECTS {
        let pinned = check_hop(&url, &env.allow_networks).await?;
        let client = client(&pinned)?;
        let host = url.host_str().unwrap_or_default().to_owned();
        let resp = client
            .get(url.clone())
            .header(ACCEPT, "text/markdown,text/html,text/plain,application/json,*/*;q=0.8")
            .header(ACCEPT_LANGUAGE, "en-US,en;q=0.9")
            .send()
            .await
            .map_err(|e| FetchError::Connect { host, chain: chain(&e) })?;
        let status = resp.status();
        if matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
            if hop == MAX_REDIRECTS {
                return Err(FetchError::TooManyRedirects);
            }
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or(FetchError::NoLocation(status.as_u16()))?;
            url = url
                .join(location)
                .map_err(|source| FetchError::BadLocation { location: location.to_owned(), source })?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Status { code: status.as_u16(), reason: status.canonical_reason().unwrap_or("") });
        }
        return read_page(resp, format).await;
    }
    Err(FetchError::TooManyRedirects)
}

/// The final response as text: type checked, size capped, decoded,
/// converted.
async fn read_page(resp: reqwest::Response, format: FetchFormat) -> Result<String, FetchError> {
    let content_type = resp.headers().get(CONTENT_TYPE).cloned();
    let (mime, charset) = parse_content_type(content_type.as_ref());
    if !is_text(&mime) {
        return Err(FetchError::BinaryType(mime));
    }
    let body = read_capped(resp).await?;
    if body[..body.len().min(SNIFF)].contains(&0) {
        return Err(FetchError::BinaryBody);
    }
    let text = decode(&body, charset.as_deref());
    Ok(convert(&text, &mime, format))
}

fn parse_url(s: &str) -> Result<Url, FetchError> {
    match Url::parse(s) {
        Ok(u) => Ok(u),
        Err(url::ParseError::RelativeUrlWithoutBase) => Err(FetchError::Scheme(String::new())),
        Err(url::ParseError::EmptyHost) => Err(FetchError::NoHost),
        Err(source) => Err(FetchError::InvalidUrl { url: s.to_owned(), source }),
    }
}

/// Where one hop may connect: the host name and the checked addresses to
/// pin it to (none for an IP literal, which needs no lookup).
#[derive(Debug)]
struct Pinned {
    /// The name to pin, when the URL names a host.
    name: Option<String>,
    /// The checked addresses.
    addrs: Vec<SocketAddr>,
}

/// Scheme, host and every address the host resolves to.
async fn check_hop(url: &Url, allow: &[Cidr]) -> Result<Pinned, FetchError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(FetchError::Scheme(other.to_owned())),
    }
    let port = url.port_or_known_default().unwrap_or(80);
    match url.host() {
        None => Err(FetchError::NoHost),
        Some(Host::Ipv4(ip)) => {
            check_address(IpAddr::V4(ip), allow)?;
            Ok(Pinned { name: None, addrs: vec![SocketAddr::new(IpAddr::V4(ip), port)] })
        }
        Some(Host::Ipv6(ip)) => {
            check_address(IpAddr::V6(ip), allow)?;
            Ok(Pinned { name: None, addrs: vec![SocketAddr::new(IpAddr::V6(ip), port)] })
        }
        Some(Host::Domain(name)) => {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
                .await
                .map_err(|source| FetchError::Resolve { name: name.to_owned(), source })?
                .collect();
            if addrs.is_empty() {
                return Err(FetchError::NoAddresses(name.to_owned()));
            }
            for a in &addrs {
                check_address(a.ip(), allow)?;
            }
            Ok(Pinned { name: Some(name.to_owned()), addrs })
        }
    }
}

/// A client that connects only to the pinned addresses: no proxy (a proxy
/// would resolve the name itself), no automatic redirects.
fn client(pinned: &Pinned) -> Result<reqwest::Client, FetchError> {
    let mut b =
        crate::tls::client_builder().no_proxy().redirect(reqwest::redirect::Policy::none()).user_agent(USER_AGENT);
    if let Some(name) = &pinned.name {
        b = b.resolve_to_addrs(name, &pinned.addrs);
    }
    b.build().map_err(|e| FetchError::Client(chain(&e)))
}

/// MIME type (lower case, without parameters) and charset.
fn parse_content_type(v: Option<&HeaderValue>) -> (String, Option<String>) {
    let Some(s) = v.and_then(|v| v.to_str().ok()) else {
        return (String::new(), None);
    };
    let mut parts = s.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then(|| v.trim().trim_matches('"').to_ascii_lowercase())
    });
    (mime, charset)
}

fn is_text(mime: &str) -> bool {
    mime.is_empty() || mime.starts_with("text/") || TEXT_TYPES.contains(&mime)
}

/// The body, refusing more than [`MAX_BODY`] bytes.
async fn read_capped(mut resp: reqwest::Response) -> Result<Vec<u8>, FetchError> {
    if resp.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err(FetchError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| FetchError::Read(chain(&e)))? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Decode with the declared charset when it is UTF-8 or Latin-1, else
/// UTF-8 when valid, else Latin-1 (which never fails).
fn decode(body: &[u8], charset: Option<&str>) -> String {
    let latin1 = |b: &[u8]| b.iter().map(|&c| char::from(c)).collect::<String>();
    match charset {
        Some("iso-8859-1" | "latin1" | "latin-1" | "windows-1252" | "us-ascii" | "ascii") => latin1(body),
        _ => match std::str::from_utf8(body) {
            Ok(s) => s.to_owned(),
            Err(_) => latin1(body),
        },
    }
}

/// Readable text for `format`: HTML converted, Markdown and other text as is.
fn convert(text: &str, mime: &str, format: FetchFormat) -> String {
    let html = matches!(mime, "text/html" | "application/xhtml+xml")
        || (mime.is_empty() && text.trim_start().starts_with('<'));
    if !html || format == FetchFormat::Html {
        return text.to_owned();
    }
    /// Wide enough that paragraphs are not re-wrapped.
    const WIDTH: usize = 10_000;
    let converted = match format {
        FetchFormat::Text => html2text::config::with_decorator(html2text::render::TrivialDecorator::new())
            .string_from_read(text.as_bytes(), WIDTH),
        _ => html2text::config::plain().string_from_read(text.as_bytes(), WIDTH),
    };
    match converted {
        Ok(s) => collapse_blank_lines(&s),
        // The converter gave up (pathological nesting): the raw page is
        // still text, so return it rather than nothing.
        Err(_) => text.to_owned(),
    }
}

/// Trailing spaces removed, runs of blank lines cut to one.
fn collapse_blank_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned() + "\n"
}

/// An error and its causes, for people.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(cause) = src {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        src = cause.source();
    }
    s
}

fn trim_secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> (tempfile::TempDir, FetchEnv) {
        let dir = tempfile::tempdir().unwrap();
        let env = FetchEnv { base_dir: dir.path().to_owned(), allow_networks: Vec::new(), max_inline: 50 * 1024 };
        (dir, env)
    }

    async fn get(url: &str) -> String {
        let (_dir, env) = env();
        fetch_url(&env, url, FetchFormat::Markdown, Duration::from_secs(5)).await.text
    }

    #[tokio::test]
    async fn a_refused_fetch_is_a_failure() {
        let (_dir, env) = env();
        let out = fetch_url(&env, "http://127.0.0.1/", FetchFormat::Markdown, Duration::from_secs(5)).await;
        assert!(out.failed && out.text.starts_with("error: "), "{out:?}");
    }

    #[tokio::test]
    async fn internal_addresses_are_refused_before_connecting() {
        for (url, addr) in [
            ("http://127.0.0.1/", "127.0.0.1"),
            ("http://10.0.0.1/", "10.0.0.1"),
            ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
            ("http://100.100.100.200/", "100.100.100.200"),
            ("http://[::1]:8080/", "::1"),
            ("http://[fc00::1]/", "fc00::1"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
        ] {
            let out = get(url).await;
            assert_eq!(
                out,
                format!("error: url resolves to private/internal address ({addr}), blocked for security"),
                "{url}"
            );
        }
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused() {
        let out = get("http://localhost:9/").await;
        assert!(out.starts_with("error: url resolves to private/internal address ("), "{out}");
    }

    #[tokio::test]
    async fn only_http_and_https_are_allowed() {
        assert_eq!(get("file:///etc/passwd").await, "error: url scheme 'file' is not allowed, must be http or https");
        assert_eq!(get("ftp://example.com/x").await, "error: url scheme 'ftp' is not allowed, must be http or https");
        assert_eq!(get("example.com").await, "error: url scheme '' is not allowed, must be http or https");
    }

    #[test]
    fn arguments_are_checked() {
        assert_eq!(parse_call(&json!({})).unwrap_err().to_string(), "url must be a non-empty string");
        assert!(parse_call(&json!({"url": "http://x", "format": "pdf"}))
            .unwrap_err()
            .to_string()
            .starts_with("invalid format 'pdf'"));
        assert_eq!(
            parse_call(&json!({"url": "http://x", "timeout": "5"})).unwrap_err().to_string(),
            "timeout must be a number, got str"
        );
        let call = parse_call(&json!({"url": "http://x", "timeout": 500, "format": "text"})).unwrap();
        assert_eq!(call.timeout, MAX_TIMEOUT);
        assert_eq!(call.format, FetchFormat::Text);
    }

    #[test]
    fn content_types_are_sorted_into_text_and_binary() {
        let ct = |s: &str| parse_content_type(Some(&HeaderValue::from_str(s).unwrap()));
        assert_eq!(ct("Text/HTML; charset=\"UTF-8\""), ("text/html".into(), Some("utf-8".into())));
        assert!(is_text("application/json") && is_text("") && is_text("text/csv"));
        assert!(!is_text("image/png") && !is_text("application/octet-stream"));
    }

    #[test]
    fn html_becomes_readable_text() {
        let page = "<html><head><title>T</title><style>p{}</style><script>var x=1;</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href=\"/x\">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>";
        let md = convert(page, "text/html", FetchFormat::Markdown);
        assert!(md.contains("# Hello") && md.contains("[link][1]") && md.contains("* one"), "{md}");
        assert!(md.contains("[1]: /x"), "{md}");
        assert!(!md.contains("<p>") && !md.contains("var x"), "{md}");
        let text = convert(page, "text/html", FetchFormat::Text);
        assert!(text.contains("Some bold text and a link."), "{text}");
        assert_eq!(convert(page, "text/html", FetchFormat::Html), page);
        assert_eq!(convert("# md", "text/markdown", FetchFormat::Markdown), "# md");
    }

    #[test]
    fn latin1_is_decoded_when_declared_or_when_utf8_fails() {
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1")), "café");
        assert_eq!(decode(b"caf\xe9", None), "café");
        assert_eq!(decode("café".as_bytes(), None), "café");
    }
}
