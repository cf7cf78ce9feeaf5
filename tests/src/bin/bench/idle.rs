//! `bench loops-idle [seconds]`: what a daemon costs while it waits with
//! 50 loops registered — CPU time per minute and RSS — against the same
//! daemon with none, each measured over the same span. The loops are on a
//! cron expression that does not fire during the bench (once a year), so
//! what is measured is the waiting: 50 drivers looking at the wall clock.

use super::text::{load_average, machine};
use serde_json::json;
use std::time::{Duration, Instant};
use swival_tests::mock::MockProvider;
use swival_tests::{create_session, rss_kib, TestEnv};

/// Loops registered.
const LOOPS: usize = 50;

/// CPU time (user and system) the process `pid` used so far.
fn cpu(pid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    // After the command: state is field 3, utime 14 and stime 15 (1-based).
    let ticks: u64 = [11, 12].iter().filter_map(|&i| fields.get(i)?.parse::<u64>().ok()).sum();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// CPU per minute and RSS of `pid` over `span`.
fn measure(pid: i32, span: Duration) -> (f64, u64) {
    let (c0, t0) = (cpu(pid), Instant::now());
    std::thread::sleep(span);
    let used = cpu(pid).saturating_sub(c0).as_secs_f64() * 1000.0;
    (used * 60.0 / t0.elapsed().as_secs_f64(), rss_kib(pid))
}

/// `bench loops-idle [seconds]`: prints the BENCHMARKS.md section.
pub fn loops_idle(seconds: u64) {
    let env = TestEnv::new();
    env.daemon_settings("max_loops = 64");
    let daemon = env.start_daemon();
    let p = env.project("idle");
    for args in [
        &["init", "-q"][..],
        &["-c", "user.email=b@b", "-c", "user.name=b", "commit", "-q", "--allow-empty", "-m", "i"],
    ] {
        assert!(std::process::Command::new("git").args(args).current_dir(&p).status().unwrap().success());
    }
    let mock = MockProvider::start(Vec::new());
    let mut nd = daemon.nd();
    let config = json!({"provider": "generic", "base_url": mock.base_url(), "model": "m"});
    let span = Duration::from_secs(seconds);
    let load = load_average();
    let (none_cpu, none_rss) = measure(daemon.pid(), span);
    let mut sid = String::new();
    for i in 0..LOOPS {
        if i % 4 == 0 {
            sid = create_session(&mut nd, &p, config.clone());
        }
        let schedule = json!({"cron": "0 0 1 1 *"});
        nd.ok("loop/add", json!({"session_id": sid, "prompt": format!("loop {i}"), "schedule": schedule}));
    }
    let listed = nd.ok("loop/list", json!({}))["loops"].as_array().map_or(0, Vec::len);
    assert_eq!(listed, LOOPS);
    let (loops_cpu, loops_rss) = measure(daemon.pid(), span);
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    println!("## Idle with loops registered (issue 46)\n");
    println!(
        "Produced by:\n\n```sh\ncargo build --release --workspace && target/release/bench loops-idle {seconds}\n```\n"
    );
    println!(
        "Machine: {}. Release build; load average at the start: {load}. The same daemon measured over {seconds} s \
         with no loop, then over {seconds} s with {LOOPS} loops registered (13 sessions, a cron expression that does \
         not fire during the bench), nothing else running in it.\n",
        machine()
    );
    println!("| measure | no loop | {LOOPS} loops |\n|---|---|---|");
    println!("| CPU time per minute (user + system, `/proc/PID/stat`) | {none_cpu:.1} ms | {loops_cpu:.1} ms |");
    println!("| RSS of swivald | {} | {} |", mib(none_rss), mib(loops_rss));
}
