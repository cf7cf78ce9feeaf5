//! A session's runs as stored: one row each, with its result and report
//! once it finished (written with its `run_finished`, see `jobs.rs`).

use super::{Store, StoreError};
use rusqlite::{params, OptionalExtension};
use serde_json::Value;
use swival_protocol::{Outcome, RunId, RunInfo, RunResult, SessionId};

/// One stored run row.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Its id.
    pub id: RunId,
    /// Its session.
    pub session_id: SessionId,
    /// The task.
    pub task: String,
    /// The result, once finished.
    pub result: Option<RunResult>,
    /// Swival's report JSON, once finished.
    pub report: Option<Value>,
    /// RFC 3339 start time.
    pub started_at: String,
}

impl RunRow {
    /// The protocol's summary of this run.
    pub fn info(&self) -> RunInfo {
        RunInfo {
            run_id: self.id.clone(),
            task: self.task.clone(),
            running: self.result.is_none(),
            outcome: self.result.as_ref().map(|r| r.outcome),
            started_at: self.started_at.clone(),
        }
    }
}

impl Store {
    /// One run.
    pub fn run(&self, id: &RunId) -> Result<Option<RunRow>, StoreError> {
        let row = self.with(|c| {
            c.query_row(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE id = ?1",
                params![id.0],
                run_tuple,
            )
            .optional()
        })?;
        row.map(|t| self.run_row(t)).transpose()
    }

    /// A session's runs, oldest first.
    pub fn runs(&self, session: &SessionId) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE session_id = ?1 ORDER BY started_at, rowid",
            )?;
            let rows = st.query_map(params![session.0], run_tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(|t| self.run_row(t)).collect()
    }

    /// Runs without a result: in flight when the daemon last stopped.
    pub fn unfinished_runs(&self) -> Result<Vec<RunRow>, StoreError> {
        let rows = self.with(|c| {
            let mut st = c.prepare(
                "SELECT id, session_id, task, started_at, result, report FROM runs WHERE result IS NULL ORDER BY started_at",
            )?;
            let rows = st.query_map([], run_tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(|t| self.run_row(t)).collect()
    }

    fn run_row(&self, t: RunTuple) -> Result<RunRow, StoreError> {
        let (id, session_id, task, started_at, result, report) = t;
        Ok(RunRow {
            id: RunId(id),
            session_id: SessionId(session_id),
            task,
            started_at,
            result: result.map(|r| self.decode(&r)).transpose()?,
            report: report.map(|r| self.decode(&r)).transpose()?,
        })
    }
}

type RunTuple = (String, String, String, String, Option<String>, Option<String>);

fn run_tuple(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunTuple> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
}

/// The result recorded for a run the daemon lost (crash or kill).
pub fn interrupted_result(run: &RunId) -> RunResult {
    RunResult {
        run_id: run.clone(),
        outcome: Outcome::Interrupted,
        answer: None,
        exit_code: Outcome::Interrupted.exit_code(),
        error: Some("the daemon stopped while this run was in flight; start a new run to continue".into()),
        failure: Some(swival_protocol::FailureKind::Interrupted),
        stats: Default::default(),
    }
}

/// Longest title a session takes from its first task, in characters.
const TITLE_CHARS: usize = 60;

/// The title a session with none takes from its first run's task: the
/// first line with text, its spaces collapsed, cut to [`TITLE_CHARS`] with
/// an ellipsis; none for a task with no text.
pub(super) fn title_of(task: &str) -> Option<String> {
    let line = task.lines().find(|l| !l.trim().is_empty())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let line = words.join(" ");
    if line.chars().count() <= TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::title_of;

    #[test]
    fn a_title_is_the_first_line_with_text_with_its_spaces_collapsed() {
        assert_eq!(title_of("\n  fix the\tparser  \nthen run the tests").as_deref(), Some("fix the parser"));
        assert_eq!(title_of(" \n\t\n"), None);
        assert_eq!(title_of(""), None);
    }

    #[test]
    fn a_long_first_line_is_cut_to_sixty_characters_with_an_ellipsis() {
        let long = "é".repeat(100);
        let title = title_of(&long).unwrap();
        assert_eq!(title.chars().count(), 60);
        assert!(title.ends_with('…') && title.starts_with("éé"), "{title}");
        assert_eq!(title_of(&"a".repeat(60)).unwrap(), "a".repeat(60), "sixty fit");
    }
}
