//! [`Rule::FolderCycle`]: inside every folder of `protocol/src/`,
//! `daemon/src/` and `client/src/` (a crate's root included, but the
//! daemon's, whose top-level modules are `modules.rs`'s), the folder's
//! files and subfolders depend on each other in one direction.
//!
//! A folder's members are its files and its subfolders, each subfolder
//! counted as one. Its `mod.rs` is the folder's face, not a member: what
//! it defines is the folder's own vocabulary, which every member may use.
//! A member depends on another when its code outside tests names
//! something of the other: a path (`super::x::f`, `crate::tools::x::T`,
//! `self::x`), a `use` of it, or a name the folder's `mod.rs` takes from
//! the other (`super::T` where `mod.rs` says `pub use x::T`: the
//! dependency is on `x`).

use super::modules::{cycle_groups, Uses};
use super::{non_test_lines, test_file, Rule, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// The crates' source folders.
const SOURCES: &[&str] = &["protocol/src/", "daemon/src/", "client/src/"];

/// A folder's `mod.rs`, which is not one of its members.
const FACE: &str = "mod.rs";

/// The module path of a daemon file: `["tools", "edit"]` for
/// `daemon/src/tools/edit.rs`, `["tools"]` for `daemon/src/tools/mod.rs`,
/// `[]` for the crate roots.
fn module_path(rel: &str) -> Vec<String> {
    let rest = SOURCES.iter().find_map(|src| rel.strip_prefix(src)).unwrap_or(rel);
    let mut parts: Vec<String> = rest.split('/').map(str::to_owned).collect();
    let last = parts.pop().unwrap_or_default();
    match last.as_str() {
        "mod.rs" | "lib.rs" | "main.rs" => {}
        _ => parts.push(last.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// One `use` tree or code path, as parsed: its segments, and the name it
/// binds (the last segment or its `as` alias).
#[derive(Debug, Clone, PartialEq)]
struct Path {
    segments: Vec<String>,
    binds: String,
}

fn ident(text: &[char], at: &mut usize) -> Option<String> {
    let start = *at;
    while *at < text.len() && (text[*at].is_alphanumeric() || text[*at] == '_') {
        *at += 1;
    }
    (*at > start).then(|| text[start..*at].iter().collect())
}

fn skip_space(text: &[char], at: &mut usize) {
    while *at < text.len() && text[*at].is_whitespace() {
        *at += 1;
    }
}

/// Parses a path (with `{…}` groups) starting at `at`, under `prefix`.
fn parse_tree(text: &[char], at: &mut usize, prefix: Vec<String>, out: &mut Vec<Path>) {
    let mut segments = prefix;
    loop {
        skip_space(text, at);
        if text.get(*at) == Some(&'{') {
            *at += 1;
            loop {
                skip_space(text, at);
                match text.get(*at) {
                    Some('}') => {
                        *at += 1;
                        return;
                    }
                    Some(',') => *at += 1,
                    Some(_) => {
                        let before = *at;
                        parse_tree(text, at, segments.clone(), out);
                        if *at == before {
                            *at += 1;
                        }
                    }
                    None => return,
                }
            }
        }
        if text.get(*at) == Some(&'*') {
            *at += 1;
            out.push(Path { segments: segments.clone(), binds: "*".to_owned() });
            return;
        }
        let Some(name) = ident(text, at) else { return };
        if text.get(*at) == Some(&':') && text.get(*at + 1) == Some(&':') {
            *at += 2;
            segments.push(name);
            continue;
        }
        let binds = if name == "self" { segments.last().cloned().unwrap_or_default() } else { name.clone() };
        if name != "self" {
            segments.push(name);
        }
        let mut look = *at;
        skip_space(text, &mut look);
        if text[look..].starts_with(&['a', 's', ' ']) {
            look += 3;
            skip_space(text, &mut look);
            if let Some(alias) = ident(text, &mut look) {
                *at = look;
                out.push(Path { segments, binds: alias });
                return;
            }
        }
        out.push(Path { segments, binds });
        return;
    }
}

/// What a file names: its `use` trees, with whether each is a `use`, and
/// the paths in its code that start with `crate::`, `super::` or `self::`
/// (or, in a `mod.rs`, with one of `children`).
fn paths_of(code: &str, children: &BTreeSet<String>) -> (Vec<Path>, Vec<Path>) {
    let text: Vec<char> = code.chars().collect();
    let (mut uses, mut named) = (Vec::new(), Vec::new());
    let mut at = 0;
    while at < text.len() {
        let boundary = at == 0 || !(text[at - 1].is_alphanumeric() || text[at - 1] == '_' || text[at - 1] == ':');
        if !boundary {
            at += 1;
            continue;
        }
        let mut look = at;
        let Some(word) = ident(&text, &mut look) else {
            at += 1;
            continue;
        };
        if word == "use" && text.get(look).is_some_and(|c| c.is_whitespace()) {
            parse_tree(&text, &mut look, Vec::new(), &mut uses);
            at = look.max(at + 1);
        } else if ["crate", "super", "self"].contains(&word.as_str()) || children.contains(&word) {
            if text.get(look) == Some(&':') && text.get(look + 1) == Some(&':') {
                parse_tree(&text, &mut at, Vec::new(), &mut named);
            } else {
                at = look;
            }
        } else {
            at = look;
        }
    }
    (uses, named)
}

/// `path` made absolute from the module `base`; `None` when it names
/// something outside the crate (or nothing this rule follows).
fn absolute(path: &[String], base: &[String], children: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut out: Vec<String> = base.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            out.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                out.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) if children.contains(first) => {}
        _ => return None,
    }
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The file's code outside tests, one string.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = non_test_lines(text).into_iter().map(|(_, l)| l).collect();
    lines.join("\n")
}

/// Every folder's member dependencies: folder module path → Uses.
fn folder_uses(files: &[(String, String)], src: &str) -> BTreeMap<Vec<String>, Uses> {
    let files: Vec<(&String, Vec<String>, String)> = files
        .iter()
        .filter(|(rel, _)| !test_file(rel) && rel.starts_with(src))
        .map(|(rel, text)| (rel, module_path(rel), code_of(text)))
        .collect();
    let face = |rel: &str| ["mod.rs", "lib.rs", "main.rs"].iter().any(|f| rel.ends_with(&format!("/{f}")));
    // What each module defines at its top level, for a name a face hands
    // on with `pub use x::*`.
    let defines: BTreeMap<Vec<String>, BTreeSet<String>> =
        files.iter().map(|(_, m, code)| (m.clone(), defined(code))).collect();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(_, m, _)| m.clone()).collect();
    let children_of = |m: &[String]| -> BTreeSet<String> {
        modules.iter().filter(|c| c.len() == m.len() + 1 && c.starts_with(m)).map(|c| c[m.len()].clone()).collect()
    };
    // The daemon's root is `modules.rs`'s.
    let folders: BTreeSet<Vec<String>> = files
        .iter()
        .filter(|(rel, m, _)| face(rel) && !(m.is_empty() && src == "daemon/src/"))
        .map(|(_, m, _)| m.clone())
        .collect();
    // A folder's `mod.rs`: the names it takes from its children.
    let mut handed: BTreeMap<Vec<String>, BTreeMap<String, String>> = BTreeMap::new();
    let mut parsed = Vec::new();
    for (rel, module, code) in &files {
        let base: Vec<String> = module.clone();
        let children = if face(rel) { children_of(module) } else { BTreeSet::new() };
        let (uses, named) = paths_of(code, &children);
        if folders.contains(module) {
            let map = handed.entry(module.clone()).or_default();
            for u in &uses {
                if let Some(abs) = absolute(&u.segments, &base, &children) {
                    if abs.len() > module.len() && abs.starts_with(module) {
                        map.insert(u.binds.clone(), abs[module.len()].clone());
                    }
                }
            }
        }
        parsed.push((*rel, module.clone(), base, children, uses, named, code.clone()));
    }
    let mut out: BTreeMap<Vec<String>, Uses> = BTreeMap::new();
    for (rel, module, base, children, uses, named, code) in &parsed {
        let is_mod = face(rel);
        for folder in folders.iter().filter(|f| module.starts_with(f)) {
            let from = if module == folder { FACE.to_owned() } else { module[folder.len()].clone() };
            let members = children_of(folder);
            let mut targets: Vec<String> = Vec::new();
            for (p, is_use) in uses.iter().map(|p| (p, true)).chain(named.iter().map(|p| (p, false))) {
                let Some(abs) = absolute(&p.segments, base, children) else { continue };
                if abs.len() <= folder.len() || !abs.starts_with(folder) {
                    continue;
                }
                let first = &abs[folder.len()];
                let to = target(folder, first, abs.len(), &members, &handed, &defines);
                // The folder's own `mod.rs` handing a child's name on.
                if is_mod && module == folder && is_use && !mentions(code, &p.binds) {
                    continue;
                }
                targets.push(to);
            }
            if from == FACE {
                continue;
            }
            for to in targets.into_iter().filter(|t| *t != from && t != FACE) {
                let edges = out.entry(folder.clone()).or_default().entry(from.clone()).or_default();
                edges.entry(to).or_insert_with(|| ((*rel).clone(), 0));
            }
        }
    }
    out
}

/// The member of `folder` that `folder::first` (a path `len` long) names:
/// a child module, a name the face takes from one (`pub use x::T`, or a
/// glob `pub use x::*` over a child that defines it), else the face.
fn target(
    folder: &[String],
    first: &str,
    len: usize,
    members: &BTreeSet<String>,
    handed: &BTreeMap<Vec<String>, BTreeMap<String, String>>,
    defines: &BTreeMap<Vec<String>, BTreeSet<String>>,
) -> String {
    if members.contains(first) && len > folder.len() {
        return first.to_owned();
    }
    let handed = handed.get(folder);
    if let Some(from) = handed.and_then(|h| h.get(first)) {
        return from.clone();
    }
    let globbed = handed.is_some_and(|h| h.contains_key("*"));
    let defining = members.iter().filter(|_| globbed).find(|m| {
        let path: Vec<String> = folder.iter().cloned().chain([(*m).clone()]).collect();
        defines.get(&path).is_some_and(|d| d.contains(first))
    });
    defining.cloned().unwrap_or_else(|| FACE.to_owned())
}

/// The names `code` defines at its top level (`pub struct X`, `fn f`…).
fn defined(code: &str) -> BTreeSet<String> {
    const ITEMS: &[&str] = &["struct ", "enum ", "fn ", "type ", "const ", "static ", "trait ", "async fn "];
    let mut out = BTreeSet::new();
    for line in code.lines().filter(|l| !l.starts_with(' ')) {
        let mut rest = line;
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            rest = rest.strip_prefix(vis).unwrap_or(rest);
        }
        if let Some(after) = ITEMS.iter().find_map(|k| rest.strip_prefix(k)) {
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Whether `name` occurs in `code` outside its `use` statements.
fn mentions(code: &str, name: &str) -> bool {
    let mut in_use = false;
    for line in code.lines() {
        let t = line.trim_start();
        let starts_use = t.starts_with("use ") || (t.starts_with("pub") && t.contains(" use "));
        if starts_use {
            in_use = true;
        }
        if !in_use {
            let bytes = line.as_bytes();
            for (at, _) in line.match_indices(name) {
                let before = at.checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(at + name.len()).copied();
                let word = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
                if !word(before) && !word(after) {
                    return true;
                }
            }
        }
        if in_use && t.ends_with(';') {
            in_use = false;
        }
    }
    false
}

/// One violation per group of a folder's members that depend on each
/// other in a cycle.
pub(crate) fn folder_cycles(files: &[(String, String)], out: &mut Vec<Violation>) {
    let by_crate = SOURCES.iter().flat_map(|src| folder_uses(files, src).into_iter().map(move |f| (*src, f)));
    for (src, (folder, uses)) in by_crate {
        let folder: Vec<String> = std::iter::once(src.trim_end_matches('/').to_owned()).chain(folder).collect();
        for (cycle, group) in cycle_groups(&uses) {
            let (file, _) = uses[&cycle[0]][&cycle[1]].clone();
            let mut edges = Vec::new();
            for from in &group {
                for (to, (rel, _)) in uses[from].iter().filter(|(to, _)| group.contains(*to)) {
                    edges.push(format!("{from} → {to} ({rel})"));
                }
            }
            let what = format!("cycle in {}/: {} ({})", folder.join("/"), cycle.join(" → "), edges.join(", "));
            out.push(Violation { rule: Rule::FolderCycle, file, line: 1, what });
        }
    }
}

#[test]
fn a_cycle_between_files_of_a_folder_is_reported_but_not_a_name_handed_on() {
    let files = [
        (
            "daemon/src/a/mod.rs",
            "mod b;\nmod c;\nmod d;\npub use b::B;\npub(crate) use d::D;\nfn f() -> D { d::make() }\n",
        ),
        ("daemon/src/a/b.rs", "use super::{c::C, D};\npub struct B;\n"),
        ("daemon/src/a/c.rs", "pub struct C(crate::a::B);\n"),
        ("daemon/src/a/d.rs", "pub struct D;\n#[cfg(test)]\nmod tests {\n    use super::super::b::B;\n}\n"),
    ];
    let files: Vec<(String, String)> = files.iter().map(|(r, t)| ((*r).to_owned(), (*t).to_owned())).collect();
    let uses = &folder_uses(&files, "daemon/src/")[&vec!["a".to_owned()]];
    let edges: Vec<String> = uses.iter().flat_map(|(from, to)| to.keys().map(move |t| format!("{from}→{t}"))).collect();
    assert_eq!(edges, ["b→c", "b→d", "c→b"]);
    let mut out = Vec::new();
    folder_cycles(&files, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].what.starts_with("cycle in daemon/src/a/: b → c → b"), "{}", out[0].what);
}

#[test]
fn a_client_cycle_and_one_through_a_glob_handed_on_are_reported() {
    let files = [
        ("client/src/main.rs", "mod cmd;\n"),
        ("client/src/cmd/mod.rs", "mod a;\nmod b;\npub use a::*;\n"),
        ("client/src/cmd/a.rs", "pub struct Args;\npub fn run() { super::b::go() }\n"),
        ("client/src/cmd/b.rs", "pub fn go() { let _ = crate::cmd::Args; }\n"),
    ];
    let files: Vec<(String, String)> = files.iter().map(|(r, t)| ((*r).to_owned(), (*t).to_owned())).collect();
    let mut out = Vec::new();
    folder_cycles(&files, &mut out);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(out[0].what.starts_with("cycle in client/src/cmd/: a → b → a"), "{}", out[0].what);
}
