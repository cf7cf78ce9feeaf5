//! Policy scripts pinned by SHA-256 (SPEC §6). When a session starts, the
//! code of every filter stage, hook, reviewer, `command` provider and MCP
//! server is hashed: the program, the script an interpreter runs (as in
//! `python3 ./f.py`) and source files among its arguments ([`classify`]).
//! Other files its arguments name are its data — a database, a log — which
//! it may write itself: they are protected from the model, never pinned.
//! Every spawn, and every call served by an already started process,
//! first checks that what would run is still byte-identical; a change, by
//! anyone, fails the call closed with both hashes in the message.
//!
//! The check re-hashes only when the file's identity changed: device,
//! inode, size, mtime and ctime are recorded with the hash, and any write
//! or replacement changes at least the ctime, which no unprivileged
//! process can set back. The path must still resolve to the same real
//! file (a re-pointed symlink fails), and every directory from that file
//! up to `/` must still be the same directory (device and inode): moving
//! a protected directory's parent aside and recreating the tree with an
//! identical script next to other modules fails too.

use super::ProcError;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Largest file hashed; a bigger "script" fails the check.
const MAX_PINNED_BYTES: u64 = 256 * 1024 * 1024;

/// One pinned file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pinned {
    /// The file as the script names it.
    pub path: PathBuf,
    /// What it resolved to (symlinks followed) when pinned.
    pub real: PathBuf,
    /// Hex SHA-256 of its contents when the session pinned it.
    pub sha256: String,
    /// Its identity then: (device, inode, size, mtime ns, ctime ns).
    stamp: (u64, u64, u64, i128, i128),
    /// Device and inode of every directory from `real`'s parent up to `/`.
    chain: Vec<(u64, u64)>,
}

fn stamp(meta: &std::fs::Metadata) -> (u64, u64, u64, i128, i128) {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (meta.dev(), meta.ino(), meta.size(), ns(meta.mtime(), meta.mtime_nsec()), ns(meta.ctime(), meta.ctime_nsec()))
}

/// Device and inode of each directory above `real`.
fn chain(real: &Path) -> std::io::Result<Vec<(u64, u64)>> {
    real.ancestors().skip(1).map(|d| std::fs::metadata(d).map(|m| (m.dev(), m.ino()))).collect()
}

