//! `bench repl [TIMES]`: how long `swivalctl repl` takes from its start to a
//! ready prompt with the daemon running (the session created, its events
//! subscribed, the line editor up), and the REPL's RSS at its prompt. The
//! REPL runs on a terminal of its own (`script`, util-linux), and the
//! prompt is seen on that terminal's output.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use swival_tests::mock::MockProvider;
use swival_tests::{bin, rss_kib, TestEnv};

/// Measure `times` starts; prints min / median / max of each figure.
pub fn repl(times: usize) {
    let env = TestEnv::new();
    let daemon = env.start_daemon();
    let mock = MockProvider::start(Vec::new());
    let project = env.project("bench");
    env.global_config(&format!("provider = \"generic\"\nbase_url = \"{}\"\nmodel = \"m\"\n", mock.base_url()));
    let mut ready = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..times {
        let line = format!("{} repl", bin("swivalctl").display());
        let mut cmd = env.command(Path::new("script"));
        cmd.args(["-qefc", &line, "/dev/null"])
            .env("SWIVALD_SOCKET", &daemon.socket)
            .env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .current_dir(&project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("script (util-linux) runs");
        let mut out = child.stdout.take().expect("stdout");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("swival> ") {
            let n = out.read(&mut buf).expect("read the terminal");
            assert!(n > 0, "the REPL ended before its prompt: {}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        ready.push(started.elapsed());
        let pid = repl_pid(child.id()).expect("the REPL under script");
        rss.push(rss_kib(pid));
        let mut stdin = child.stdin.take().expect("stdin");
        let _ = stdin.write_all(b"/exit\r");
        drop(stdin);
        let _ = child.wait();
    }
    ready.sort();
    rss.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!(
        "swivalctl repl to a ready prompt ({times} starts, daemon running): min {} / median {} / max {}",
        ms(ready[0]),
        ms(ready[times / 2]),
        ms(ready[times - 1])
    );
    println!(
        "swivalctl repl RSS at its prompt: min {} / median {} / max {} KiB",
        rss[0],
        rss[times / 2],
        rss[times - 1]
    );
}

/// The pid of swivalctl among `script`'s descendants.
fn repl_pid(script: u32) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let found = std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let comm = stat.split(['(', ')']).nth(1)?;
            let ppid: u32 = stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()?;
            (comm == "swivalctl" && descends(ppid, script)).then_some(pid)
        });
        if found.is_some() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// Whether process `pid` is `ancestor` or one of its descendants.
fn descends(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..8 {
        if pid == ancestor {
            return true;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
        match stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1)).and_then(|p| p.parse().ok()) {
            Some(parent) => pid = parent,
            None => return false,
        }
    }
    false
}
