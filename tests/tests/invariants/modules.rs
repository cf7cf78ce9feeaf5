//! [`Rule::ModuleCycle`]: the top-level modules of `daemon/src/` depend
//! on each other in one direction; the graph walks here serve
//! [`Rule::FolderCycle`] too.

use super::{non_test_lines, test_file, top_module, Rule, Violation};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A dependency of one top-level module on another, and the first place
/// that makes it.
pub(crate) type Uses = BTreeMap<String, BTreeMap<String, (String, usize)>>;

/// Which top-level module uses which, from `crate::<module>` in the code
/// outside tests of each daemon file (`(rel, text)` pairs).
fn module_uses(files: &[(String, String)]) -> Uses {
    let modules: BTreeSet<&str> = files.iter().filter_map(|(rel, _)| top_module(rel)).collect();
    let mut uses = Uses::new();
    for (rel, text) in files {
        let Some(from) = top_module(rel).filter(|_| !test_file(rel)) else { continue };
        for (n, line) in non_test_lines(text) {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let to: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if to != from && modules.contains(to.as_str()) {
                    let edges = uses.entry(from.to_owned()).or_default();
                    edges.entry(to).or_insert_with(|| (rel.clone(), n));
                }
            }
        }
    }
    uses
}

/// Every module `from` reaches through `uses` (itself included only
/// through a cycle).
pub(crate) fn reach(uses: &Uses, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = vec![from];
    while let Some(m) = todo.pop() {
        for next in uses.get(m).into_iter().flat_map(|e| e.keys()) {
            if seen.insert(next.clone()) {
                todo.push(next);
            }
        }
    }
    seen
}

/// The shortest cycle from `start` back to itself through `within`.
pub(crate) fn shortest_cycle(uses: &Uses, start: &str, within: &BTreeSet<String>) -> Vec<String> {
    let mut came_from: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([start.to_owned()]);
    while let Some(m) = queue.pop_front() {
        for next in uses.get(&m).into_iter().flat_map(|e| e.keys()).filter(|n| within.contains(*n)) {
            if next == start {
                let mut path = vec![start.to_owned(), m.clone()];
                while let Some(prev) = came_from.get(path.last().expect("not empty")) {
                    path.push(prev.clone());
                }
                path.pop();
                path.push(start.to_owned());
                path.reverse();
                path.dedup();
                return path;
            }
            if !came_from.contains_key(next) {
                came_from.insert(next.clone(), m.clone());
                queue.push_back(next.clone());
            }
        }
    }
    Vec::new()
}

/// Each group of members of `uses` that depend on each other in a cycle,
/// with a shortest cycle through its first member.
pub(crate) fn cycle_groups(uses: &Uses) -> Vec<(Vec<String>, BTreeSet<String>)> {
    let mut grouped = BTreeSet::new();
    let mut out = Vec::new();
    for start in uses.keys() {
        let from_start = reach(uses, start);
        if grouped.contains(start) || !from_start.contains(start) {
            continue;
        }
        let group: BTreeSet<String> =
            from_start.into_iter().filter(|m| reach(uses, m).contains(start.as_str())).collect();
        grouped.extend(group.iter().cloned());
        out.push((shortest_cycle(uses, start, &group), group));
    }
    out
}

/// One violation per group of top-level modules that depend on each other
/// in a cycle: a shortest cycle, every module of the group, and where each
/// dependency inside the group is made.
pub(crate) fn module_cycles(files: &[(String, String)], out: &mut Vec<Violation>) {
    let uses = module_uses(files);
    for (cycle, group) in cycle_groups(&uses) {
        let (file, line) = uses[&cycle[0]][&cycle[1]].clone();
        let mut edges = Vec::new();
        for from in &group {
            for (to, (rel, n)) in uses[from].iter().filter(|(to, _)| group.contains(*to)) {
                edges.push(format!("{from} → {to} ({rel}:{n})"));
            }
        }
        let members: Vec<&str> = group.iter().map(String::as_str).collect();
        let what = format!("module cycle {} among {{{}}}: {}", cycle.join(" → "), members.join(", "), edges.join(", "));
        out.push(Violation { rule: Rule::ModuleCycle, file, line, what });
    }
}

#[test]
fn a_module_cycle_is_reported_with_its_modules_but_not_through_tests() {
    let file = |rel: &str, text: &str| (rel.to_owned(), text.to_owned());
    let files = [
        file("daemon/src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n"),
        file(
            "daemon/src/a/mod.rs",
            "mod x;\nuse crate::c::Thing;\nenum E {\n    #[cfg(test)]\n    Fake(crate::d::D),\n    Real(crate::b::B),\n}\n",
        ),
        file("daemon/src/a/x.rs", "// crate::d in a comment is no dependency\nfn f(b: crate::b::B) -> u8 { b.0 }\n"),
        file("daemon/src/b.rs", "use crate::c;\n#[cfg(test)]\nmod tests {\n    use crate::d::D;\n}\n"),
        file("daemon/src/c.rs", "pub struct Thing(crate::a::A);\n#[cfg(test)]\nmod tests;\n"),
        file("daemon/src/c/tests.rs", "use crate::d::D;\n"),
        file("daemon/src/d/mod.rs", "use crate::a::A;\n"),
        file("daemon/src/d/tests/mod.rs", "use crate::b;\n"),
    ];
    let mut out = Vec::new();
    module_cycles(&files, &mut out);
    let shown: Vec<String> = out.iter().map(|v| format!("{}:{}: {:?}: {}", v.file, v.line, v.rule, v.what)).collect();
    assert_eq!(
        shown,
        ["daemon/src/a/mod.rs:2: ModuleCycle: module cycle a → c → a among {a, b, c}: \
          a → b (daemon/src/a/mod.rs:6), a → c (daemon/src/a/mod.rs:2), b → c (daemon/src/b.rs:1), c → a (daemon/src/c.rs:1)"]
    );
}
