//! The one path resolver every file tool uses: resolve the target with
//! symlinks followed and allow it where Swival's `files` setting says
//! (`safe_resolve`): `some`, inside the base directory or an allowed
//! directory; `all`, anywhere; `none`, only inside `<base>/.swival`. The
//! filesystem root, hidden paths and (for writes) protected policy are
//! refused whatever `files` says.

pub use crate::config::FilesMode;
use std::path::{Component, Path, PathBuf};
use swival_protocol::skills::py_repr;

/// What a tool wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read it.
    Read,
    /// Create, change or delete it.
    Write,
}

/// Where file tools may go.
#[derive(Debug, Clone)]
pub struct PathPolicy {
    /// The session's base directory, canonical.
    pub base: PathBuf,
    /// Extra read-write directories, canonical.
    pub allow_rw: Vec<PathBuf>,
    /// Extra read-only directories, canonical.
    pub allow_ro: Vec<PathBuf>,
    /// Directories of the run's skills outside the base dir, canonical:
    /// read-only, and readable even under a hidden directory (the global
    /// skills live in the daemon's config dir), but nothing they link to.
    pub skills: Vec<PathBuf>,
    /// Where the file tools may go (`files`, with `yolo` already applied:
    /// see `SessionConfig::files_mode`).
    pub files: FilesMode,
    /// Policy the agent may never change (SPEC §6): filter, hook and
    /// reviewer scripts, the `command` provider, the config files naming
    /// them, and the directories of those scripts that lie inside the base
    /// dir. Canonical; a file or a whole directory tree.
    pub protected: Vec<PathBuf>,
    /// Never read nor written, even under yolo: the daemon's own state,
    /// cache and config directories and credential stores (`~/.ssh`, …),
    /// the same list commands have hidden. Canonical.
    pub hidden: Vec<PathBuf>,
    /// What `~` stands for: the caller's `HOME`.
    pub home: Option<PathBuf>,
    /// The private home commands see (`sandbox::home`): under
    /// `files = "all"` the file tools reach nothing else of the home.
    pub home_view: Option<crate::sandbox::home::HomeView>,
}

/// Why the path policy refused a path or could not resolve it. The
/// messages are Swival's (the model reads them after `error: `), with the
/// path as the model wrote it.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// No path at all.
    #[error("the path is empty; pass a path relative to the project root")]
    Empty,
    /// A component could not be read while resolving.
    #[error("cannot resolve path {requested}: {source}")]
    Unresolvable { requested: String, source: std::io::Error },
    /// `/` itself.
    #[error("Path {} resolves to the filesystem root, which is not allowed even in unrestricted mode", py_repr(.requested))]
    Root { requested: String },
    /// A write to `swival.toml` or `mcp.json`, wherever they are.
    #[error("{requested} is protected configuration and cannot be written or edited by the agent; ask the user to change it")]
    ProtectedConfig { requested: String },
    /// Under the daemon's own directories or a credential store.
    #[error("{requested} is hidden from the agent ({} holds the daemon's state or credentials); ask the user if you need something from it", .under.display())]
    Hidden { requested: String, under: PathBuf },
    /// `files = "all"`: under the home, outside what it shows.
    #[error("{requested} is hidden from the agent: the home directory ({}) shows only the project, the allowed dirs, toolchains and what sandbox_expose lists; ask the user if you need something from it", .home.display())]
    OutsideHomeView { requested: String, home: PathBuf },
    /// `files = "all"`: a write in the home outside the project and the
    /// read-write allowed dirs.
    #[error("{requested} is in the home directory, which the agent may read where it is shown but not write outside the project and allowed_dirs; ask the user to change it")]
    HomeReadOnly { requested: String },
    /// A policy program's data file (`sandbox::data`): neither read nor
    /// written by the agent.
    #[error("{requested} is protected: it is the data of a policy program (a filter, hook, reviewer or MCP server) and can be neither read nor written by the agent; use that program's own tools")]
    ProtectedData { requested: String },
    /// A write to policy (a script, its directory, the config naming it);
    /// `shown` is that policy path as the model sees it.
    #[error("{requested} is protected policy ({shown} is a filter, hook or reviewer script, its directory, or the config naming them) and cannot be written, edited, moved or deleted by the agent; ask the user to change it")]
    ProtectedPolicy { requested: String, shown: String },
    /// `files = "none"`: outside `.swival/`.
    #[error("Path {} resolves to {}, which is outside .swival/ (filesystem access is disabled)", py_repr(.requested), .resolved.display())]
    FilesDisabled { requested: String, resolved: PathBuf },
    /// A write in a read-only allowed directory.
    #[error("{requested} is in a read-only directory (allowed_dirs_ro); it can be read but not written")]
    ReadOnly { requested: String },
    /// `files = "some"`: outside the base dir and the allowed dirs.
    #[error("Path {} resolves to {}, which is outside base directory {}. You are not allowed to access that directory by any means.", py_repr(.requested), .resolved.display(), .base.display())]
    OutsideBase { requested: String, resolved: PathBuf, base: PathBuf },
    /// `~` with no `HOME` to expand it to.
    #[error("~ used but HOME is not set")]
    NoHome,
    /// `~user`.
    #[error("{requested}: ~user paths are not supported")]
    OtherUsersHome { requested: String },
}

