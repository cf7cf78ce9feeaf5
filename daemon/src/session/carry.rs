//! What a worktree session carries from the user's checkout: the context
//! the user meant it to have, which a worktree made from HEAD lacks when
//! it is untracked or ignored — the instruction files
//! (`agent::prompt::INSTRUCTION_FILES`), the memory (`notes::memory::DIR`)
//! and the project's skills (`skills::PROJECT_DIRS`).
//!
//! They are copied into the worktree once, when it is made, rather than
//! read from the checkout on each run: the session then reads, and keeps,
//! its memory and skills where every other session does (its base dir),
//! its file tools reach them at the paths the prompt names, and nothing
//! of the checkout is read again while the model works.
//!
//! Every read of the checkout and every write of the worktree goes through
//! [`beneath`] from the two base dirs: no symlink is followed on the way
//! or copied (a link to a key outside the project stays behind, named in a
//! warning), only regular files under a size cap are read, a file the
//! worktree already has (from HEAD) is its own, and the copy stops at a
//! depth and a number of files.

use crate::beneath::{Beneath, Kind};
use std::path::{Path, PathBuf};

/// Bytes of one file copied at most (the cap of instruction files and
/// SKILL.md alike).
const MAX_BYTES: u64 = 1 << 20;
/// Files copied at most.
const MAX_FILES: usize = 1000;
/// Directory levels descended at most.
const MAX_DEPTH: usize = 8;

/// What a worktree got from its checkout.
#[derive(Debug, Default)]
pub(super) struct Carried {
    /// The files copied, relative to the base dir.
    pub files: Vec<PathBuf>,
    /// What was left behind and why, one line each.
    pub left_out: Vec<String>,
}

/// Copy into `work` (the worktree's base dir) the context of `base` (the
/// checkout's) that the worktree lacks.
pub(super) fn carry(base: &Path, work: &Path) -> Carried {
    let mut copy = Copy { carried: Carried::default(), budget: MAX_FILES };
    let (from, to) = match (Beneath::open(base), Beneath::open(work)) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(e), _) | (_, Err(e)) => {
            copy.carried.left_out.push(format!("nothing of {} was carried: {e}", base.display()));
            return copy.carried;
        }
    };
    let places = crate::agent::prompt::INSTRUCTION_FILES.into_iter().chain([crate::notes::memory::DIR]);
    for place in places.chain(crate::skills::PROJECT_DIRS) {
        copy.entry(&from, &to, Path::new(place), 0);
    }
    copy.carried
}

/// A copy under way.
struct Copy {
    /// What it did so far.
    carried: Carried,
    /// Files it may still copy.
    budget: usize,
}

impl Copy {
    /// Copy `rel` (a file, or a directory with what is under it).
    fn entry(&mut self, from: &Beneath, to: &Beneath, rel: &Path, depth: usize) {
        let meta = match from.metadata(rel) {
            Ok(meta) => meta,
            Err(e) if e.is_not_found() => return,
            Err(e) => return self.leave(rel, &e.to_string()),
        };
        match meta.kind {
            Kind::File => self.file(from, to, rel, meta.mode),
            Kind::Dir if depth < MAX_DEPTH => self.dir(from, to, rel, depth),
            Kind::Dir => self.leave(rel, &format!("more than {MAX_DEPTH} levels deep")),
            Kind::Symlink => self.leave(rel, "a symlink, not followed"),
            Kind::Other => self.leave(rel, "not a regular file"),
        }
    }

    /// Copy what the directory `rel` holds, in name order.
    fn dir(&mut self, from: &Beneath, to: &Beneath, rel: &Path, depth: usize) {
        let mut entries = match from.list(rel) {
            Ok(entries) => entries,
            Err(e) => return self.leave(rel, &e.to_string()),
        };
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for entry in entries {
            self.entry(from, to, &rel.join(&entry.name), depth + 1);
        }
    }

