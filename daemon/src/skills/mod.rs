//! Skills: Swival's SKILL.md instructions (`skills.py`). A run's setup
//! finds them (`discover.rs`); the system prompt lists them
//! ([`Catalog::prompt_section`]); the model reads one through the
//! `use_skill` tool ([`Catalog::activate`], offered with
//! [`Catalog::schema`]), and a `$name` in the task activates it at once
//! ([`Catalog::mentions`]). Skills are instructions, not code: nothing here
//! runs anything. Every read of a skill's files goes through [`beneath`]
//! from the directory its root was opened as, following no symlink.
//! Swival's metaskills (Starlark programs) are not supported.

mod discover;

/// Why a skill could not be activated, in Swival's words (the model reads
/// them after `error: `).
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// No skill of that name (its name as Python would print it).
    #[error("unknown skill: {0}")]
    Unknown(String),
    /// Its SKILL.md could not be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Its SKILL.md does not parse.
    #[error("failed to parse SKILL.md: {0}")]
    Parse(String),
}

use crate::beneath::{self, Beneath, Kind};
pub use discover::{discover, global_dirs, Discovery, Sources, PROJECT_DIRS};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use swival_protocol::skills::{self as rules, py_repr, MAX_SKILL_BODY_CHARS, SKILL_FILE};

/// The tool's name.
pub const TOOL: &str = "use_skill";
/// Supporting files an activation lists (Swival's `_MAX_LISTING_FILES`).
const MAX_LISTED_FILES: usize = 50;

/// Bytes of a SKILL.md read at most: a larger one (a sparse gigabyte the
/// model made) is skipped with a warning, never read; only its first
/// `MAX_SKILL_BODY_CHARS` characters would reach the model anyway.
pub(crate) const SKILL_MAX_BYTES: u64 = 1 << 20;

/// One skill found.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its validated name (its directory's).
    pub name: String,
    /// Its description, comments stripped.
    pub description: String,
    /// Its directory, canonical (no symlink on the way beneath its root).
    pub path: PathBuf,
    /// Whether it lies under the base directory (its path is shown).
    pub is_local: bool,
    /// The canonical directory its root was opened as.
    anchor: PathBuf,
    /// The skill's directory beneath `anchor` (empty: the anchor itself).
    rel: PathBuf,
}

impl Skill {
    /// Its directory, opened again from its anchor following no symlink.
    fn open(&self) -> Result<Beneath, beneath::Error> {
        let anchor = Beneath::open(&self.anchor)?;
        if self.rel.as_os_str().is_empty() {
            return Ok(anchor);
        }
        anchor.open_dir(&self.rel)
    }
}

/// A run's skills, by name (sorted, as Swival shows them).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The skills.
    skills: BTreeMap<String, Skill>,
}

impl Catalog {
    /// A catalogue of `skills`.
    pub fn new(skills: BTreeMap<String, Skill>) -> Catalog {
        Catalog { skills }
    }

