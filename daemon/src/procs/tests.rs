//! The runner's limits and the model's commands.

use super::*;

/// One of the model's commands, started directly with merged output.
fn command(argv: &[&str]) -> Launch {
    Launch {
        program: locate(argv[0]).expect("test program installed"),
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        env: Env::Inherit(Vec::new()),
        io: Io::Merged,
        through: None,
    }
}

#[tokio::test]
async fn the_models_commands_wait_for_a_slot_under_max_children() {
    let runner = Arc::new(ProcessRunner::new(1));
    let hold = CancellationToken::new();
    let first = {
        let (runner, hold) = (runner.clone(), hold.clone());
        tokio::spawn(async move {
            runner.run_merged(&command(&["sleep", "60"]), Duration::from_secs(60), 1024, &hold).await
        })
    };
    while runner.running() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The only slot is taken: the second command waits until cancelled
    // instead of running.
    let waiting = CancellationToken::new();
    let canceller = waiting.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        canceller.cancel();
    });
    let second = runner.run_merged(&command(&["echo", "hi"]), Duration::from_secs(10), 1024, &waiting).await;
    assert!(matches!(second, Err(ProcError::Cancelled { .. })), "{second:?}");

    hold.cancel();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.ending, Ending::Cancelled);
    assert_eq!(runner.running(), 0);
    let free = CancellationToken::new();
    let third = runner.run_merged(&command(&["echo", "hi"]), Duration::from_secs(10), 1024, &free).await;
    assert_eq!(third.unwrap().output.bytes, b"hi\n");
}

#[tokio::test]
async fn merged_output_keeps_the_order_and_the_cap() {
    let runner = ProcessRunner::new(1);
    let cancel = CancellationToken::new();
    let launch = command(&["sh", "-c", "echo out; echo err >&2; echo more"]);
    let m = runner.run_merged(&launch, Duration::from_secs(10), 1024, &cancel).await.unwrap();
    assert_eq!((m.ending, m.output.bytes.as_slice()), (Ending::Exited(0), &b"out\nerr\nmore\n"[..]));
    let m = runner.run_merged(&launch, Duration::from_secs(10), 5, &cancel).await.unwrap();
    assert_eq!((m.output.bytes.as_slice(), m.output.truncated), (&b"out\ne"[..], true));
}
