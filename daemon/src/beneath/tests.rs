//! What a path changed under the tools can and cannot make them reach.

use super::*;
use std::os::unix::fs::symlink;

/// A base dir and a sibling "outside" dir holding `secret`.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let base = d.path().canonicalize().unwrap().join("base");
    let outside = d.path().canonicalize().unwrap().join("outside");
    std::fs::create_dir(&base).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret"), "SECRET").unwrap();
    (d, base, outside)
}

#[test]
fn a_symlinked_swival_dir_is_refused() {
    let (_d, base, outside) = setup();
    symlink(&outside, base.join(".swival")).unwrap();
    for missing in [Missing::Create, Missing::Fail] {
        let err = swival_dir(&base, missing).unwrap_err();
        assert!(matches!(err, Error::Symlink(_)), "{err:?}");
        assert!(err.to_string().ends_with(".swival is a symlink and was not followed"), "{err}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

#[test]
fn a_swival_dir_is_created_when_missing_and_reported_missing_otherwise() {
    let (_d, base, _) = setup();
    assert!(swival_dir(&base, Missing::Fail).unwrap_err().is_not_found());
    let dir = swival_dir(&base, Missing::Create).unwrap();
    dir.replace(Path::new("f"), b"x").unwrap();
    assert_eq!(std::fs::read_to_string(base.join(".swival/f")).unwrap(), "x");
}

#[test]
fn a_temporary_planted_as_a_symlink_is_replaced_not_followed() {
    let (_d, base, outside) = setup();
    std::fs::create_dir(base.join(".swival")).unwrap();
    symlink(outside.join("secret"), base.join(".swival/HISTORY.md.tmp")).unwrap();
    let dir = swival_dir(&base, Missing::Create).unwrap();
    dir.replace(Path::new("HISTORY.md"), b"entry").unwrap();
    assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
    assert_eq!(std::fs::read_to_string(base.join(".swival/HISTORY.md")).unwrap(), "entry");
    assert!(std::fs::symlink_metadata(base.join(".swival/HISTORY.md.tmp")).is_err());
}

#[test]
fn a_final_symlink_is_neither_read_nor_written_through() {
    let (_d, base, outside) = setup();
    symlink(outside.join("secret"), base.join("link")).unwrap();
    let b = Beneath::open(&base).unwrap();
    assert!(matches!(b.read(Path::new("link")), Err(Error::Symlink(_))));
    for how in [How::Truncate, How::Rewrite, How::Append, How::Lock] {
        assert!(matches!(b.open_file(Path::new("link"), how), Err(Error::Symlink(_))), "{how:?}");
    }
    assert!(b.open_file(Path::new("link"), How::CreateNew).is_err());
    assert_eq!(b.metadata(Path::new("link")).unwrap().kind, Kind::Symlink);
    assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
}

#[test]
fn a_symlink_swapped_in_mid_path_makes_the_open_fail() {
    let (_d, base, outside) = setup();
    std::fs::create_dir(base.join("d")).unwrap();
    std::fs::write(base.join("d/secret"), "inside").unwrap();
    let b = Beneath::open(&base).unwrap();
    assert_eq!(b.read(Path::new("d/secret")).unwrap(), b"inside");
    // The path was checked with `d` a directory; now it is a symlink.
    std::fs::remove_dir_all(base.join("d")).unwrap();
    symlink(&outside, base.join("d")).unwrap();
    let err = b.read(Path::new("d/secret")).unwrap_err();
    assert_eq!(err.to_string(), format!("{} is a symlink and was not followed", base.join("d").display()));
    assert!(matches!(b.open_file(Path::new("d/x"), How::Truncate), Err(Error::Symlink(_))));
    assert!(matches!(b.mkdir_all(Path::new("d/sub")), Err(Error::Symlink(_))));
    assert!(matches!(b.list(Path::new("d")), Err(Error::Symlink(_))));
    assert!(matches!(b.remove_file(Path::new("d/secret")), Err(Error::Symlink(_))));
    // The fallback walk refuses it too.
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    assert_eq!(walk_open(b.fd.as_fd(), Path::new("d/secret"), flags, Mode::empty()).unwrap_err(), Errno::ELOOP);
    assert_eq!(walk_open(b.fd.as_fd(), Path::new("../x"), flags, Mode::empty()).unwrap_err(), Errno::EXDEV);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
}

#[test]
fn the_fallback_walk_opens_and_creates_like_openat2() {
    let (_d, base, _) = setup();
    std::fs::create_dir_all(base.join("a/b")).unwrap();
    let b = Beneath::open(&base).unwrap();
    let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC;
    let fd = walk_open(b.fd.as_fd(), Path::new("a/b/new"), flags, NEW_FILE).unwrap();
    File::from(fd).write_all(b"n").unwrap();
    assert_eq!(std::fs::read_to_string(base.join("a/b/new")).unwrap(), "n");
    symlink("b", base.join("a/l")).unwrap();
    let read = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    assert_eq!(walk_open(b.fd.as_fd(), Path::new("a/l"), read, Mode::empty()).unwrap_err(), Errno::ELOOP);
}

#[test]
fn rename_moves_entries_between_directories_and_trees_are_removed_without_following() {
    let (_d, base, outside) = setup();
    std::fs::write(base.join("f"), "F").unwrap();
    std::fs::create_dir_all(base.join("t/sub")).unwrap();
    symlink(&outside, base.join("t/sub/out")).unwrap();
    let b = Beneath::open(&base).unwrap();
    let t = b.open_dir(Path::new("t")).unwrap();
    b.rename(Path::new("f"), &t, Path::new("sub/g")).unwrap();
    assert_eq!(std::fs::read_to_string(base.join("t/sub/g")).unwrap(), "F");
    assert_eq!(b.tree_size(Path::new("t")), 1 + outside.as_os_str().len() as u64);
    let mut names: Vec<OsString> = t.list(Path::new("sub")).unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    assert_eq!(names, ["g", "out"]);
    b.remove_tree(Path::new("t")).unwrap();
    assert!(!base.join("t").exists());
    assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "SECRET");
}

#[test]
fn copy_across_keeps_symlinks_and_file_modes() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, base, _) = setup();
    std::fs::create_dir(base.join("to")).unwrap();
    std::fs::write(base.join("x"), "X").unwrap();
    std::fs::set_permissions(base.join("x"), std::fs::Permissions::from_mode(0o750)).unwrap();
    symlink("somewhere", base.join("l")).unwrap();
    let b = Beneath::open(&base).unwrap();
    let to = b.open_dir(Path::new("to")).unwrap();
    copy_across(b.fd.as_fd(), OsStr::new("x"), to.fd.as_fd(), OsStr::new("x")).unwrap();
    copy_across(b.fd.as_fd(), OsStr::new("l"), to.fd.as_fd(), OsStr::new("l")).unwrap();
    assert_eq!(std::fs::read_to_string(base.join("to/x")).unwrap(), "X");
    assert_eq!(std::fs::metadata(base.join("to/x")).unwrap().permissions().mode() & 0o777, 0o750);
    assert_eq!(std::fs::read_link(base.join("to/l")).unwrap(), Path::new("somewhere"));
    assert!(!base.join("x").exists() && std::fs::symlink_metadata(base.join("l")).is_err());
}
