//! The one path resolver every file tool uses: resolve the target with
//! symlinks followed and allow it only inside the base directory or an
//! allowed directory. The filesystem root is never allowed.

use std::path::{Component, Path, PathBuf};

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
    /// Lift the directory restriction (never the root rule).
    pub yolo: bool,
}

/// File names the agent may never write, wherever they are.
const PROTECTED: &[&str] = &["swival.toml"];

impl PathPolicy {
    /// Resolve `requested` (relative to the base dir, `~` expanded) for
    /// `access`; the error text is the tool result to return.
    pub fn resolve(&self, requested: &str, access: Access) -> Result<PathBuf, String> {
        if requested.trim().is_empty() {
            return Err("error: file_path is empty".into());
        }
        let expanded = expand_home(requested)?;
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.base.join(expanded)
        };
        let resolved = canonicalize_lenient(&joined)
            .map_err(|e| format!("error: cannot resolve path {requested}: {e}"))?;
        if resolved.parent().is_none() {
            return Err(format!(
                "error: path {requested} resolves to the filesystem root, which is never allowed"
            ));
        }
        if access == Access::Write
            && resolved
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| PROTECTED.contains(&n))
        {
            return Err(format!(
                "error: {requested} is protected configuration and cannot be written"
            ));
        }
        if self.yolo {
            return Ok(resolved);
        }
        let inside = |dirs: &[PathBuf]| dirs.iter().any(|d| resolved.starts_with(d));
        if resolved.starts_with(&self.base) || inside(&self.allow_rw) {
            return Ok(resolved);
        }
        if inside(&self.allow_ro) {
            return match access {
                Access::Read => Ok(resolved),
                Access::Write => Err(format!("error: {requested} is in a read-only directory (allowed_dirs_ro); it can be read but not written")),
            };
        }
        Err(format!(
            "error: path {requested} resolves to {}, which is outside the base directory {}; only the base directory and allowed_dirs are reachable",
            resolved.display(),
            self.base.display()
        ))
    }
}

fn expand_home(p: &str) -> Result<PathBuf, String> {
    if p == "~" || p.starts_with("~/") {
        let home = std::env::var_os("HOME").ok_or("error: ~ used but HOME is not set")?;
        return Ok(PathBuf::from(home).join(p.trim_start_matches('~').trim_start_matches('/')));
    }
    if p.starts_with('~') {
        return Err(format!("error: {p}: ~user paths are not supported"));
    }
    Ok(PathBuf::from(p))
}

/// Canonicalize a path whose tail may not exist yet: the longest existing
/// prefix is resolved (symlinks followed), the rest must be plain names.
pub fn canonicalize_lenient(p: &Path) -> std::io::Result<PathBuf> {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(c) => {
                let mut out = c;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let name = match existing.components().next_back() {
                    Some(Component::Normal(n)) => n.to_owned(),
                    Some(Component::ParentDir) => {
                        // `missing/..`: fold lexically, nothing to follow.
                        existing.pop();
                        existing.pop();
                        continue;
                    }
                    Some(Component::CurDir) => {
                        existing.pop();
                        continue;
                    }
                    _ => return Err(e),
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(base: &Path) -> PathPolicy {
        PathPolicy {
            base: base.canonicalize().unwrap(),
            allow_rw: vec![],
            allow_ro: vec![],
            yolo: false,
        }
    }

    #[test]
    fn relative_paths_resolve_inside_the_base() {
        let d = tempfile::tempdir().unwrap();
        let p = policy(d.path());
        assert_eq!(
            p.resolve("a/b.txt", Access::Write).unwrap(),
            p.base.join("a/b.txt")
        );
    }

    #[test]
    fn dotdot_escape_absolute_outside_and_root_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("proj");
        std::fs::create_dir(&base).unwrap();
        let p = policy(&base);
        for bad in ["../outside.txt", "/etc/passwd", "/"] {
            let err = p.resolve(bad, Access::Read).unwrap_err();
            assert!(
                err.starts_with("error:") && err.contains(bad),
                "{bad}: {err}"
            );
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
        p.yolo = true;
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
        assert!(p
            .resolve(f.to_str().unwrap(), Access::Write)
            .unwrap_err()
            .contains("read-only"));
    }

    #[test]
    fn swival_toml_cannot_be_written() {
        let d = tempfile::tempdir().unwrap();
        assert!(policy(d.path())
            .resolve("swival.toml", Access::Write)
            .unwrap_err()
            .contains("protected"));
    }
}
