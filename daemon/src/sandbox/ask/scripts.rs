//! Reading the parts of a command line that [`super::risky`]'s patterns
//! look into: git's settings and subcommand, ssh's `-o` options, an awk
//! program's text, a sed script's commands. Each reader errs towards
//! finding a risk: what it cannot read counts as risky.

/// A program's subcommand: for git the first word after its global
/// options, otherwise the first argument that is not an option.
pub fn subcommand<'a>(program: &str, args: &[&'a str]) -> Option<&'a str> {
    if program == "git" {
        return git_globals(args).1.map(|i| args[i]);
    }
    args.iter().copied().find(|a| !a.starts_with('-'))
}

/// git's global options that take a separate value.
const GIT_VALUE_OPTIONS: &[&str] =
    &["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path"];

/// git's settings given before the subcommand (`-c key=value`,
/// `--config-env[=]key=VAR`; key in lower case), and where the subcommand is.
pub fn git_globals<'a>(args: &[&'a str]) -> (Vec<(String, &'a str)>, Option<usize>) {
    let mut settings = Vec::new();
    let mut setting = |kv: &'a str| {
        let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
        settings.push((key.to_ascii_lowercase(), value));
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        match a {
            "-c" | "--config-env" => {
                if let Some(kv) = args.get(i + 1) {
                    setting(kv);
                }
                i += 2;
            }
            _ if a.starts_with("--config-env=") => {
                setting(&a["--config-env=".len()..]);
                i += 1;
            }
            _ if GIT_VALUE_OPTIONS.contains(&a) && a != "--exec-path" => i += 2,
            _ if a.starts_with('-') => i += 1,
            _ => return (settings, Some(i)),
        }
    }
    (settings, None)
}

/// git's settings given before the subcommand.
pub fn git_settings<'a>(args: &[&'a str]) -> Vec<(String, &'a str)> {
    git_globals(args).0
}

/// The keys (lower case) of ssh's `-o` options: `-o Key=value`,
/// `-oKey=value`, `-o "Key value"`, `-vo Key=value`.
pub fn ssh_options(args: &[&str]) -> Vec<String> {
    let mut keys = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) else { continue };
        let Some(at) = cluster.find('o') else { continue };
        let value = match &cluster[at + 1..] {
            "" => args.get(i + 1).copied().unwrap_or(""),
            rest => rest,
        };
        let key = value.trim_start().split(|c: char| c == '=' || c.is_whitespace()).next().unwrap_or("");
        keys.push(key.to_ascii_lowercase());
    }
    keys
}

/// What in an awk program runs other code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwkRisk {
    /// `system(…)`.
    System,
    /// A pipe: `print | "cmd"`, `"cmd" | getline`, gawk's `|&`.
    Pipe,
    /// gawk's `@`: a call by name (`@f()` with `f = "system"`), `@load`, `@include`.
    At,
}

impl AwkRisk {
    /// Whether `program` (awk source) contains it. A `|` inside a regex
    /// or a string counts too: telling them apart needs awk's grammar,
    /// and a mistake would let a real pipe through.
    pub fn in_program(self, program: &str) -> bool {
        match self {
            AwkRisk::System => program.match_indices("system").any(|(i, _)| {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                !program[..i].ends_with(word) && !program[i + 6..].starts_with(word)
            }),
            AwkRisk::Pipe => program.replace("||", "").contains('|'),
            AwkRisk::At => program.contains('@'),
        }
    }
}

/// awk's options that take a value (a separate argument or attached):
/// gawk's, mawk's, the one true awk's and busybox's. Options whose value
/// may only be attached (`-d[file]`, `-p[file]`) are flags here.
const AWK_VALUE_SHORT: &[char] = &['F', 'v', 'f', 'e', 'i', 'l', 'E', 'W'];
const AWK_VALUE_LONG: &[&str] = &["field-separator", "assign", "file", "source", "include", "load", "exec"];

/// The awk program texts on a command line: each `-e`/`--source` value,
/// and the first operand when no program comes from elsewhere (`-f`,
/// `-E`, `--file`, `--exec`, `-e`, `--source`).
pub fn awk_programs<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let (mut texts, mut elsewhere, mut operand) = (Vec::new(), false, None);
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        if a == "--" {
            operand = operand.or(args.get(i).copied());
            break;
        }
        // Which value-taking option, and its value when attached.
        let (option, attached) = if let Some(long) = a.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
            match AWK_VALUE_LONG.iter().find(|o| !name.is_empty() && o.starts_with(name)) {
                Some(&"source") => ('e', value),
                Some(&"file") | Some(&"exec") => ('f', value),
                Some(_) => ('v', value),
                None => continue,
            }
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            match short.chars().next().filter(|c| AWK_VALUE_SHORT.contains(c)) {
                Some(c) => (c, Some(&short[c.len_utf8()..]).filter(|v| !v.is_empty())),
                None => continue,
            }
        } else {
            // awk reads no option after its first operand.
            operand = Some(a);
            break;
        };
        let value = attached.or_else(|| {
            i += 1;
            args.get(i - 1).copied()
        });
        match option {
            'e' => {
                elsewhere = true;
                texts.extend(value);
            }
            'f' | 'E' => elsewhere = true,
            _ => {}
        }
    }
    if !elsewhere {
        texts.extend(operand);
    }
    texts
}

