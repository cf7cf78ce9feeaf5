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
    target/release/bench turns 1`; perf's samples in this VM land on the kernel). Rounds of work took the daemon's \
    instructions for that workload from 2.95 G to 1.27 G, 1.06 G and now 0.94 G. The latest round: a 16 KiB read \
    buffer that sat inside every future that runs a process is on the heap, so the model call's future shrank from \
    35 KB (copied twice per call, 74 M instructions of memcpy); tool names are read by key instead of by JSON \
    pointer (37 M); store writes from async code (session create, run start and end, settle, close) await their \
    commit instead of blocking a runtime worker, which costs no instructions but a thread hand-off each, and under \
    a slow disk made the runtime start replacement threads. Against the daemon before that round, interleaved on \
    this machine (`bench turns 1`, three times each, load 2.0): CPU per turn of the 6-call task 0.79–0.81 ms → \
    0.69–0.81 ms; 64 sessions × 10 turns: 0.55–0.56 ms → 0.53–0.63 ms per turn, p99 10–11 ms → 9–14 ms; the \
    noise on this machine is as large as the change. What is left, by the profile: the store's writer thread \
    (23 %: SQLite statements and WAL frames), SSE parsing (10 %), serialising JSON values for events, messages \
    and requests (13 %, overlapping the rest), the report's secret scan at run end (8 %; runs here are 7 turns), \
    JSON-RPC transport and dispatch (6 %), the token estimate (5 %). About half the CPU per turn is system time: \
    by strace, a turn of the 6-call task makes 1.9 commits writing 11.5 WAL frames (about 25 `pwrite`s with the \
    checkpoints) and 13 `fcntl` locks, and wakes the writer thread and the workers for each. Meeting 0.25 ms \
    needs a different shape (one commit per turn, fewer thread hand-offs per event), not only fewer instructions.";
