//! The response cache: provider replies keyed by the request exactly as it
//! would be sent (after hooks, filters and encryption), so it stays on when
//! filters are active. SQLite in `$XDG_CACHE_HOME/swival/cache.db`, shared
//! by every session, off unless a session sets `cache = true`.
//!
//! The key is the SHA-256 of the canonical request body (system messages
//! and the `stream` flag excluded) plus the provider, the base URL and a
//! digest of the policy scripts (filter and hook commands, modes and the
//! contents of the files they run), so changing a filter script misses.
//! Identical requests in flight at the same moment share one provider call.
//! Least recently used entries go when the size cap is passed.

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A cache that cannot be opened. Kept (cloned) for every later session
/// that asks for the cache, so it holds SQLite's words, not its error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("response cache {path}: {sqlite}; check the cache directory or set cache = false")]
pub struct CacheError {
    /// The database file.
    path: PathBuf,
    /// What SQLite said.
    sqlite: String,
}

/// How a lookup was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// From the database.
    Hit,
    /// By another caller's identical request in flight.
    Shared,
    /// By a provider call made for this request.
    Miss,
}

/// Counters for `cache/stats`.
#[derive(Debug, Default)]
struct Counters {
    /// Answered from the database.
    hits: AtomicU64,
    /// Answered by a provider call.
    misses: AtomicU64,
    /// Answered by joining an identical call in flight.
    shared: AtomicU64,
    /// Callers waiting on a call in flight right now.
    waiting: AtomicU64,
}

/// How a call in flight that others wait for went.
#[derive(Debug, Clone)]
enum Led {
    /// Still in flight.
    Pending,
    /// It answered with this reply.
    Answered(Value),
    /// It failed or gave up: each waiter makes its own call.
    Failed,
}

/// A reply being fetched by one caller that others may wait for.
type InFlight = watch::Receiver<Led>;

/// The daemon-wide response cache.
pub struct ResponseCache {
    /// The database.
    db: Mutex<Connection>,
    /// Its file.
    path: PathBuf,
    /// Largest total size of stored replies, in bytes.
    max_bytes: u64,
    /// Calls in flight, by key.
    inflight: Mutex<HashMap<String, InFlight>>,
    /// Statistics.
    counters: Counters,
}

/// The response cache, opened the first time something needs it (a run
/// with `cache = true`, `cache/stats`, `cache/clear`): a daemon that only
/// starts, or serves reads, never opens the file.
pub struct LazyCache {
    /// The database file.
    path: PathBuf,
    /// Its size cap in bytes.
    max_bytes: u64,
    /// The cache, or why it could not be opened, once tried.
    opened: std::sync::OnceLock<Result<Arc<ResponseCache>, CacheError>>,
}

impl LazyCache {
    /// A cache at `path` capped at `max_bytes`, not opened yet.
    pub fn new(path: PathBuf, max_bytes: u64) -> LazyCache {
        LazyCache { path, max_bytes, opened: std::sync::OnceLock::new() }
    }

    /// The cache, opened now if it was not; the error says what to do.
    pub fn get(&self) -> Result<Arc<ResponseCache>, CacheError> {
        self.opened.get_or_init(|| ResponseCache::open(&self.path, self.max_bytes).map(Arc::new)).clone()
    }
}

/// The parts of a request that make its key.
#[derive(Debug, Clone, Copy)]
pub struct KeyParts<'a> {
    /// The request body as it would be sent.
    pub body: &'a Value,
    /// Provider name.
    pub provider: &'a str,
    /// Base URL.
    pub base_url: &'a str,
    /// Digest of the policy scripts in force.
    pub policy_digest: &'a str,
}

/// The cache key of a request.
pub fn key(parts: KeyParts<'_>) -> String {
    let mut body = parts.body.clone();
    if let Some(obj) = body.as_object_mut() {
        obj.remove("stream");
        if let Some(Value::Array(messages)) = obj.get_mut("messages") {
            messages.retain(|m| m.get("role").and_then(Value::as_str) != Some("system"));
        }
    }
    let mut h = Sha256::new();
    for part in [parts.provider, "\0", parts.base_url, "\0", parts.policy_digest, "\0"] {
        h.update(part.as_bytes());
    }
    h.update(serde_json::to_vec(&body).expect("JSON serializes"));
    hex::encode(h.finalize())
}

