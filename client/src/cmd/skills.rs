//! `swivalctl skills`: Swival's `swival skills` (`skills_cli.py`), on the
//! user's files, no daemon needed. Skills live in the project's
//! `.swival/skills/`, the global `$XDG_CONFIG_HOME/swival/skills/`, and
//! the library `$XDG_CONFIG_HOME/swival/library/skills/<collection>/`
//! (staged collections, not discovered). `add <URL>` fetches a git
//! repository with the `git` program (a shallow clone, two minutes at
//! most); `add <name>` installs from the library; `add <directory>` (ours)
//! installs from a local checkout. Nothing with a symlink is installed,
//! and nothing is deleted through one.

mod files;

use clap::Subcommand;
use files::{copy_tree, has_symlink, is_skill_dir, sorted_dirs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swival_protocol::skills::{self as rules, py_repr, SKILL_FILE};

/// How long git may take to fetch (Swival's `_GIT_TIMEOUT`).
const GIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// Swival's words when git is missing.
const GIT_MISSING: &str = "git is required to fetch skills from a URL — install git and retry";

/// `swivalctl skills` subcommands.
#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// Install a skill from a URL or the library.
    Add {
        /// A git/GitHub URL, the name of a library skill or collection, or
        /// a local directory (`./dir`, `/abs/dir`).
        target: String,
        /// Act on global config instead of the project. With a URL, stages
        /// into the global skills library (does NOT activate — run
        /// 'skills add <name>' afterward to install).
        #[arg(long = "global")]
        global: bool,
        /// Override the library collection name (only with 'add --global <URL>').
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        /// git branch, tag, or commit to fetch (default: repo default branch).
        #[arg(long = "ref", value_name = "REF")]
        git_ref: Option<String>,
        /// Replace existing skills/collection instead of skipping.
        #[arg(long)]
        force: bool,
    },
    /// Remove an installed skill.
    #[command(alias = "remove")]
    Delete {
        /// Skill name (or collection/skill with --library).
        name: String,
        /// Delete from the global active skills directory.
        #[arg(long = "global")]
        global: bool,
        /// Delete from the skills library instead of an active location.
        #[arg(long)]
        library: bool,
    },
    /// List installed or staged skills.
    List {
        /// List staged library collections instead of active skills.
        #[arg(long)]
        library: bool,
    },
}

/// A user-facing failure: printed, exit 1.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SkillsError(String);

/// Shorthand for a [`SkillsError`].
fn err<T>(message: impl Into<String>) -> Result<T, SkillsError> {
    Err(SkillsError(message.into()))
}

/// Run a `swivalctl skills` subcommand.
pub async fn run(action: SkillsAction) -> ExitCode {
    let result = match action {
        SkillsAction::Add { target, global, as_name, git_ref, force } => {
            add(&target, global, as_name.as_deref(), git_ref, force).await
        }
        SkillsAction::Delete { name, global, library } => delete(&name, global, library),
        SkillsAction::List { library } => list(library),
    };
    result.unwrap_or_else(|e| super::fail(&e))
}

/// A SKILL.md's text: opened without blocking (a FIFO a command planted
/// in the project cannot hang the listing) and read only when it is a
/// regular file of at most 1 MiB.
fn read_skill(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Err(std::io::Error::other("not a regular file of at most 1 MiB"));
    }
    let mut text = String::new();
    file.take(1 << 20).read_to_string(&mut text)?;
    Ok(text)
}

/// Swival's warning line.
fn warning(message: &str) {
    eprintln!("  ⚠ Warning: {}", super::clean::text(message));
}

/// `$XDG_CONFIG_HOME/swival`, as the daemon finds it.
fn config_dir() -> PathBuf {
    directories::BaseDirs::new()
        .map(|b| b.config_dir().join("swival"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("swival-{}", nix::unistd::getuid())))
}

/// The global active skills directory.
fn global_dir() -> PathBuf {
    config_dir().join("skills")
}

