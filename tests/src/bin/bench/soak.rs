//! `bench soak [N]`: sessions created, run and closed by the thousand;
//! memory, file descriptors and threads must stay flat.

use super::text::{load_average, machine, thousands};
use super::{session, BENCHMARKS, SOAK_COMMAND, SOAK_HEADING};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Instant;
use swival_tests::mock::MockProvider;
use swival_tests::{rss_kib, Daemon, NdConn, TestEnv};

/// Sessions measured first, as the baseline.
const FIRST: usize = 200;
/// Sessions in flight at once.
const WORKERS: usize = 16;

/// Open file descriptors of process `pid`.
fn open_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Threads of process `pid`.
fn threads(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// What the soak samples at one point.
struct Sample {
    /// RSS in KiB.
    rss: u64,
    /// Open file descriptors.
    fds: usize,
    /// Threads.
    threads: u64,
    /// `daemon/status` at that point.
    status: Value,
}

impl Sample {
    fn take(daemon: &Daemon, nd: &mut NdConn) -> Sample {
        let status = nd.ok("daemon/status", json!({}));
        let pid = daemon.pid();
        Sample { rss: rss_kib(pid), fds: open_fds(pid), threads: threads(pid), status }
    }
}

/// Create, run (one short turn) and close `count` sessions, `workers` at a
/// time, each worker on its own connection.
fn soak_sessions(daemon: &Daemon, project: &Path, count: usize, workers: usize) {
    /// Sessions per mock provider before it is replaced (it logs every request).
    const PER_MOCK: usize = 100;
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut nd = daemon.nd();
                let mut mock = MockProvider::start(Vec::new());
                let mut served = 0;
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
                    if served == PER_MOCK {
                        mock = MockProvider::start(Vec::new());
                        served = 0;
                    }
                    served += 1;
                    let id = session(&mut nd, project, &mock);
                    let run = nd.ok("run/start", json!({"session_id": id, "task": "say hello"}))["run_id"].clone();
                    let result = nd.ok("run/wait", json!({"run_id": run}));
                    assert_eq!(result["outcome"], "success", "{result}");
                    nd.ok("session/close", json!({"session_id": id}));
                }
            });
        }
    });
}

/// `bench soak [N]`: 10,000 (or N) sessions created, run and closed at
/// 16-way concurrency; RSS, open fds and threads after the first 200 and
/// after all. Only the default count rewrites BENCHMARKS.md.
pub fn soak(total: Option<usize>) {
    let record = total.is_none();
    let total = total.unwrap_or(10_000).max(FIRST);
    let started = Instant::now();
    let load = load_average();
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let project = env.project("soak");
    let mut nd = daemon.nd();
    let idle = Sample::take(&daemon, &mut nd);
    soak_sessions(&daemon, &project, FIRST, WORKERS);
    let first = Sample::take(&daemon, &mut nd);
    let t = Instant::now();
    // RSS every 1,000 sessions, to show the trend and not only its ends.
    let mut trend = Vec::new();
    let mut done = FIRST;
    while done < total {
        let chunk = (1000 - done % 1000).min(total - done);
        soak_sessions(&daemon, &project, chunk, WORKERS);
        done += chunk;
        let rss = rss_kib(daemon.pid());
        eprintln!("soak: {done} sessions, RSS {rss} KiB");
        trend.push(format!("{:.1}", rss as f64 / 1024.0));
    }
    let rate = (total - FIRST) as f64 / t.elapsed().as_secs_f64();
    let all = Sample::take(&daemon, &mut nd);
    let read = read_old_sessions(&daemon, &mut nd, READ_OLD);
    let run = SoakRun { total, rate, load, seconds: started.elapsed().as_secs_f64(), trend, read };
    let md = report(&run, [&idle, &first, &all]);
    let old = std::fs::read_to_string(BENCHMARKS).unwrap_or_default();
    let kept = old.find(SOAK_HEADING).map_or(old.as_str(), |at| &old[..at]).trim_end();
    // Sections after the soak's (the real-model benchmark) stay as they are.
    let after = old
        .find(SOAK_HEADING)
        .and_then(|at| old[at + 1..].find("\n## ").map(|next| &old[at + 2 + next..]))
        .unwrap_or("");
    if record {
        let tail = if after.is_empty() { String::new() } else { format!("\n{after}") };
        std::fs::write(BENCHMARKS, format!("{kept}\n\n{md}{tail}")).expect("write BENCHMARKS.md");
    }
    print!("{md}");
}

/// Old closed sessions read with `session/get` at the end.
const READ_OLD: usize = 500;

/// `session/get` of the `n` oldest sessions, each twice: RSS in KiB
/// before and after (reading must pin nothing).
fn read_old_sessions(daemon: &Daemon, nd: &mut NdConn, n: usize) -> (u64, u64) {
    let listed = nd.ok("session/list", json!({}));
    let mut ids: Vec<(String, String)> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| (s["created_at"].as_str().unwrap_or("").to_owned(), s["session_id"].as_str().unwrap().to_owned()))
        .collect();
    ids.sort();
    ids.truncate(n);
    // Once first, so what a first read allocates for good (statement
    // caches, buffers) is not counted as pinned.
    for (_, id) in ids.iter().take(10) {
        nd.ok("session/get", json!({"session_id": id}));
    }
    let before = rss_kib(daemon.pid());
    for _ in 0..2 {
        for (_, id) in &ids {
            nd.ok("session/get", json!({"session_id": id}));
        }
    }
    (before, rss_kib(daemon.pid()))
}

