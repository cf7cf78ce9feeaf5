//! The file work of `swivalctl skills`: walking, copying and replacing
//! skill directories without following symlinks, deleting only real
//! directories inside their root, the library's collections and their
//! `.origin.toml`, and fetching a repository with `git`.

use super::{err, install, require_safe, SkillsError, GIT_MISSING, GIT_TIMEOUT};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use swival_protocol::skills::{py_repr, SKILL_FILE};

/// A skill directory: a real directory (not a symlink) holding a SKILL.md.
pub(super) fn is_skill_dir(entry: &Path) -> bool {
    entry.symlink_metadata().is_ok_and(|m| m.is_dir()) && entry.join(SKILL_FILE).is_file()
}

/// The directories in `dir` (symlinks included, as entries), sorted,
/// hidden ones left out.
pub(super) fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().as_encoded_bytes().starts_with(b"."))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Whether `root`, or anything in it (`.git` aside), is a symlink.
pub(super) fn has_symlink(root: &Path) -> bool {
    if !root.symlink_metadata().is_ok_and(|m| !m.file_type().is_symlink()) {
        return true;
    }
    let Ok(read) = std::fs::read_dir(root) else { return false };
    read.filter_map(Result::ok).any(|e| match e.file_type() {
        Ok(t) if t.is_symlink() => true,
        Ok(t) if t.is_dir() && e.file_name() != ".git" => has_symlink(&e.path()),
        _ => false,
    })
}

/// Copy the tree `src` to the new directory `dest`, `.git` left out;
/// anything but files and directories is refused.
pub(super) fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<()> {
    std::fs::create_dir(dest)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dest.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() && entry.file_name() != ".git" {
            copy_tree(&from, &to)?;
        } else if kind.is_file() {
            std::fs::copy(&from, &to)?;
        } else if !kind.is_dir() {
            return Err(std::io::Error::other(format!("{} is not a file or directory", from.display())));
        }
    }
    Ok(())
}

/// Move `tmp` to `dest`, the old `dest` moved aside first and put back if
/// the move fails; whether one was replaced.
pub(super) fn replace(tmp: &Path, dest: &Path) -> std::io::Result<bool> {
    if dest.symlink_metadata().is_err() {
        std::fs::rename(tmp, dest)?;
        return Ok(false);
    }
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let old = dest.with_file_name(format!(".{name}.old-{}", std::process::id()));
    remove(&old);
    std::fs::rename(dest, &old)?;
    if let Err(e) = std::fs::rename(tmp, dest) {
        let _ = std::fs::rename(&old, dest);
        return Err(e);
    }
    remove(&old);
    Ok(true)
}

/// Remove a file, symlink or tree, if it is there.
fn remove(p: &Path) {
    match p.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
}

/// Delete the skill directory `target` inside `root`: never a symlink,
/// never `root` itself or anything outside it.
pub(super) fn safe_delete(target: &Path, root: &Path) -> Result<(), SkillsError> {
    if target.is_symlink() {
        return err(format!("refusing to delete symlink {}", target.display()));
    }
    if !target.is_dir() {
        return err(format!("not found: {}", target.display()));
    }
    let (root_r, target_r) = match (root.canonicalize(), target.canonicalize()) {
        (Ok(r), Ok(t)) => (r, t),
        _ => return err(format!("not found: {}", target.display())),
    };
    if target_r == root_r || !target_r.starts_with(&root_r) {
        return err(format!("refusing to delete {} (outside {})", target.display(), root.display()));
    }
    std::fs::remove_dir_all(&target_r).map_err(|e| SkillsError(format!("cannot delete {}: {e}", target.display())))
}

/// Every `(collection, dir)` of the library holding a skill `name`.
pub(super) fn across_collections(name: &str, lib: &Path) -> Vec<(String, PathBuf)> {
    sorted_dirs(lib)
        .into_iter()
        .filter(|coll| !coll.is_symlink())
        .map(|coll| (coll.file_name().unwrap_or_default().to_string_lossy().into_owned(), coll.join(name)))
        .filter(|(_, entry)| is_skill_dir(entry))
        .collect()
}