/// Removes a key from the in-flight table when its leader is done (or dropped).
struct LeaderGuard<'a> {
    /// The cache.
    cache: &'a ResponseCache,
    /// The key led.
    key: &'a str,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        self.cache.inflight.lock().unwrap_or_else(|p| p.into_inner()).remove(self.key);
    }
}

impl ResponseCache {
    /// Open (creating if needed) the cache at `path`.
    pub fn open(path: &Path, max_bytes: u64) -> Result<ResponseCache, CacheError> {
        let err = |e: rusqlite::Error| CacheError { path: path.to_owned(), sqlite: e.to_string() };
        if let Some(dir) = path.parent() {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
        }
        let conn = Connection::open(path).map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS replies (
                key TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                size INTEGER NOT NULL,
                last_used INTEGER NOT NULL
            );
            CREATE INDEX IF NOT EXISTS replies_lru ON replies (last_used);",
        )
        .map_err(err)?;
        Ok(ResponseCache {
            db: Mutex::new(conn),
            path: path.to_owned(),
            max_bytes,
            inflight: Mutex::default(),
            counters: Counters::default(),
        })
    }

    fn now() -> i64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
    }

    fn lookup(&self, key: &str) -> Option<Value> {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let body: Option<String> =
            db.query_row("SELECT body FROM replies WHERE key = ?1", params![key], |r| r.get(0)).optional().ok()?;
        let body = body?;
        let _ = db.execute("UPDATE replies SET last_used = ?2 WHERE key = ?1", params![key, Self::now()]);
        serde_json::from_str(&body).ok()
    }

    fn store(&self, key: &str, value: &Value) {
        let body = value.to_string();
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let stored = db.execute(
            "INSERT OR REPLACE INTO replies (key, body, size, last_used) VALUES (?1, ?2, ?3, ?4)",
            params![key, body, body.len() as i64, Self::now()],
        );
        if let Err(e) = stored {
            tracing::warn!("response cache {}: cannot store a reply: {e}", self.path.display());
            return;
        }
        // Evict least recently used entries past the cap.
        let total: i64 = db.query_row("SELECT COALESCE(SUM(size), 0) FROM replies", [], |r| r.get(0)).unwrap_or(0);
        let mut excess = total - self.max_bytes as i64;
        while excess > 0 {
            let oldest: Option<(String, i64)> = db
                .query_row("SELECT key, size FROM replies ORDER BY last_used LIMIT 1", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .unwrap_or(None);
            let Some((k, size)) = oldest else { break };
            let _ = db.execute("DELETE FROM replies WHERE key = ?1", params![k]);
            excess -= size;
        }
    }

    /// The reply for `key`: from the database, from an identical call in
    /// flight, or from `call` (whose successful result is stored).
    pub async fn get_or_call<F, Fut, E>(&self, key: &str, call: F) -> Result<(Value, Served), E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Value, E>>,
    {
        if let Some(v) = self.lookup(key) {
            self.counters.hits.fetch_add(1, Ordering::Relaxed);
            return Ok((v, Served::Hit));
        }
        // Either join the identical call in flight or lead a new one; the
        // lock is released before any await.
        let role = {
            let mut inflight = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
            match inflight.get(key) {
                Some(rx) => Err(rx.clone()),
                None => {
                    let (tx, rx) = watch::channel(Led::Pending);
                    inflight.insert(key.to_owned(), rx);
                    Ok(tx)
                }
            }
        };
        let joined = match role {
            Ok(tx) => return self.lead(key, tx, call).await,
            Err(rx) => Some(rx),
        };
        if let Some(mut rx) = joined {
            self.counters.waiting.fetch_add(1, Ordering::Relaxed);
            let outcome = rx.wait_for(|led| !matches!(led, Led::Pending)).await.map(|v| v.clone());
            self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
            if let Ok(Led::Answered(v)) = outcome {
                self.counters.shared.fetch_add(1, Ordering::Relaxed);
                return Ok((v, Served::Shared));
            }
        }
        // The leader failed or gave up: make our own call.
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let v = call().await?;
        self.store(key, &v);
        Ok((v, Served::Miss))
    }

    async fn lead<F, Fut, E>(&self, key: &str, tx: watch::Sender<Led>, call: F) -> Result<(Value, Served), E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Value, E>>,
    {
        let _guard = LeaderGuard { cache: self, key };
        self.counters.misses.fetch_add(1, Ordering::Relaxed);
        let result = call().await;
        match &result {
            Ok(v) => {
                self.store(key, v);
                tx.send_replace(Led::Answered(v.clone()));
            }
            Err(_) => {
                tx.send_replace(Led::Failed);
            }
        }
        result.map(|v| (v, Served::Miss))
    }

    /// `cache/stats`.
    pub fn stats(&self) -> swival_protocol::CacheStats {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        let (entries, bytes): (i64, i64) = db
            .query_row("SELECT COUNT(*), COALESCE(SUM(size), 0) FROM replies", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap_or((0, 0));
        swival_protocol::CacheStats {
            path: self.path.display().to_string(),
            entries: entries.max(0) as u64,
            bytes: bytes.max(0) as u64,
            max_bytes: self.max_bytes,
            hits: self.counters.hits.load(Ordering::Relaxed),
            misses: self.counters.misses.load(Ordering::Relaxed),
            shared: self.counters.shared.load(Ordering::Relaxed),
            waiting: self.counters.waiting.load(Ordering::Relaxed),
        }
    }

    /// Remove these entries (a withheld answer must not stay cached).
    pub fn forget(&self, keys: &[String]) {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        for k in keys {
            let _ = db.execute("DELETE FROM replies WHERE key = ?1", params![k]);
        }
    }

    /// `cache/clear`: the number of entries removed.
    pub fn clear(&self) -> u64 {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
        db.execute("DELETE FROM replies", []).map(|n| n as u64).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(body: &Value) -> KeyParts<'_> {
        KeyParts { body, provider: "generic", base_url: "http://x/v1", policy_digest: "d" }
    }

    #[test]
    fn key_ignores_system_messages_and_stream_but_not_the_rest() {
        let a = json!({"model": "m", "messages": [{"role": "system", "content": "date: today"}, {"role": "user", "content": "hi"}], "stream": true});
        let b = json!({"model": "m", "messages": [{"role": "system", "content": "date: tomorrow"}, {"role": "user", "content": "hi"}]});
        let c = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]});
        assert_eq!(key(parts(&a)), key(parts(&b)));
        assert_ne!(key(parts(&a)), key(parts(&c)));
        let mut other = parts(&a);
        other.policy_digest = "e";
        assert_ne!(key(parts(&a)), key(other));
    }

    #[tokio::test]
    async fn stored_replies_are_hits_and_lru_entries_are_evicted() {
        let d = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open(&d.path().join("c.db"), 120).unwrap();
        let call = |v: Value| move || async move { Ok::<_, String>(v) };
        let (_, s) = cache.get_or_call("k1", call(json!({"content": "a".repeat(50)}))).await.unwrap();
        assert_eq!(s, Served::Miss);
        let (v, s) = cache.get_or_call("k1", call(json!("unused"))).await.unwrap();
        assert_eq!((s, v["content"].as_str().unwrap().len()), (Served::Hit, 50));
        cache.get_or_call("k2", call(json!({"content": "b".repeat(50)}))).await.unwrap();
        cache.get_or_call("k3", call(json!({"content": "c".repeat(50)}))).await.unwrap();
        // k1 was used before k2 and k3 were added: it is the least recently used.
        assert_eq!(cache.get_or_call("k1", call(json!("fresh"))).await.unwrap().1, Served::Miss);
    }

    #[tokio::test]
    async fn identical_concurrent_calls_share_one() {
        let d = tempfile::tempdir().unwrap();
        let cache = Arc::new(ResponseCache::open(&d.path().join("c.db"), 1 << 20).unwrap());
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        let calls = Arc::new(AtomicU64::new(0));
        let leader = {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move {
                cache
                    .get_or_call("k", || async move {
                        calls.fetch_add(1, Ordering::Relaxed);
                        let _ = wait.await;
                        Ok::<_, String>(json!("one answer"))
                    })
                    .await
            })
        };
        while cache.inflight.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let follower = {
            let (cache, calls) = (cache.clone(), calls.clone());
            tokio::spawn(async move {
                cache
                    .get_or_call("k", || async move {
                        calls.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, String>(json!("second call"))
                    })
                    .await
            })
        };
        while cache.counters.waiting.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
        assert_eq!(leader.await.unwrap().unwrap().0, json!("one answer"));
        assert_eq!(follower.await.unwrap().unwrap(), (json!("one answer"), Served::Shared));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }
}