    /// Copy the regular file `rel` (permission bits `mode`) unless the
    /// worktree has it already.
    fn file(&mut self, from: &Beneath, to: &Beneath, rel: &Path, mode: u32) {
        match to.metadata(rel) {
            Err(e) if e.is_not_found() => {}
            _ => return,
        }
        if self.budget == 0 {
            return self.leave(rel, &format!("over the limit of {MAX_FILES} files"));
        }
        let parent = rel.parent().filter(|p| !p.as_os_str().is_empty());
        let copied = from
            .read_regular(rel, MAX_BYTES)
            .and_then(|bytes| parent.map_or(Ok(()), |p| to.mkdir_all(p)).map(|()| bytes))
            .and_then(|bytes| to.replace_with_mode(rel, &bytes, Some(mode & 0o777)));
        match copied {
            Ok(()) => {
                self.budget -= 1;
                self.carried.files.push(rel.to_owned());
            }
            Err(e) => self.leave(rel, &e.to_string()),
        }
    }

    /// Note that `rel` stays behind, and why.
    fn leave(&mut self, rel: &Path, why: &str) {
        self.carried.left_out.push(format!("{}: {why}", rel.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        let (base, work) = (root.join("checkout"), root.join("worktree"));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        (d, base, work)
    }

    #[test]
    fn instructions_memory_and_skills_are_copied_and_the_worktrees_own_files_kept() {
        let (_d, base, work) = dirs();
        std::fs::write(base.join("AGENTS.md"), "use tabs").unwrap();
        std::fs::write(base.join("CLAUDE.md"), "checkout's").unwrap();
        std::fs::write(work.join("CLAUDE.md"), "HEAD's").unwrap();
        std::fs::create_dir_all(base.join(".swival/memory")).unwrap();
        std::fs::write(base.join(".swival/memory/MEMORY.md"), "# notes").unwrap();
        std::fs::create_dir_all(base.join(".agents/skills/fmt/bin")).unwrap();
        std::fs::write(base.join(".agents/skills/fmt/SKILL.md"), "---\nname: fmt\n---\n").unwrap();
        std::fs::write(base.join(".agents/skills/fmt/bin/run.sh"), "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        let exec = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(base.join(".agents/skills/fmt/bin/run.sh"), exec).unwrap();
        std::fs::write(base.join("other.txt"), "not context").unwrap();

        let carried = carry(&base, &work);
        assert!(carried.left_out.is_empty(), "{:?}", carried.left_out);
        let files: Vec<String> = carried.files.iter().map(|f| f.display().to_string()).collect();
        assert_eq!(
            files,
            ["AGENTS.md", ".swival/memory/MEMORY.md", ".agents/skills/fmt/SKILL.md", ".agents/skills/fmt/bin/run.sh"]
        );
        assert_eq!(std::fs::read_to_string(work.join("CLAUDE.md")).unwrap(), "HEAD's", "the worktree's own");
        assert_eq!(std::fs::read_to_string(work.join(".swival/memory/MEMORY.md")).unwrap(), "# notes");
        let mode = std::fs::metadata(work.join(".agents/skills/fmt/bin/run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "a skill's script stays executable");
        assert!(!work.join("other.txt").exists());
    }

    #[test]
    fn links_fifos_and_giants_stay_behind_and_nothing_is_read_through_a_link() {
        let (_d, base, work) = dirs();
        let secret = base.parent().unwrap().join("id_rsa");
        std::fs::write(&secret, "KEY").unwrap();
        std::os::unix::fs::symlink(&secret, base.join("AGENTS.md")).unwrap();
        std::fs::create_dir_all(base.join(".swival")).unwrap();
        std::os::unix::fs::symlink(base.parent().unwrap(), base.join(".swival/memory")).unwrap();
        nix::unistd::mkfifo(&base.join("CLAUDE.md"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        std::fs::create_dir_all(base.join(".swival/skills/big")).unwrap();
        std::fs::File::create(base.join(".swival/skills/big/SKILL.md")).unwrap().set_len(1 << 30).unwrap();

        let carried = carry(&base, &work);
        assert!(carried.files.is_empty(), "{:?}", carried.files);
        let said = carried.left_out.join("\n");
        assert!(said.contains("AGENTS.md: a symlink, not followed"), "{said}");
        assert!(said.contains(".swival/memory: a symlink, not followed"), "{said}");
        assert!(said.contains("CLAUDE.md: not a regular file"), "{said}");
        assert!(said.contains("over the 1048576-byte limit"), "{said}");
        assert!(std::fs::symlink_metadata(work.join("AGENTS.md")).is_err(), "no link, no copy");
        assert!(!work.join(".swival/memory").exists());
    }
}
