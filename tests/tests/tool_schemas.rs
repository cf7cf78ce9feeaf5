//! The tools a run offers the model, byte for byte: names, descriptions,
//! parameters and the order of every key, for the file tools at several
//! `max_output_lines` with the command tools off, unrestricted and
//! whitelisted, in Swival's words and then in the lean ones
//! (`lean_tools`). Models and prompt caches see these bytes, so a change to
//! them must be deliberate: `UPDATE_SNAPSHOT=1 cargo test -p swival-tests
//! --test tool_schemas` rewrites `tests/snapshots/tool_schemas.txt`, and
//! the diff shows what the model will see differently.
//!
//! This crate's build has serde_json's `preserve_order` on (the client's
//! ACP library asks for it, and a workspace build unifies features), as
//! the daemon built with the workspace has, so key order is what is
//! compared here; a daemon built alone sorts keys instead.

use std::collections::BTreeMap;
use std::path::PathBuf;
use swivald::tooling::{tool_schemas, CommandPolicy, Offer, SchemaStyle};

/// Where the snapshot lives.
fn snapshot_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/tool_schemas.txt")
}

/// Every offer checked: a `# label` line, then the JSON array sent.
fn offers() -> String {
    let whitelist: BTreeMap<String, PathBuf> =
        [("cargo", "/usr/bin/cargo"), ("ls", "/bin/ls")].map(|(n, p)| (n.to_owned(), PathBuf::from(p))).into();
    let policies = [
        ("commands off", CommandPolicy::Off),
        ("any command", CommandPolicy::Unrestricted { path: "/usr/bin:/bin".into() }),
        ("whitelist cargo, ls", CommandPolicy::Whitelist(whitelist)),
    ];
    let mut out = String::new();
    for read_lines in [2000, 1, 3, 7, 200] {
        for (label, policy) in &policies {
            let offer = Offer::shared(read_lines, SchemaStyle::Swival, tool_schemas(policy));
            out.push_str(&format!("# max_output_lines = {read_lines}, {label}\n{}\n", offer.json.get()));
        }
    }
    // After Swival's, so that adding them left those lines as they were.
    for read_lines in [2000, 7] {
        for (label, policy) in &policies {
            let offer = Offer::shared(read_lines, SchemaStyle::Lean, tool_schemas(policy));
            out.push_str(&format!("# lean, max_output_lines = {read_lines}, {label}\n{}\n", offer.json.get()));
        }
    }
    out
}

/// Whether this build keeps object keys in insertion order.
fn keys_keep_their_order() -> bool {
    let map: serde_json::Map<String, serde_json::Value> =
        [("b".to_owned(), 1.into()), ("a".to_owned(), 2.into())].into_iter().collect();
    map.keys().next().map(String::as_str) == Some("b")
}

#[test]
fn the_offered_tool_schemas_are_unchanged_byte_for_byte() {
    assert!(keys_keep_their_order(), "this test needs serde_json's preserve_order, as the workspace build has");
    let now = offers();
    if std::env::var_os("UPDATE_SNAPSHOT").is_some() {
        std::fs::write(snapshot_path(), &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(snapshot_path()).unwrap();
    for (i, (old, new)) in committed.lines().zip(now.lines()).enumerate() {
        assert_eq!(new, old, "line {} of {} differs", i + 1, snapshot_path().display());
    }
    assert_eq!(now.lines().count(), committed.lines().count(), "a different number of offers");
}
