//! Uses of a program whose arguments make it run other code — a shell
//! command, a script, a program it names — or write files it names, kept
//! as data: one [`Risky`] per use, with the arguments that give it away,
//! what its bucket adds to the program's name (`git -c core.fsmonitor`,
//! `awk system()`, `sed e`) and the reason the user reads. A command that
//! matches gets that bucket, high-risk, and is asked every time: an
//! answer given for the program's harmless use never covers it.
//!
//! Matching errs towards asking: an option is recognised alone, with
//! `=value`, or shortened (getopt takes any unambiguous prefix); a short
//! option anywhere in a cluster of flags; a script swivald cannot read is
//! taken as one that runs commands.
//!
//! To add a use: one entry in [`RISKY`] with an `example` command line;
//! the unit test runs every entry's example and fails until it matches.

use super::scripts;

/// An argument that makes a program run other code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Every use: the program runs the command it is given (`env`,
    /// `xargs`); the bucket is the whole command line.
    Wrapper,
    /// Every use of the subcommand (`git filter-branch`).
    Always,
    /// Inline code by Swival's interpreter rule (`python3 -c`, `node -e`);
    /// the bucket is Swival's name for it.
    InlineCode,
    /// A long option: `--to-command`, `--to-command=x`, `--to-com x`.
    Long(&'static str),
    /// A short option, alone or in a cluster: `-I`, `-xvI`, `-Ixz`.
    Short(char),
    /// A letter of tar's old-style first argument (`tar xIf prog a.tar`).
    Bundled(char),
    /// This word, alone or with `=value` (`-exec`, `-ex`).
    Word(&'static str),
    /// An argument starting with this (`-TT`, `+`).
    Prefix(&'static str),
    /// A git setting given before the subcommand (`-c key=value`,
    /// `--config-env=key=VAR`) whose key matches this pattern: `*` stands
    /// for the subsection (`diff.*.textconv`) or for the rest (`filter.*`).
    GitConfig(&'static str),
    /// A git setting given before the subcommand whose key is neither
    /// matched by a [`Pattern::GitConfig`] entry nor known harmless.
    GitOtherConfig,
    /// An ssh option (`-o Key=value`, `-oKey value`), key in lower case.
    SshOption(&'static str),
    /// An awk program (its text on the command line) containing this.
    Awk(scripts::AwkRisk),
    /// A sed script using this command: `e` (`e`, `s///e`) or `w` (`w`,
    /// `W`, `s///w`).
    Sed(char),
    /// A `NAME=value` operand (a make variable set for the recipes).
    Assignment,
}

/// A use of a program that runs other code.
#[derive(Debug)]
pub struct Risky {
    /// Program names (a directory and a version suffix are ignored).
    pub programs: &'static [&'static str],
    /// Only with one of these subcommands (`git clone -u`); empty: any.
    pub sub: &'static [&'static str],
    /// Arguments that make this use; any one is enough.
    pub patterns: &'static [Pattern],
    /// What the bucket adds to the program's name.
    pub name: &'static str,
    /// Why it is high-risk, as the user reads it.
    pub reason: &'static str,
    /// A command line of this use: its unit test (read by tests only).
    #[cfg_attr(not(test), expect(dead_code, reason = "the data of the unit test that matches every entry"))]
    pub example: &'static [&'static str],
}

use Pattern::*;

const GIT: &[&str] = &["git"];
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk"];
const SEDS: &[&str] = &["sed", "gsed"];
const TARS: &[&str] = &["tar", "gtar", "bsdtar"];
const SSHS: &[&str] = &["ssh", "scp", "sftp"];
const NODE_PMS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// Programs that run the command they are given.
pub const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "xargs", "sudo", "doas", "command", "exec", "stdbuf", "time", "setsid",
    "chroot", "unshare", "busybox", "watch", "flock", "parallel", "ionice", "taskset", "chrt", "strace", "ltrace",
    "valgrind", "script", "nsenter", "su", "runuser", "npx", "bunx", "pnpx",
];

