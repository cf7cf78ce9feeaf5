//! Swival's `/loop` interval grammar: a leading interval — compact (`5m`,
//! `1h30m`), spelled out (`5 minutes`, `1 min and 30 s`), with `every`
//! (`every hour`, `every 10m`), an article (`a minute`) or `half` (`half
//! an hour`) — then the prompt. Input that never looked like an interval
//! is all prompt, at Swival's default of ten minutes; input that began as
//! one and went wrong is an error saying where.

/// Swival's cadence when none is given.
pub const DEFAULT_S: u64 = 600;

/// `(seconds, prompt)` of a `/loop` line's arguments.
pub fn split(args: &str) -> Result<(u64, String), String> {
    let stripped = args.trim();
    if stripped.is_empty() {
        return Err("/loop requires a prompt".into());
    }
    let tokens: Vec<&str> = stripped.split_whitespace().collect();
    let lowered: Vec<String> = tokens.iter().map(|t| t.to_lowercase()).collect();
    let Some((seconds, used)) = consume(&lowered)? else { return Ok((DEFAULT_S, stripped.to_owned())) };
    let interval = tokens[..used].join(" ");
    if used == tokens.len() {
        return Err(format!("/loop got an interval ({interval}) but no prompt to run"));
    }
    Ok((seconds, remainder(stripped, used)))
}

/// A whole text as an interval (`--every`), in seconds.
pub fn whole(text: &str) -> Result<u64, String> {
    let lowered: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    match consume(&lowered)? {
        Some((seconds, used)) if used == lowered.len() => Ok(seconds),
        _ => Err(format!("{text:?} is not an interval: write e.g. 30m, 1h30m, 90s or \"every 2 hours\"")),
    }
}

/// The seconds of a unit word, and its family's rank (s, m, h).
fn unit(word: &str) -> Option<(u64, u8)> {
    Some(match word {
        "s" | "sec" | "secs" | "second" | "seconds" => (1, 0),
        "m" | "min" | "mins" | "minute" | "minutes" => (60, 1),
        "h" | "hr" | "hrs" | "hour" | "hours" => (3600, 2),
        _ => return None,
    })
}

/// `5m`, `1h30m`, `90s`: its seconds and the rank of its smallest unit.
fn compact(word: &str) -> Option<(u64, u8)> {
    let mut total = 0;
    let mut rank = None;
    let mut digits = String::new();
    for c in word.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let (secs, r) = unit(&c.to_string())?;
        if digits.is_empty() || rank.is_some_and(|last| r >= last) {
            return None;
        }
        total += digits.parse::<u64>().ok()? * secs;
        rank = Some(r);
        digits.clear();
    }
    if !digits.is_empty() {
        return None;
    }
    rank.map(|r| (total, r))
}

