//! Link `swivald` with packed relative relocations (`DT_RELR`) where the C
//! library can load them.
//!
//! A position-independent Rust binary carries one 24-byte relocation record
//! for every pointer in its read-only data (about 50,000 for swivald). The
//! dynamic loader reads all of them at start, so the whole table becomes
//! resident for the daemon's lifetime. Packed, the table is a few pages:
//! idle RSS falls by about 2.5 MiB (BENCHMARKS.md) and address-space
//! randomisation stays as it is.
//!
//! glibc loads packed relocations from 2.36 on, and a binary using them
//! names that requirement (`GLIBC_ABI_DT_RELR`), so an older C library
//! refuses it with a clear message instead of running it wrongly. The flag
//! is only passed when building for the machine doing the build and its C
//! library is new enough: a build elsewhere links as before.

use std::process::Command;

/// The first glibc that loads `DT_RELR`.
const RELR_GLIBC: (u32, u32) = (2, 36);

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target == host && target.ends_with("-linux-gnu") && host_glibc().is_some_and(|v| v >= RELR_GLIBC) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc version, from `getconf GNU_LIBC_VERSION`
/// ("glibc 2.36").
fn host_glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}
