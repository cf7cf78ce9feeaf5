//! Swival's SKILL.md rules, shared by the daemon (discovery, `use_skill`)
//! and swivalctl (`swivalctl skills`), so both ends read a skill the same
//! way: the frontmatter parser (`parse_frontmatter`), the name check
//! (`validate_skill_name`), markdown comments stripped, and the limits.
//! Messages are Swival's words. Pure functions: no I/O.

use std::fmt;

/// Characters of a skill's body `use_skill` returns; the rest is cut.
pub const MAX_SKILL_BODY_CHARS: usize = 20_000;
/// Characters a skill's description may have.
pub const MAX_SKILL_DESCRIPTION_CHARS: usize = 1024;
/// Characters a skill's name may have.
pub const MAX_SKILL_NAME_CHARS: usize = 64;
/// The file that makes a directory a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// A SKILL.md's frontmatter fields and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frontmatter {
    /// `name:` (not yet validated).
    pub name: String,
    /// `description:` (comments not yet stripped).
    pub description: String,
    /// Everything after the closing `---`, trimmed.
    pub body: String,
}

/// Why a SKILL.md's frontmatter could not be read (Swival's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontmatterError {
    /// The first line is not `---`.
    NoOpening,
    /// No line after it is `---`.
    NoClosing,
    /// A quoted value lacks its closing quote: the quote and the key.
    Unclosed(char, String),
    /// Something follows a quoted value's closing quote.
    Trailing(char, String),
    /// No `name:`.
    NoName,
    /// No `description:`.
    NoDescription,
    /// `name:` is empty.
    EmptyName,
    /// `description:` is empty.
    EmptyDescription,
}

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrontmatterError::NoOpening => f.write_str("missing opening '---' delimiter"),
            FrontmatterError::NoClosing => f.write_str("missing closing '---' delimiter"),
            FrontmatterError::Unclosed(q, key) => write!(f, "missing closing {q} for {key}"),
            FrontmatterError::Trailing(q, key) => write!(f, "trailing content after closing {q} for {key}"),
            FrontmatterError::NoName => f.write_str("missing 'name' field"),
            FrontmatterError::NoDescription => f.write_str("missing 'description' field"),
            FrontmatterError::EmptyName => f.write_str("name is empty"),
            FrontmatterError::EmptyDescription => f.write_str("description is empty"),
        }
    }
}

impl std::error::Error for FrontmatterError {}

/// Why a skill's name is refused (Swival's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// Empty.
    Empty,
    /// Longer than [`MAX_SKILL_NAME_CHARS`].
    TooLong,
    /// Not lowercase alphanumeric with single inner hyphens.
    Malformed(String),
    /// Not the name of its directory: the name and the directory's.
    Mismatch(String, String),
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("name is empty"),
            NameError::TooLong => write!(f, "name exceeds {MAX_SKILL_NAME_CHARS} characters"),
            NameError::Malformed(name) if name.contains("--") && well_formed_ends(name) => {
                write!(f, "name {} contains consecutive hyphens", py_repr(name))
            }
            NameError::Malformed(name) => write!(
                f,
                "name {} must be lowercase alphanumeric with hyphens, no leading/trailing/consecutive hyphens",
                py_repr(name)
            ),
            NameError::Mismatch(name, dir) => {
                write!(f, "name {} does not match directory name {}", py_repr(name), py_repr(dir))
            }
        }
    }
}

impl std::error::Error for NameError {}

/// Whether `name` passes Swival's pattern `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`
/// (which lets `--` through; Swival refuses it in a second check).
fn well_formed_ends(name: &str) -> bool {
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let (Some(first), Some(last)) = (name.chars().next(), name.chars().last()) else { return false };
    ok(first) && ok(last) && name.chars().all(|c| ok(c) || c == '-')
}

/// Check a skill's `name` against Swival's rules and its directory's name.
pub fn validate_skill_name(name: &str, dir_name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().count() > MAX_SKILL_NAME_CHARS {
        return Err(NameError::TooLong);
    }
    if !well_formed_ends(name) || name.contains("--") {
        return Err(NameError::Malformed(name.to_owned()));
    }
    if name != dir_name {
        return Err(NameError::Mismatch(name.to_owned(), dir_name.to_owned()));
    }
    Ok(())
}

/// `text` without its `<!-- … -->` comments (an unclosed one stays).
pub fn strip_markdown_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        let Some(len) = rest[start + 4..].find("-->") else { break };
        out.push_str(&rest[..start]);
        rest = &rest[start + 4 + len + 3..];
    }
    out.push_str(rest);
    out
}

/// The frontmatter keys Swival reads (the metaskill ones are parsed and
/// dropped: swivald has no metaskills).
const KNOWN_KEYS: &[&str] = &["name", "description", "metaskill", "metaskill_language"];

/// Whether a frontmatter line continues the key before it (indented).
fn continues(line: &str) -> bool {
    line.starts_with([' ', '\t'])
}