/// A leading interval of `tokens`: its seconds and the tokens it used;
/// `None` when the input does not begin with one.
fn consume(tokens: &[String]) -> Result<Option<(u64, usize)>, String> {
    let mut i = 0;
    let every = tokens.first().is_some_and(|t| t == "every");
    if every {
        i = 1;
        if i >= tokens.len() {
            return Err("/loop: 'every' must be followed by a duration".into());
        }
    }
    if tokens.get(i).is_some_and(|t| t == "half") {
        let mut j = i + 1;
        if tokens.get(j).is_some_and(|t| t == "a" || t == "an") {
            j += 1;
        }
        return match tokens.get(j).and_then(|t| unit(t)) {
            Some((secs, rank)) if rank > 0 => Ok(Some((secs / 2, j + 1))),
            _ if every => Err("/loop: 'half' must be followed by 'hour' or 'minute'".into()),
            _ => Ok(None),
        };
    }
    if every {
        if let Some((secs, _)) = tokens.get(i).and_then(|t| unit(t)) {
            return Ok(Some((secs, i + 1)));
        }
    }
    let (mut seconds, mut components, mut last_rank, mut expecting) = (0, 0, None::<u8>, false);
    while i < tokens.len() {
        if components > 0 && tokens[i] == "and" {
            if i + 1 >= tokens.len() {
                return Err("/loop: trailing 'and' with no further duration".into());
            }
            i += 1;
            expecting = true;
        }
        let tok = &tokens[i];
        if let Some((secs, rank)) = compact(tok) {
            check_order(rank, last_rank, tok)?;
            (seconds, last_rank, components, expecting) = (seconds + secs, Some(rank), components + 1, false);
            i += 1;
            continue;
        }
        let count = match tok.as_str() {
            "a" | "an" => Some(1),
            t if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) => t.parse().ok(),
            _ => None,
        };
        let next_unit = tokens.get(i + 1).and_then(|t| unit(t));
        let (Some(count), Some((secs, rank))) = (count, next_unit) else {
            if expecting {
                return Err(format!("/loop: expected a duration after 'and', got {tok:?}"));
            }
            break;
        };
        check_order(rank, last_rank, &format!("{tok} {}", tokens[i + 1]))?;
        (seconds, last_rank, components, expecting) = (seconds + count * secs, Some(rank), components + 1, false);
        i += 2;
    }
    Ok((components > 0).then_some((seconds, i)))
}

/// Units must come largest first, each once (`1h30m`, not `30m1h`).
fn check_order(rank: u8, last: Option<u8>, what: &str) -> Result<(), String> {
    match last {
        Some(l) if rank >= l => Err(format!("/loop: duration component {what} repeats or reorders units")),
        _ => Ok(()),
    }
}

/// `text` after its first `used` words, its own spacing kept.
fn remainder(text: &str, used: usize) -> String {
    let mut rest = text;
    for _ in 0..used {
        rest = rest.trim_start();
        rest = &rest[rest.find(char::is_whitespace).unwrap_or(rest.len())..];
    }
    rest.trim_start().to_owned()
}

/// Seconds as Swival writes them: `1h2m3s`.
pub fn show(seconds: u64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h}h");
    }
    if m > 0 {
        out += &format!("{m}m");
    }
    if s > 0 || out.is_empty() {
        out += &format!("{s}s");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swivals_shapes_read_as_intervals_and_the_rest_is_the_prompt() {
        assert_eq!(split("5m check the build").unwrap(), (300, "check the build".into()));
        assert_eq!(split("1h30m  run  tests").unwrap(), (5400, "run  tests".into()));
        assert_eq!(split("every hour pull").unwrap(), (3600, "pull".into()));
        assert_eq!(split("every 10 minutes x").unwrap(), (600, "x".into()));
        assert_eq!(split("half an hour x").unwrap(), (1800, "x".into()));
        assert_eq!(split("a minute x").unwrap(), (60, "x".into()));
        assert_eq!(split("1 min and 30 s x").unwrap(), (90, "x".into()));
        assert_eq!(split("check the build").unwrap(), (DEFAULT_S, "check the build".into()));
        assert_eq!(split("3 apples").unwrap(), (DEFAULT_S, "3 apples".into()), "a number alone is prompt");
    }

    #[test]
    fn an_interval_that_went_wrong_says_where() {
        assert!(split("5m").unwrap_err().contains("no prompt"));
        assert!(split("every").unwrap_err().contains("'every' must be followed"));
        assert!(split("30m 1h x").unwrap_err().contains("reorders units"));
        assert!(split("1 min and x").unwrap_err().contains("expected a duration after 'and'"));
        assert!(split("every half day x").unwrap_err().contains("'half' must be followed"));
        assert_eq!(whole("1h30m"), Ok(5400));
        assert_eq!(whole("every 2 hours"), Ok(7200));
        assert!(whole("soon").unwrap_err().contains("not an interval"));
        assert_eq!(show(3723), "1h2m3s");
        assert_eq!(show(0), "0s");
    }
}
