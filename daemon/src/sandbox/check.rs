//! The language's own checks after a change (SPEC §11): after a
//! `write_file` or `edit_file` that changed a file, the file's toolchain
//! checks it — `python3 -m py_compile`, `node --check`, `bash -n`,
//! `make -n`, or the user's `edit_check_commands` for its extension — and
//! the first error it reports goes back in the tool result, naming the
//! tool. tree-sitter (`tools/lang/check.rs`) sees only what a grammar sees; a
//! second `const` of one name parses, and `node --check` refuses it.
//!
//! The model is the adversary: it chose the file's content and name. So
//! the program is never one it chose: the fixed argv of a toolchain found
//! on the caller's PATH when the session was built (never inside a
//! directory the model writes) or the user's own argv; the file goes as
//! one absolute-path argument, after `--` where every version of the tool
//! takes it; nothing goes through a shell. Every check runs through the
//! sandbox helper with the commands' plan and limits, tightened: writes
//! only in its own temp dir, no network. Without a helper plan that
//! confines both, nothing runs. `make -n` still runs a Makefile's
//! `$(shell …)`, `include`s and `+` lines, so it runs only where the model
//! could run `make` itself (`run_command` allows it, without asking).
//!
//! A check that cannot run (no program, a timeout, the helper refusing,
//! output it cannot read) says nothing. One that fails on the file as it
//! was before the change with the same message says nothing either: a
//! file already broken is not blamed, as `tools/lang/check.rs` does.

use super::command::RunTempDir;
use super::policy::{self, CommandPolicy};
use super::status::{HelperPlan, NetBlock, SandboxCapabilities};
use super::CommandEnv;
use super::{ExecSpec, EXEC_FLAG};
use crate::config::Command;
use crate::procs::{Ending, Env, Io, Launch, Through};
use crate::toolcall::Change;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long one check may take.
const TIME_CAP: Duration = Duration::from_secs(5);
/// Output of a check kept: its first error is near the top.
const OUTPUT_CAP: usize = 64 * 1024;
/// Characters of an error message shown.
const MAX_MESSAGE: usize = 300;
/// Where a toolchain's argv takes the file's absolute path.
const PATH_ARG: &str = "{path}";
/// Where it takes the check's temp dir.
const TMP_ARG: &str = "{tmp}";

/// What a check reported: the tool, where and what. Also what the
/// in-process TOML and JSON parsers report (`tools/lang/check.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    /// The tool, as the model is told (`node --check`).
    pub tool: String,
    /// The file, as the model knows it.
    pub file: String,
    /// The line it names, from 1.
    pub line: Option<usize>,
    /// Its message, one line.
    pub message: String,
}

impl CheckError {
    /// The note the tool result carries. Without a line, the message is
    /// the tool's own line, which says where if the tool does.
    pub fn note(&self) -> String {
        let place = match self.line {
            Some(line) => format!("{}:{line}: ", self.file),
            None => String::new(),
        };
        format!(
            "{}: {place}{} (after this change; fix it so the check passes and the change still does what the task asks)",
            self.tool, self.message
        )
    }
}

/// How a tool's output is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// `  File "…", line N` … `SyntaxError: …`.
    Python,
    /// `…:N` … `SyntaxError: …`.
    Node,
    /// `…: line N: …`.
    Bash,
    /// `…:N: *** …` (errors of the file itself, not of its targets).
    Make,
    /// The user's checker: its first line of output.
    Plain,
}

/// A toolchain's check.
struct Toolchain {
    /// The file names or extensions it checks.
    names: &'static [&'static str],
    /// The tool, as the model is told.
    label: &'static str,
    /// The program, found on the caller's PATH.
    program: &'static str,
    /// Its arguments, with [`PATH_ARG`] and [`TMP_ARG`].
    args: &'static [&'static str],
    /// How its output is read.
    reader: Reader,
}

