//! What an "allow always" answer approves: the command as the user saw
//! it, not a bucket of commands like it.
//!
//! A command's *shape* is its argv with each plain path inside the project
//! replaced by one placeholder, and every other word kept exactly: the
//! program, every option, every option's value, every subcommand, every
//! word that is not such a path. An "always" is kept for that shape, and a
//! later command is allowed without a question only when its shape is the
//! same; any option or argument the user never saw (`sort
//! --compress-program=sh` after `sort data.txt`, `python3 -m tool` after
//! `python3 -m pytest`, `gdb -ex 'shell …'` after `gdb -batch prog`) makes
//! another shape, which is asked, naming the words that are new. No list
//! of dangerous programs or options is consulted: the table of risky uses
//! (`risky.rs`) only explains the question.
//!
//! A word is a plain path inside the project when it is not an option
//! (`-…`), holds no `=` (a setting, or an option's value), does not follow
//! an option without `=` (it may be that option's value: `-m mod`, `-ex
//! cmd`, `-o out`), is not the program's subcommand (the first such word,
//! unless it has a `/` or a `.`), holds no `:` or `@` and does not start
//! with `+` (a URL, a package `@scope/name`, a git refspec), stays inside
//! the base dir once `.` and `..` are resolved, holds no control
//! character, and names a file or directory that exists there now with no
//! symlink on its way (`core.fsmonitor`, a file not made yet, a name the
//! model linked elsewhere: each stays a word). Whatever is not sure to be a path is kept
//! as a word, so the rule errs towards asking.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a plain path inside the project becomes in a shape.
pub const PATH: &str = "<path in the project>";

/// The shape of `argv` for a session in `base` (see the module).
pub fn shape(argv: &[String], base: &Path) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut after_option = false;
    let mut subcommand_seen = false;
    for (i, word) in argv.iter().enumerate() {
        if i == 0 {
            out.push(word.clone());
            continue;
        }
        let option = word.starts_with('-') && word.len() > 1;
        let first_word = !option && !subcommand_seen;
        subcommand_seen |= !option;
        let pathlike = word.contains('/') || word.contains('.');
        let plain = !option
            && !after_option
            && !word.contains(['=', ':', '@'])
            && !word.starts_with('+')
            && (!first_word || pathlike)
            && !word.chars().any(char::is_control)
            && inside(base, word).is_some_and(|p| exists_without_links(base, &p));
        out.push(if plain { PATH.to_owned() } else { word.clone() });
        // `--` ends the options: what follows is operands.
        after_option = option && !word.contains('=') && word != "--";
    }
    out
}

/// Whether `path` (under `base`) exists, as a file or directory, with no
/// symlink anywhere on its way from `base`: a name the model could point
/// elsewhere is not a plain path.
fn exists_without_links(base: &Path, path: &Path) -> bool {
    path.starts_with(base)
        && crate::beneath::first_symlink(base, path).is_none()
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() || m.is_dir())
}

/// `word` as a path under `base`, when it stays inside it.
fn inside(base: &Path, word: &str) -> Option<PathBuf> {
    let p = crate::beneath::lexical(&base.join(word));
    p.starts_with(base).then_some(p)
}

/// The words of `shape` (after the program) that no approved shape in
/// `approved` has: what the question shows as new.
pub fn unseen(shape: &[String], approved: &BTreeSet<Vec<String>>) -> Vec<String> {
    if approved.is_empty() || approved.contains(shape) {
        return Vec::new();
    }
    let seen: BTreeSet<&String> = approved.iter().flat_map(|s| s.iter().skip(1)).collect();
    let mut out: Vec<String> = shape.iter().skip(1).filter(|w| !seen.contains(w)).cloned().collect();
    out.dedup();
    if out.is_empty() {
        // Same words, another order or count: the whole line is new.
        out = shape.iter().skip(1).cloned().collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(base: &Path, line: &str) -> Vec<String> {
        let argv: Vec<String> = shlex::split(line).unwrap();
        shape(&argv, base)
    }

    #[test]
    fn paths_inside_the_project_are_one_placeholder_and_every_other_word_stays() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path();
        for file in ["data", "data.csv", "a.txt", "a.csv", "x.py", "prog"] {
            std::fs::write(base.join(file), "x").unwrap();
        }
        for dir in ["src", "tests", "@types"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        std::fs::write(base.join("src/b.rs"), "x").unwrap();
        std::fs::create_dir_all(base.join("@types/node")).unwrap();
        std::os::unix::fs::symlink("/etc", base.join("etc-link")).unwrap();
        let p = PATH;
        assert_eq!(of(base, "sort data.csv"), ["sort", p]);
        assert_eq!(of(base, "sort -r data"), ["sort", "-r", "data"], "it may be the option's value");
        assert_eq!(of(base, "sort data"), ["sort", "data"], "it may be a subcommand");
        assert_eq!(of(base, "sort a.csv data"), ["sort", p, p]);
        assert_eq!(of(base, "cat a.txt src/b.rs data"), ["cat", p, p, p]);
        assert_eq!(of(base, "sort --compress-program=sh data.csv"), ["sort", "--compress-program=sh", p]);
        assert_eq!(of(base, "python3 -m pytest tests/"), ["python3", "-m", "pytest", p]);
        assert_eq!(of(base, "gdb -ex 'shell id' ./prog"), ["gdb", "-ex", "shell id", p]);
        assert_eq!(of(base, "git status"), ["git", "status"]);
        assert_eq!(of(base, "make VAR=x test"), ["make", "VAR=x", "test"]);
        assert_eq!(of(base, "cat ../outside.txt /etc/passwd"), ["cat", "../outside.txt", "/etc/passwd"]);
        assert_eq!(of(base, "touch two"), ["touch", "two"], "a bare word that names nothing stays");
        assert_eq!(of(base, "git config core.fsmonitor x"), ["git", "config", "core.fsmonitor", "x"]);
        assert_eq!(of(base, "touch new.txt"), ["touch", "new.txt"], "a new file's name is a word");
        assert_eq!(of(base, "rm -- ./data"), ["rm", "--", p]);
        let abs = base.join("x.py").display().to_string();
        assert_eq!(of(base, &format!("python3 {abs}")), ["python3", p]);
        // Words the model can make look like paths stay words.
        assert_eq!(of(base, "npm install @types/node"), ["npm", "install", "@types/node"]);
        assert_eq!(of(base, "git push origin HEAD:refs/heads/main"), ["git", "push", "origin", "HEAD:refs/heads/main"]);
        assert_eq!(of(base, "curl https://example.com/x"), ["curl", "https://example.com/x"]);
        assert_eq!(of(base, "cat etc-link/passwd ./missing/x.txt"), ["cat", "etc-link/passwd", "./missing/x.txt"]);
    }

    #[test]
    fn the_new_words_are_named() {
        let d = tempfile::tempdir().unwrap();
        for file in ["a.txt", "b.txt"] {
            std::fs::write(d.path().join(file), "x").unwrap();
        }
        let approved: BTreeSet<Vec<String>> = [of(d.path(), "sort a.txt")].into_iter().collect();
        assert_eq!(unseen(&of(d.path(), "sort --compress-program=sh b.txt"), &approved), ["--compress-program=sh"]);
        assert!(unseen(&of(d.path(), "sort b.txt"), &approved).is_empty(), "approved as it is");
        assert_eq!(unseen(&of(d.path(), "sort a.txt a.txt"), &approved), [PATH, PATH]);
        assert!(unseen(&of(d.path(), "sort a.txt"), &BTreeSet::new()).is_empty());
    }
}