/// Hex SHA-256 of a regular file's contents. Opened without blocking (a
/// FIFO cannot hang the daemon) and refused unless it is a regular file
/// of at most [`MAX_PINNED_BYTES`].
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_PINNED_BYTES {
        return Err(std::io::Error::other(format!("larger than {MAX_PINNED_BYTES} bytes")));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_PINNED_BYTES {
            return Err(std::io::Error::other(format!("larger than {MAX_PINNED_BYTES} bytes")));
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

impl Pinned {
    /// Pin `path` as it is now; `None` when it cannot be read.
    pub fn new(path: &Path) -> Option<Pinned> {
        let real = path.canonicalize().ok()?;
        let meta = std::fs::metadata(&real).ok()?;
        let sha256 = sha256_file(&real).ok()?;
        // A write between the stat and the read changes the ctime: the
        // next check then hashes again rather than trusting a stale stamp.
        let after = std::fs::metadata(&real).ok()?;
        let stamp = if stamp(&meta) == stamp(&after) { stamp(&meta) } else { (0, 0, 0, 0, 0) };
        let chain = chain(&real).ok()?;
        Some(Pinned { path: path.to_owned(), real, sha256, stamp, chain })
    }

    /// Hold this pin to the hash an earlier start of the same session
    /// recorded: a file that changed while the session was not in memory
    /// (or the daemon was down) then fails like any other change.
    pub fn expect(&mut self, sha256: &str) {
        if self.sha256 != sha256 {
            self.sha256 = sha256.to_owned();
            self.stamp = (0, 0, 0, 0, 0);
        }
    }

    /// Whether the file is still what was pinned, where it was pinned;
    /// the error names both hashes (or what else changed).
    pub fn verify(&self) -> Result<(), ProcError> {
        let changed = |now: String| ProcError::Changed {
            path: self.path.display().to_string(),
            pinned: self.sha256.clone(),
            now,
        };
        match self.path.canonicalize() {
            Ok(real) if real == self.real => {}
            Ok(real) => {
                return Err(changed(format!(
                    "a different file ({} instead of {})",
                    real.display(),
                    self.real.display()
                )))
            }
            Err(e) => return Err(changed(format!("unreadable ({e})"))),
        }
        if chain(&self.real).ok().as_ref() != Some(&self.chain) {
            return Err(changed(format!(
                "the same content in a directory that was moved or replaced ({})",
                self.real.parent().unwrap_or(Path::new("/")).display()
            )));
        }
        if std::fs::metadata(&self.real).is_ok_and(|m| stamp(&m) == self.stamp) {
            return Ok(());
        }
        let now = match sha256_file(&self.real) {
            Ok(h) if h == self.sha256 => return Ok(()),
            Ok(h) => h,
            Err(e) => format!("unreadable ({e})"),
        };
        Err(changed(now))
    }
}

/// Check every pin; the first change found is the error.
pub fn verify_all(pins: &[Pinned]) -> Result<(), ProcError> {
    pins.iter().try_for_each(Pinned::verify)
}

/// The executable to run for `argv[0]`: the pinned program (so a PATH
/// lookup at exec time cannot pick another file), else the name itself.
pub fn executable<'a>(program: &'a str, pins: &'a [Pinned]) -> &'a Path {
    match pins.first() {
        Some(p) if !program.contains('/') && p.path.file_name().is_some_and(|n| n == program) => &p.path,
        _ => Path::new(program),
    }
}

/// Find `program` as the OS would: a path as given, a bare name on
/// `path` (the caller's `PATH`).
pub fn locate(program: &str, path: &OsStr) -> Option<PathBuf> {
    let executable = |p: &Path| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    // Relative PATH entries (`.`, empty) would mean the daemon's working
    // directory here and the script's at exec: never use them.
    std::env::split_paths(path).filter(|d| d.is_absolute()).map(|d| d.join(program)).find(|p| executable(p))
}

/// The files a command line names, by role: `code` is what runs — the
/// program, the script an interpreter runs (`python3 x.py`, `node x.mjs`,
/// `uv run x.py`, `bash x.sh`), code an interpreter loads by flag
/// (`node --require x.js`, `awk -f x.awk`) and any file with a source
/// extension — and is pinned; `data` is every other argument naming a
/// file (a database, a log, a rules file), which the program may write
/// itself: never hash-checked, only protected from the model (see
/// `Pipeline::protection`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ArgFiles {
    /// What runs: the located program first, then scripts and modules.
    pub code: Vec<PathBuf>,
    /// Other files the arguments name, existing or not (an argument that
    /// looks like a path in an existing directory).
    pub data: Vec<PathBuf>,
}

/// How an interpreter reads its command line.
struct Interpreter {
    /// Program names (a version suffix such as `3.11` is ignored).
    names: &'static [&'static str],
    /// Flags whose value is a separate argument that is not code.
    takes_value: &'static [&'static str],
    /// Flags whose value names code it loads.
    code_value: &'static [&'static str],
    /// Flags after which no script file follows (code given inline or by
    /// module name).
    inline: &'static [&'static str],
    /// Words allowed before the script (`deno run`, `bun run`).
    subcommands: &'static [&'static str],
}