/// The skills library (staged collections).
fn library_dir() -> PathBuf {
    config_dir().join("library").join("skills")
}

/// The project's `.swival/skills/` (the project as `run` finds it).
fn project_dir() -> Result<PathBuf, SkillsError> {
    let cwd = std::env::current_dir().map_err(|e| SkillsError(format!("cannot read the current directory: {e}")))?;
    Ok(super::flags::base_dir(None, &cwd).join(".swival").join("skills"))
}

/// Swival's check of a name used as one path component.
fn require_safe(name: &str, what: &str) -> Result<(), SkillsError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        err(format!("invalid {what}: {}", py_repr(name)))
    }
}

/// A candidate skill directory checked as Swival does: no symlink in it,
/// a SKILL.md that parses, a valid name (`expected`: the directory name it
/// must match; `None`: its own name). Its name, or why not.
fn validate(src: &Path, expected: Option<&str>) -> Result<String, String> {
    if has_symlink(src) {
        return Err("contains a symlink, which is not allowed in a skill".into());
    }
    let text = read_skill(&src.join(SKILL_FILE)).map_err(|e| format!("cannot read SKILL.md: {e}"))?;
    let parsed = rules::parse_frontmatter(&text).map_err(|e| format!("invalid SKILL.md frontmatter: {e}"))?;
    rules::validate_skill_name(&parsed.name, expected.unwrap_or(&parsed.name)).map_err(|e| e.to_string())?;
    Ok(parsed.name)
}

/// What installing one skill did.
enum Installed {
    /// It was new.
    New,
    /// It replaced one (`--force`).
    Replaced,
    /// One of that name was there.
    Skipped,
}

/// Copy `src` to `<dest_root>/<name>` through a temporary directory, then
/// rename it into place (the old one moved aside first with `--force`).
fn install_one(src: &Path, dest_root: &Path, name: &str, force: bool) -> std::io::Result<Installed> {
    let dest = dest_root.join(name);
    if dest.symlink_metadata().is_ok() && !force {
        return Ok(Installed::Skipped);
    }
    std::fs::create_dir_all(dest_root)?;
    let tmp = dest_root.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let copied = copy_tree(src, &tmp).and_then(|()| files::replace(&tmp, &dest));
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(if copied? { Installed::Replaced } else { Installed::New })
}

