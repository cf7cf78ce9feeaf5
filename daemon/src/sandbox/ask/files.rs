//! The files a command would run beyond the text of its arguments: the
//! script an interpreter runs (`python3 x.py`, `bash x.sh`, `./x.sh`,
//! through `env` or `uv run` too: `procs::pin::classify`, the same rule
//! that pins policy scripts), the project files a build or test tool
//! reads and runs (a Makefile, `package.json` scripts, `conftest.py`,
//! `build.rs`, …: [`PROJECT_FILES`]) and, for git, the repository's
//! config and hooks. Which of them changed during the session is
//! [`super::changes`]'s to say.

use super::bucket::program_name;
use super::lists::RUNNERS;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The files a tool reads and runs, relative to the directory it works
/// in; a name starting with `**/` is looked for in subdirectories too
/// ([`MAX_DEPTH`] levels), one starting with `~/` in the command's HOME.
/// Add a tool here with the files it runs.
pub const PROJECT_FILES: &[(&[&str], &[&str])] = &[
    (&["git"], &["~/.gitconfig", "~/.config/git/config"]),
    (&["make", "gmake"], &["GNUmakefile", "makefile", "Makefile"]),
    (
        &["npm", "pnpm", "yarn", "bun", "npx"],
        &["package.json", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs", "bunfig.toml", "~/.npmrc"],
    ),
    (
        &["pytest", "py.test"],
        &["conftest.py", "**/conftest.py", "pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini"],
    ),
    (&["tox"], &["tox.ini", "pyproject.toml", "setup.py", "setup.cfg", "conftest.py"]),
    (&["nox"], &["noxfile.py"]),
    (&["pip", "pip3", "uv", "poetry", "pdm", "hatch", "build"], &["setup.py", "pyproject.toml", "setup.cfg"]),
    (
        &["cargo"],
        &[
            "Cargo.toml",
            "build.rs",
            "**/build.rs",
            ".cargo/config.toml",
            ".cargo/config",
            "rust-toolchain.toml",
            "~/.cargo/config.toml",
        ],
    ),
    (&["just"], &["justfile", "Justfile", ".justfile"]),
    (&["rake"], &["Rakefile", "rakefile", "Rakefile.rb"]),
    (&["cmake"], &["CMakeLists.txt"]),
    (&["ninja"], &["build.ninja"]),
    (&["meson"], &["meson.build"]),
    (&["gradle", "gradlew"], &["build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"]),
    (&["mvn"], &["pom.xml"]),
    (&["bundle"], &["Gemfile"]),
    (&["composer"], &["composer.json"]),
    (&["deno"], &["deno.json", "deno.jsonc"]),
];

/// Programs that never run a file named among their operands: a source
/// file there is data (their script files, `awk -f`, `sed -f`, are in
/// [`FILE_OPTIONS`]).
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "less",
    "more",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "diff",
    "cmp",
    "comm",
    "cp",
    "mv",
    "rm",
    "ls",
    "stat",
    "file",
    "touch",
    "chmod",
    "ln",
    "mkdir",
    "rmdir",
    "git",
    "sed",
    "gsed",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "tar",
    "zip",
    "unzip",
    "gzip",
    "gunzip",
    "xz",
    "zstd",
    "find",
    "sort",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "sha256sum",
    "sha1sum",
    "md5sum",
    "du",
    "echo",
    "printf",
    "patch",
    "tee",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "jq",
    "paste",
    "column",
    "fold",
    "iconv",
    "strings",
];
/// How deep `**/` looks, and how many directories it reads at most.
const MAX_DEPTH: usize = 3;
const MAX_DIRS: usize = 400;
/// Directories `**/` does not enter.
const SKIP_DIRS: &[&str] = &["node_modules", "target", "venv", "__pycache__", "dist", "build"];
/// Options naming the directory a tool works in, or a file it reads.
const DIR_OPTIONS: &[&str] = &["-C", "--directory", "--dir", "--cwd", "--prefix", "--work-tree", "--git-dir"];
const FILE_OPTIONS: &[(&[&str], &[&str])] = &[
    (&["make", "gmake"], &["-f", "--file", "--makefile"]),
    (&["just"], &["-f", "--justfile"]),
    (&["rake"], &["-f", "--rakefile"]),
    (&["cargo"], &["--manifest-path"]),
    (&["awk", "gawk", "mawk", "nawk"], &["-f", "--file", "-E", "--exec", "-i", "--include"]),
    (&["sed", "gsed"], &["-f", "--file"]),
];

