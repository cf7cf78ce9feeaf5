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
    instructions for that workload from 2.95 G to 1.27 G, 1.06 G, 0.94 G, 0.88 G and 0.72 G (the last round: a run's \
    tool offer made once and shared, each message serialised once and spliced into requests, SSE chunks read in one \
    pass, the secret scan's prefixes found in one Aho-Corasick pass). CPU time did not follow the instruction count \
    as far: a third to a half of the CPU per turn is system time (about 60 system calls per turn: pwrite64 of WAL \
    frames, fcntl locks and page reads on the store's thread; reads, writes, epoll and futex wake-ups between a run's \
    task, the writer thread and the connection tasks; statx resolving each file tool's path; the loopback TCP of the \
    provider call), and in this VM every wake-up of another thread costs more than the work it hands over. By the \
    profile, of the 0.72 G: the store writer 26 % (SQLite statements, B-tree balancing, WAL checksums), malloc and \
    free 22 %, JSON-RPC transport and dispatch 8 %. Tried and not kept: mimalloc (instructions to 0.61 G, but the \
    64-session p99 rose from a median of 4.7 ms to 7.8 ms over nine rounds, and freed memory was held), thin LTO (2 % \
    off for twice the build time), one worker thread (context switches halved, the 64-session p99 rose from 3.6 ms \
    to 9.1 ms; `worker_threads` in swivald.toml sets it, one per core stays the default).";

/// What the floor measured by `bench floor` says of swivald's `cpu` per
/// turn against its target of `target_ms`.
pub fn why_floor(floor: std::time::Duration, cpu: std::time::Duration, target_ms: f64, turns: usize) -> String {
    let floor_ms = floor.as_secs_f64() * 1e3;
    format!(
        "The floor of a turn on this machine is {floor_ms:.2} ms: `bench floor` (see tests/src/bin/bench/floor.rs) \
         runs, without swivald and on one thread, only what no design of the daemon can skip per turn ({turns} \
         turns): the same chat request sent with the daemon's HTTP client to the same mock, its streamed reply \
         parsed, one event row committed to SQLite as the store does, one notification line written to a Unix \
         socket. The target leaves {:.2} ms above that floor for the tool call, the conversation and the events \
         swivald stores and sends for a call, a tool and its result, and a run's RPCs and session set-up spread over \
         its turns; swivald uses {:.2} ms above it. ",
        target_ms - floor_ms,
        cpu.as_secs_f64() * 1e3 - floor_ms,
    )
}
