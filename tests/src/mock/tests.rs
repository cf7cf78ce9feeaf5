//! The mock provider driven over a raw socket: what each step sends.

use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;

/// A response as read off the wire by the raw test client.
struct Raw {
    /// The status code.
    status: u16,
    /// Headers, names lowercased.
    headers: HashMap<String, String>,
    /// The (de-chunked) body.
    body: String,
    /// Whether the body ended as HTTP says it should.
    complete: bool,
}

/// A keep-alive HTTP/1.1 client over a plain TCP stream.
struct Client {
    /// The connection, buffered for reading.
    conn: BufReader<TcpStream>,
}

impl Client {
    fn connect(mock: &MockProvider) -> Client {
        let stream = TcpStream::connect(mock.addr()).expect("connect to mock");
        stream.set_read_timeout(Some(WAIT_LIMIT)).expect("read timeout");
        Client { conn: BufReader::new(stream) }
    }

    fn send(&mut self, method: &str, path: &str, body: &str) -> Option<Raw> {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: mock\r\nAuthorization: Bearer sk-test\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.conn.get_mut().write_all(request.as_bytes()).expect("write request");
        self.read_response()
    }

    fn chat(&mut self, body: Value) -> Raw {
        self.send("POST", "/v1/chat/completions", &body.to_string())
            .expect("mock closed the connection without a response")
    }

    /// Reads one response; `None` when the connection closed first.
    fn read_response(&mut self) -> Option<Raw> {
        let r = &mut self.conn;
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let status = line.split_whitespace().nth(1)?.parse().ok()?;
        let mut headers = HashMap::new();
        loop {
            line.clear();
            r.read_line(&mut line).ok()?;
            let Some((k, v)) = line.trim_end().split_once(':') else {
                break;
            };
            headers.insert(k.to_ascii_lowercase(), v.trim().to_owned());
        }
        let (mut body, mut complete) = (Vec::new(), true);
        if let Some(len) = headers.get("content-length") {
            body = vec![0; len.parse().ok()?];
            complete = r.read_exact(&mut body).is_ok();
        } else if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
            loop {
                line.clear();
                let size = match r.read_line(&mut line) {
                    Ok(n) if n > 0 => usize::from_str_radix(line.trim(), 16).ok()?,
                    _ => {
                        complete = false;
                        break;
                    }
                };
                let mut chunk = vec![0; size + 2];
                if r.read_exact(&mut chunk).is_err() {
                    complete = false;
                    break;
                }
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            r.read_to_end(&mut body).ok()?;
        }
        let body = String::from_utf8_lossy(&body).into_owned();
        Some(Raw { status, headers, body, complete })
    }
}

fn chat_once(mock: &MockProvider, body: Value) -> Raw {
    Client::connect(mock).chat(body)
}

fn json_body(raw: &Raw) -> Value {
    serde_json::from_str(&raw.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", raw.body))
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(body: &str) -> Vec<String> {
    body.lines().filter_map(|l| l.strip_prefix("data: ")).map(str::to_owned).collect()
}

fn stream_request() -> Value {
    json!({"model": "m", "stream": true, "stream_options": {"include_usage": true},
           "messages": [{"role": "user", "content": "hi"}]})
}

#[test]
fn scripted_text_reply_is_a_chat_completion() {
    let mock = MockProvider::start(vec![Step::text("hello there")]);
    let raw = chat_once(&mock, json!({"model": "m", "messages": []}));
    assert_eq!(raw.status, 200);
    let reply = json_body(&raw);
    assert_eq!(reply["object"], "chat.completion");
    assert_eq!(reply["choices"][0]["message"]["content"], "hello there");
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let usage = &reply["usage"];
    let sum = usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap();
    assert_eq!(usage["total_tokens"].as_u64(), Some(sum));
}

#[test]
fn tool_calls_reply_has_openai_shape() {
    let args = json!({"path": "src/main.rs"});
    let mock = MockProvider::start(vec![Step::tool_calls(vec![("call_1", "read_file", args.clone())])]);
    let reply = json_body(&chat_once(&mock, json!({"messages": []})));
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert!(choice["message"]["content"].is_null());
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["id"], "call_1");
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "read_file");
    let sent: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(sent, args);
}

#[test]
fn sse_text_stream_ends_with_done_and_deltas_concatenate() {
    let text = "The quick brown fox jumps over the lazy dog.";
    let mock = MockProvider::start(vec![Step::text(text)]);
    let raw = chat_once(&mock, stream_request());
    assert_eq!(raw.headers["content-type"], "text/event-stream");
    let data = sse_data(&raw.body);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let deltas: Vec<&str> =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).filter(|s| !s.is_empty()).collect();
    assert!(deltas.len() >= 2, "text should arrive in several deltas: {deltas:?}");
    assert_eq!(deltas.concat(), text);
    assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "stop"));
    assert!(chunks.last().unwrap()["usage"]["total_tokens"].is_u64());
}

#[test]
fn sse_tool_call_arguments_arrive_in_fragments() {
    let args = json!({"path": "a.txt", "content": "some longer text here"});
    let mock = MockProvider::start(vec![Step::tool_call("call_9", "write_file", args.clone())]);
    let raw = chat_once(&mock, stream_request());
    let data = sse_data(&raw.body);
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let calls: Vec<&Value> = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0)).collect();
    assert_eq!(calls[0]["id"], "call_9");
    assert_eq!(calls[0]["function"]["name"], "write_file");
    assert!(calls.len() >= 3, "arguments should be fragmented: {calls:?}");
    let joined: String = calls.iter().filter_map(|c| c["function"]["arguments"].as_str()).collect();
    assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), args);
    assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"] == "tool_calls"));
}