/// `skills delete --library`.
pub(super) fn delete_library(name: &str, lib: &Path) -> Result<ExitCode, SkillsError> {
    if let Some((coll, skill)) = name.split_once('/') {
        require_safe(coll, "collection")?;
        require_safe(skill, "skill name")?;
        safe_delete(&lib.join(coll).join(skill), lib)?;
        println!("Removed skill {coll}/{skill} from the library");
        return Ok(ExitCode::SUCCESS);
    }
    require_safe(name, "name")?;
    if lib.join(name).is_dir() {
        safe_delete(&lib.join(name), lib)?;
        println!("Removed collection {} from the library", py_repr(name));
        return Ok(ExitCode::SUCCESS);
    }
    let matches = across_collections(name, lib);
    match matches.as_slice() {
        [] => err(format!("{} not found in the skills library", py_repr(name))),
        [(coll, entry)] => {
            safe_delete(entry, lib)?;
            println!("Removed skill {coll}/{name} from the library");
            Ok(ExitCode::SUCCESS)
        }
        many => {
            let locs = many.iter().map(|(c, _)| format!("{c}/{name}")).collect::<Vec<_>>().join(", ");
            err(format!(
                "{} is ambiguous across collections: {locs}; disambiguate with 'collection/skill'",
                py_repr(name)
            ))
        }
    }
}

/// `skills list --library`.
pub(super) fn print_library(lib: &Path) {
    println!("skills library ({}):", lib.display());
    let colls = sorted_dirs(lib);
    if colls.is_empty() {
        println!("  (empty)");
    }
    for coll in colls {
        let suffix = read_origin(&coll).map(|o| format!("  [{o}]")).unwrap_or_default();
        println!("  {}{suffix}", coll.file_name().unwrap_or_default().to_string_lossy());
        for entry in sorted_dirs(&coll).into_iter().filter(|e| is_skill_dir(e)) {
            println!("    {}", entry.file_name().unwrap_or_default().to_string_lossy());
        }
    }
}

/// Where a staged collection came from (`url @ ref`), from its `.origin.toml`.
fn read_origin(coll: &Path) -> Option<String> {
    let table: toml::Table = std::fs::read_to_string(coll.join(".origin.toml")).ok()?.parse().ok()?;
    let url = table.get("url")?.as_str().filter(|u| !u.is_empty())?;
    Some(match table.get("ref").and_then(|r| r.as_str()) {
        Some(r) => format!("{url} @ {r}"),
        None => url.to_owned(),
    })
}

/// The collection name a URL gives (its last path component, `.git` off).
fn collection_name(url: &str) -> String {
    let path = match url.strip_prefix("git@") {
        Some(rest) => rest.split_once(':').map_or("", |(_, p)| p),
        None => url.split_once("://").map_or(url, |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p)),
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let base = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    base.strip_suffix(".git").unwrap_or(base).to_owned()
}

/// `skills add <URL>`: a shallow clone, then the project's skills, or the
/// library's collection with `--global`.
pub(super) async fn add_from_url(
    url: &str,
    git_ref: Option<&str>,
    global: bool,
    force: bool,
    as_name: Option<&str>,
) -> Result<ExitCode, SkillsError> {
    let norm = if ["http://", "https://", "ssh://", "git://", "git@"].iter().any(|p| url.starts_with(p)) {
        url.to_owned()
    } else {
        format!("https://{url}")
    };
    let collection = as_name.map_or_else(|| collection_name(&norm), str::to_owned);
    require_safe(&collection, "collection name (use --as to override)")?;
    let tmp = std::env::temp_dir().join(format!("swival-skills-{}-{}", std::process::id(), collection));
    remove(&tmp);
    let result = fetch_and_install(&norm, git_ref, &tmp, global, force, &collection).await;
    remove(&tmp);
    result
}