/// The toolchains, declared once.
const TOOLCHAINS: &[Toolchain] = &[
    Toolchain {
        names: &["py"],
        label: "py_compile",
        program: "python3",
        // -I: no project directory on sys.path (a `py_compile.py` there
        // is not run), no PYTHON* variables; the bytecode goes to {tmp}.
        args: &["-I", "-X", "pycache_prefix={tmp}", "-m", "py_compile", PATH_ARG],
        reader: Reader::Python,
    },
    Toolchain {
        names: &["js", "mjs", "cjs"],
        label: "node --check",
        program: "node",
        args: &["--check", "--", PATH_ARG],
        reader: Reader::Node,
    },
    Toolchain {
        names: &["sh", "bash"],
        label: "bash -n",
        program: "bash",
        args: &["-n", "--", PATH_ARG],
        reader: Reader::Bash,
    },
    Toolchain {
        names: &["Makefile", "makefile", "GNUmakefile", "mk"],
        label: "make -n",
        program: "make",
        args: &["-n", "-f", PATH_ARG],
        reader: Reader::Make,
    },
];

/// One check a session can run.
#[derive(Debug, Clone)]
struct Checker {
    /// The tool, as the model is told.
    label: String,
    /// The program, absolute, resolved when the session was built.
    program: PathBuf,
    /// Its argv after the program, with [`PATH_ARG`] and [`TMP_ARG`].
    args: Vec<String>,
    /// How its output is read.
    reader: Reader,
}

/// The checks a session runs after a change, by extension (lowercase)
/// or whole file name; resolved once when the session is built.
#[derive(Debug, Clone, Default)]
pub struct EditChecks {
    /// The checker of each extension or file name.
    by_name: BTreeMap<String, Checker>,
}

impl EditChecks {
    /// The checks of a session: the toolchains found on `path` (the
    /// caller's PATH; `make` only as `run_command` would run it, without
    /// asking) and the user's `commands`, none whose program lies in one of
    /// `writable` (the model could replace it). `env` gives `policy` and
    /// the base dir.
    pub fn resolve(commands: &BTreeMap<String, Command>, path: &OsStr, env: &CommandEnv, writable: &[PathBuf]) -> Self {
        let outside = |p: PathBuf| {
            let real = p.canonicalize().ok()?;
            (!writable.iter().any(|w| real.starts_with(w))).then_some(real)
        };
        let mut by_name = BTreeMap::new();
        for tool in TOOLCHAINS {
            let found = match tool.reader {
                Reader::Make => make_program(&env.policy, env.ask.is_some(), &env.base_dir),
                _ => policy::which(tool.program, path),
            };
            let Some(program) = found.and_then(outside) else { continue };
            let args = tool.args.iter().map(|a| a.to_string()).collect();
            let checker = Checker { label: tool.label.to_owned(), program, args, reader: tool.reader };
            by_name.extend(tool.names.iter().map(|n| (key(n), checker.clone())));
        }
        for (name, command) in commands {
            let program = command.program();
            let found = if program.contains('/') { Some(PathBuf::from(program)) } else { policy::which(program, path) };
            // A script it runs (`python3 lint.py`) is code as much as the program.
            let runs_writable = command.argv[1..].iter().filter(|a| !a.contains(PATH_ARG)).any(|a| {
                let file = env.base_dir.join(a);
                file.is_file() && outside(file).is_none()
            });
            let Some(resolved) = found.and_then(outside).filter(|_| !runs_writable) else {
                tracing::warn!(
                    name,
                    program,
                    "edit_check_commands: not found, or it or a file it names lies in a directory the model writes; skipped"
                );
                by_name.remove(&key(name));
                continue;
            };
            let mut args: Vec<String> = command.argv[1..].to_vec();
            if !args.iter().any(|a| a.contains(PATH_ARG)) {
                args.push(PATH_ARG.to_owned());
            }
            let label = Path::new(program).file_name().map_or(program.into(), |n| n.to_string_lossy().into_owned());
            by_name.insert(key(name), Checker { label, program: resolved, args, reader: Reader::Plain });
        }
        EditChecks { by_name }
    }

    /// The checker of `path`: by its whole name, else its extension.
    fn of(&self, path: &Path) -> Option<&Checker> {
        let name = path.file_name()?.to_str()?;
        let ext = path.extension().and_then(OsStr::to_str);
        self.by_name.get(&key(name)).or_else(|| ext.and_then(|e| self.by_name.get(&key(e))))
    }

