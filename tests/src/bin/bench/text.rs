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
pub const WHY_CPU: &str = "The largest items of the last profile are gone: one SQLite transaction \
    per event (writes now go to one writer thread that commits whatever is waiting together, with cached \
    statements, and events are committed and broadcast there without the emitting task waiting), and \
    copying the whole conversation and every tool schema into each request (requests are serialised from \
    the borrowed messages); CPU per turn went from 1.28 ms to 0.8–1.0 ms (two runs on this noisy \
    machine). Not profiled again: perf's \
    cpu-clock samples in this VM land almost all on the kernel re-enabling interrupts, which says nothing \
    about where the daemon's time goes. Candidates left: every event is serialised twice (stored body, \
    then notification); every message is stored as its own row and waited for; tool arguments and results \
    are parsed and re-serialised as JSON.";
