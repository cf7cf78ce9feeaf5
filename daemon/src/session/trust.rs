//! Trust on first use for project config, as sessions apply it: a project
//! `swival.toml` that runs programs, widens the sandbox or redirects the
//! provider is used only when the user trusted its exact content
//! (`project/trust`, recorded by SHA-256 in the store), or accepted it for
//! one session (`session/create` with `trust`). A session remembers the
//! content it accepted, so it loads again after a restart as long as the
//! file is unchanged.

use super::{check_base_dir, SessionError, Sessions};
use crate::config::ProjectFile;
use std::path::Path;
use swival_protocol::ProjectTrustResult;

impl Sessions {
    /// The project file of `base`, read once, and the SHA-256 this
    /// session accepts for it (`None` when nothing in it needs trust).
    /// `also_ok` is a hash accepted earlier (a stored session's).
    pub(super) fn admit_project(
        &self,
        base: &Path,
        once: bool,
        also_ok: Option<&str>,
    ) -> Result<(Option<ProjectFile>, Option<String>), SessionError> {
        let project = ProjectFile::read(base).map_err(|e| SessionError::Config(e.to_string()))?;
        let Some(file) = &project else { return Ok((None, None)) };
        let enables = file.needs_trust().map_err(|e| SessionError::Config(e.to_string()))?;
        if enables.is_empty() {
            return Ok((project, None));
        }
        let path = file.path.display().to_string();
        let trusted = self.shared.store.trusted_project(&path)?;
        if once || trusted.as_deref() == Some(&file.sha256) || also_ok == Some(file.sha256.as_str()) {
            let sha = file.sha256.clone();
            return Ok((project, Some(sha)));
        }
        let what = if trusted.is_some() { "has changed since you trusted it" } else { "is not trusted" };
        Err(SessionError::Untrusted(format!(
            "{path} {what} (sha256 {}); it would:\n  - {}\nReview it, then trust this content with `swivalctl trust {}` (or `swivalctl run --trust` for one run)",
            file.sha256,
            enables.join("\n  - "),
            base.display()
        )))
    }

    /// `project/trust`: record (unless `check`) that the user trusts the
    /// project file of `base_dir` as it is now.
    pub async fn trust_project(
        &self,
        base_dir: &str,
        check: bool,
        expected: Option<&str>,
    ) -> Result<ProjectTrustResult, SessionError> {
        let base = check_base_dir(base_dir)?;
        let project = ProjectFile::read(&base).map_err(|e| SessionError::Config(e.to_string()))?;
        let Some(file) = project else {
            return Ok(ProjectTrustResult { path: None, sha256: None, enables: Vec::new(), trusted: true });
        };
        let enables = file.needs_trust().map_err(|e| SessionError::Config(e.to_string()))?;
        let path = file.path.display().to_string();
        if let Some(shown) = expected.filter(|s| *s != file.sha256) {
            return Err(SessionError::Untrusted(format!(
                "{path} changed since it was shown (sha256 {shown} then, {} now); nothing was trusted: review it again",
                file.sha256
            )));
        }
        if !check {
            self.shared.store.trust_project(&path, &file.sha256, &crate::clock::now()).await?;
        }
        let trusted = enables.is_empty() || self.shared.store.trusted_project(&path)?.as_deref() == Some(&file.sha256);
        Ok(ProjectTrustResult { path: Some(path), sha256: Some(file.sha256), enables, trusted })
    }
}
