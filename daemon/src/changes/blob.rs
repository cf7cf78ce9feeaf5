//! Git blob ids computed in-process: a file tool's contents are named as
//! git names them, so a change set reads the same whichever way a content
//! was recorded (a command's snapshot or a file tool's own account).

/// The git blob id of `bytes`.
pub fn blob_id(bytes: &[u8]) -> String {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    hex(&h.finalize())
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