/// Install `candidates` into `dest_root` (`where_`: how to name it);
/// Swival's lines and exit code.
fn install(candidates: &[(String, PathBuf)], dest_root: &Path, force: bool, where_: &str) -> ExitCode {
    let (mut installed, mut skipped, mut failed) = (Vec::new(), 0, 0);
    for (name, src) in candidates {
        match install_one(src, dest_root, name, force) {
            Ok(Installed::Skipped) => {
                warning(&format!(
                    "skill {} already exists in {}; use --force to replace",
                    py_repr(name),
                    dest_root.display()
                ));
                skipped += 1;
            }
            Ok(Installed::New | Installed::Replaced) => installed.push(name.as_str()),
            Err(e) => {
                warning(&format!("failed to install {}: {e}", py_repr(name)));
                failed += 1;
            }
        }
    }
    if !installed.is_empty() {
        let (n, names) = (installed.len(), installed.join(", "));
        println!("Installed {n} skill(s) into {where_} ({}): {names}", dest_root.display());
        return ExitCode::SUCCESS;
    }
    // Everything already there is still a success; a failure or nothing at all is not.
    if skipped > 0 && failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Swival's test of whether `add`'s argument is a URL rather than a name.
fn looks_like_url(s: &str) -> bool {
    if ["http://", "https://", "ssh://", "git://"].iter().any(|p| s.starts_with(p)) || s.contains("://") {
        return true;
    }
    // git@host:owner/repo
    if let Some((user, rest)) = s.split_once('@') {
        if !user.is_empty() && !user.contains('/') {
            if let Some((host, _)) = rest.split_once(':') {
                if !host.is_empty() && !host.contains('/') {
                    return true;
                }
            }
        }
    }
    s.contains('/') && !s.contains(' ') && s.split('/').next().is_some_and(|first| first.contains('.'))
}

/// Whether `add`'s argument names a local directory (ours, not Swival's).
fn local_dir(s: &str) -> Option<PathBuf> {
    let explicit = s.starts_with('/') || s.starts_with("./") || s.starts_with("../");
    let p = PathBuf::from(s);
    (explicit && p.is_dir()).then_some(p)
}

/// `skills add`.
async fn add(
    target: &str,
    global: bool,
    as_name: Option<&str>,
    git_ref: Option<String>,
    force: bool,
) -> Result<ExitCode, SkillsError> {
    if let Some(dir) = local_dir(target) {
        if git_ref.is_some() || as_name.is_some() {
            return err("--ref and --as are only valid when adding from a URL");
        }
        let candidates = collect_repo(&dir)?;
        return active_install(&candidates, global, force);
    }
    let url = looks_like_url(target);
    let (target, git_ref) = match (url, git_ref) {
        (true, None) if target.contains('#') => {
            let (t, r) = target.rsplit_once('#').unwrap_or((target, ""));
            (t, Some(r.to_owned()))
        }
        (_, r) => (target, r),
    };
    if as_name.is_some() && !(url && global) {
        return err("--as is only valid with 'skills add --global <URL>' (it names the library collection)");
    }
    if url {
        return files::add_from_url(target, git_ref.as_deref(), global, force, as_name).await;
    }
    if git_ref.is_some() {
        return err("--ref is only valid when adding from a URL");
    }
    let lib = library_dir();
    if !lib.is_dir() {
        return err(format!(
            "the skills library is empty ({}); stage a collection first with 'swivalctl skills add --global <URL>'",
            lib.display()
        ));
    }
    let candidates = library_skills(target, &lib)?;
    active_install(&candidates, global, force)
}

/// Install into the project's skills, or the global ones.
fn active_install(candidates: &[(String, PathBuf)], global: bool, force: bool) -> Result<ExitCode, SkillsError> {
    match global {
        true => Ok(install(candidates, &global_dir(), force, "global skills")),
        false => Ok(install(candidates, &project_dir()?, force, "this project")),
    }
}

/// The skills of a fetched repository or local checkout: those in its
/// `skills/`, or the one at its root.
fn collect_repo(root: &Path) -> Result<Vec<(String, PathBuf)>, SkillsError> {
    let skills = root.join("skills");
    if skills.is_symlink() {
        return err("repository 'skills' is a symlink, which is not allowed");
    }
    if skills.is_dir() {
        let mut out = Vec::new();
        for entry in sorted_dirs(&skills).into_iter().filter(|e| is_skill_dir(e)) {
            let dir_name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match validate(&entry, Some(&dir_name)) {
                Ok(name) => out.push((name, entry)),
                Err(e) => warning(&format!("skipping skill {}: {e}", py_repr(&dir_name))),
            }
        }
        if out.is_empty() {
            return err(format!("no valid skills found in {}", root.display()));
        }
        return Ok(out);
    }
    if root.join(SKILL_FILE).is_file() {
        let name = validate(root, None).map_err(|e| SkillsError(format!("invalid skill at repository root: {e}")))?;
        return Ok(vec![(name, root.to_owned())]);
    }
    err("no 'skills/' directory or SKILL.md found in the repository")
}

/// The library skills `name` means: `collection/skill`, a whole
/// collection, or a skill found in exactly one collection.
fn library_skills(name: &str, lib: &Path) -> Result<Vec<(String, PathBuf)>, SkillsError> {
    if let Some((coll, skill)) = name.split_once('/') {
        require_safe(coll, "collection")?;
        require_safe(skill, "skill name")?;
        let src = lib.join(coll).join(skill);
        if !is_skill_dir(&src) {
            return err(format!("skill {} not found in library collection {}", py_repr(skill), py_repr(coll)));
        }
        let vname =
            validate(&src, Some(skill)).map_err(|e| SkillsError(format!("invalid skill {}: {e}", py_repr(name))))?;
        return Ok(vec![(vname, src)]);
    }
    require_safe(name, "name")?;
    let coll_dir = lib.join(name);
    if coll_dir.is_dir() {
        let mut out = Vec::new();
        for entry in sorted_dirs(&coll_dir).into_iter().filter(|e| is_skill_dir(e)) {
            let dir_name = entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match validate(&entry, Some(&dir_name)) {
                Ok(vname) => out.push((vname, entry)),
                Err(e) => warning(&format!("skipping skill {}: {e}", py_repr(&dir_name))),
            }
        }
        if out.is_empty() {
            return err(format!("collection {} contains no valid skills", py_repr(name)));
        }
        return Ok(out);
    }
    let matches = files::across_collections(name, lib);
    match matches.as_slice() {
        [] => err(format!("{} not found in the skills library (neither a collection nor a skill)", py_repr(name))),
        [(_, entry)] => {
            let vname = validate(entry, Some(name))
                .map_err(|e| SkillsError(format!("invalid skill {}: {e}", py_repr(name))))?;
            Ok(vec![(vname, entry.clone())])
        }
        many => {
            let locs = many.iter().map(|(c, _)| format!("{c}/{name}")).collect::<Vec<_>>().join(", ");
            err(format!(
                "skill {} is ambiguous across collections: {locs}; disambiguate with 'collection/skill'",
                py_repr(name)
            ))
        }
    }
}

/// `skills delete` (also `remove`).
fn delete(name: &str, global: bool, library: bool) -> Result<ExitCode, SkillsError> {
    if library {
        return files::delete_library(name, &library_dir());
    }
    if name.contains('/') {
        return err("'collection/skill' paths require --library; active skills are addressed by name only");
    }
    require_safe(name, "skill name")?;
    let root = if global { global_dir() } else { project_dir()? };
    files::safe_delete(&root.join(name), &root)?;
    println!("Removed skill {} from {}", py_repr(name), root.display());
    Ok(ExitCode::SUCCESS)
}

/// `skills list`.
fn list(library: bool) -> Result<ExitCode, SkillsError> {
    if library {
        files::print_library(&library_dir());
        return Ok(ExitCode::SUCCESS);
    }
    print_active("project skills", &project_dir()?);
    print_active("global skills", &global_dir());
    Ok(ExitCode::SUCCESS)
}

/// One active location's skills, as Swival lists them.
fn print_active(label: &str, root: &Path) {
    println!("{label} ({}):", root.display());
    let mut items = Vec::new();
    for entry in sorted_dirs(root).into_iter().filter(|e| is_skill_dir(e)) {
        let Ok(text) = read_skill(&entry.join(SKILL_FILE)) else { continue };
        match rules::parse_frontmatter(&text) {
            Ok(parsed) => items.push((parsed.name, short(&parsed.description))),
            Err(_) => items.push((
                entry.file_name().unwrap_or_default().to_string_lossy().into_owned(),
                "(invalid SKILL.md)".into(),
            )),
        }
    }
    if items.is_empty() {
        println!("  (none)");
    }
    for (name, description) in items {
        println!("  {} — {}", super::clean::text(&name), super::clean::text(&description));
    }
}

/// A description on one line, cut to 70 characters.
fn short(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 70 {
        flat
    } else {
        format!("{}...", flat.chars().take(67).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_names_are_told_apart_as_swival_does() {
        for url in ["https://github.com/o/r", "git@github.com:o/r.git", "github.com/o/r", "x://y"] {
            assert!(looks_like_url(url), "{url}");
        }
        for name in ["pdf", "coll/skill", "my skill/x"] {
            assert!(!looks_like_url(name), "{name}");
        }
        assert_eq!(short(&"word ".repeat(30)).chars().count(), 70);
        assert!(require_safe("../x", "name").is_err() && require_safe("a.b_c-1", "name").is_ok());
    }
}
