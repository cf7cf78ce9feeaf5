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
    instructions for that workload from 2.95 G to 1.27 G, 1.06 G, 0.94 G and now 0.88 G; under valgrind the store \
    writer batches less than at full speed, so the last figure understates the latest round, which changed the \
    shape more than the instruction count. File tools that read or write a bounded amount (all but `list_files`, \
    `grep` and `delete_file`) run on the worker instead of handing it over with `block_in_place`, which woke or \
    started a spare thread for every tool call (23 threads after one round of 64 sessions). The store writer holds \
    a batch nobody waits for up to 1 ms so a run's next events share its commit, and a sender wakes it only when it \
    sleeps or a waited write arrives: a turn of the 6-call task now makes 0.95 commits holding 6.9 jobs, the \
    session's creation and the run's start, settle and end included (1.9 commits before). A batch runs without \
    savepoints unless a job fails (transaction control: 5.4 % of the instructions before, 3.6 % now). A session \
    without a secret shield no longer builds a throwaway one at every run's end, only when its report holds a \
    secret. Each step was measured against the one before in interleaved runs (`bench turns 1`, three each, load \
    1.8 to 2.2); from the first to the last: CPU per turn of the 6-call task 0.57–0.64 ms to 0.43–0.48 ms; 64 \
    sessions × 10 turns 0.36–0.44 ms to 0.28–0.36 ms, p99 7.4–12.4 ms to 3.2–4.7 ms. What is left, by the \
    profile: the store writer (20 %: statements, B-tree balancing of the events and messages tables, WAL frames), \
    SSE parsing (11 %: the mock streams a tool call in about 30 chunks, as a real server does token by token), \
    malloc and free (17 %, spread over everything), JSON-RPC transport and dispatch (7 %), serialising the request \
    (5 %), the report's secret scan at run end (3 %). A third to a half of the CPU per turn is system time: the \
    HTTP round trip to the provider, the JSON-RPC replies, and the wake-ups between a run's task, the writer thread \
    and the connection tasks. Part of each turn's cost here is per run (session creation, a new connection to a \
    fresh mock, run start and end, the report), spread over 7 turns.";
