//! Finding a run's skills as Swival does (`discover_skills`): the
//! project's `.swival/skills/` then `.agents/skills/` (one level), each
//! `skills_dir` (a skill itself, or a tree searched three levels deep),
//! then the global `$XDG_CONFIG_HOME/swival/skills/` and
//! `~/.agents/skills/`; the first skill of a name wins. Each skipped skill
//! is a warning in Swival's words.
//!
//! Every read goes through [`beneath`] from the directory a root was
//! opened as: a project's roots beneath the project (`.swival` through
//! [`beneath::swival_dir`]), a `skills_dir` inside the project beneath it
//! too, any other directory the user named as it resolves. Beneath a
//! root no symlink is followed: a skill directory, a `SKILL.md` or a
//! directory on the way that is a symlink is skipped with a warning, so
//! nothing outside the root is read.

use super::{Catalog, Skill};
use crate::beneath::{self, Beneath, Kind, Missing};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use swival_protocol::skills::{self as rules, py_repr, SKILL_FILE};

/// A project's skill directories, relative to its base dir, in the
/// order they are searched.
pub const PROJECT_DIRS: [&str; 2] = [".swival/skills", ".agents/skills"];

/// Levels a skills directory is searched (Swival's `_scan_skills_dir`).
const MAX_DEPTH: usize = 3;

/// Where a run looks for skills.
#[derive(Debug, Clone)]
pub struct Sources<'a> {
    /// The session's base directory, canonical.
    pub base: &'a Path,
    /// `skills_dir`, in order.
    pub extra: &'a [PathBuf],
    /// The global directories, in order ([`global_dirs`]).
    pub global: Vec<PathBuf>,
}

/// What discovery found: the catalogue and the warnings for the skills it
/// skipped.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The skills, by name.
    pub catalog: Catalog,
    /// One line per skipped skill or directory, Swival's words.
    pub warnings: Vec<String>,
}

/// Swival's global skill directories: `$XDG_CONFIG_HOME/swival/skills/`
/// (the daemon's config dir) and `~/.agents/skills/`.
pub fn global_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![crate::paths::config_dir().join("skills")];
    if let Some(home) = directories::BaseDirs::new().map(|b| b.home_dir().to_owned()) {
        dirs.push(home.join(".agents").join("skills"));
    }
    dirs
}

/// A directory being searched: open, with the directory it was opened
/// from (`anchor`) and its path beneath it.
struct Root {
    /// The directory itself.
    dir: Beneath,
    /// The canonical directory every later open starts from.
    anchor: PathBuf,
    /// The root beneath `anchor` (empty: the anchor itself).
    rel: PathBuf,
}

impl Root {
    /// The root's path, as shown.
    fn shown(&self, rel: &Path) -> PathBuf {
        join(&self.anchor.join(&self.rel), rel)
    }
}

/// `a` joined with `b`, `a` itself when `b` is empty.
fn join(a: &Path, b: &Path) -> PathBuf {
    if b.as_os_str().is_empty() {
        a.to_owned()
    } else {
        a.join(b)
    }
}

/// Find the skills of `sources`.
pub fn discover(sources: &Sources<'_>) -> Discovery {
    let mut scan = Scan { base: sources.base, found: BTreeMap::new(), warnings: Vec::new(), scanned: Vec::new() };
    for sub in PROJECT_DIRS {
        if let Some(root) = scan.project_root(Path::new(sub)) {
            scan.flat(&root);
        }
    }
    for extra in sources.extra {
        let Some(root) = scan.named_root(extra) else { continue };
        match root.dir.metadata(Path::new(SKILL_FILE)).map(|m| m.kind) {
            Ok(Kind::File | Kind::Symlink) => {
                let name = root.anchor.join(&root.rel).file_name().map(OsString::from).unwrap_or_default();
                scan.load(&root, Path::new(""), &name);
            }
            _ => scan.deep(&root, Path::new(""), 0),
        }
    }
    for global in &sources.global {
        let Ok(canonical) = global.canonicalize() else { continue };
        if !canonical.is_dir() || scan.scanned.contains(&canonical) {
            continue;
        }
        if let Some(root) = scan.open(&canonical, PathBuf::new(), global) {
            scan.deep(&root, Path::new(""), 0);
        }
    }
    Discovery { catalog: Catalog::new(scan.found), warnings: scan.warnings }
}

