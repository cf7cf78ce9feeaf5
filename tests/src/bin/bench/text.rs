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

/// Where swivald's CPU per turn goes, from callgrind on the daemon while
/// `bench turns 1` drives it (60 six-call runs and one round of 64 sessions
/// × 10 turns; release build with line tables).
pub const WHY_CPU: &str = "Profiled with callgrind (`SWIVALD_BENCH_WRAPPER=\"valgrind --tool=callgrind\" \
    target/release/bench turns 1`; perf's samples in this VM land on the kernel). Two rounds of work took the \
    daemon's instructions for that workload from 2.95 G to 1.27 G and then to 1.06 G. The second round: the \
    store's writer numbers events from each session's last number kept in memory and writes the session's row \
    once per batch instead of a lookup and an update per event (writer thread 341 M → 136 M instructions); the \
    run's tool schemas are serialised once and spliced into every request (request serialisation 154 M → 47 M); \
    stream chunks are read in place into borrowed typed fields instead of a `serde_json::Value` (135 M → 97 M); \
    the file tool schemas are built once per `read_lines`; a freshly created session no longer reads its own \
    row back. Against the previous daemon, interleaved on this machine (`bench turns 1`, three times each, load \
    0.8): CPU per turn of the 6-call task 0.71–0.83 ms → 0.71–0.74 ms (user time fell, system time rose within \
    the /proc tick); 64 sessions × 10 turns: 0.52–0.56 ms → 0.42–0.56 ms per turn, p99 11–15 ms → 7–11 ms. \
    What is left, by the profile: SSE parsing (9 %), the report's secret scan at run end (8 %, runs here are 7 \
    turns), JSON-RPC transport and dispatch (6 %), the token estimate's walk over new messages and the tool \
    schemas (5 %), session creation (4 %: every 6-call run here creates its session). About half the CPU per \
    turn is system time: WAL page writes (about 18 `pwrite`s and 8 `fcntl` locks per turn, by strace), the \
    writer thread's and the workers' wake-ups, socket writes per event; meeting 0.25 ms needs fewer commits per \
    turn, not only fewer instructions.";
