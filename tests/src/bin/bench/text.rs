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
    instructions for that workload from 2.95 G to 1.27 G, 1.06 G, 0.94 G, 0.88 G and now 0.72 G. This round: a run's \
    tool offer (schemas, their JSON and their length) is made once per distinct file and command tools and shared by \
    the runs offering it, where every run cloned and serialised about 8 KB of schemas; each message is serialised \
    once, when it is added, and a call that sends the conversation unchanged splices those (the system prompt was \
    serialised again on every call); SSE chunks are read in one pass (each nested part was parsed again from its raw \
    text, five levels deep); the secret scan finds every pattern's prefix in one Aho-Corasick pass instead of one \
    search per pattern. Together: SSE assembly 94 M to 12 M instructions, serialising requests 48 M to 15 M, the \
    report's secret scan 33 M to 14 M. CPU time did not follow the instruction count: in interleaved runs (`bench \
    turns 3` against the previous daemon, four each) the 6-call task went from 0.79–0.81 ms to 0.64–0.76 ms per turn \
    and the 64-session rounds from 0.44–0.59 ms to 0.36–0.53 ms, within the noise. What is left is mostly not instructions: a third to a \
    half of the CPU per turn is system time (about 60 system calls per turn: 16 pwrite64 of WAL frames, 4 fcntl \
    locks and 2 page reads on the store's thread; reads, writes, epoll and futex wake-ups between a run's task, the \
    writer thread and the connection tasks; 5 statx per file tool call resolving its path), and in this VM every \
    wake-up of another thread costs more than the work it hands over. By the profile, of the 0.72 G: the store \
    writer 26 % (SQLite statements, B-tree balancing, WAL checksums), malloc and free 22 %, JSON-RPC transport and \
    dispatch 8 %. Tried and not kept: mimalloc as the allocator took the instructions to 0.61 G but raised the \
    64-session p99 (median of nine rounds 7.8 ms against 4.7 ms), likely the page purges it does on worker threads; \
    thin LTO took 2 % off for twice the build time; one worker thread instead of two halved the context switches \
    but raised the 64-session p99 (median of nine rounds 9.1 ms against 3.6 ms) (`worker_threads` in swivald.toml sets it; one per core stays the \
    default).";
