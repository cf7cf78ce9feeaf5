//! `review/run`: one review of an answer by a model, as Swival's reviewer
//! mode does it (`swivalctl run --reviewer-mode`): the task, optional
//! acceptance criteria and instructions, the answer; the model's text and
//! its verdict. The call goes through a session's whole pipeline.

use crate::events::ReviewVerdict;
use crate::ids::{RunId, SessionId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `review/run` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRunParams {
    /// The project reviewed (an absolute directory).
    pub base_dir: String,
    /// The answer to judge.
    pub answer: String,
    /// The task it answers (`SWIVAL_TASK`); with `objective`, read from that file instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// A file holding the task (`--objective`), relative to `base_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// A file holding acceptance criteria (`--verify`), relative to `base_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// Instructions added to the review prompt (`--review-prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_prompt: Option<String>,
    /// The session whose answer this is (`SWIVALD_SESSION`, set for a
    /// self-review): the review starts from its config, trust and caller
    /// environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<SessionId>,
    /// Config keys over the project's (another agent's reviewer: provider, model…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<crate::config::ConfigKeys>,
    /// The caller's environment (see `session/create`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Accept an untrusted project config for this review (`--trust`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
}

/// `review/run` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRunResult {
    /// The review's session.
    pub session_id: SessionId,
    /// Its run.
    pub run_id: RunId,
    /// `accept` or `retry` from the reply's last `VERDICT:` line; `error`
    /// when there is none or the call failed.
    pub verdict: ReviewVerdict,
    /// The model's reply (or why there is none).
    pub text: String,
    /// Swival's reviewer exit code: 0 accept, 1 retry, 2 error.
    pub exit_code: i32,
    /// Why there is no verdict, when the model call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
