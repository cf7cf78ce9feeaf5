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
    target/release/bench turns 1`; perf's samples in this VM land on the kernel). The last round of work took \
    the daemon's instructions for that workload from 2.95 G to 1.27 G (−57 %): the token estimate serialised the \
    whole conversation and every tool schema twice per call to count characters (21 %; now counted once per \
    message, as it is stored); every call deep-copied the tool schemas (6 %, plus freeing them); every run's \
    report was encrypted with a throwaway secret shield that compiled its regexes (14 %) and rebuilt the whole \
    JSON (10 %) and scanned every short string in full; the writer parsed its BEGIN/SAVEPOINT/RELEASE/COMMIT for every job (now cached); each \
    conversation message waited for its commit on a tokio worker (now queued like events; the loop waits once \
    at its end); a newline-delimited connection writes the lines waiting for it in one system call instead of \
    one each. Against the previous daemon, interleaved on this machine (`bench turns 3`, twice each): CPU per \
    turn of the 6-call task 1.17–1.36 ms → 0.76–0.79 ms, wall per turn (p50) 1.24–1.44 ms → 0.79 ms; 64 sessions \
    × 10 turns: CPU per turn 1.13–1.19 ms → 0.58–0.63 ms, p99 per turn 23–42 ms → 11–16 ms, 890–994 → \
    1,570–1,680 turns/s (before the joined writes, which took 64-session throughput up by a further fifth). \
    What the profile shows is left: the store's writer thread (25 %; a third of it is the `UPDATE \
    sessions SET last_seq … RETURNING` that numbers each event: a lookup and an update of the session's row, \
    whose page every commit then writes to the WAL), serialising the provider request (12 %: the whole conversation on every call), the report's secret \
    scan at run end (7 % here, where runs are 7–10 turns), SSE parsing into `serde_json::Value` (8 %), and \
    JSON-RPC dispatch and notifications (8 %). A quarter to a third of the CPU per turn is system time \
    (socket writes per event, the writer thread's wake-ups, WAL writes).";
