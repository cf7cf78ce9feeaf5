//! Which failures are worth another attempt, and how long to wait.

use std::time::Duration;

/// Longest wait between attempts.
const MAX_DELAY: Duration = Duration::from_secs(30);

/// 400, 401, 403 and 404 (and other client errors) are final; 408, 409,
/// 425, 429 and every 5xx are transient.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || status >= 500
}

/// Delay before retry number `retry` (0-based): `base * 2^retry`, capped at
/// 30 s, times a jitter factor in [0.75, 1.25] (about 2, 4, 8, 16 s).
pub fn backoff_delay(base: Duration, retry: u32) -> Duration {
    let raw = base.saturating_mul(1u32 << retry.min(16)).min(MAX_DELAY);
    let jitter: f64 = rand::random_range(0.75..=1.25);
    raw.mul_f64(jitter)
}

/// Parse a `Retry-After` header given in seconds (HTTP dates count as absent).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| crate::config::seconds(secs, 0.0).min(MAX_DELAY * 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_errors_are_not_retried_but_rate_limits_and_5xx_are() {
        for s in [400, 401, 403, 404] {
            assert!(!is_retryable_status(s), "{s}");
        }
        for s in [429, 500, 502, 503] {
            assert!(is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps_at_30s() {
        let base = Duration::from_secs(2);
        for (retry, nominal) in [(0u32, 2.0f64), (1, 4.0), (2, 8.0), (3, 16.0), (6, 30.0)] {
            let d = backoff_delay(base, retry).as_secs_f64();
            assert!(d >= nominal * 0.75 - 1e-9 && d <= nominal * 1.25 + 1e-9, "retry {retry}: {d}");
        }
    }

    #[test]
    fn retry_after_seconds_are_honoured() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