#[test]
fn status_step_sends_code_body_and_retry_after() {
    let mock = MockProvider::start(vec![
        Step::error(429, "slow down", "rate_limit_error").with_retry_after(0),
        Step::status(500, "oops"),
    ]);
    let mut client = Client::connect(&mock);
    let first = client.chat(json!({}));
    assert_eq!(first.status, 429);
    assert_eq!(first.headers["retry-after"], "0");
    assert_eq!(json_body(&first)["error"]["message"], "slow down");
    let second = client.chat(json!({}));
    assert_eq!(second.status, 500);
    assert!(!second.headers.contains_key("retry-after"));
}

#[test]
fn exhausted_script_answers_fallback_text_and_counts() {
    let mock = MockProvider::start(vec![Step::text("only one")]);
    let mut client = Client::connect(&mock);
    assert_eq!(json_body(&client.chat(json!({})))["choices"][0]["message"]["content"], "only one");
    assert_eq!(mock.exhausted_hits(), 0);
    let reply = json_body(&client.chat(json!({})));
    assert_eq!(reply["choices"][0]["message"]["content"], EXHAUSTED_REPLY);
    assert_eq!(mock.exhausted_hits(), 1);
}

#[test]
fn request_log_records_bodies_and_headers() {
    let mock = MockProvider::start(vec![Step::text("a"), Step::text("b")]);
    let mut client = Client::connect(&mock);
    client.chat(json!({"messages": [{"role": "user", "content": "first marker"}]}));
    client.chat(json!({"messages": [{"role": "user", "content": "second marker"}]}));
    assert_eq!(mock.request_count(), 2);
    assert_eq!(mock.requests()[1]["messages"][0]["content"], "second marker");
    assert_eq!(mock.request_headers()[0]["authorization"], "Bearer sk-test");
    let text = mock.requests_text();
    assert!(text.contains("first marker") && text.contains("second marker"));
    assert!(!text.contains("sk-test"));
}

#[test]
fn malformed_request_is_logged_but_keeps_its_step() {
    let mock = MockProvider::start(vec![Step::text("kept")]);
    let mut client = Client::connect(&mock);
    let bad = client.send("POST", "/v1/chat/completions", "{not json").unwrap();
    assert_eq!(bad.status, 400);
    assert_eq!(mock.requests()[0], "{not json");
    let good = json_body(&client.chat(json!({})));
    assert_eq!(good["choices"][0]["message"]["content"], "kept");
    assert_eq!(mock.exhausted_hits(), 0);
}

#[test]
fn gate_holds_reply_until_opened() {
    let gate = Gate::new();
    let mock = MockProvider::start(vec![Step::gated(Step::text("released"), &gate)]);
    let (tx, rx) = mpsc::channel();
    let addr = mock.addr();
    std::thread::scope(|s| {
        s.spawn(|| {
            let stream = TcpStream::connect(addr).unwrap();
            let mut client = Client { conn: BufReader::new(stream) };
            tx.send(client.chat(json!({}))).unwrap();
        });
        mock.wait_for_requests(1);
        assert!(rx.try_recv().is_err(), "reply escaped a closed gate");
        gate.open();
        let raw = rx.recv().expect("client thread ended without a reply");
        assert_eq!(json_body(&raw)["choices"][0]["message"]["content"], "released");
    });
}

#[test]
fn hang_blocks_neither_other_connections_nor_shutdown() {
    let mock = MockProvider::start(vec![Step::hang(), Step::text("still alive")]);
    let addr = mock.addr();
    let hung = std::thread::spawn(move || {
        let mut client = Client { conn: BufReader::new(TcpStream::connect(addr).unwrap()) };
        client.send("POST", "/v1/chat/completions", "{}").is_none()
    });
    mock.wait_for_requests(1);
    let reply = json_body(&chat_once(&mock, json!({})));
    assert_eq!(reply["choices"][0]["message"]["content"], "still alive");
    drop(mock);
    assert!(hung.join().unwrap(), "hung request should end with a closed socket");
}

#[test]
fn faults_break_the_connection_or_the_body() {
    let mock = MockProvider::start(vec![
        Step::drop_connection(),
        Step::drop_mid_stream(),
        Step::truncated_sse(),
        Step::garbage(),
    ]);
    let mut client = Client::connect(&mock);
    assert!(client.send("POST", "/v1/chat/completions", "{}").is_none());

    let cut = chat_once(&mock, stream_request());
    assert_eq!(cut.status, 200);
    assert!(!cut.complete && !cut.body.contains("[DONE]"));
    assert!(sse_data(&cut.body).len() >= 2, "some chunks come before the drop: {}", cut.body);

    let truncated = chat_once(&mock, stream_request());
    assert!(truncated.complete && !truncated.body.contains("[DONE]"));
    let last = sse_data(&truncated.body).pop().unwrap();
    assert!(serde_json::from_str::<Value>(&last).is_err(), "last chunk should be cut: {last}");

    let garbage = chat_once(&mock, json!({}));
    assert_eq!(garbage.status, 200);
    assert!(serde_json::from_str::<Value>(&garbage.body).is_err());
}

#[test]
fn models_endpoint_and_unknown_paths() {
    let mock = MockProvider::start(vec![]).with_model("tiny").with_context_length(4096);
    let mut client = Client::connect(&mock);
    let models = client.send("GET", "/v1/models", "").unwrap();
    let model = &json_body(&models)["data"][0];
    assert_eq!((model["id"].as_str(), model["context_length"].as_u64()), (Some("tiny"), Some(4096)));
    assert_eq!(client.send("GET", "/v1/nope", "").unwrap().status, 404);
    assert_eq!(mock.request_count(), 0);
}