/// One discovery under way.
struct Scan<'a> {
    /// The base directory.
    base: &'a Path,
    /// The skills so far, by name.
    found: BTreeMap<String, Skill>,
    /// Warnings so far.
    warnings: Vec<String>,
    /// Directories searched already (a `skills_dir` naming one is skipped).
    scanned: Vec<PathBuf>,
}

impl Scan<'_> {
    /// `<base>/<sub>` opened beneath the base (through `swival_dir` for
    /// `.swival`); `None` when it does not exist or is refused.
    fn project_root(&mut self, sub: &Path) -> Option<Root> {
        let shown = self.base.join(sub);
        let opened = match sub.strip_prefix(".swival") {
            Ok(rest) => beneath::swival_dir(self.base, Missing::Fail).and_then(|d| d.open_dir(rest)),
            Err(_) => Beneath::open(self.base).and_then(|d| d.open_dir(sub)),
        };
        match opened {
            Ok(dir) => {
                self.scanned.push(shown);
                Some(Root { dir, anchor: self.base.to_owned(), rel: sub.to_owned() })
            }
            Err(e) => {
                self.refused(&shown, e);
                None
            }
        }
    }

    /// A `skills_dir`: beneath the base when it names a path inside it,
    /// else the directory it resolves to; Swival's warnings when it does
    /// not exist or is not a directory.
    fn named_root(&mut self, extra: &Path) -> Option<Root> {
        let inside = extra
            .strip_prefix(self.base)
            .ok()
            .filter(|rel| rel.components().all(|c| matches!(c, Component::Normal(_))));
        if let Some(rel) = inside {
            let shown = self.base.join(rel);
            if self.scanned.contains(&shown) {
                return None;
            }
            return self.open(self.base, rel.to_owned(), extra);
        }
        let Ok(canonical) = extra.canonicalize() else {
            self.warnings.push(format!("skills directory does not exist: {}", extra.display()));
            return None;
        };
        if !canonical.is_dir() {
            self.warnings.push(format!("skills path is not a directory: {}", extra.display()));
            return None;
        }
        if self.scanned.contains(&canonical) {
            return None;
        }
        self.open(&canonical, PathBuf::new(), extra)
    }

    /// Open `rel` beneath `anchor` as a root (`named`: the path as
    /// configured, for the warnings).
    fn open(&mut self, anchor: &Path, rel: PathBuf, named: &Path) -> Option<Root> {
        let opened =
            Beneath::open(anchor).and_then(|d| if rel.as_os_str().is_empty() { Ok(d) } else { d.open_dir(&rel) });
        match opened {
            Ok(dir) => {
                self.scanned.push(join(anchor, &rel));
                Some(Root { dir, anchor: anchor.to_owned(), rel })
            }
            Err(e) if e.is_not_found() => {
                self.warnings.push(format!("skills directory does not exist: {}", named.display()));
                None
            }
            Err(beneath::Error::Io(e)) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => {
                self.warnings.push(format!("skills path is not a directory: {}", named.display()));
                None
            }
            Err(e) => {
                self.refused(named, e);
                None
            }
        }
    }

    /// Say why `shown` was not searched, unless it simply does not exist.
    fn refused(&mut self, shown: &Path, e: beneath::Error) {
        match e {
            beneath::Error::Symlink(_) => {
                self.warnings.push(format!("skills in {} not loaded: {e}", shown.display()));
            }
            beneath::Error::Io(ref io)
                if matches!(io.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {}
            e => self.warnings.push(format!("skills in {} not loaded: {e}", shown.display())),
        }
    }

    /// The entries of `rel` beneath `root`, sorted by name.
    fn entries(&mut self, root: &Root, rel: &Path) -> Vec<beneath::Entry> {
        let mut entries = root.dir.list(rel).unwrap_or_default();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        entries
    }

    /// A project root: each directory in it may be a skill.
    fn flat(&mut self, root: &Root) {
        for entry in self.entries(root, Path::new("")) {
            let rel = PathBuf::from(&entry.name);
            match entry.meta.kind {
                Kind::Dir => self.load(root, &rel, &entry.name),
                Kind::Symlink => self.symlinked(&root.shown(&rel)),
                Kind::File | Kind::Other => {}
            }
        }
    }

    /// A tree of skills: a directory holding a SKILL.md is a skill, any
    /// other is searched, [`MAX_DEPTH`] levels down; hidden ones are not.
    fn deep(&mut self, root: &Root, rel: &Path, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        for entry in self.entries(root, rel) {
            if entry.name.as_encoded_bytes().starts_with(b".") {
                continue;
            }
            let sub = rel.join(&entry.name);
            match entry.meta.kind {
                Kind::Dir => match root.dir.metadata(&sub.join(SKILL_FILE)).map(|m| m.kind) {
                    Ok(Kind::File | Kind::Symlink) => self.load(root, &sub, &entry.name),
                    _ => self.deep(root, &sub, depth + 1),
                },
                Kind::Symlink => self.symlinked(&root.shown(&sub)),
                Kind::File | Kind::Other => {}
            }
        }
    }

    /// A skill directory that is a symlink: never followed.
    fn symlinked(&mut self, shown: &Path) {
        self.warnings.push(format!("skill directory {} is a symlink and was not followed", shown.display()));
    }

    /// Load the skill in `rel` beneath `root` (Swival's `_try_load_skill`).
    fn load(&mut self, root: &Root, rel: &Path, dir_name: &std::ffi::OsStr) {
        let entry = root.shown(rel);
        let skill_md = rel.join(SKILL_FILE);
        match root.dir.metadata(&skill_md).map(|m| m.kind) {
            Ok(Kind::File) => {}
            Ok(Kind::Symlink) => {
                let shown = entry.join(SKILL_FILE).display().to_string();
                return self.warnings.push(format!("{shown} is a symlink and was not followed"));
            }
            _ => return,
        }
        let text = match root
            .dir
            .read_regular(&skill_md, super::SKILL_MAX_BYTES)
            .map_err(std::io::Error::from)
            .and_then(|b| String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
        {
            Ok(t) => t,
            Err(e) => return self.warnings.push(format!("failed to read {}: {e}", entry.join(SKILL_FILE).display())),
        };
        let parsed = match rules::parse_frontmatter(&text) {
            Ok(p) => p,
            Err(e) => {
                return self.warnings.push(format!("failed to parse SKILL.md frontmatter in {}: {e}", entry.display()))
            }
        };
        if let Some(warning) = self.check(&parsed, &entry, dir_name) {
            return self.warnings.push(warning);
        }
        let name = parsed.name;
        let is_local = entry.starts_with(self.base);
        let description = rules::strip_markdown_comments(&parsed.description).trim().to_owned();
        let skill = Skill {
            name: name.clone(),
            description,
            path: entry,
            is_local,
            anchor: root.anchor.clone(),
            rel: join(&root.rel, rel),
        };
        self.found.insert(name, skill);
    }

    /// Why a parsed skill is skipped, in Swival's words; `None` when it
    /// is loaded.
    fn check(&self, parsed: &rules::Frontmatter, entry: &Path, dir_name: &std::ffi::OsStr) -> Option<String> {
        let name = &parsed.name;
        let description = rules::strip_markdown_comments(&parsed.description);
        let description = description.trim();
        if let Err(e) = rules::validate_skill_name(name, &dir_name.to_string_lossy()) {
            return Some(format!("invalid skill in {}: {e}", entry.display()));
        }
        if description.is_empty() {
            return Some(format!("skill {} description is empty after stripping comments, skipping", py_repr(name)));
        }
        if description.chars().count() > rules::MAX_SKILL_DESCRIPTION_CHARS {
            let max = rules::MAX_SKILL_DESCRIPTION_CHARS;
            return Some(format!("skill {} description exceeds {max} chars, skipping", py_repr(name)));
        }
        let existing = self.found.get(name)?;
        Some(format!(
            "skill {} in {} ignored; already loaded from {}",
            py_repr(name),
            entry.display(),
            existing.path.display()
        ))
    }
}