/// File names the agent may never write, wherever they are.
const PROTECTED: &[&str] = &["swival.toml", "mcp.json"];

impl PathPolicy {
    /// Resolve `requested` (relative to the base dir, `~` expanded) for
    /// `access`.
    pub fn resolve(&self, requested: &str, access: Access) -> Result<PathBuf, PathError> {
        if requested.trim().is_empty() {
            return Err(PathError::Empty);
        }
        let owned = || requested.to_owned();
        let joined = self.unresolved(requested)?;
        let resolved =
            canonicalize_lenient(&joined).map_err(|source| PathError::Unresolvable { requested: owned(), source })?;
        if resolved.parent().is_none() {
            return Err(PathError::Root { requested: owned() });
        }
        if access == Access::Write
            && resolved.file_name().and_then(|n| n.to_str()).is_some_and(|n| PROTECTED.contains(&n))
        {
            return Err(PathError::ProtectedConfig { requested: owned() });
        }
        let skill = access == Access::Read && self.skills.iter().any(|s| resolved.starts_with(s));
        if let Some(h) = self.hidden_under(&resolved).filter(|_| !skill) {
            // A data file is hidden and protected at once.
            if self.protected.iter().any(|p| p == h) {
                return Err(PathError::ProtectedData { requested: owned() });
            }
            return Err(PathError::Hidden { requested: owned(), under: h.to_owned() });
        }
        if access == Access::Write {
            if let Some(p) = self.protected.iter().find(|p| resolved.starts_with(p)) {
                return Err(PathError::ProtectedPolicy { requested: owned(), shown: self.display(p) });
            }
        }
        match self.files {
            FilesMode::All => self.in_home_view(requested, resolved, access),
            // `.swival` itself is not followed: the daemon refuses a
            // symlinked one, so a path through it resolves elsewhere.
            FilesMode::None if resolved.starts_with(self.base.join(".swival")) => Ok(resolved),
            FilesMode::None => Err(PathError::FilesDisabled { requested: owned(), resolved }),
            FilesMode::Some => self.inside_some(requested, resolved, access),
        }
    }

    /// `files = "some"`: the base dir and the allowed dirs (read-only ones
    /// for reading only).
    fn inside_some(&self, requested: &str, resolved: PathBuf, access: Access) -> Result<PathBuf, PathError> {
        let inside = |dirs: &[PathBuf]| dirs.iter().any(|d| resolved.starts_with(d));
        if resolved.starts_with(&self.base) || inside(&self.allow_rw) {
            return Ok(resolved);
        }
        if inside(&self.allow_ro) || inside(&self.skills) {
            return match access {
                Access::Read => Ok(resolved),
                Access::Write => Err(PathError::ReadOnly { requested: requested.to_owned() }),
            };
        }
        Err(PathError::OutsideBase { requested: requested.to_owned(), resolved, base: self.base.clone() })
    }

    /// `resolved`, unless the home view hides it.
    fn in_home_view(&self, requested: &str, resolved: PathBuf, access: Access) -> Result<PathBuf, PathError> {
        let also: Vec<PathBuf> = std::iter::once(&self.base)
            .chain(&self.allow_rw)
            .chain(&self.allow_ro)
            .chain(&self.skills)
            .cloned()
            .collect();
        let Some(view) = &self.home_view else { return Ok(resolved) };
        if view.hides(&resolved, &also) {
            return Err(PathError::OutsideHomeView { requested: requested.to_owned(), home: view.home.clone() });
        }
        // The toolchains and exposed paths are shown, not given: what is
        // written in the home goes to the project or an allowed dir.
        let writable = std::iter::once(&self.base).chain(&self.allow_rw).any(|w| resolved.starts_with(w));
        if access == Access::Write && resolved.starts_with(&view.home) && !writable {
            return Err(PathError::HomeReadOnly { requested: requested.to_owned() });
        }
        Ok(resolved)
    }

