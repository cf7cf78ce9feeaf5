//! Keys in a config file (JSON, TOML, YAML), read as dotted paths, for
//! the check that names the keys a change removed.

use std::collections::BTreeSet;
use tree_sitter::Node;

/// Keys most collected from one file.
const MAX_KEYS: usize = 5000;

/// Keys in a config file (JSON, TOML, YAML) read as dotted paths
/// (`svc.timeout`), through nested mappings but not into lists: a small
/// model "sets the timeout" by replacing the key `timeout` with `60`.
pub(super) fn keys(root: Node<'_>, text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect_keys(root, text, "", &mut out);
    out
}

/// The keys under `node`, each after `prefix`, into `out`.
fn collect_keys(node: Node<'_>, text: &str, prefix: &str, out: &mut BTreeSet<String>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        key_of(child, text, prefix, out);
    }
}

/// The keys `node` holds: itself, when it is a key and its value (JSON
/// and TOML `pair`, YAML mapping pairs, a TOML `[table]` and its pairs),
/// then those under it.
fn key_of(node: Node<'_>, text: &str, prefix: &str, out: &mut BTreeSet<String>) {
    if out.len() >= MAX_KEYS {
        return;
    }
    match node.kind() {
        "pair" | "block_mapping_pair" | "flow_pair" | "table" => {
            let Some(key) = node.child_by_field_name("key").or_else(|| node.named_child(0)) else { return };
            let name = text.get(key.byte_range()).unwrap_or("").trim().trim_matches(|c| c == '"' || c == '\'');
            let path = if prefix.is_empty() { name.to_owned() } else { format!("{prefix}.{name}") };
            out.insert(path.clone());
            let mut cursor = node.walk();
            for part in node.named_children(&mut cursor).filter(|p| p.id() != key.id()) {
                key_of(part, text, &path, out);
            }
        }
        "array" | "block_sequence" | "flow_sequence" | "table_array_element" | "comment" => {}
        _ => collect_keys(node, text, prefix, out),
    }
}
