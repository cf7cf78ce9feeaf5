//! `bench snapshots [REPO]`: what recording a run's changes costs. A
//! snapshot of a project into a fresh store (the first, which hashes every
//! file), then of the unchanged project (what every bracket around a call
//! pays when the call changed nothing), then after 10 files changed. On
//! REPO (default: the current directory, this repository) and on a
//! synthetic project of 20,000 files in 200 directories, 1–4 KB each;
//! then a whole run of six writes with snapshots off and on.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swival_tests::mock::{MockProvider, Step};
use swival_tests::TestEnv;
use swivald::SnapshotStore;

/// Rounds of the repeated measurements.
const ROUNDS: usize = 11;

/// Measure and print.
pub fn snapshots(repo: Option<PathBuf>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let repo = repo.unwrap_or_else(|| std::env::current_dir().unwrap());
    let work = tempfile::tempdir().unwrap();
    rt.block_on(async {
        measure("this repository", &repo, &work.path().join("repo-store"), false).await;
        let synthetic = work.path().join("synthetic");
        make_synthetic(&synthetic);
        measure("synthetic 20,000 files", &synthetic, &work.path().join("synthetic-store"), true).await;
    });
    write_runs();
}

/// Runs of six writes measured per daemon, after one that opens the store.
const WRITE_RUNS: usize = 20;

/// Runs of six `write_file` calls on a small project, with snapshots off
/// and on, interleaved (a fresh daemon each round): the wall time of a run
/// and the daemon's CPU per turn, its children's (git) included, after a
/// first run that opened the store; what recording costs a file tool call.
pub fn write_runs() {
    let mut wall: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut cpu: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS * 2 {
        let on = round % 2 == 1;
        let env = TestEnv::new();
        env.daemon_settings(&format!("snapshots = {on}\n"));
        let daemon = super::turns::wrapped_daemon(&env);
        let project = env.project("p");
        for i in 0..50 {
            std::fs::write(project.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        let mock = MockProvider::start(Vec::new());
        let mut nd = daemon.nd();
        let mut write_run = |run: usize| {
            for i in 0..6 {
                let args =
                    json!({"file_path": format!("new{run}_{i}.txt"), "content": format!("run {run} file {i}\n")});
                mock.push(Step::tool_call(&format!("w{i}"), "write_file", args));
            }
            mock.push(Step::text("done"));
            let sid = super::turns::session(&mut nd, &project, &mock);
            let id = nd.ok("run/start", json!({"session_id": sid, "task": "write"}))["run_id"].clone();
            assert_eq!(nd.ok("run/wait", json!({"run_id": id}))["outcome"], "success");
        };
        write_run(0);
        let (cpu_before, t) = (cpu_with_children(daemon.pid()), Instant::now());
        for run in 1..=WRITE_RUNS {
            write_run(run);
        }
        wall[usize::from(on)].push(t.elapsed() / WRITE_RUNS as u32);
        let used = cpu_with_children(daemon.pid()).saturating_sub(cpu_before);
        cpu[usize::from(on)].push(used / (WRITE_RUNS * 7) as u32);
    }
    println!("runs of 6 write_file calls on 50 files ({WRITE_RUNS} per daemon after one, {ROUNDS} daemons each, interleaved):");
    // Each on daemon against the off one just before it: a load that
    // drifts over the rounds weighs on both.
    let mut ratios: Vec<f64> =
        cpu[0].iter().zip(&cpu[1]).map(|(off, on)| on.as_secs_f64() / off.as_secs_f64()).collect();
    ratios.sort_by(f64::total_cmp);
    let (cpu_off, cpu_on) = (spread_us(&mut cpu[0]), spread_us(&mut cpu[1]));
    println!("  snapshots off: wall per run {}; CPU per turn {cpu_off}", spread(&mut wall[0]));
    println!("  snapshots on: wall per run {}; CPU per turn {cpu_on}", spread(&mut wall[1]));
    println!(
        "  CPU per turn on / off, each round's pair: median {:.2} (min {:.2}, max {:.2})",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1]
    );
    let median = |v: &[Duration]| v[v.len() / 2].as_secs_f64();
    let per_call = (median(&cpu[1]) - median(&cpu[0])) * 7.0 / 6.0;
    println!("  recording cost per file tool call (CPU, medians): {:.3} ms", per_call * 1e3);
}

/// CPU time process `pid` and its waited-for children have used: the
/// process's threads to the nanosecond (`/proc/<pid>/task/*/schedstat`),
/// its children (git) in clock ticks. A thread that ended is not counted
/// (the runtime's blocking threads live 10 s idle, longer than a round).
fn cpu_with_children(pid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest.split_whitespace().map(|f| f.parse().unwrap_or(0)).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    // cutime, cstime.
    let ticks: u64 = (13..=14).map(|i| fields.get(i).copied().unwrap_or(0)).sum();
    let threads = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    let on_cpu: u64 = threads
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(on_cpu) + Duration::from_secs_f64(ticks as f64 / hz)
}

/// First, unchanged and (when `change`) 10-changed snapshots of `root`.
async fn measure(name: &str, root: &Path, store: &Path, change: bool) {
    let files = count_files(root);
    let t = Instant::now();
    let mut s = SnapshotStore::open(store, root).await.expect("open the store");
    s.snapshot().await.expect("first snapshot");
    let first = t.elapsed();
    let mut unchanged = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        s.snapshot().await.expect("snapshot");
        unchanged.push(t.elapsed());
    }
    let mut changed = Vec::new();
    if change {
        for round in 0..ROUNDS {
            for i in 0..10 {
                std::fs::write(root.join(format!("d{i}/f{round}.txt")), format!("changed {round} {i}\n")).unwrap();
            }
            let t = Instant::now();
            s.snapshot().await.expect("snapshot");
            changed.push(t.elapsed());
        }
    }
    let size = dir_size(store);
    println!("{name} ({files} files, store {:.1} MB):", size as f64 / 1e6);
    println!("  first snapshot: {}", ms(first));
    println!("  unchanged: {}", spread(&mut unchanged));
    if change {
        println!("  10 files changed: {}", spread(&mut changed));
    }
}