/// Clone into `tmp` and install or stage what it holds.
async fn fetch_and_install(
    url: &str,
    git_ref: Option<&str>,
    tmp: &Path,
    global: bool,
    force: bool,
    collection: &str,
) -> Result<ExitCode, SkillsError> {
    let commit = clone(url, git_ref, tmp).await?;
    let candidates = super::collect_repo(tmp)?;
    if !global {
        return Ok(install(&candidates, &super::project_dir()?, force, "this project"));
    }
    let lib = super::library_dir();
    let dest = lib.join(collection);
    if dest.symlink_metadata().is_ok() && !force {
        return err(format!(
            "collection {} is already staged in the library; use --force to replace it",
            py_repr(collection)
        ));
    }
    let staged = lib.join(format!(".{collection}.tmp-{}", std::process::id()));
    let io = |e: std::io::Error| SkillsError(format!("cannot stage {collection}: {e}"));
    std::fs::create_dir_all(&lib).map_err(io)?;
    remove(&staged);
    std::fs::create_dir(&staged).map_err(io)?;
    let staging = || -> std::io::Result<()> {
        for (name, src) in &candidates {
            copy_tree(src, &staged.join(name))?;
        }
        let mut origin = toml::Table::new();
        origin.insert("url".into(), url.into());
        if let Some(r) = git_ref {
            origin.insert("ref".into(), r.into());
        }
        if !commit.is_empty() {
            origin.insert("commit".into(), commit.clone().into());
        }
        std::fs::write(staged.join(".origin.toml"), origin.to_string())?;
        replace(&staged, &dest).map(|_| ())
    };
    let done = staging();
    remove(&staged);
    done.map_err(io)?;
    let names = candidates.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ");
    println!("Staged {} skill(s) into the library ({}):", candidates.len(), dest.display());
    println!("  {names}");
    println!("Run 'swivalctl skills add {collection}' to install them into this project,");
    println!("or 'swivalctl skills add --global {collection}' to install them globally.");
    Ok(ExitCode::SUCCESS)
}

/// Shallow-clone `url` (at `git_ref`) into `dest` with Swival's git
/// settings (no prompts, no redirects, no credential helper, https, ssh
/// and git only), each git call bounded by [`GIT_TIMEOUT`]; the commit.
async fn clone(url: &str, git_ref: Option<&str>, dest: &Path) -> Result<String, SkillsError> {
    let d = dest.to_string_lossy().into_owned();
    let mut args = vec!["clone", "--depth", "1", "--no-tags"];
    if let Some(r) = git_ref {
        args.extend(["--branch", r]);
    }
    args.extend(["--", url, &d]);
    let (ok, out) = git(&args, None, url).await?;
    if !ok {
        let Some(r) = git_ref else { return err(format!("git clone failed: {out}")) };
        // --branch takes no commit: init, fetch and check it out instead.
        remove(dest);
        let steps: [(&[&str], Option<&Path>); 4] = [
            (&["init", "-q", &d], None),
            (&["remote", "add", "origin", url], Some(dest)),
            (&["fetch", "--depth", "1", "origin", r], Some(dest)),
            (&["checkout", "-q", "FETCH_HEAD"], Some(dest)),
        ];
        for (args, cwd) in steps {
            let (ok, out) = git(args, cwd, url).await?;
            if !ok {
                return err(format!("git could not fetch ref {}: {out}", py_repr(r)));
            }
        }
    }
    let (ok, head) = git(&["rev-parse", "HEAD"], Some(dest), url).await?;
    Ok(if ok { head } else { String::new() })
}

/// Run git once: whether it succeeded and its output (stderr, else stdout), trimmed.
async fn git(args: &[&str], cwd: Option<&Path>, url: &str) -> Result<(bool, String), SkillsError> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(["-c", "http.followRedirects=false", "-c", "credential.helper="])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ALLOW_PROTOCOL", "https:ssh:git")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let out = match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
        Err(_) => return err(format!("git timed out fetching {url}")),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return err(GIT_MISSING),
        Ok(Err(e)) => return err(format!("cannot run git: {e}")),
        Ok(Ok(out)) => out,
    };
    let text = if out.stderr.is_empty() { &out.stdout } else { &out.stderr };
    Ok((out.status.success(), String::from_utf8_lossy(text).trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_is_named_after_its_repository() {
        assert_eq!(collection_name("https://github.com/o/skills.git"), "skills");
        assert_eq!(collection_name("git@github.com:o/tools.git"), "tools");
        assert_eq!(collection_name("https://h/o/r/"), "r");
    }

    #[test]
    fn a_tree_with_a_symlink_is_seen_and_git_is_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("s/.git")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("s/.git/link")).unwrap();
        assert!(!has_symlink(&d.path().join("s")));
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("s/link")).unwrap();
        assert!(has_symlink(&d.path().join("s")));
    }
}