    /// The note for `change`, a file a tool changed: the first error its
    /// check reports when the text before did not fail the same way.
    pub async fn note(&self, env: &CommandEnv, change: &Change, cancel: &CancellationToken) -> Option<String> {
        let path = change.path.as_path();
        let checker = self.of(path)?;
        let plan = env.check_plan.as_ref()?;
        let shown = path.strip_prefix(&env.base_dir).unwrap_or(path).display().to_string();
        let started = Instant::now();
        let after = run(checker, env, plan, path, None, cancel).await;
        tracing::debug!(tool = %checker.label, file = %shown, ms = started.elapsed().as_millis() as u64, "edit check");
        let (line, message) = after?;
        if let Some(old) = change.before.as_ref().and_then(|b| b.text(usize::MAX)) {
            let before = run(checker, env, plan, path, Some(old), cancel).await;
            if before.is_some_and(|(_, m)| m == message) {
                return None;
            }
        }
        Some(CheckError { tool: checker.label.clone(), file: shown, line, message }.note())
    }
}

/// A key of [`EditChecks::by_name`]: extensions and file names match
/// whatever their case, but `Makefile` and `makefile` are both names.
fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The `make` that `run_command` would run now without asking, if any.
fn make_program(policy: &CommandPolicy, asks: bool, base: &Path) -> Option<PathBuf> {
    (!asks).then(|| policy::check(&["make".to_owned()], policy, base).ok()).flatten()
}

/// The plan of a check: the commands' `plan` with writes only in the
/// check's temp dir (added at launch) and the network removed; `None`
/// unless Landlock confines writes and the kernel can remove the network.
pub fn check_plan(plan: Option<&HelperPlan>, caps: &SandboxCapabilities) -> Option<HelperPlan> {
    let mut plan = plan.filter(|p| p.landlock)?.clone();
    plan.net = match (plan.net, caps.user_namespaces, caps.seccomp) {
        (Some(net), _, _) => Some(net),
        (None, true, _) => Some(NetBlock::Namespace),
        (None, false, true) => Some(NetBlock::Seccomp),
        (None, false, false) => return None,
    };
    plan.deny_unix_sockets |= caps.seccomp;
    plan.landlock_writes = Some(Vec::new());
    Some(plan)
}

/// Run `checker` on `path`, or on `text` (the file before the change)
/// copied into the temp dir under the same name; the first error read
/// from its output, `None` when it passed or could not run.
async fn run(
    checker: &Checker,
    env: &CommandEnv,
    plan: &HelperPlan,
    path: &Path,
    text: Option<&str>,
    cancel: &CancellationToken,
) -> Option<(Option<usize>, String)> {
    let tmp = RunTempDir::create().ok()?;
    let checked = match text {
        Some(text) => {
            let copy = tmp.0.join(path.file_name()?);
            std::fs::write(&copy, text).ok()?;
            copy
        }
        None => path.to_owned(),
    };
    let launch = launch(checker, env, plan, (&checked, path), &tmp).ok()?;
    let merged = env.runner.run_merged(&launch, TIME_CAP, OUTPUT_CAP, cancel).await.ok()?;
    drop(tmp);
    match merged.ending {
        // 125: the helper could not confine it; 126, 127: no program.
        Ending::Exited(code) if code > 0 && !(125..=127).contains(&code) => {
            let output = String::from_utf8_lossy(&merged.output.bytes);
            first_error(checker.reader, &output, &checked)
        }
        _ => None,
    }
}

/// What to start: the helper with the check's plan, then the program with
/// its arguments on `checked` (the file, or its copy from before the
/// change). `make` runs in the directory of `file` with the temp dir as
/// its HOME; the others in the base dir.
fn launch(
    checker: &Checker,
    env: &CommandEnv,
    plan: &HelperPlan,
    (checked, file): (&Path, &Path),
    tmp: &RunTempDir,
) -> serde_json::Result<Launch> {
    let mut plan = plan.clone();
    plan.write_dirs.push(tmp.0.clone());
    plan.landlock_writes = Some(vec![tmp.0.clone()]);
    plan.max_processes = env.limits.processes;
    let spec = serde_json::to_string(&ExecSpec { program: checker.program.clone(), plan })?;
    let (path, dir) = (checked.to_string_lossy(), tmp.0.to_string_lossy());
    // The file's name is the model's: put it in last, so a `{tmp}` in it stays.
    let args = checker.args.iter().map(|a| a.replace(TMP_ARG, &dir).replace(PATH_ARG, &path));
    let argv = std::iter::once(checker.program.display().to_string()).chain(args).collect();
    let mut vars: Vec<(String, std::ffi::OsString)> = env
        .env
        .iter()
        .filter(|(k, _)| k != "TMPDIR" && (k != "HOME" || checker.reader != Reader::Make))
        .cloned()
        .collect();
    vars.push(("TMPDIR".to_owned(), tmp.0.clone().into_os_string()));
    let cwd = match checker.reader {
        Reader::Make => {
            vars.push(("HOME".to_owned(), tmp.0.clone().into_os_string()));
            file.parent().map(Path::to_owned)
        }
        _ => Some(env.base_dir.clone()),
    };
    Ok(Launch {
        program: checker.program.clone(),
        argv,
        cwd,
        env: Env::Exact(vars),
        io: Io::Merged,
        through: Some(Through { helper: env.helper.clone(), args: vec![EXEC_FLAG.to_owned(), spec] }),
        limits: Some(env.limits.now()),
    })
}