/// Parse a SKILL.md's YAML frontmatter as Swival does: plain, quoted,
/// folded (indented continuation lines joined with spaces) and literal
/// (`key: |`) values; other keys skipped.
pub fn parse_frontmatter(text: &str) -> Result<Frontmatter, FrontmatterError> {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.first().is_none_or(|l| l.trim() != "---") {
        return Err(FrontmatterError::NoOpening);
    }
    let end = (1..lines.len()).find(|&i| lines[i].trim() == "---").ok_or(FrontmatterError::NoClosing)?;
    let fm = &lines[1..end];
    let body = lines[end + 1..].join("\n").trim().to_owned();
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < fm.len() {
        let line = fm[i];
        i += 1;
        if line.trim().is_empty() || continues(line) {
            continue;
        }
        let Some(colon) = line.find(':') else { continue };
        let key = line[..colon].trim();
        let raw = line[colon + 1..].trim();
        if !KNOWN_KEYS.contains(&key) {
            while i < fm.len() && continues(fm[i]) {
                i += 1;
            }
            continue;
        }
        let value = if raw == "|" {
            let mut block = Vec::new();
            while i < fm.len() && continues(fm[i]) {
                block.push(fm[i].trim());
                i += 1;
            }
            block.join("\n")
        } else if raw.starts_with(['"', '\'']) {
            quoted(raw, key)?
        } else {
            let mut value = raw.to_owned();
            while i < fm.len() && continues(fm[i]) {
                value.push(' ');
                value.push_str(fm[i].trim());
                i += 1;
            }
            value
        };
        fields.retain(|(k, _)| k != key);
        fields.push((key.to_owned(), value));
    }
    let get = |k: &str| fields.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
    let name = get("name").ok_or(FrontmatterError::NoName)?;
    let description = get("description").ok_or(FrontmatterError::NoDescription)?;
    if name.is_empty() {
        return Err(FrontmatterError::EmptyName);
    }
    if description.is_empty() {
        return Err(FrontmatterError::EmptyDescription);
    }
    Ok(Frontmatter { name, description, body })
}

/// A quoted value (`raw` starts with its quote): the text up to the
/// closing quote, escaped quotes unescaped; nothing may follow.
fn quoted(raw: &str, key: &str) -> Result<String, FrontmatterError> {
    let mut chars = raw.chars();
    let quote = chars.next().unwrap_or('"');
    let inner: Vec<char> = chars.collect();
    let mut pos = 0;
    let close = loop {
        match inner.get(pos) {
            None => return Err(FrontmatterError::Unclosed(quote, key.to_owned())),
            Some('\\') if pos + 1 < inner.len() => pos += 2,
            Some(&c) if c == quote => break pos,
            Some(_) => pos += 1,
        }
    };
    if close != inner.len() - 1 {
        return Err(FrontmatterError::Trailing(quote, key.to_owned()));
    }
    let text: String = inner[..close].iter().collect();
    Ok(text.replace(&format!("\\{quote}"), &quote.to_string()))
}

/// `s` as Python's `repr` shows a string, as Swival's messages quote names.
pub fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_reads_plain_quoted_folded_and_literal_values() {
        let text = "---\nname: my-skill\ndescription: >\n  folded\n  text\nextra: x\n  more\n---\n\n# Body\n";
        let fm = parse_frontmatter(text).unwrap();
        assert_eq!(
            (fm.name.as_str(), fm.description.as_str(), fm.body.as_str()),
            ("my-skill", "> folded text", "# Body")
        );
        let fm = parse_frontmatter("---\nname: 'a'\ndescription: |\n  one\n  two\n---\nb").unwrap();
        assert_eq!(fm.description, "one\ntwo");
        let fm = parse_frontmatter("---\nname: \"a\\\"b\"\ndescription: d\n---\n").unwrap();
        assert_eq!(fm.name, "a\"b");
    }

    #[test]
    fn frontmatter_errors_are_swivals_words() {
        let err = |t: &str| parse_frontmatter(t).unwrap_err().to_string();
        assert_eq!(err("name: a"), "missing opening '---' delimiter");
        assert_eq!(err("---\nname: a\n"), "missing closing '---' delimiter");
        assert_eq!(err("---\nname: a\n---\n"), "missing 'description' field");
        assert_eq!(err("---\ndescription: d\n---\n"), "missing 'name' field");
        assert_eq!(err("---\nname: \"a\ndescription: d\n---\n"), "missing closing \" for name");
        assert_eq!(err("---\nname: 'a' b\ndescription: d\n---\n"), "trailing content after closing ' for name");
        assert_eq!(err("---\nname:\ndescription: d\n---\n"), "name is empty");
    }

    #[test]
    fn names_follow_swivals_rules() {
        let err = |n: &str, d: &str| validate_skill_name(n, d).unwrap_err().to_string();
        assert!(validate_skill_name("pdf-tools2", "pdf-tools2").is_ok());
        assert_eq!(
            err("Bad", "Bad"),
            "name 'Bad' must be lowercase alphanumeric with hyphens, no leading/trailing/consecutive hyphens"
        );
        assert_eq!(err("a--b", "a--b"), "name 'a--b' contains consecutive hyphens");
        assert_eq!(
            err("-a", "-a"),
            "name '-a' must be lowercase alphanumeric with hyphens, no leading/trailing/consecutive hyphens"
        );
        assert_eq!(err("a", "b"), "name 'a' does not match directory name 'b'");
        assert_eq!(err(&"a".repeat(65), "x"), "name exceeds 64 characters");
    }

    #[test]
    fn comments_are_stripped_but_an_unclosed_one_stays() {
        assert_eq!(strip_markdown_comments("a<!-- x\ny -->b<!--c-->d"), "abd");
        assert_eq!(strip_markdown_comments("a<!-- open"), "a<!-- open");
    }
}
