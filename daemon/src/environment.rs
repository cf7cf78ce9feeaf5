//! The daemon's own environment. Secrets the daemon reads from it (provider
//! keys, `SWIVAL_ENCRYPT_KEY`) are taken out at start, while the process
//! is still single-threaded, and kept here in memory only: no child the
//! daemon starts (scripts, the sandbox helper, commands) inherits them, and
//! their values are overwritten in the initial environment block, which is
//! what `/proc/<pid>/environ` shows.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Variables taken out of the environment at start.
pub const SECRET_VARS: &[&str] = &["OPENAI_API_KEY", "OPENROUTER_API_KEY", crate::secrets::ENCRYPT_KEY_ENV];

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