/// sed's options that take a separate value.
const SED_VALUE_SHORT: &[char] = &['e', 'f', 'l'];
const SED_VALUE_LONG: &[&str] = &["expression", "file", "line-length"];

/// The risky commands (`e`, `w`) of the sed scripts on a command line:
/// each `-e`/`--expression` value, else the first operand. Nothing under
/// `--sandbox`, where GNU sed refuses e, w and r.
pub fn sed_commands(args: &[&str]) -> Vec<char> {
    let (mut scripts, mut given, mut operand, mut sandbox) = (Vec::new(), false, None, false);
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        let next = |i: &mut usize| {
            *i += 1;
            args.get(*i - 1).copied()
        };
        if a == "--" {
            operand = operand.or(args.get(i).copied());
            break;
        } else if let Some(long) = a.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, None), |(n, v)| (n, Some(v)));
            sandbox |= name.len() >= 2 && "sandbox".starts_with(name);
            match SED_VALUE_LONG.iter().find(|o| !name.is_empty() && o.starts_with(name)) {
                Some(&"expression") => {
                    given = true;
                    scripts.extend(value.or_else(|| next(&mut i)));
                }
                Some(&"file") => given = true,
                Some(_) if value.is_none() => i += 1,
                _ => {}
            }
        } else if let Some(cluster) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            // Flags until one that takes a value, which is the rest or the next argument.
            let Some(at) = cluster.find(SED_VALUE_SHORT).filter(|at| !cluster[..*at].contains('i')) else { continue };
            let rest = &cluster[at + 1..];
            let value = if rest.is_empty() { next(&mut i) } else { Some(rest) };
            match &cluster[at..at + 1] {
                "e" => {
                    given = true;
                    scripts.extend(value);
                }
                "f" => given = true,
                _ => {}
            }
        } else if operand.is_none() {
            operand = Some(a);
        }
    }
    if !given {
        scripts.extend(operand);
    }
    if sandbox {
        return Vec::new();
    }
    let mut found = Vec::new();
    for script in scripts {
        for c in super::sed::risky_commands(script) {
            if !found.contains(&c) {
                found.push(c);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_settings_are_read_before_the_subcommand_only() {
        let s = git_settings(&["-C", "d", "-c", "Core.FSMonitor=x", "--config-env=alias.y=E", "commit", "-c", "HEAD"]);
        assert_eq!(s, [("core.fsmonitor".to_owned(), "x"), ("alias.y".to_owned(), "E")]);
        assert_eq!(subcommand("git", &["--no-pager", "-C", "d", "log", "-p"]), Some("log"));
    }

    #[test]
    fn awk_program_text_is_found_past_options() {
        assert_eq!(awk_programs(&["-F", ":", "-v", "x=1", "{print $1}", "a.txt"]), ["{print $1}"]);
        assert_eq!(awk_programs(&["-F:", "{print}", "f"]), ["{print}"]);
        assert_eq!(awk_programs(&["-f", "p.awk", "a.txt"]), Vec::<&str>::new());
        assert_eq!(awk_programs(&["--source=BEGIN{}", "-e", "END{}"]), ["BEGIN{}", "END{}"]);
        assert!(!AwkRisk::Pipe.in_program("$1 == 1 || $2 == 2"));
        assert!(AwkRisk::Pipe.in_program("{print |& \"sh\"}"));
        assert!(!AwkRisk::System.in_program("{print filesystem}"));
        assert!(AwkRisk::System.in_program("BEGIN{system (\"id\")}"));
    }

    #[test]
    fn sed_scripts_are_found_past_options() {
        assert_eq!(sed_commands(&["-n", "1p", "a.txt"]), Vec::<char>::new());
        assert_eq!(sed_commands(&["-ne", "1e id", "a.txt"]), ['e']);
        assert_eq!(sed_commands(&["--expr=s/a/b/w out", "a.txt"]), ['w']);
        assert_eq!(sed_commands(&["-i.bak", "-e", "1p", "-e", "$e id"]), ['e']);
        assert_eq!(sed_commands(&["a.txt", "-e", "1e id"]), ['e']);
        assert_eq!(sed_commands(&["--sandbox", "1e id", "a.txt"]), Vec::<char>::new());
        assert_eq!(sed_commands(&["-l", "5", "1e id", "a.txt"]), ['e']);
    }

    #[test]
    fn ssh_option_keys_in_every_spelling() {
        assert_eq!(
            ssh_options(&["-o", "ProxyCommand=x", "-oLocalCommand id", "-vo", "Foo bar", "h"]),
            ["proxycommand", "localcommand", "foo"]
        );
    }
}