/// What one soak did, besides its samples.
struct SoakRun {
    /// Sessions in all.
    total: usize,
    /// Sessions per second after the first ones.
    rate: f64,
    /// Load average at the start.
    load: String,
    /// How long it took.
    seconds: f64,
    /// RSS in MiB after every 1,000 sessions.
    trend: Vec<String>,
    /// RSS in KiB before and after reading old sessions.
    read: (u64, u64),
}

/// The BENCHMARKS.md section for a soak with samples idle, after the first
/// sessions and after all.
fn report(run: &SoakRun, [idle, first, all]: [&Sample; 3]) -> String {
    let SoakRun { total, rate, load, seconds, trend, read } = run;
    let (total, rate) = (*total, *rate);
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let growth_mb = (all.rss as f64 - first.rss as f64) * 1024.0 / 1e6;
    let mut md =
        format!("{SOAK_HEADING}: {} sessions\n\nProduced by:\n\n```sh\n{SOAK_COMMAND}\n```\n\n", thousands(total));
    md.push_str(&format!(
        "Machine: {}. Release build; mock provider in-process at zero latency. Load average when the soak started: \
         {load}. {total} sessions, each created, run (one turn: the mock answers with text) and closed, {WORKERS} at a \
         time on {WORKERS} connections; {rate:.0} sessions/s after the first {FIRST}. The soak took {:.0} s.\n\n",
        machine(),
        seconds,
        total = thousands(total),
    ));
    md.push_str(&format!(
        "| measure | idle after start | after {FIRST} sessions | after {} sessions | target |\n|---|---|---|---|---|\n",
        thousands(total)
    ));
    let row = |md: &mut String, measure: &str, f: &dyn Fn(&Sample) -> String, target: &str| {
        md.push_str(&format!("| {measure} | {} | {} | {} | {target} |\n", f(idle), f(first), f(all)));
    };
    let rss_target = format!("after {} within 5 MB of after {FIRST}", thousands(total));
    row(&mut md, "RSS of swivald", &|s| mib(s.rss), &rss_target);
    row(&mut md, "open file descriptors (`/proc/PID/fd`)", &|s| s.fds.to_string(), "flat");
    row(&mut md, "threads (`/proc/PID/status`)", &|s| s.threads.to_string(), "flat");
    row(
        &mut md,
        "sessions in memory (`daemon/status` `live_sessions`)",
        &|s| s.status["live_sessions"].to_string(),
        "0",
    );
    row(&mut md, "runs in flight (`daemon/status` `runs_in_flight`)", &|s| s.status["runs_in_flight"].to_string(), "0");
    md.push_str(&format!("\nRSS in MiB after every 1,000 sessions: {}.\n\n", trend.join(", ")));
    let per_session = (all.rss as f64 - first.rss as f64) / (total - FIRST) as f64;
    let read_growth = read.1 as f64 - read.0 as f64;
    md.push_str(&format!(
        "Memory per closed session (RSS growth from {FIRST} to {} sessions over the sessions between): {per_session:.2} \
         KiB (target: at most 2 KiB). `session/get` of the {READ_OLD} oldest closed sessions, twice each: RSS {} → {} \
         ({:+.0} KiB; target: nothing pinned, under 512 KiB of allocator noise).\n\n",
        thousands(total),
        mib(read.0),
        mib(read.1),
        read_growth
    ));
    let mut misses = Vec::new();
    if per_session > 2.0 {
        misses.push(format!("{per_session:.2} KiB per closed session (target: 2 KiB)"));
    }
    if read_growth > 512.0 {
        misses.push(format!("reading {READ_OLD} old sessions grew RSS by {read_growth:.0} KiB"));
    }
    if growth_mb > 5.0 {
        misses.push(format!(
            "RSS grew by {growth_mb:.1} MB between {FIRST} and {} sessions (target: 5 MB)",
            thousands(total)
        ));
    }
    if all.fds > first.fds {
        misses.push(format!("open file descriptors grew from {} to {}", first.fds, all.fds));
    }
    if all.threads > first.threads {
        misses.push(format!("threads grew from {} to {}", first.threads, all.threads));
    }
    if misses.is_empty() {
        md.push_str(&format!(
            "Targets met on this run: RSS {} by {:.1} MB from {FIRST} to {} sessions; file descriptors and threads \
             did not grow.\n",
            if growth_mb < 0.0 { "fell" } else { "grew" },
            growth_mb.abs(),
            thousands(total)
        ));
    } else {
        md.push_str(&format!("Targets missed on this run: {}.\n", misses.join("; ")));
    }
    md
}