/// The interpreters whose first operand is code. Add one here, with its
/// flags, when a policy script may be run through it.
const INTERPRETERS: &[Interpreter] = &[
    Interpreter {
        names: &["python", "python3", "python2", "pypy", "pypy3"],
        takes_value: &["-W", "-X", "--check-hash-based-pycs"],
        code_value: &[],
        inline: &["-c", "-m"],
        subcommands: &[],
    },
    Interpreter {
        names: &["node", "nodejs", "bun", "deno", "tsx", "ts-node"],
        takes_value: &["--env-file", "--input-type", "-C", "--conditions", "--title", "--config", "--import-map"],
        code_value: &["-r", "--require", "--import", "--loader", "--experimental-loader", "--preload"],
        inline: &["-e", "--eval", "-p", "--print"],
        subcommands: &["run", "serve"],
    },
    Interpreter {
        names: &["sh", "bash", "dash", "zsh", "ksh", "mksh", "fish"],
        takes_value: &["-o", "-O", "+O", "+o"],
        code_value: &[],
        inline: &["-c"],
        subcommands: &[],
    },
    Interpreter {
        names: &["ruby", "perl", "lua", "luajit", "php", "Rscript", "tclsh", "julia", "elixir", "raku", "groovy"],
        takes_value: &["-I", "-C", "-E", "-M", "-l", "-d", "-c"],
        code_value: &["-r", "-f"],
        inline: &["-e", "-E", "--eval"],
        subcommands: &[],
    },
    Interpreter {
        names: &["awk", "gawk", "mawk", "nawk"],
        takes_value: &["-v", "-F"],
        code_value: &["-f", "--file"],
        // Without -f, the first operand is the program text itself.
        inline: &[],
        subcommands: &[],
    },
    Interpreter {
        names: &["java"],
        takes_value: &["-cp", "-classpath", "--class-path", "-p", "--module-path"],
        code_value: &["-jar", "-javaagent"],
        inline: &["-m", "--module"],
        subcommands: &[],
    },
];

/// Programs that run the program named by their first operand:
/// `env [VAR=value…] prog`, `uv run prog`, `timeout 5 prog`.
const WRAPPERS: &[(&str, &[&str])] = &[
    ("env", &[]),
    ("nice", &[]),
    ("nohup", &[]),
    ("timeout", &[]),
    ("exec", &[]),
    ("uv", &["run"]),
    ("poetry", &["run"]),
    ("pipenv", &["run"]),
    ("pdm", &["run"]),
    ("hatch", &["run"]),
    ("rye", &["run"]),
];

/// File extensions of source code: such a file among the arguments is
/// pinned whatever its position.
const CODE_EXTENSIONS: &[&str] = &[
    "py", "pyw", "pyc", "js", "mjs", "cjs", "ts", "mts", "cts", "jsx", "tsx", "sh", "bash", "zsh", "ksh", "fish", "rb",
    "pl", "pm", "php", "lua", "jar", "r", "tcl", "awk", "sed", "jl", "exs", "ex", "groovy", "ps1", "wasm", "so",
    "dylib",
];

/// A program's name without directory and version suffix (`python3.11`
/// → `python3`).
fn program_name(program: &str) -> &str {
    let name = Path::new(program).file_name().and_then(OsStr::to_str).unwrap_or(program);
    match name.split_once('.') {
        Some((stem, ver)) if ver.chars().all(|c| c.is_ascii_digit() || c == '.') => stem,
        _ => name,
    }
}

fn interpreter(program: &str) -> Option<&'static Interpreter> {
    let name = program_name(program);
    INTERPRETERS.iter().find(|i| i.names.contains(&name))
}

