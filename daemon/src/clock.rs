//! Wall-clock timestamps as the protocol and reports write them.

/// The current time as RFC 3339 UTC with milliseconds.
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
