//! Swival's word lists for buckets (which words a bucket keeps, which
//! buckets are high-risk and why) and how an interpreter's inline code is
//! bucketed: the data [`super::bucket`] and [`super::matcher`] share.

/// Programs whose bucket keeps the next word (`uv run pytest`).
pub(super) const ONE_MORE_WORD: &[&[&str]] = &[&["uv", "run"], &["python3", "-m"], &["python", "-m"], &["npm", "run"]];
/// Buckets of two or three fixed words.
pub(super) const FIXED: &[&[&str]] = &[
    &["uv", "pip", "install"],
    &["cargo", "test"],
    &["go", "test"],
    &["npm", "test"],
    &["npm", "install"],
    &["pip", "install"],
    &["git", "push"],
    &["git", "reset"],
    &["git", "clean"],
];
/// Interpreters, whose inline code or temporary script gets its own bucket.
pub(super) const INTERPRETERS: &[&str] =
    &["python3", "python", "bash", "sh", "zsh", "dash", "node", "bun", "deno", "ruby", "perl"];
/// Options of an interpreter that run code given on the command line.
pub(super) const INLINE_CODE: &[&str] = &["--command", "--eval", "--print", "--exec", "-p", "-E", "-x"];
/// Programs that run the command after their first words (`uv run X`):
/// the risky uses are looked for in `X`.
pub(super) const RUNNERS: &[&str] = &["uv", "poetry", "pipenv", "pdm", "hatch", "rye"];
/// Swival's high-risk buckets, and a few more of the same kind, with the
/// reason the user reads.
pub(super) const HIGH_RISK: &[(&str, &str)] = &[
    ("rm", "deletes files"),
    ("git push", "publishes commits to a remote"),
    ("git reset", "can discard work in the repository"),
    ("git clean", "deletes files git does not track"),
    ("docker", "controls containers"),
    ("kubectl", "controls a cluster"),
    ("curl", "reaches the network"),
    ("wget", "reaches the network"),
    ("npm install", "installs packages, which run their own install scripts"),
    ("pip install", "installs packages, which run their own install scripts"),
    ("uv pip install", "installs packages, which run their own install scripts"),
    ("python3 -m pip", "installs packages, which run their own install scripts"),
    ("python -m pip", "installs packages, which run their own install scripts"),
    ("uv run -c", "runs the code given on its command line"),
    ("<shell>", "runs a shell command line"),
    ("bash -c", "runs the code given on its command line"),
    ("sh -c", "runs the code given on its command line"),
    ("zsh -c", "runs the code given on its command line"),
    ("dash -c", "runs the code given on its command line"),
    ("python3 -c", "runs the code given on its command line"),
    ("python -c", "runs the code given on its command line"),
    ("node -e", "runs the code given on its command line"),
    ("bun -e", "runs the code given on its command line"),
    ("deno -e", "runs the code given on its command line"),
    ("ruby -e", "runs the code given on its command line"),
    ("ruby -c", "runs the code given on its command line"),
    ("perl -e", "runs the code given on its command line"),
    ("perl -c", "runs the code given on its command line"),
];

/// An interpreter's bucket when it runs inline code or a temporary script.
pub(super) fn interpreter_bucket(name: &str, args: &[&str]) -> Option<String> {
    if let Some(first) = args.first() {
        if first.starts_with("/tmp/") || first.contains(".swival/tmp/") {
            return Some(format!("{name} <temp-script>"));
        }
    }
    let short = |a: &&&str, c: char| a.starts_with('-') && !a.starts_with("--") && a.contains(c);
    if args.iter().any(|a| short(&a, 'c') || *a == "--command") {
        return Some(format!("{name} -c"));
    }
    if args.iter().any(|a| short(&a, 'e') || INLINE_CODE.contains(a)) {
        return Some(format!("{name} -e"));
    }
    None
}

/// Swival's suffix (`-c`, `-e`) when an interpreter runs inline code its
/// high-risk list names.
pub fn inline_code(program: &str, args: &[&str]) -> Option<&'static str> {
    if !INTERPRETERS.contains(&program) {
        return None;
    }
    let bucket = interpreter_bucket(program, args)?;
    if !HIGH_RISK.iter().any(|(b, _)| *b == bucket) {
        return None;
    }
    ["-c", "-e"].into_iter().find(|s| bucket.ends_with(s))
}