    /// Whether a listing or a search skips `path` (canonical): under a
    /// hidden path, or outside the home view under `files = "all"`.
    pub fn conceals(&self, path: &Path) -> bool {
        self.hidden_under(path).is_some()
            || (self.files == FilesMode::All && self.in_home_view("", path.to_owned(), Access::Read).is_err())
    }

    /// The hidden path `resolved` lies under, if any.
    pub fn hidden_under(&self, resolved: &Path) -> Option<&Path> {
        self.hidden.iter().find(|h| resolved.starts_with(h)).map(PathBuf::as_path)
    }

    /// The path as the model named it (relative to the base dir, `~`
    /// expanded), without following any symlink. Use it only after
    /// [`PathPolicy::resolve`] accepted the same string: it names the entry
    /// itself, so a symlink can be moved or deleted rather than its target.
    pub fn unresolved(&self, requested: &str) -> Result<PathBuf, PathError> {
        let expanded = expand_home(requested, self.home.as_deref())?;
        Ok(if expanded.is_absolute() { expanded } else { self.base.join(expanded) })
    }

    /// How to show `p` to the model: relative to the base dir when inside
    /// it, absolute otherwise.
    pub fn display(&self, p: &Path) -> String {
        match p.strip_prefix(&self.base) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => p.display().to_string(),
        }
    }
}

fn expand_home(p: &str, home: Option<&Path>) -> Result<PathBuf, PathError> {
    if p == "~" || p.starts_with("~/") {
        let home = home.ok_or(PathError::NoHome)?;
        return Ok(home.join(p.trim_start_matches('~').trim_start_matches('/')));
    }
    if p.starts_with('~') {
        return Err(PathError::OtherUsersHome { requested: p.to_owned() });
    }
    Ok(PathBuf::from(p))
}

/// Symlinks followed in one resolution before giving up (as ELOOP).
const MAX_LINKS: usize = 40;

/// Canonicalize a path whose tail may not exist yet: components are
/// resolved left to right with symlinks followed (dangling ones too, so a
/// link cannot smuggle a write outside); once a component is missing the
/// rest is folded lexically, which is safe because a missing entry cannot
/// be a symlink.
pub fn canonicalize_lenient(p: &Path) -> std::io::Result<PathBuf> {
    let mut links = 0;
    resolve_from(PathBuf::new(), p, &mut links)
}