/// Every file `argv` would run that the model could have written,
/// relative ones taken from `base` (the command's working directory),
/// bare programs found on the `PATH` of `env` (the command's
/// environment), `~/` in its `HOME`. Missing files are included: one that
/// appears later is a change.
pub fn code_files(argv: &[String], base: &Path, env: &[(String, OsString)]) -> Vec<PathBuf> {
    let var = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_os_str());
    let (path, home) = (var("PATH").unwrap_or_default(), var("HOME").map(Path::new));
    let mut out: Vec<PathBuf> = Vec::new();
    if argv.is_empty() {
        return out;
    }
    let mut add = |p: PathBuf| {
        // Without `.` components: `./x.sh` is `<base>/x.sh`.
        let p: PathBuf = base.join(p).components().collect();
        if !out.contains(&p) {
            out.push(p);
        }
    };
    let words: Vec<&str> = argv.iter().map(String::as_str).collect();
    // A program given by path (`./x.sh`) is found from the command's directory.
    if words.first().is_some_and(|w| w.contains('/')) {
        add(PathBuf::from(words[0]));
    }
    let (tool, args) = tool(&words);
    // A program that only reads, copies or removes its operands runs none
    // of them (`cat x.py`, `git add x.py`).
    if !READERS.contains(&tool) {
        crate::procs::pin::classify(argv, base, path).code.into_iter().for_each(&mut add);
    }
    let (dirs, files) = places(base, tool, args);
    files.into_iter().for_each(&mut add);
    // `python3 -m X` runs `./X.py` (or the package `./X/`) before any installed X.
    if let Some(module) = module(&words) {
        let path = module.replace('.', "/");
        ["{}.py", "{}/__init__.py", "{}/__main__.py"].iter().for_each(|f| add(PathBuf::from(f.replace("{}", &path))));
    }
    if tool == "git" {
        dirs.iter().flat_map(|d| git_files(d)).for_each(&mut add);
    }
    for (_, names) in PROJECT_FILES.iter().filter(|(tools, _)| tools.contains(&tool)) {
        for dir in &dirs {
            for name in *names {
                if let Some(name) = name.strip_prefix("**/") {
                    below(dir, name).into_iter().for_each(&mut add);
                } else if let Some(name) = name.strip_prefix("~/") {
                    home.into_iter().for_each(|h| add(h.join(name)));
                } else {
                    add(dir.join(name));
                }
            }
        }
    }
    out
}

/// The tool that really runs: past wrappers (`env`, `timeout 5`, `nice
/// -n 5`, `xargs`), runners (`uv run`) and `python -m`; and its arguments.
fn tool<'a, 'b>(words: &'b [&'a str]) -> (&'a str, &'b [&'a str]) {
    let mut at = 0;
    loop {
        let name = program_name(words[at]);
        let skip = if super::risky::WRAPPERS.contains(&name) {
            let value = |w: &str| w.starts_with('-') || w.contains('=') || w.starts_with(|c: char| c.is_ascii_digit());
            1 + words[at + 1..].iter().take_while(|w| value(w)).count()
        } else if (RUNNERS.contains(&name) && words.get(at + 1) == Some(&"run"))
            || (name.starts_with("python") && words.get(at + 1) == Some(&"-m"))
        {
            2
        } else {
            return (name, &words[at + 1..]);
        };
        if at + skip >= words.len() {
            return (name, &words[at + 1..]);
        }
        at += skip;
    }
}

/// The module `python -m` runs, wherever it sits behind wrappers.
fn module<'a>(words: &[&'a str]) -> Option<&'a str> {
    let at = words.iter().position(|w| *w == "-m")?;
    program_name(words.get(at.checked_sub(1)?)?).starts_with("python").then(|| words.get(at + 1).copied())?
}

/// The directories a tool works in (`base`, and any `-C dir`) and the
/// files its options name (`make -f x.mk`, `cargo --manifest-path`).
fn places(base: &Path, tool: &str, args: &[&str]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut dirs, mut files) = (vec![base.to_owned()], Vec::new());
    let file_options = FILE_OPTIONS.iter().filter(|(tools, _)| tools.contains(&tool)).flat_map(|(_, o)| o.iter());
    let file_options: Vec<&str> = file_options.copied().collect();
    for (i, a) in args.iter().enumerate() {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ if a.starts_with("-C") && a.len() > 2 => ("-C", Some(&a[2..])),
            _ => (*a, args.get(i + 1).copied()),
        };
        let Some(value) = value else { continue };
        if DIR_OPTIONS.contains(&flag) {
            let dir = base.join(value);
            // `--git-dir` names the repository itself.
            if flag == "--git-dir" {
                files.extend(repository_files(&dir));
            }
            dirs.push(dir);
        } else if file_options.contains(&flag) {
            let file = base.join(value);
            if flag == "--manifest-path" {
                dirs.extend(file.parent().map(Path::to_owned));
            }
            files.push(file);
        }
    }
    (dirs, files)
}