fn has_code_extension(path: &Path) -> bool {
    path.extension().and_then(OsStr::to_str).is_some_and(|e| CODE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// `arg` as a path from `cwd`, when it names an existing regular file or
/// looks like a file in an existing directory (`./data.db`, `log.txt`) or
/// under a path (`state/x.db`, whose directory may not exist yet);
/// not a flag, a URL, a variable assignment or a bare word.
fn as_path(arg: &str, cwd: &Path) -> Option<PathBuf> {
    if arg.is_empty() || arg.starts_with('-') || arg.contains("://") {
        return None;
    }
    // Without `.` components: `./data.db` is `<cwd>/data.db`.
    let p: PathBuf = cwd.join(arg).components().collect();
    if p.is_file() {
        return Some(p);
    }
    let name = arg.rsplit('/').next().unwrap_or(arg);
    let has_extension = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    let looks_like_file = arg.contains('/') || has_extension;
    // A file in a directory that does not exist yet (`state/x.db`, an
    // absolute path) is data too: the program will make it, and the model
    // must not make it first.
    let in_a_dir = !p.is_dir() && (p.parent().is_some_and(Path::is_dir) || (arg.contains('/') && has_extension));
    (looks_like_file && in_a_dir && !arg.contains('=')).then_some(p)
}

impl ArgFiles {
    fn code(&mut self, p: PathBuf) {
        if !self.code.contains(&p) {
            self.code.push(p);
        }
    }

    fn data(&mut self, p: PathBuf) {
        if !self.data.contains(&p) && !self.code.contains(&p) {
            self.data.push(p);
        }
    }

    /// An argument that is not the script: a source file is code, any
    /// other file is data.
    fn other(&mut self, arg: &str, cwd: &Path) {
        // `--flag=value` carries its value.
        let value = match arg.split_once('=') {
            Some((flag, v)) if flag.starts_with('-') => v,
            _ => arg,
        };
        if let Some(p) = as_path(value, cwd) {
            if p.is_file() && has_code_extension(&p) {
                self.code(p);
            } else {
                self.data(p);
            }
        }
    }
}

/// The files `argv` names, by role ([`ArgFiles`]): relative arguments
/// are taken from `cwd` (where the script runs), a bare program name is
/// looked up on `path`.
pub fn classify(argv: &[String], cwd: &Path, path: &OsStr) -> ArgFiles {
    let mut out = ArgFiles::default();
    let Some(first) = argv.first() else { return out };
    if let Some(p) = locate(first, path) {
        out.code(p);
    }
    let mut rest = &argv[1..];
    let mut program = first.as_str();
    // Through a wrapper, the program is the first operand it runs.
    while let Some((_, subs)) = WRAPPERS.iter().find(|(w, _)| *w == program_name(program)) {
        let mut i = 0;
        while i < rest.len() && (rest[i].starts_with('-') || rest[i].contains('=') || subs.contains(&rest[i].as_str()))
        {
            i += 1;
        }
        // `timeout 5 prog`: a duration before the program.
        if program_name(program) == "timeout"
            && rest.get(i).is_some_and(|a| a.starts_with(|c: char| c.is_ascii_digit()))
        {
            i += 1;
        }
        let Some(next) = rest.get(i) else { return out };
        if let Some(p) = locate(next, path).or_else(|| as_path(next, cwd).filter(|p| p.is_file())) {
            out.code(p);
        }
        program = next;
        rest = &rest[i + 1..];
    }
    let mut script_seen = false;
    match interpreter(program) {
        Some(interp) => {
            let mut args = rest.iter().enumerate();
            let mut first_operand = true;
            while let Some((i, arg)) = args.next() {
                let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
                if script_seen || !first_operand {
                    out.other(arg, cwd);
                } else if interp.inline.contains(&flag) {
                    // Inline code or a module: what follows are its arguments.
                    first_operand = false;
                    if !arg.contains('=') {
                        args.next();
                    }
                } else if interp.code_value.contains(&flag) {
                    let value = match arg.split_once('=') {
                        Some((_, v)) => Some(v.to_owned()),
                        None => args.next().map(|(_, v)| v.clone()),
                    };
                    if let Some(p) = value.and_then(|v| as_path(&v, cwd)).filter(|p| p.is_file()) {
                        out.code(p);
                    }
                    // `awk -f prog`, `java -jar app.jar`: that was the script.
                    script_seen |= ["-f", "--file", "-jar"].contains(&flag);
                } else if interp.takes_value.contains(&flag) {
                    if let Some((_, v)) = if arg.contains('=') { None } else { args.next() } {
                        out.other(v, cwd);
                    }
                } else if arg.starts_with('-') || (i == 0 && interp.subcommands.contains(&arg.as_str())) {
                    out.other(arg, cwd);
                } else if interp.names.contains(&"awk") && !rest.iter().any(|a| a == "-f" || a.starts_with("--file")) {
                    // awk's program text.
                    first_operand = false;
                } else {
                    script_seen = true;
                    if let Some(p) = as_path(arg, cwd).filter(|p| p.is_file()) {
                        out.code(p);
                    }
                }
            }
        }
        None => rest.iter().for_each(|a| out.other(a, cwd)),
    }
    out
}

/// The data files `argv` names ([`ArgFiles::data`]), relative ones taken
/// from `cwd`.
pub fn data_of(argv: &[String], cwd: &Path) -> Vec<PathBuf> {
    classify(argv, cwd, OsStr::new("")).data
}

/// Pin every file `argv` runs (its [`ArgFiles::code`]).
pub fn pin_argv(argv: &[String], cwd: &Path, path: &OsStr) -> Vec<Pinned> {
    classify(argv, cwd, path).code.iter().filter_map(|p| Pinned::new(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn path() -> std::ffi::OsString {
        std::env::var_os("PATH").unwrap_or_default()
    }

    #[test]
    fn the_program_and_a_script_argument_are_pinned_flags_are_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.py"), "print(1)").unwrap();
        let pins = pin_argv(&argv(&["sh", "-c", "./f.py", "f.py", "missing.py"]), d.path(), &path());
        let paths: Vec<_> = pins.iter().map(|p| p.path.clone()).collect();
        assert_eq!(paths.len(), 2, "{paths:?}");
        assert!(paths[0].ends_with("sh"));
        assert_eq!(paths[1], d.path().join("f.py"));
        assert_eq!(pins[1].sha256, hex::encode(Sha256::digest(b"print(1)")));
    }

    #[test]
    fn an_unchanged_file_verifies_and_a_rewritten_one_names_both_hashes() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.py");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        pin.verify().unwrap();
        std::fs::write(&f, "b").unwrap();
        let err = pin.verify().unwrap_err().to_string();
        assert!(err.contains(&hex::encode(Sha256::digest(b"a"))), "{err}");
        assert!(err.contains(&hex::encode(Sha256::digest(b"b"))), "{err}");
        assert!(err.contains("start a new session"), "{err}");
    }

    #[test]
    fn a_moved_parent_directory_or_a_repointed_symlink_fails_even_with_the_same_content() {
        let d = tempfile::tempdir().unwrap();
        let tools = d.path().join("tools/filters");
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("f.py"), "a").unwrap();
        let pin = Pinned::new(&tools.join("f.py")).unwrap();
        std::fs::rename(d.path().join("tools"), d.path().join("tools2")).unwrap();
        std::fs::create_dir_all(&tools).unwrap();
        std::fs::write(tools.join("f.py"), "a").unwrap();
        let err = pin.verify().unwrap_err().to_string();
        assert!(err.contains("moved or replaced"), "{err}");

        std::fs::write(d.path().join("copy.py"), "a").unwrap();
        std::os::unix::fs::symlink(tools.join("f.py"), d.path().join("link")).unwrap();
        let pin = Pinned::new(&d.path().join("link")).unwrap();
        pin.verify().unwrap();
        std::fs::remove_file(d.path().join("link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("copy.py"), d.path().join("link")).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("a different file"));
    }

    #[test]
    fn a_fifo_or_a_device_fails_the_check_instead_of_hanging() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        std::fs::remove_file(&f).unwrap();
        nix::unistd::mkfifo(&f, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("not a regular file"));
        assert!(sha256_file(Path::new("/dev/zero")).is_err());
    }

    #[test]
    fn a_bare_program_runs_from_the_pinned_path() {
        let pins = pin_argv(&["sh".to_owned()], Path::new("/"), &path());
        assert_eq!(executable("sh", &pins), pins[0].path.as_path());
        assert_eq!(executable("./x", &pins), Path::new("./x"));
    }

    #[test]
    fn a_file_replaced_by_rename_or_removed_fails_and_a_same_content_rewrite_passes() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f.py");
        std::fs::write(&f, "a").unwrap();
        let pin = Pinned::new(&f).unwrap();
        std::fs::write(d.path().join("g"), "a").unwrap();
        std::fs::rename(d.path().join("g"), &f).unwrap();
        pin.verify().unwrap();
        std::fs::write(d.path().join("g"), "evil").unwrap();
        std::fs::rename(d.path().join("g"), &f).unwrap();
        assert!(pin.verify().is_err());
        std::fs::remove_file(&f).unwrap();
        assert!(pin.verify().unwrap_err().to_string().contains("unreadable"));
    }

    fn code_and_data(a: &[&str], cwd: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let files = classify(&argv(a), cwd, &path());
        (files.code, files.data)
    }

    #[test]
    fn an_interpreters_script_is_code_and_the_files_it_is_given_are_data() {
        let d = tempfile::tempdir().unwrap();
        let cwd = d.path();
        for f in ["server.py", "data.db", "rules.json", "hook.js", "main.mjs", "tool"] {
            std::fs::write(cwd.join(f), "x").unwrap();
        }
        let (code, data) =
            code_and_data(&["python3", "-u", "server.py", "--db-path", "./data.db", "--log=out.log"], cwd);
        assert!(code[0].ends_with("python3") && code[1] == cwd.join("server.py") && code.len() == 2, "{code:?}");
        assert_eq!(data, [cwd.join("data.db"), cwd.join("out.log")]);
        // A module run by name or inline code has no script file.
        let (code, data) = code_and_data(&["python3", "-m", "mod", "data.db"], cwd);
        assert_eq!((code.len(), data), (1, vec![cwd.join("data.db")]));
        // Code loaded by flag, and a source file anywhere, is code.
        let (code, data) = code_and_data(&["node", "--require", "hook.js", "main.mjs", "rules.json"], cwd);
        assert_eq!(&code[1..], [cwd.join("hook.js"), cwd.join("main.mjs")]);
        assert_eq!(data, [cwd.join("rules.json")]);
        // Through a wrapper, the program it runs is code.
        let (code, data) = code_and_data(&["env", "A=1", "python3", "server.py", "data.db"], cwd);
        assert!(code.iter().any(|p| p.ends_with("python3")) && code.contains(&cwd.join("server.py")), "{code:?}");
        assert_eq!(data, [cwd.join("data.db")]);
        let (code, _) = code_and_data(&["uv", "run", "server.py"], cwd);
        assert_eq!(code.last(), Some(&cwd.join("server.py")));
        // A program that is not an interpreter: its file arguments are data.
        std::fs::set_permissions(cwd.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let tool = cwd.join("tool").display().to_string();
        let (code, data) = code_and_data(&[&tool, "rules.json", "new.sqlite", "mcp-server-x", "@scope/pkg"], cwd);
        assert_eq!(code, [cwd.join("tool")]);
        assert_eq!(data, [cwd.join("rules.json"), cwd.join("new.sqlite")], "package names are not files");
        // awk's program text is not a file; -f names one.
        std::fs::write(cwd.join("p.awk"), "x").unwrap();
        let (code, data) = code_and_data(&["awk", "-f", "p.awk", "rules.json"], cwd);
        assert_eq!((&code[1..], data), (&[cwd.join("p.awk")][..], vec![cwd.join("rules.json")]));
        let (code, _) = code_and_data(&["awk", "{print}", "rules.json"], cwd);
        assert_eq!(code.len(), 1);
    }

    #[test]
    fn a_data_file_the_program_rewrites_is_never_pinned() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.py"), "print(1)").unwrap();
        std::fs::write(d.path().join("log.txt"), "").unwrap();
        let pins = pin_argv(&argv(&["python3", "f.py", "--log", "log.txt"]), d.path(), &path());
        assert_eq!(pins.len(), 2);
        std::fs::write(d.path().join("log.txt"), "written by the script").unwrap();
        verify_all(&pins).unwrap();
    }
}