/// The first error in `output` of a check of `checked`: its line, when the
/// tool names one, and its message; `None` when none can be read.
fn first_error(reader: Reader, output: &str, checked: &Path) -> Option<(Option<usize>, String)> {
    let path = checked.to_string_lossy();
    let lines = || output.lines().map(str::trim_end);
    let (line, message) = match reader {
        Reader::Python => {
            let line = lines().find_map(|l| l.trim().strip_prefix("File ")?.rsplit_once(", line ")?.1.parse().ok());
            (line, lines().rfind(|l| is_error_line(l))?.to_owned())
        }
        Reader::Node => {
            let line = lines().next()?.strip_prefix(path.as_ref())?.strip_prefix(':')?.parse().ok();
            (line, lines().find(|l| is_error_line(l))?.to_owned())
        }
        Reader::Bash => {
            let rest = lines().find_map(|l| l.strip_prefix(path.as_ref())?.strip_prefix(": line "))?;
            let (n, message) = rest.split_once(": ")?;
            (n.parse().ok(), message.to_owned())
        }
        Reader::Make => {
            let rest = lines().find_map(|l| l.strip_prefix(path.as_ref())?.strip_prefix(':'))?;
            let (n, message) = rest.split_once(": *** ")?;
            (Some(n.parse().ok()?), message.trim_end_matches("  Stop.").to_owned())
        }
        Reader::Plain => {
            let first = lines().find(|l| !l.trim().is_empty())?;
            let name = checked.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
            (None, first.trim().replace(path.as_ref(), &name))
        }
    };
    Some((line, message.chars().take(MAX_MESSAGE).collect()))
}