/// min / median / max.
fn spread(v: &mut [Duration]) -> String {
    v.sort();
    format!("min {} / median {} / max {}", ms(v[0]), ms(v[v.len() / 2]), ms(v[v.len() - 1]))
}

/// min / median / max in microseconds.
fn spread_us(v: &mut [Duration]) -> String {
    v.sort();
    let us = |d: Duration| format!("{:.0} µs", d.as_secs_f64() * 1e6);
    format!("min {} / median {} / max {}", us(v[0]), us(v[v.len() / 2]), us(v[v.len() - 1]))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// 200 directories of 100 files, 1–4 KB each.
fn make_synthetic(root: &Path) {
    for d in 0..200 {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let len = 1024 + (d * 100 + f) % 3072;
            let body: String = format!("file {d}/{f} ").repeat(len / 12 + 1).chars().take(len).collect();
            std::fs::write(dir.join(format!("f{f}.txt")), body).unwrap();
        }
    }
}

/// Files under `root` that git would see (outside `.git` and `target`).
fn count_files(root: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![root.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name == ".git" || name == "target" || name == "node_modules" {
                continue;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => n += 1,
                Err(_) => {}
            }
        }
    }
    n
}

/// Bytes under `dir`.
fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// `bench edit-checks`: what the syntax check after a write or edit costs,
/// on this repository's largest Rust file and a 600-line Python file, an
/// edit changing one line (min / median / max of 201).
pub fn edit_checks() {
    let rust = std::fs::read_to_string("daemon/src/agent/guard.rs").expect("run from the repository's root");
    let python: String = (0..200).map(|i| format!("def f{i}(x):\n    y = x * {i}\n    return y + 1\n")).collect();
    for (name, path, text) in [("Rust, guard.rs", "a.rs", rust), ("Python, 600 lines", "a.py", python)] {
        let after = text.replacen("1", "2", 1);
        let mut times = Vec::new();
        for _ in 0..201 {
            let t = Instant::now();
            let note = swivald::edit_check_notes(Path::new(path), Some(&text), &after);
            times.push(t.elapsed());
            assert!(note.is_none(), "{note:?}");
        }
        println!("edit check, {name} ({} bytes): {}", text.len(), spread(&mut times));
    }
}
