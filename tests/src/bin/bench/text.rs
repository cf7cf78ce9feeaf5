//! Words and numbers for BENCHMARKS.md: formatting, the load average,
//! and the explanations of missed targets.

/// `n` with a comma between thousands (10,000).
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut groups = Vec::new();
    let mut end = digits.len();
    while end > 3 {
        groups.push(&digits[end - 3..end]);
        end -= 3;
    }
    groups.push(&digits[..end]);
    groups.reverse();
    groups.join(",")
}

/// The 1-minute load average: other work on the machine skews every number.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .next()
        .unwrap_or("unknown")
        .to_owned()
}

/// The CPU, its cores and the kernel, for the report's first line.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpu}, {cores} cores, Linux {}", kernel.trim())
}

/// For a miss nobody has explained yet.
pub const WHY_UNKNOWN: &str = "Not analysed yet.";

/// Where swivald's CPU per turn goes, from `perf record -g` on the daemon
/// during the concurrent-sessions phase (2 cores, release build).
pub const WHY_CPU: &str = "Where that CPU goes (perf, release build): about a quarter in `Store::append_event`, \
    one SQLite transaction per event with its statements parsed anew each time (`execute`, not \
    `prepare_cached`) and a WAL commit each; about a fifth in cloning and dropping `serde_json::Value`s, \
    since `provider::request_body` copies the whole conversation and every tool schema into each request \
    before serialising it; about a tenth serialising values to text (event bodies, stored messages, the \
    request). Batching a turn's events into one transaction, caching statements and serialising the \
    request from borrowed messages are the obvious savings.";
