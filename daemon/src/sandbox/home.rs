//! A home is private by default. A developer's home holds secrets no list
//! can name — a database client's password file, a vault token, a note
//! with a key in it, another tool's config — so commands do not see the
//! home through a list of what to hide: they see an empty home with only
//! these in it:
//!
//! - the base dir and the allowed dirs that lie under it (as configured:
//!   read-write or read-only), and the run's temp dir;
//! - the toolchain locations below, where they exist: compilers and their
//!   package caches, language version managers, git's config. A file is
//!   bound read-only; a directory is an overlay over the real one, so a
//!   tool may write its lock files, logs and new cache entries there
//!   (`npm ci` fails on a read-only cache) while nothing reaches the real
//!   directory: what a command writes there is gone when it ends;
//! - what the user exposes with `sandbox_expose`, and the read-only
//!   allowed dirs, read-only.
//!
//! Credential stores inside what is shown stay hidden (`credentials.rs`),
//! `~/.cargo/credentials.toml` inside `~/.cargo` for one. The file tools
//! under `files = "all"` follow the same view. The helper builds it in the
//! command's mount namespace (`linux/mounts.rs`): an empty read-only tmpfs
//! over the home, each kept path bound (or overlaid) into it.

use std::path::{Path, PathBuf};

/// Toolchain locations under `$HOME` commands see: what builds, tests and
/// package managers read there (and may write for the length of one
/// command: see the module).
pub const TOOLCHAIN: &[&str] = &[
    // Rust
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    ".cargo/env",
    ".cargo/config.toml",
    ".cargo/config",
    ".rustup",
    // JavaScript
    ".npm",
    ".nvm",
    ".node-gyp",
    ".cache/node-gyp",
    ".cache/yarn",
    ".yarn/berry/cache",
    ".local/share/pnpm",
    ".volta",
    ".bun",
    ".deno",
    ".cache/deno",
    ".cache/ms-playwright",
    // Python
    ".pyenv",
    ".local/bin",
    ".local/lib",
    ".local/pipx",
    ".local/share/uv",
    ".local/share/virtualenvs",
    ".cache/pip",
    ".cache/pypoetry",
    ".cache/uv",
    ".cache/pre-commit",
    ".conda",
    "miniconda3",
    "anaconda3",
    // Ruby
    ".rbenv",
    ".rvm",
    ".gem/ruby",
    ".gem/specs",
    ".local/share/gem/ruby",
    ".bundle/cache",
    // JVM
    ".m2/repository",
    ".m2/wrapper",
    ".gradle/caches",
    ".gradle/wrapper",
    ".gradle/native",
    ".sdkman",
    ".ivy2/cache",
    ".sbt/boot",
    ".cache/coursier",
    // Go
    "go",
    ".cache/go-build",
    // .NET, Haskell, OCaml, Lean, Julia, Elixir, Dart, Swift, C/C++
    ".nuget/packages",
    ".dotnet",
    ".ghcup",
    ".cabal/packages",
    ".cabal/bin",
    ".stack/programs",
    ".stack/snapshots",
    ".opam",
    ".elan",
    ".juliaup",
    ".julia/packages",
    ".julia/artifacts",
    ".julia/compiled",
    ".mix",
    ".hex/packages",
    ".pub-cache/hosted",
    ".swiftpm",
    ".conan2/p",
    ".cache/ccache",
    ".cache/sccache",
    ".cache/bazel",
    // Version managers for many languages
    ".asdf",
    ".local/share/mise",
    ".local/share/rtx",
    ".nix-profile",
    ".local/state/nix/profiles",
    // git: identity and settings (credential helpers' stores stay hidden)
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
    ".gitignore_global",
];

/// The private view of `home` for a session: what commands see there
/// read-only besides the directories they may write (`keep`, canonical,
/// existing now), or `None` when the home cannot be private — unknown, or
/// it is (or lies inside) a directory commands write.
pub fn view(home: Option<&Path>, write_dirs: &[PathBuf], expose: &[PathBuf], more: &[PathBuf]) -> Option<HomeView> {
    let home = home?.canonicalize().ok()?;
    if home.parent().is_none() || write_dirs.iter().any(|w| home.starts_with(w)) {
        return None;
    }
    let under_home = |paths: &mut dyn Iterator<Item = PathBuf>| -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> =
            paths.filter_map(|p| p.canonicalize().ok()).filter(|p| p.starts_with(&home) && p != &home).collect();
        out.sort();
        out.dedup();
        out
    };
    let named: Vec<PathBuf> = TOOLCHAIN.iter().map(|rel| home.join(rel)).collect();
    let toolchain = under_home(&mut named.iter().cloned());
    let keep = under_home(&mut expose.iter().chain(more).cloned());
    let mut links: Vec<(PathBuf, PathBuf)> =
        named.iter().chain(expose).chain(more).filter_map(|p| first_link(&home, p)).collect();
    links.sort();
    links.dedup();
    Some(HomeView { home, keep, toolchain, links })
}