fn resolve_from(mut out: PathBuf, p: &Path, links: &mut usize) -> std::io::Result<PathBuf> {
    let p = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir()?.join(p) };
    let mut missing = false;
    for c in p.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            // `out` is canonical (or lexical past a missing entry), so its
            // parent is the real parent.
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if missing {
                    continue;
                }
                match std::fs::symlink_metadata(&out) {
                    Ok(m) if m.file_type().is_symlink() => {
                        *links += 1;
                        if *links > MAX_LINKS {
                            return Err(std::io::Error::other("too many levels of symbolic links"));
                        }
                        let target = std::fs::read_link(&out)?;
                        out.pop();
                        let base = std::mem::take(&mut out);
                        let target = if target.is_absolute() { target } else { base.join(target) };
                        out = resolve_from(PathBuf::new(), &target, links)?;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing = true,
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal as the model reads it.
    fn shown(e: PathError) -> String {
        format!("error: {e}")
    }

    fn policy(base: &Path) -> PathPolicy {
        PathPolicy {
            base: base.canonicalize().unwrap(),
            allow_rw: vec![],
            allow_ro: vec![],
            skills: vec![],
            files: FilesMode::Some,
            protected: vec![],
            hidden: vec![],
            home: Some(PathBuf::from("/home/tester")),
            home_view: None,
        }
    }

    #[test]
    fn relative_paths_resolve_inside_the_base() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(d.path());
        assert_eq!(p.resolve("a/b.txt", Access::Write).unwrap(), p.base.join("a/b.txt"));
    }

    #[test]
    fn dotdot_escape_absolute_outside_and_root_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        let p = policy(&base);
        for bad in ["../outside.txt", "/etc/passwd", "/"] {
            let err = p.resolve(bad, Access::Read).map_err(shown).unwrap_err();
            assert!(err.starts_with("error:") && err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn symlink_pointing_outside_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        std::fs::write(d.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), base.join("link")).unwrap();
        assert!(policy(&base).resolve("link", Access::Read).is_err());
    }

    #[test]
    fn root_is_refused_even_in_yolo() {
        let d = tempfile::tempdir().unwrap();
        let mut p = policy(d.path());
        p.files = FilesMode::All;
        assert!(p.resolve("/", Access::Read).is_err());
        assert!(p.resolve("/etc/hostname", Access::Read).is_ok());
    }

    #[test]
    fn read_only_dirs_are_readable_not_writable() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let ro = d.path().join("ro");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&ro).unwrap();
        let mut p = policy(&base);
        p.allow_ro = vec![ro.canonicalize().unwrap()];
        let f = ro.join("f.txt");
        assert!(p.resolve(f.to_str().unwrap(), Access::Read).is_ok());
        assert!(p.resolve(f.to_str().unwrap(), Access::Write).map_err(shown).unwrap_err().contains("read-only"));
    }

    #[test]
    fn swival_toml_cannot_be_written() {
        let d = tempfile::tempdir().unwrap();
        assert!(policy(d.path())
            .resolve("swival.toml", Access::Write)
            .map_err(shown)
            .unwrap_err()
            .contains("protected"));
    }

    #[test]
    fn protected_policy_files_and_directories_refuse_writes_even_in_yolo() {
        let d = tempfile::tempdir().unwrap();
        let mut p = policy(d.path());
        p.files = FilesMode::All;
        p.protected = vec![p.base.join("scripts"), p.base.join("hook.sh")];
        for bad in ["scripts/redact.py", "scripts/helper.py", "scripts/new/x", "hook.sh", "./scripts/../hook.sh"] {
            let err = p.resolve(bad, Access::Write).map_err(shown).unwrap_err();
            assert!(err.contains("protected policy"), "{bad}: {err}");
        }
        assert!(p.resolve("scripts/redact.py", Access::Read).is_ok());
        assert!(p.resolve("scriptsx/y", Access::Write).is_ok());
    }

    #[test]
    fn hidden_paths_are_neither_read_nor_written_even_in_yolo() {
        let d = tempfile::tempdir().unwrap();
        let mut p = policy(d.path());
        p.files = FilesMode::All;
        p.hidden = vec![p.base.join(".ssh")];
        for access in [Access::Read, Access::Write] {
            let err = p.resolve(".ssh/id_rsa", access).map_err(shown).unwrap_err();
            assert!(err.contains("hidden from the agent"), "{err}");
        }
        assert!(p.resolve(".sshx", Access::Read).is_ok());
    }

    #[test]
    fn allowed_dirs_are_readable_and_writable() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let extra = d.path().join("extra");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&extra).unwrap();
        let mut p = policy(&base);
        p.allow_rw = vec![extra.canonicalize().unwrap()];
        let f = extra.join("new/f.txt");
        let f = f.to_str().unwrap();
        assert!(p.resolve(f, Access::Read).is_ok());
        assert!(p.resolve(f, Access::Write).is_ok());
        // Reached through a relative path too.
        assert!(p.resolve("../extra/f.txt", Access::Write).is_ok());
    }

    #[test]
    fn a_sibling_sharing_the_base_prefix_is_outside() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let evil = d.path().join("proj-evil");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&evil).unwrap();
        let err = policy(&base).resolve(evil.join("x").to_str().unwrap(), Access::Read).map_err(shown).unwrap_err();
        assert!(err.contains("which is outside base directory"), "{err}");
    }

    #[test]
    fn dotdot_through_a_missing_directory_cannot_escape() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        let p = policy(&base);
        assert!(p.resolve("missing/../../x", Access::Write).is_err());
        assert_eq!(p.resolve("missing/../x", Access::Write).unwrap(), p.base.join("x"));
    }

    #[test]
    fn symlinked_directory_inside_the_base_pointing_outside_is_refused_for_new_files() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let out = d.path().join("out");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&out, base.join("door")).unwrap();
        let err = policy(&base).resolve("door/new.txt", Access::Write).map_err(shown).unwrap_err();
        assert!(err.contains("door/new.txt"), "{err}");
    }

    #[test]
    fn tilde_is_the_callers_home() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(d.path());
        assert_eq!(p.unresolved("~/notes.txt").unwrap(), PathBuf::from("/home/tester/notes.txt"));
        let none = PathPolicy { home: None, ..policy(d.path()) };
        assert_eq!(none.unresolved("~/x").map_err(shown).unwrap_err(), "error: ~ used but HOME is not set");
    }

    #[test]
    fn tilde_user_paths_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let err = policy(d.path()).resolve("~root/x", Access::Read).map_err(shown).unwrap_err();
        assert!(err.contains("~user"), "{err}");
    }

    #[test]
    fn mcp_json_cannot_be_written_but_can_be_read() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(d.path());
        assert!(p.resolve("sub/mcp.json", Access::Write).is_err());
        assert!(p.resolve("sub/mcp.json", Access::Read).is_ok());
    }

    #[test]
    fn display_is_relative_inside_the_base_and_absolute_outside() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(d.path());
        assert_eq!(p.display(&p.base.join("a/b")), "a/b");
        assert_eq!(p.display(&p.base), ".");
        assert_eq!(p.display(Path::new("/etc/x")), "/etc/x");
    }

    #[test]
    fn dangling_symlink_pointing_outside_is_refused_for_writes() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        std::os::unix::fs::symlink(d.path().join("not-yet"), base.join("trap")).unwrap();
        let err = policy(&base).resolve("trap", Access::Write).map_err(shown).unwrap_err();
        assert!(err.contains("which is outside base directory"), "{err}");
    }

    #[test]
    fn relative_symlinks_and_dotdot_after_them_resolve_like_the_kernel() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::os::unix::fs::symlink("a/b", base.join("l")).unwrap();
        let p = policy(&base);
        // l/.. is a, not the base: the link is followed before `..`.
        assert_eq!(p.resolve("l/../new.txt", Access::Write).unwrap(), p.base.join("a/new.txt"));
    }

    #[test]
    fn outside_the_base_is_refused_in_swivals_words() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        let p = policy(&base);
        let err = p.resolve("../x.txt", Access::Read).map_err(shown).unwrap_err();
        let outside = p.base.parent().unwrap().join("x.txt");
        assert_eq!(
            err,
            format!(
                "error: Path '../x.txt' resolves to {}, which is outside base directory {}. You are not allowed to access that directory by any means.",
                outside.display(),
                p.base.display()
            )
        );
        let err = p.resolve("/", Access::Read).map_err(shown).unwrap_err();
        assert_eq!(
            err,
            "error: Path '/' resolves to the filesystem root, which is not allowed even in unrestricted mode"
        );
    }

    #[test]
    fn files_none_reaches_only_the_swival_dir() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let extra = d.path().join("extra");
        std::fs::create_dir_all(base.join(".swival")).unwrap();
        std::fs::create_dir(&extra).unwrap();
        let mut p = policy(&base);
        p.files = FilesMode::None;
        p.allow_rw = vec![extra.canonicalize().unwrap()];
        for access in [Access::Read, Access::Write] {
            assert_eq!(p.resolve(".swival/notes.md", access).unwrap(), p.base.join(".swival/notes.md"));
        }
        let err = p.resolve("src/main.rs", Access::Read).map_err(shown).unwrap_err();
        assert_eq!(
            err,
            format!(
                "error: Path 'src/main.rs' resolves to {}, which is outside .swival/ (filesystem access is disabled)",
                p.base.join("src/main.rs").display()
            )
        );
        for bad in [".", ".swival/../x", ".swivalx/y", extra.join("f").to_str().unwrap()] {
            let err = p.resolve(bad, Access::Read).map_err(shown).unwrap_err();
            assert!(err.contains("outside .swival/"), "{bad}: {err}");
        }
    }

    #[test]
    fn files_none_does_not_follow_a_swival_dir_leading_elsewhere() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, base.join(".swival")).unwrap();
        let mut p = policy(&base);
        p.files = FilesMode::None;
        assert!(p.resolve(".swival/x", Access::Write).map_err(shown).unwrap_err().contains("outside .swival/"));
    }

    #[test]
    fn files_all_reaches_outside_but_never_the_root_hidden_or_protected() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        let out = d.path().join("out");
        std::fs::create_dir(&base).unwrap();
        std::fs::create_dir(&out).unwrap();
        let mut p = policy(&base);
        p.files = FilesMode::All;
        p.hidden = vec![out.canonicalize().unwrap().join("secret")];
        p.protected = vec![out.canonicalize().unwrap().join("hook.sh")];
        let f = out.join("f.txt");
        assert_eq!(p.resolve(f.to_str().unwrap(), Access::Write).unwrap(), out.canonicalize().unwrap().join("f.txt"));
        assert!(p.resolve("../out/g.txt", Access::Read).is_ok());
        assert!(p.resolve("/", Access::Read).map_err(shown).unwrap_err().contains("filesystem root"));
        assert!(p
            .resolve("../out/secret/k", Access::Read)
            .map_err(shown)
            .unwrap_err()
            .contains("hidden from the agent"));
        assert!(p.resolve("../out/hook.sh", Access::Write).map_err(shown).unwrap_err().contains("protected policy"));
    }

    #[test]
    fn python_repr_quotes_like_swivals_messages() {
        assert_eq!(py_repr("a.txt"), "'a.txt'");
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\nb\\c"), "'a\\nb\\\\c'");
    }
}
