//! The socket path rule of SPEC §3, shared by the daemon and every client so
//! both sides always agree on where the daemon lives.

use std::path::{Path, PathBuf};

/// Name of the socket file inside its directory.
pub const SOCKET_FILE: &str = "swivald.sock";

/// The socket path, first match wins: `explicit` (a `--socket` flag or a
/// setting), `$SWIVALD_SOCKET`, `$XDG_RUNTIME_DIR/swival/swivald.sock`,
/// else `$TMPDIR/swival-$UID/swivald.sock` (`/tmp` when TMPDIR is unset).
pub fn socket_path(explicit: Option<&Path>, uid: u32) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_owned();
    }
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = env("SWIVALD_SOCKET") {
        return p;
    }
    if let Some(run) = env("XDG_RUNTIME_DIR") {
        return run.join("swival").join(SOCKET_FILE);
    }
    let tmp = env("TMPDIR").unwrap_or_else(|| PathBuf::from("/tmp"));
    tmp.join(format!("swival-{uid}")).join(SOCKET_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_socket_path_wins() {
        assert_eq!(socket_path(Some(Path::new("/x/y.sock")), 7), PathBuf::from("/x/y.sock"));
    }
}