/// The first symlink on the way from `home` to `path`, with its target as
/// written: a dotfile manager's `~/.gitconfig -> dotfiles/git/gitconfig`,
/// or `~/.cargo -> /opt/cargo`. The view makes the same link, so the name
/// a tool looks for leads where it leads in the real home.
fn first_link(home: &Path, path: &Path) -> Option<(PathBuf, PathBuf)> {
    let at = crate::beneath::first_symlink(home, path)?;
    let target = std::fs::read_link(&at).ok()?;
    Some((at, target))
}

/// A private home: `home` shows only `keep` (read-only), `toolchain` (a
/// file read-only, a directory overlaid) and the directories commands may
/// write.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct HomeView {
    /// The caller's home, canonical.
    pub home: PathBuf,
    /// What it shows read-only (canonical, under `home`, sorted).
    pub keep: Vec<PathBuf>,
    /// The toolchain locations it shows (canonical, under `home`, sorted).
    pub toolchain: Vec<PathBuf>,
    /// Symlinks on the way to what it shows, made again in the view: the
    /// link and its target as written.
    pub links: Vec<(PathBuf, PathBuf)>,
}

impl HomeView {
    /// Whether `path` (canonical) is outside the view: under the home, and
    /// under none of `keep` nor `also` (the directories a session may
    /// reach anyway).
    pub fn hides(&self, path: &Path, also: &[PathBuf]) -> bool {
        path.starts_with(&self.home)
            && !self
                .keep
                .iter()
                .chain(&self.toolchain)
                .chain(also)
                .any(|k| path.starts_with(k) || (k.starts_with(path) && path != self.home))
            && path != self.home
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_keeps_toolchains_and_exposed_paths_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().canonicalize().unwrap();
        for dir in [".cargo/registry", ".rustup", "work/p", ".vault-token.d", "notes"] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        for file in [".gitconfig", ".pgpass", ".my.cnf", ".vault-token"] {
            std::fs::write(home.join(file), "x").unwrap();
        }
        let v = view(Some(&home), &[home.join("work/p")], &[home.join("notes")], &[]).unwrap();
        let rel =
            |v: &[PathBuf]| -> Vec<PathBuf> { v.iter().map(|p| p.strip_prefix(&home).unwrap().to_owned()).collect() };
        let want: Vec<PathBuf> = [".cargo/registry", ".gitconfig", ".rustup"].iter().map(PathBuf::from).collect();
        assert_eq!(rel(&v.toolchain), want);
        assert_eq!(rel(&v.keep), [PathBuf::from("notes")]);
        let also = [home.join("work/p")];
        for secret in [".pgpass", ".my.cnf", ".vault-token", "work/other", ".config/anything"] {
            assert!(v.hides(&home.join(secret), &also), "{secret}");
        }
        for shown in [".cargo/registry/x", "work/p/src", ".gitconfig"] {
            assert!(!v.hides(&home.join(shown), &also), "{shown}");
        }
        assert!(!v.hides(&home.join("work"), &also), "the way to the project");
        assert!(!v.hides(&home, &also));
        assert!(view(Some(&home), std::slice::from_ref(&home), &[], &[]).is_none(), "a base dir of $HOME");
        // A dotfile manager's link is made again, and where it leads is shown.
        std::fs::create_dir_all(home.join("dotfiles/git")).unwrap();
        std::fs::remove_file(home.join(".gitconfig")).unwrap();
        std::fs::write(home.join("dotfiles/git/gitconfig"), "[user]").unwrap();
        std::os::unix::fs::symlink("dotfiles/git/gitconfig", home.join(".gitconfig")).unwrap();
        let v = view(Some(&home), &[], &[], &[]).unwrap();
        assert_eq!(v.links, [(home.join(".gitconfig"), PathBuf::from("dotfiles/git/gitconfig"))]);
        assert!(v.toolchain.contains(&home.join("dotfiles/git/gitconfig")), "{v:?}");
    }
}