/// Whether `line` is an exception's line, `SyntaxError: …`.
fn is_error_line(line: &str) -> bool {
    line.split_once(": ").is_some_and(|(name, _)| {
        name.ends_with("Error") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(reader: Reader, output: &str) -> Option<(Option<usize>, String)> {
        first_error(reader, output, Path::new("/p/a.x"))
    }

    #[test]
    fn each_toolchains_first_error_is_read_with_its_line() {
        let py = "  File \"/p/a.x\", line 2\n    def f(:\n          ^\nSyntaxError: invalid syntax\n";
        assert_eq!(read(Reader::Python, py), Some((Some(2), "SyntaxError: invalid syntax".into())));
        let node = "/p/a.x:4\nlet x=2;\n    ^\n\nSyntaxError: Identifier 'x' has already been declared\n    at wrapSafe (node:internal)\n\nNode.js v20\n";
        assert_eq!(
            read(Reader::Node, node),
            Some((Some(4), "SyntaxError: Identifier 'x' has already been declared".into()))
        );
        let bash = "/p/a.x: line 2: syntax error near unexpected token `)'\n/p/a.x: line 2: `  echo )'\n";
        assert_eq!(read(Reader::Bash, bash), Some((Some(2), "syntax error near unexpected token `)'".into())));
        let make = "/p/a.x:2: *** missing separator.  Stop.\n";
        assert_eq!(read(Reader::Make, make), Some((Some(2), "missing separator.".into())));
        assert_eq!(read(Reader::Plain, "\n/p/a.x:3: bad thing\nmore\n"), Some((None, "a.x:3: bad thing".into())));
    }

    #[test]
    fn output_that_names_no_error_of_the_file_is_not_read() {
        // A target make cannot build is not the Makefile's syntax.
        assert_eq!(read(Reader::Make, "make: *** No rule to make target 'x'.  Stop.\n"), None);
        // A shim that found no interpreter.
        assert_eq!(read(Reader::Python, "pyenv: python3: command not found\n"), None);
        assert_eq!(read(Reader::Node, "node: bad option: --check\n"), None);
    }

    #[test]
    fn the_note_names_the_tool_file_and_line() {
        let e = CheckError {
            tool: "node --check".into(),
            file: "a.js".into(),
            line: Some(3),
            message: "SyntaxError: Identifier 'topScores' has already been declared".into(),
        };
        assert!(e.note().starts_with("node --check: a.js:3: SyntaxError: Identifier 'topScores' has already been declared (after this change"), "{}", e.note());
    }

    #[test]
    fn a_check_plan_confines_writes_and_removes_the_network() {
        let caps =
            SandboxCapabilities { landlock_abi: Some(4), user_namespaces: true, seccomp: true, ..Default::default() };
        let base = HelperPlan {
            landlock: true,
            write_dirs: vec!["/p".into()],
            net: None,
            hide_paths: vec![],
            readonly_paths: vec![],
            pid_namespace: true,
            deny_unix_sockets: false,
            read_dirs: None,
            max_processes: None,
            home: None,
            landlock_writes: None,
        };
        let plan = check_plan(Some(&base), &caps).unwrap();
        assert_eq!((plan.net, plan.deny_unix_sockets), (Some(NetBlock::Namespace), true));
        assert_eq!(plan.landlock_writes, Some(Vec::new()));
        assert!(check_plan(Some(&HelperPlan { landlock: false, ..base.clone() }), &caps).is_none());
        assert!(check_plan(None, &caps).is_none());
        let no_net = SandboxCapabilities { user_namespaces: false, seccomp: false, ..caps };
        assert!(check_plan(Some(&base), &no_net).is_none());
    }

    #[test]
    fn a_users_checker_that_is_or_runs_a_file_the_model_writes_is_not_taken() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        std::fs::write(base.join("lint.py"), "").unwrap();
        std::fs::write(base.join("lint"), "").unwrap();
        let env = CommandEnv {
            policy: CommandPolicy::Off,
            base_dir: base.clone(),
            plan: None,
            helper: PathBuf::from("/nonexistent"),
            env: Vec::new(),
            runner: std::sync::Arc::new(crate::procs::ProcessRunner::new(1)),
            ask: None,
            limits: Default::default(),
            check_plan: None,
            edit_checks: EditChecks::default(),
        };
        let command =
            |argv: &[&str]| Command { argv: argv.iter().map(|a| a.to_string()).collect(), source_dir: base.clone() };
        let lint = base.join("lint").display().to_string();
        let commands = BTreeMap::from([
            ("a".to_owned(), command(&["/bin/sh", "-c", "true"])),
            ("b".to_owned(), command(&[&lint, "{path}"])),
            ("c".to_owned(), command(&["/bin/sh", "lint.py", "{path}"])),
        ]);
        let checks = EditChecks::resolve(&commands, OsStr::new("/nonexistent"), &env, std::slice::from_ref(&base));
        let names: Vec<&str> = checks.by_name.keys().map(String::as_str).collect();
        assert_eq!(names, ["a"], "no toolchain on this PATH, and b and c run files in the base dir");
        assert_eq!(checks.by_name["a"].args, ["-c", "true", PATH_ARG], "the path is appended");
        assert_eq!(checks.by_name["a"].label, "sh");
    }

    #[test]
    fn a_file_is_checked_by_its_name_before_its_extension() {
        let checker = |label: &str| Checker {
            label: label.into(),
            program: "/bin/true".into(),
            args: vec![],
            reader: Reader::Plain,
        };
        let mut checks = EditChecks::default();
        checks.by_name.insert(key("Makefile"), checker("make -n"));
        checks.by_name.insert(key("PY"), checker("py"));
        assert_eq!(checks.of(Path::new("/p/makefile")).unwrap().label, "make -n");
        assert_eq!(checks.of(Path::new("/p/x.Py")).unwrap().label, "py");
        assert!(checks.of(Path::new("/p/x.rs")).is_none());
    }
}