/// Every risky use swivald knows.
pub const RISKY: &[Risky] = &[
    Risky {
        programs: WRAPPERS,
        sub: &[],
        patterns: &[Wrapper],
        name: "",
        reason: "runs the command given in its arguments",
        example: &["env", "FOO=1", "sh", "x.sh"],
    },
    Risky {
        programs: &["npm", "pnpm", "yarn", "bun"],
        sub: &["exec", "x", "dlx"],
        patterns: &[Wrapper],
        name: "",
        reason: "runs the command given in its arguments",
        example: &["npm", "exec", "--", "sh", "-c", "id"],
    },
    Risky {
        programs: &[
            "python3", "python", "bash", "sh", "zsh", "dash", "node", "bun", "deno", "ruby", "perl",
        ],
        sub: &[],
        patterns: &[InlineCode],
        name: "",
        reason: "runs the code given on its command line",
        example: &["python3", "-c", "import os; os.system('id')"],
    },
    Risky {
        programs: &["ksh", "mksh", "fish", "ash", "csh", "tcsh"],
        sub: &[],
        patterns: &[Short('c')],
        name: "-c",
        reason: "runs the shell command given on its command line",
        example: &["ksh", "-c", "id"],
    },
    Risky {
        programs: &["lua", "luajit", "Rscript"],
        sub: &[],
        patterns: &[Short('e')],
        name: "-e",
        reason: "runs the code given on its command line",
        example: &["lua", "-e", "os.execute('id')"],
    },
    Risky {
        programs: &["php"],
        sub: &[],
        patterns: &[Short('r')],
        name: "-r",
        reason: "runs the code given on its command line",
        example: &["php", "-r", "system('id');"],
    },
    Risky {
        programs: &["deno"],
        sub: &["eval"],
        patterns: &[Always],
        name: "eval",
        reason: "runs the code given on its command line",
        example: &["deno", "eval", "Deno.exit(0)"],
    },
    // git: settings given on the command line that run programs.
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("alias.*")],
        name: "-c alias",
        reason: "defines a git alias: one starting with `!` runs a shell command, any other can carry options that do",
        example: &["git", "-c", "alias.x=!touch PWNED", "x"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("core.fsmonitor")],
        name: "-c core.fsmonitor",
        reason: "core.fsmonitor runs the program it names whenever git looks at the work tree",
        example: &["git", "-c", "core.fsmonitor=touch PWNED", "status"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("core.pager"), GitConfig("pager.*")],
        name: "-c core.pager",
        reason: "runs the program it names as git's pager",
        example: &["git", "-c", "core.pager=sh -c id", "log"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("core.sshcommand"), GitConfig("core.gitproxy"), GitConfig("ssh.*")],
        name: "-c core.sshCommand",
        reason: "runs the program it names to reach a remote",
        example: &["git", "-c", "core.sshCommand=touch PWNED", "fetch", "x:y"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("core.hookspath"), GitConfig("init.templatedir")],
        name: "-c core.hooksPath",
        reason: "runs hooks from a directory it names",
        example: &["git", "-c", "core.hooksPath=h", "commit", "-m", "x"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("core.editor"), GitConfig("sequence.editor")],
        name: "-c core.editor",
        reason: "runs the program it names as git's editor",
        example: &["git", "-c", "core.editor=touch PWNED", "commit"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("diff.*.textconv"), GitConfig("diff.*.command"), GitConfig("diff.external")],
        name: "-c diff.textconv",
        reason: "runs the program it names to show a diff",
        example: &["git", "-c", "diff.x.textconv=touch PWNED", "log", "-p"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("filter.*"), GitConfig("merge.*.driver")],
        name: "-c filter",
        reason: "runs a program on the files git reads or writes",
        example: &["git", "-c", "filter.x.smudge=touch PWNED", "checkout", "."],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[
            GitConfig("uploadpack.*"),
            GitConfig("receivepack.*"),
            GitConfig("remote.*.uploadpack"),
            GitConfig("remote.*.receivepack"),
        ],
        name: "-c uploadpack",
        reason: "runs the program it names on the other end of a fetch or push, which is this machine for a local remote",
        example: &["git", "-c", "uploadpack.packObjectsHook=touch PWNED", "fetch", "."],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[
            GitConfig("core.askpass"),
            GitConfig("credential.helper"),
            GitConfig("credential.*.helper"),
            GitConfig("gpg.program"),
            GitConfig("gpg.*.program"),
            GitConfig("difftool.*"),
            GitConfig("mergetool.*"),
            GitConfig("submodule.*.update"),
            GitConfig("trailer.*"),
        ],
        name: "-c helper",
        reason: "runs the program it names (a credential, signing, diff or merge helper)",
        example: &["git", "-c", "credential.helper=!touch PWNED", "fetch", "x"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitConfig("include.*"), GitConfig("includeif.*"), GitConfig("protocol.*"), GitConfig("url.*")],
        name: "-c include",
        reason: "reads settings from a file, allows transports that run commands (ext::), or rewrites remote addresses",
        example: &["git", "-c", "protocol.ext.allow=always", "clone", "ext::sh -c id", "x"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[GitOtherConfig],
        name: "-c",
        reason: "a git setting swivald does not know to be harmless (many run programs)",
        example: &["git", "-c", "foo.bar=1", "status"],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[Long("upload-pack"), Long("receive-pack"), Long("exec")],
        name: "--upload-pack",
        reason: "runs the program it names (the other end of a transfer, or a command per commit)",
        example: &["git", "ls-remote", "--upload-pack=touch PWNED", "."],
    },
    Risky {
        programs: GIT,
        sub: &[],
        patterns: &[Long("exec-path"), Long("template")],
        name: "--exec-path",
        reason: "runs git's commands or hooks from a directory it names",
        example: &["git", "--exec-path=.", "x"],
    },
    Risky {
        programs: GIT,
        sub: &["clone"],
        patterns: &[Short('u')],
        name: "clone -u",
        reason: "runs the program it names as the other end of the clone",
        example: &["git", "clone", "-u", "touch PWNED", ".", "x"],
    },
    Risky {
        programs: GIT,
        sub: &["clone", "submodule"],
        patterns: &[Short('c'), Long("config"), Long("template")],
        name: "clone -c",
        reason: "sets the new repository's config (which can run programs) or copies hooks into it",
        example: &["git", "clone", "-c", "core.fsmonitor=touch PWNED", ".", "x"],
    },
    Risky {
        programs: GIT,
        sub: &["rebase", "difftool"],
        patterns: &[Short('x'), Long("extcmd")],
        name: "-x",
        reason: "runs the command it is given",
        example: &["git", "rebase", "-x", "touch PWNED", "HEAD~1"],
    },
    Risky {
        programs: GIT,
        sub: &["grep"],
        patterns: &[Short('O'), Long("open-files-in-pager")],
        name: "grep -O",
        reason: "runs the program it names on the files found",
        example: &["git", "grep", "-Otouch", "x"],
    },
    Risky {
        programs: GIT,
        sub: &["bisect", "submodule"],
        patterns: &[Word("run"), Word("foreach")],
        name: "run",
        reason: "runs the command it is given",
        example: &["git", "bisect", "run", "sh", "-c", "id"],
    },
    Risky {
        programs: GIT,
        sub: &["filter-branch", "instaweb", "send-email"],
        patterns: &[Always],
        name: "filter-branch",
        reason: "runs commands given in its arguments",
        example: &["git", "filter-branch", "--tree-filter", "id", "HEAD"],
    },
    // awk
    Risky {
        programs: AWKS,
        sub: &[],
        patterns: &[Awk(scripts::AwkRisk::System)],
        name: "system()",
        reason: "the awk program runs a shell command (system())",
        example: &["awk", "BEGIN{system(\"touch PWNED\")}"],
    },
    Risky {
        programs: AWKS,
        sub: &[],
        patterns: &[Awk(scripts::AwkRisk::Pipe)],
        name: "|",
        reason: "the awk program contains `|`, which pipes to or from a shell command (`print | \"cmd\"`, `\"cmd\" | getline`)",
        example: &["awk", "BEGIN{\"id\" | getline x}"],
    },
    Risky {
        programs: AWKS,
        sub: &[],
        patterns: &[Awk(scripts::AwkRisk::At), Word("-l"), Prefix("-l"), Long("load")],
        name: "@",
        reason: "the awk program calls a function by name (system too) or loads an extension",
        example: &["gawk", "BEGIN{f=\"sys\" \"tem\"; @f(\"id\")}"],
    },
    // sed
    Risky {
        programs: SEDS,
        sub: &[],
        patterns: &[Sed('e')],
        name: "e",
        reason: "the sed script runs shell commands (the e command or the s///e flag), or swivald cannot read it",
        example: &["sed", "-n", "1e touch PWNED", "a.txt"],
    },
    Risky {
        programs: SEDS,
        sub: &[],
        patterns: &[Sed('w')],
        name: "w",
        reason: "the sed script writes files it names (w, W, or the s///w flag)",
        example: &["sed", "s/a/b/w out.txt", "a.txt"],
    },
    Risky {
        programs: SEDS,
        sub: &[],
        patterns: &[Short('f'), Long("file")],
        name: "-f",
        reason: "runs a sed script from a file, which may run commands (e) or write files (w)",
        example: &["sed", "-f", "script.sed", "a.txt"],
    },
    // tar
    Risky {
        programs: TARS,
        sub: &[],
        patterns: &[Long("to-command")],
        name: "--to-command",
        reason: "pipes each extracted file to a shell command",
        example: &["tar", "-xf", "a.tar", "--to-command=touch PWNED"],
    },
    Risky {
        programs: TARS,
        sub: &[],
        patterns: &[Long("checkpoint-action")],
        name: "--checkpoint-action",
        reason: "runs a command at checkpoints (exec=)",
        example: &["tar", "-cf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=id", "."],
    },
    Risky {
        programs: TARS,
        sub: &[],
        patterns: &[Long("use-compress-program"), Short('I'), Bundled('I')],
        name: "--use-compress-program",
        reason: "runs the program it names to compress or decompress",
        example: &["tar", "-I", "sh -c id", "-xf", "a.tar"],
    },
    Risky {
        programs: TARS,
        sub: &[],
        patterns: &[Long("info-script"), Long("new-volume-script"), Short('F'), Bundled('F')],
        name: "--info-script",
        reason: "runs a script at the end of each volume",
        example: &["tar", "-M", "-F", "x.sh", "-cf", "a.tar", "."],
    },
    Risky {
        programs: TARS,
        sub: &[],
        patterns: &[Long("rsh-command"), Long("rmt-command")],
        name: "--rsh-command",
        reason: "runs the program it names to reach a remote archive",
        example: &["tar", "--rsh-command=/tmp/x", "-tf", "h:a.tar"],
    },
    // find
    Risky {
        programs: &["find"],
        sub: &[],
        patterns: &[Word("-exec"), Word("-execdir"), Word("-ok"), Word("-okdir")],
        name: "-exec",
        reason: "runs a command for each file found",
        example: &["find", ".", "-exec", "touch", "PWNED", ";"],
    },
    Risky {
        programs: &["find"],
        sub: &[],
        patterns: &[Word("-fprint"), Word("-fprint0"), Word("-fprintf"), Word("-fls")],
        name: "-fprint",
        reason: "writes the list of files found to a file it names",
        example: &["find", ".", "-fprint", "Makefile"],
    },
    Risky {
        programs: &["find"],
        sub: &[],
        patterns: &[Word("-delete")],
        name: "-delete",
        reason: "deletes every file found",
        example: &["find", ".", "-name", "*.o", "-delete"],
    },
    // Remote copies and shells: the program that connects runs here.
    Risky {
        programs: &["rsync"],
        sub: &[],
        patterns: &[Short('e'), Long("rsh"), Long("rsync-path")],
        name: "-e",
        reason: "runs the program it names to connect (or as rsync on the other end)",
        example: &["rsync", "-e", "sh -c id", "a", "h:b"],
    },
    Risky {
        programs: SSHS,
        sub: &[],
        patterns: &[SshOption("proxycommand"), SshOption("proxyjump")],
        name: "-o ProxyCommand",
        reason: "runs a local command to connect",
        example: &["ssh", "-o", "ProxyCommand=touch PWNED", "h"],
    },
    Risky {
        programs: SSHS,
        sub: &[],
        patterns: &[SshOption("localcommand"), SshOption("permitlocalcommand"), SshOption("knownhostscommand")],
        name: "-o LocalCommand",
        reason: "runs a local command when connecting",
        example: &["ssh", "-oPermitLocalCommand=yes", "-oLocalCommand=id", "h"],
    },
    Risky {
        programs: SSHS,
        sub: &[],
        patterns: &[SshOption("pkcs11provider"), SshOption("securitykeyprovider"), Short('F'), Short('S')],
        name: "-F",
        reason: "loads a library, reads an ssh config (which can run commands), or runs the program it names as ssh",
        example: &["scp", "-S", "./x.sh", "a", "h:b"],
    },
    Risky {
        programs: &["zip"],
        sub: &[],
        patterns: &[Prefix("-TT"), Long("unzip-command")],
        name: "-TT",
        reason: "runs the command it names to test the archive",
        example: &["zip", "-T", "-TT", "sh -c id", "a.zip", "a.txt"],
    },
    // Pagers and editors that take commands.
    Risky {
        programs: &["less", "more"],
        sub: &[],
        patterns: &[Prefix("+"), Long("lesskey-file"), Long("lesskey-src"), Short('k'), Long("log-file"), Short('o')],
        name: "+",
        reason: "gives less commands to run (`!` runs a shell command), a key file, or a file to write",
        example: &["less", "+!touch PWNED", "a.txt"],
    },
    Risky {
        programs: &["man"],
        sub: &[],
        patterns: &[Short('P'), Long("pager"), Short('H'), Long("html"), Short('C'), Long("config-file")],
        name: "-P",
        reason: "runs the program it names as a pager or browser, or reads a config naming them",
        example: &["man", "-P", "touch PWNED", "ls"],
    },
    Risky {
        programs: &["vim", "vi", "nvim", "view", "ex", "vim.basic", "vim.tiny"],
        sub: &[],
        patterns: &[Word("-c"), Word("-S"), Word("-u"), Word("-s"), Long("cmd"), Prefix("+")],
        name: "-c",
        reason: "runs editor commands given on its command line or in a file (`:!` runs a shell command)",
        example: &["vim", "-es", "-c", "!touch PWNED", "-c", "q"],
    },
    // Build tools told on the command line what to run.
    Risky {
        programs: &["make", "gmake"],
        sub: &[],
        patterns: &[Long("eval"), Short('E'), Assignment],
        name: "VAR=",
        reason: "sets make variables or code on the command line; recipes may run them as commands (CC=, SHELL=)",
        example: &["make", "test", "SHELL=./x.sh"],
    },
    Risky {
        programs: &["cargo"],
        sub: &[],
        patterns: &[Long("config")],
        name: "--config",
        reason: "sets cargo settings on the command line (a runner or rustc wrapper runs a program)",
        example: &["cargo", "--config", "target.x86_64-unknown-linux-gnu.runner='id'", "run"],
    },
    Risky {
        programs: NODE_PMS,
        sub: &[],
        patterns: &[Long("script-shell"), Long("node-options"), Long("call")],
        name: "--script-shell",
        reason: "runs package scripts through a shell it names, or loads code into node",
        example: &["npm", "test", "--script-shell=./x.sh"],
    },
];
