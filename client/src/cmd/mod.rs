//! The subcommands of swivalctl, one module per group.

pub mod acp;
mod approval;
pub mod args;
pub mod changes;
pub mod clean;
pub mod daemon;
mod flags;
mod follow;
pub mod goal;
pub mod inbox;
pub mod interval;
mod listing;
pub mod loops;
mod open;
mod overlay;
pub mod policy;
pub mod render;
pub mod repl;
mod report;
mod review;
pub mod run;
pub mod session;
pub mod skills;
pub mod slash;

use std::process::ExitCode;

/// Print an error the way every swivalctl command does, and exit 1.
pub fn fail(e: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("swivalctl: error: {}", clean::text(&e.to_string()));
    ExitCode::FAILURE
}
