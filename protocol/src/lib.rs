//! swivald's wire protocol: every JSON-RPC method name, parameter, result,
//! event and application error code as plain serde types.
//!
//! The daemon and every client (swivalctl, editor plugins written in Rust)
//! share these types, and `docs/protocol.schema.json` is generated from them
//! (see [`schema::document`]), so the protocol is written down exactly once.
//!
//! Architecture invariant: this crate depends on serde, serde_json and
//! schemars only. No tokio, no I/O.

pub mod approvals;
pub mod changes;
pub mod config;
pub mod conversation;
pub mod error;
pub mod events;
pub mod goals;
pub mod hooks;
pub mod ids;
pub mod inbox;
pub mod interventions;
pub mod loops;
pub mod methods;
pub mod notes;
pub mod outcomes;
pub mod paths;
pub mod policy;
pub mod report;
pub mod review;
pub mod schema;
pub mod session;
pub mod skills;
pub mod tools;
pub mod types;

pub use approvals::*;
pub use changes::*;
pub use config::*;
pub use conversation::*;
pub use error::{ErrorCode, ErrorData};
pub use events::*;
pub use goals::*;
pub use hooks::*;
pub use ids::*;
pub use inbox::*;
pub use interventions::*;
pub use loops::*;
pub use notes::*;
pub use outcomes::*;
pub use policy::*;
pub use report::*;
pub use review::*;
pub use session::*;
pub use tools::{SessionToolsResult, ToolInfo, ToolKind};
pub use types::*;

/// The protocol version this crate describes. A client asking for a newer
/// version than the daemon speaks is refused at `initialize`.
pub const PROTOCOL_VERSION: u32 = 1;
