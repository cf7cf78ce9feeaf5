//! What runs change in their projects, seen and undone: a snapshot store
//! per project (a shadow git repository in the daemon's state dir, driven
//! through the `git` program), change sets per run, reverts, and sessions
//! in their own git worktree.

pub mod git;
pub mod worktree;