    /// Whether there is no skill (then neither catalogue nor tool).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.skills.keys().cloned().collect()
    }

    /// The directories of the skills outside the base directory, which
    /// the file tools may read (Swival's read allowlist).
    pub fn outside_dirs(&self) -> Vec<PathBuf> {
        self.skills.values().filter(|s| !s.is_local).map(|s| s.path.clone()).collect()
    }

    /// Swival's `use_skill` schema, the names in its enum; `None` without
    /// skills.
    pub fn schema(&self) -> Option<Value> {
        if self.is_empty() {
            return None;
        }
        let names = self.names();
        let listed = names.join(", ");
        let description = if listed.chars().count() <= 200 {
            format!(
                "Activate a skill to get detailed instructions. Available skills: {listed}. Use this instead of searching for SKILL.md files."
            )
        } else {
            format!(
                "Activate a skill to get detailed instructions. {} skills available (see enum). Use this instead of searching for SKILL.md files.",
                names.len()
            )
        };
        Some(json!({"type": "function", "function": {"name": TOOL, "description": description,
            "parameters": {"type": "object", "properties": {
                "name": {"type": "string", "description": "The skill name to activate.", "enum": names}},
            "required": ["name"]}}}))
    }

    /// Swival's catalogue for the system prompt (`format_skill_catalog`);
    /// `None` without skills.
    pub fn prompt_section(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut lines = vec![
            "## Skills".to_owned(),
            "A skill is a set of local instructions stored in a `SKILL.md` file.".to_owned(),
            "### Available skills".to_owned(),
            String::new(),
        ];
        for skill in self.skills.values() {
            match skill.is_local {
                true => lines.push(format!(
                    "- {}: {} (file: {})",
                    skill.name,
                    skill.description,
                    skill.path.join(SKILL_FILE).display()
                )),
                false => lines.push(format!("- {}: {}", skill.name, skill.description)),
            }
        }
        lines.push(String::new());
        lines.push("### How to use skills".to_owned());
        let mut bullets =
            vec!["- Call the `use_skill` tool with the skill name to activate it and receive detailed instructions."];
        if self.skills.values().any(|s| s.is_local) {
            bullets.push(
                "- For local skills (those showing a file path above), you may also read the SKILL.md file directly.",
            );
        }
        if self.skills.values().any(|s| !s.is_local) {
            bullets.push("- For skills without a path shown, `use_skill` is the only way to access them — do not search for their files, they are outside the project directory.");
        }
        bullets.push("- If the user mentions a skill with `$skill-name`, it is activated automatically.");
        lines.push(bullets.join("\n"));
        Some(lines.join("\n"))
    }

    /// `use_skill`: the skill's instructions in Swival's activation text
    /// (`activate_skill`), or why not.
    pub fn activate(&self, name: &str) -> Result<String, SkillError> {
        let Some(skill) = self.skills.get(name) else {
            return Err(SkillError::Unknown(py_repr(name)));
        };
        let skill_md = skill.path.join(SKILL_FILE);
        let read = skill
            .open()
            .and_then(|dir| dir.read_regular(Path::new(SKILL_FILE), SKILL_MAX_BYTES))
            .map_err(std::io::Error::from);
        let text = match read
            .and_then(|b| String::from_utf8(b).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
        {
            Ok(t) => t,
            Err(source) => return Err(SkillError::Read { path: skill_md, source }),
        };
        let parsed = rules::parse_frontmatter(&text).map_err(|e| SkillError::Parse(e.to_string()))?;
        let mut body = rules::strip_markdown_comments(&parsed.body);
        let truncated = body.chars().count() > MAX_SKILL_BODY_CHARS;
        if truncated {
            body = body.chars().take(MAX_SKILL_BODY_CHARS).collect();
        }
        let mut parts = vec![format!("[Skill: {name} activated]"), String::new(), "<skill-instructions>".into(), body];
        if truncated {
            parts.push(format!("\n[truncated at {MAX_SKILL_BODY_CHARS} characters]"));
        }
        parts.extend(["</skill-instructions>".into(), String::new()]);
        parts.push(format!("Skill directory: {}", skill.path.display()));
        let files = skill.open().map(|dir| supporting_files(&dir, &skill.path)).unwrap_or_default();
        if files.is_empty() {
            parts.push(format!(
                "To access supporting files, use read_file with absolute paths under this directory (e.g. \"{}/scripts/example.py\").",
                skill.path.display()
            ));
        } else {
            parts.extend([String::new(), "Supporting files in this skill directory:".into()]);
            parts.extend(files.iter().map(|f| format!("  {}", f.display())));
            parts.extend([
                String::new(),
                "To read these files, use read_file with the absolute paths shown above.".into(),
            ]);
        }
        Ok(parts.join("\n"))
    }

    /// The skills a `$name` in `text` mentions, in order, each once
    /// (Swival's `extract_skill_mentions`).
    pub fn mentions(&self, text: &str) -> Vec<String> {
        if self.is_empty() || !text.contains('$') {
            return Vec::new();
        }
        let chars: Vec<char> = text.chars().collect();
        let in_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        let mut found: Vec<String> = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '$' || (i > 0 && chars[i - 1].is_alphanumeric()) {
                i += 1;
                continue;
            }
            // The longest run of name characters, trailing hyphens given back.
            let start = i + 1;
            let mut end = start;
            while end < chars.len() && (in_name(chars[end]) || (end > start && chars[end] == '-')) {
                end += 1;
            }
            while end > start && chars[end - 1] == '-' {
                end -= 1;
            }
            let boundary = chars.get(end).is_none_or(|&c| !(c.is_alphanumeric() || c == '-'));
            if end == start || !boundary {
                i += 1;
                continue;
            }
            let name: String = chars[start..end].iter().collect();
            if self.skills.contains_key(&name) && !found.contains(&name) {
                found.push(name);
            }
            i = end;
        }
        found
    }
}

/// The files of a skill's directory but its SKILL.md, as absolute paths
/// under `shown`, walked as Swival's `os.walk` (files of a directory,
/// then its subdirectories, sorted; hidden ones left out), at most
/// [`MAX_LISTED_FILES`]. Symlinks are not listed (they are never followed).
fn supporting_files(dir: &Beneath, shown: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    walk(dir, Path::new(""), shown, &mut files);
    files
}

/// One directory of [`supporting_files`]'s walk.
fn walk(dir: &Beneath, rel: &Path, shown: &Path, files: &mut Vec<PathBuf>) {
    let Ok(mut entries) = dir.list(rel) else { return };
    entries.retain(|e| !e.name.as_encoded_bytes().starts_with(b"."));
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    for entry in entries.iter().filter(|e| e.meta.kind == Kind::File) {
        if rel.as_os_str().is_empty() && entry.name == SKILL_FILE {
            continue;
        }
        files.push(shown.join(rel).join(&entry.name));
        if files.len() >= MAX_LISTED_FILES {
            return;
        }
    }
    for entry in entries.iter().filter(|e| e.meta.kind == Kind::Dir) {
        walk(dir, &rel.join(&entry.name), shown, files);
        if files.len() >= MAX_LISTED_FILES {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