/// Files named `name` below `dir` (not `dir` itself), at most
/// [`MAX_DEPTH`] levels down, hidden and build directories skipped.
fn below(dir: &Path, name: &str) -> Vec<PathBuf> {
    let (mut found, mut queue, mut read) = (Vec::new(), vec![(dir.to_owned(), 0)], 0);
    while let Some((d, depth)) = queue.pop() {
        read += 1;
        if depth >= MAX_DEPTH || read > MAX_DIRS {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let file_name = e.file_name();
            let Some(n) = file_name.to_str() else { continue };
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && !n.starts_with('.') && !SKIP_DIRS.contains(&n) {
                queue.push((e.path(), depth + 1));
            } else if n == name && depth > 0 {
                found.push(e.path());
            }
        }
    }
    found
}

/// git's files that run code for a command started in `dir`: the
/// repository found from there (`.git`, a directory, or a file naming
/// one), its config and hooks, and the hooks its `core.hooksPath` names.
fn git_files(dir: &Path) -> Vec<PathBuf> {
    let Some(top) = dir.ancestors().find(|d| d.join(".git").symlink_metadata().is_ok()) else { return Vec::new() };
    let dot_git = top.join(".git");
    let mut out = Vec::new();
    let repo = if dot_git.is_dir() {
        Some(dot_git)
    } else {
        // A `.git` file says where the repository is: it counts as code.
        out.push(dot_git.clone());
        linked_repository(&dot_git)
    };
    if let Some(repo) = repo {
        out.extend(repository_files(&repo));
        // A linked worktree shares the main repository's config and hooks.
        if let Ok(common) = crate::beneath::read_small(&repo.join("commondir"), 1 << 16) {
            out.extend(repository_files(&repo.join(common.trim())));
        }
        if let Some(hooks) = hooks_path(&repo.join("config")) {
            out.extend(entries(&top.join(hooks)));
        }
    }
    out
}

/// The repository a `.git` file names (`gitdir: path`).
fn linked_repository(dot_git: &Path) -> Option<PathBuf> {
    let text = crate::beneath::read_small(dot_git, 1 << 16).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(dot_git.parent()?.join(target))
}

/// A repository's config and every file in its hooks directory.
fn repository_files(repo: &Path) -> Vec<PathBuf> {
    let mut out = vec![repo.join("config")];
    out.extend(entries(&repo.join("hooks")));
    out
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    read.flatten().map(|e| e.path()).collect()
}

/// `core.hooksPath` in a git config file.
fn hooks_path(config: &Path) -> Option<String> {
    let text = crate::beneath::read_small(config, 1 << 20).ok()?;
    let mut in_core = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_core = line.trim_start_matches('[').trim_end_matches(']').trim().eq_ignore_ascii_case("core");
        } else if let Some((k, v)) = line.split_once('=').filter(|_| in_core) {
            if k.trim().eq_ignore_ascii_case("hookspath") {
                return Some(v.trim().trim_matches('"').to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(argv: &[&str], base: &Path) -> Vec<String> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let rel = |p: PathBuf| p.strip_prefix(base).map(|r| r.display().to_string()).unwrap_or_default();
        let env = [("HOME".to_owned(), base.join("home").into_os_string())];
        code_files(&argv, base, &env).into_iter().map(rel).filter(|s| !s.is_empty()).collect()
    }

    #[test]
    fn scripts_project_files_and_git_hooks_are_what_a_command_runs() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path();
        for f in
            ["ok.py", "x.sh", "Makefile", "package.json", "sub/mk/other.mk", "a/b/conftest.py", ".git/hooks/pre-commit"]
        {
            std::fs::create_dir_all(base.join(f).parent().unwrap()).unwrap();
            std::fs::write(base.join(f), "x").unwrap();
        }
        std::fs::write(base.join(".git/config"), "[core]\n\thooksPath = .githooks\n").unwrap();
        assert_eq!(files(&["python3", "ok.py"], base), ["ok.py"]);
        assert_eq!(files(&["./x.sh"], base), ["x.sh"]);
        assert!(files(&["env", "A=1", "bash", "x.sh"], base).contains(&"x.sh".to_owned()));
        assert_eq!(files(&["make", "test"], base), ["GNUmakefile", "makefile", "Makefile"]);
        assert!(files(&["make", "-f", "sub/mk/other.mk"], base).contains(&"sub/mk/other.mk".to_owned()));
        assert!(files(&["timeout", "60", "npm", "test"], base).contains(&"package.json".to_owned()));
        assert!(files(&["python3", "-m", "pytest"], base).contains(&"a/b/conftest.py".to_owned()));
        assert!(files(&["python3", "-m", "pytest"], base).contains(&"pytest.py".to_owned()), "a module shadowing it");
        assert!(!files(&["rm", "-f", "ok.py"], base).contains(&"ok.py".to_owned()), "rm runs nothing");
        let git = files(&["git", "status"], base);
        for f in [".git/config", ".git/hooks/pre-commit", "home/.gitconfig"] {
            assert!(git.contains(&f.to_owned()), "{f}: {git:?}");
        }
        assert_eq!(hooks_path(&base.join(".git/config")).as_deref(), Some(".githooks"));
    }
}
