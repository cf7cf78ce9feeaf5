//! The `edit_file` matcher, as Swival's `swival/edit.py`: find `old_string`
//! in a file's text and replace it. Three passes, the first that finds any
//! candidate decides: exact substring, then line windows compared after
//! trimming each line, then the same after mapping typographic punctuation
//! to ASCII. `line_number` picks among several candidates; a miss comes back
//! with the most similar region of the file. Pure string logic, no I/O.

use std::fmt;
use std::time::{Duration, Instant};

/// Candidates listed in an ambiguity error.
const MAX_LISTED: usize = 5;
/// A region at least this similar is offered as the closest match.
const CLOSEST_THRESHOLD: f32 = 0.55;
/// Files longer than this get no closest-match search (it would be slow).
const CLOSEST_MAX_LINES: usize = 5000;
/// Wall-clock cap on the closest-match search.
const CLOSEST_BUDGET: Duration = Duration::from_secs(2);
/// Lines of context shown around the closest match.
const CONTEXT_LINES: usize = 2;
/// Snippets in messages are cut to this many characters.
const SNIPPET_CHARS: usize = 80;

/// Why an edit could not be made; `Display` is the text the model sees
/// after `error: edit_file: `.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    /// `old_string == new_string`.
    Identical,
    /// `old_string` is empty.
    EmptyOld,
    /// Several candidates and nothing to choose between them.
    Ambiguous {
        /// How many candidates the deciding pass found.
        count: usize,
        /// `(first line, snippet)` of the first few candidates.
        candidates: Vec<(usize, String)>,
    },
    /// `line_number` falls inside more than one candidate.
    AmbiguousOnLine(usize),
    /// `line_number` is inside no candidate and several exist elsewhere.
    NotAtLine {
        /// The line the model asked for.
        line: usize,
        /// First lines of the candidates that do exist.
        candidates: Vec<usize>,
    },
    /// No pass found anything.
    NotFound(Option<Closest>),
}

/// The region of the file most similar to a missed `old_string`.
#[derive(Debug, Clone, PartialEq)]
pub struct Closest {
    /// First line of the region, from 1.
    pub first_line: usize,
    /// The region's lines as they are in the file.
    pub lines: Vec<String>,
    /// Up to [`CONTEXT_LINES`] lines before it and after it.
    pub around: (Vec<String>, Vec<String>),
    /// The `old_string` that was sent.
    pub needle: String,
    /// Similarity in `[0, 1]`.
    pub ratio: f32,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Identical => write!(
                f,
                "old_string and new_string are identical, so the edit would be a no-op. Keep old_string as the \
                 file has it and write the text as it should read after the change in new_string"
            ),
            EditError::EmptyOld => write!(
                f,
                "old_string must not be empty; include the surrounding text to locate the edit, or use write_file to replace the whole file"
            ),
            EditError::Ambiguous { count, candidates } => {
                write!(f, "multiple matches ({count} found); add line_number from read_file to target one match, or set replace_all=true.")?;
                for (line, snippet) in candidates {
                    write!(f, "\n  line {line}: '{snippet}'")?;
                }
                Ok(())
            }
            EditError::AmbiguousOnLine(line) => write!(
                f,
                "multiple matches on line {line}; add more context to old_string"
            ),
            EditError::NotAtLine { line, candidates } => write!(
                f,
                "no match at line {line}; matches found at lines {}. Pass one of those line numbers, or reread the section.",
                list_lines(candidates)
            ),
            EditError::NotFound(closest) => {
                write!(f, "old_string not found. The file's whitespace, casing, or punctuation may differ from what you sent.")?;
                match closest {
                    Some(c) => write!(f, "\n{c}"),
                    None => write!(
                        f,
                        " Nothing in the file is close to it; re-read the file with read_file and copy the exact text."
                    ),
                }
            }
        }
    }
}

impl fmt::Display for Closest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.first_line + self.lines.len().saturating_sub(1);
        let range = if last == self.first_line {
            format!("line {}", self.first_line)
        } else {
            format!("lines {}-{last}", self.first_line)
        };
        writeln!(f, "Closest match ({range}, {:.0}% similar):", self.ratio * 100.0)?;
        writeln!(f, "  your old_string:")?;
        for l in self.needle.trim_end_matches('\n').split('\n') {
            writeln!(f, "    {l}")?;
        }
        write!(f, "  actual in file:")?;
        for (i, l) in self.lines.iter().enumerate() {
            write!(f, "\n    {}: {l}", self.first_line + i)?;
        }
        let (before, after) = &self.around;
        if !before.is_empty() || !after.is_empty() {
            write!(f, "\n  around it:")?;
            let first_before = self.first_line - before.len();
            for (i, l) in before.iter().enumerate() {
                write!(f, "\n    {}: {l}", first_before + i)?;
            }
            write!(f, "\n    …")?;
            let first_after = self.first_line + self.lines.len();
            for (i, l) in after.iter().enumerate() {
                write!(f, "\n    {}: {l}", first_after + i)?;
            }
        }
        write!(f, "\nCopy old_string from the \"actual in file\" lines exactly as they are, without the \"N: \" line numbers.")
    }
}

fn list_lines(lines: &[usize]) -> String {
    let mut v = lines.to_vec();
    v.sort_unstable();
    v.dedup();
    let shown: Vec<String> = v.iter().take(MAX_LISTED).map(usize::to_string).collect();
    let more = if v.len() > MAX_LISTED { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

/// A candidate: byte offsets `[start, end)` into the content.
type Span = (usize, usize);

/// The three matching passes, in order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pass {
    Exact,
    Trimmed,
    Normalized,
}

/// Map typographic punctuation to ASCII: curly quotes, dashes, the
/// ellipsis and the non-breaking space.
pub fn normalize_punctuation(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => out.push('\''),
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => out.push('"'),
            '\u{2010}'..='\u{2015}' => out.push('-'),
            '\u{2026}' => out.push_str("..."),
            '\u{a0}' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Line starts of `content` (split on `\n` only, as Swival does).
struct Lines<'a> {
    content: &'a str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(content: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(content.match_indices('\n').map(|(i, _)| i + 1));
        Lines { content, starts }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    /// Line `i` (from 0) without its `\n`.
    fn line(&self, i: usize) -> &'a str {
        let end = self.starts.get(i + 1).map_or(self.content.len(), |s| s - 1);
        &self.content[self.starts[i]..end]
    }

    /// The line (from 1) holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }

    /// First and last line (from 1) a span touches.
    fn span_lines(&self, (start, end): Span) -> (usize, usize) {
        (self.line_of(start), self.line_of(end.max(start + 1) - 1))
    }
}

fn exact_spans(content: &str, old: &str) -> Vec<Span> {
    content.match_indices(old).map(|(i, m)| (i, i + m.len())).collect()
}

/// Windows of whole lines equal to `old`'s lines after trimming (and
/// normalising, for [`Pass::Normalized`]). A span covers the whole lines;
/// it includes the last line's `\n` only when `old` ends with one.
fn fuzzy_spans(lines: &Lines<'_>, old: &str, pass: Pass) -> Vec<Span> {
    let prep = |s: &str| -> String {
        let t = s.trim();
        if pass == Pass::Normalized {
            normalize_punctuation(t)
        } else {
            t.to_owned()
        }
    };
    let with_newline = old.ends_with('\n');
    let wanted: Vec<String> = old.strip_suffix('\n').unwrap_or(old).split('\n').map(prep).collect();
    let k = wanted.len();
    if k > lines.len() {
        return Vec::new();
    }
    let have: Vec<String> = (0..lines.len()).map(|i| prep(lines.line(i))).collect();
    let mut spans = Vec::new();
    for i in 0..=lines.len() - k {
        if have[i..i + k] == wanted[..] {
            let start = lines.starts[i];
            let last = i + k - 1;
            let mut end = lines.starts[last] + lines.line(last).len();
            if with_newline && end < lines.content.len() {
                end += 1;
            }
            spans.push((start, end));
        }
    }
    spans
}

fn find(lines: &Lines<'_>, old: &str, pass: Pass) -> Vec<Span> {
    match pass {
        Pass::Exact => exact_spans(lines.content, old),
        Pass::Trimmed | Pass::Normalized => fuzzy_spans(lines, old, pass),
    }
}

/// Replace one span, absorbing the newline after it when `new` brings its
/// own and `old` did not (so no blank line is doubled).
fn replace_span(content: &str, (start, mut end): Span, old: &str, new: &str) -> String {
    if !old.ends_with('\n') && new.ends_with('\n') && content[end..].starts_with('\n') {
        end += 1;
    }
    let mut out = String::with_capacity(content.len() + new.len());
    out.push_str(&content[..start]);
    out.push_str(new);
    out.push_str(&content[end..]);
    out
}

/// Replace every non-overlapping span, left to right. One scan, so a
/// `new_string` that itself matches cannot make this loop.
fn replace_all_spans(content: &str, spans: &[Span], old: &str, new: &str) -> String {
    let mut chosen: Vec<Span> = Vec::new();
    for &s in spans {
        if chosen.last().is_none_or(|&(_, e)| s.0 >= e) {
            chosen.push(s);
        }
    }
    let mut out = content.to_owned();
    for &s in chosen.iter().rev() {
        out = replace_span(&out, s, old, new);
    }
    out
}

fn snippet(line: &str) -> String {
    let t = line.trim();
    if t.chars().count() > SNIPPET_CHARS {
        let cut: String = t.chars().take(SNIPPET_CHARS).collect();
        format!("{cut}...")
    } else {
        t.to_owned()
    }
}

/// Replace `old` with `new` in `content` following Swival's rules; see the
/// module doc. `line_number` (from 1) is ignored with `replace_all`.
pub fn replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    line_number: Option<usize>,
) -> Result<String, EditError> {
    if old == new {
        return Err(EditError::Identical);
    }
    if old.is_empty() {
        return Err(EditError::EmptyOld);
    }
    let line_number = line_number.filter(|&n| n > 0 && !replace_all);
    let lines = Lines::new(content);
    let mut fallback: Vec<Span> = Vec::new();
    for pass in [Pass::Exact, Pass::Trimmed, Pass::Normalized] {
        let spans = find(&lines, old, pass);
        if spans.is_empty() {
            continue;
        }
        if replace_all {
            return Ok(replace_all_spans(content, &spans, old, new));
        }
        if let Some(target) = line_number {
            let hits: Vec<Span> = spans
                .iter()
                .copied()
                .filter(|&s| {
                    let (first, last) = lines.span_lines(s);
                    (first..=last).contains(&target)
                })
                .collect();
            match hits.len() {
                1 => return Ok(replace_span(content, hits[0], old, new)),
                0 => {
                    fallback.extend(spans);
                    continue;
                }
                _ => return Err(EditError::AmbiguousOnLine(target)),
            }
        }
        if spans.len() == 1 {
            return Ok(replace_span(content, spans[0], old, new));
        }
        return Err(EditError::Ambiguous {
            count: spans.len(),
            candidates: spans
                .iter()
                .take(MAX_LISTED)
                .map(|&s| {
                    let first = lines.span_lines(s).0;
                    (first, snippet(lines.line(first - 1)))
                })
                .collect(),
        });
    }
    if let (Some(target), false) = (line_number, fallback.is_empty()) {
        return stale_line(&lines, fallback, target).map(|s| replace_span(content, s, old, new));
    }
    Err(EditError::NotFound(closest(&lines, old)))
}

/// `line_number` touched no candidate. The same match nests across passes,
/// so count distinct locations: exactly one means the line number was
/// stale and that one is meant; several are listed.
fn stale_line(lines: &Lines<'_>, fallback: Vec<Span>, target: usize) -> Result<Span, EditError> {
    let distinct = outermost(fallback.clone());
    match distinct[..] {
        // The earliest pass's match at that place: an exact hit inside a
        // whole-line window keeps the line's indent.
        [only] => Ok(fallback.into_iter().find(|&(a, b)| only.0 <= a && b <= only.1).unwrap_or(only)),
        _ => Err(EditError::NotAtLine {
            line: target,
            candidates: distinct.iter().map(|&s| lines.span_lines(s).0).collect(),
        }),
    }
}

/// The spans not contained in another (the same match found by several
/// passes nests: an exact hit inside a whole-line window).
fn outermost(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    spans.dedup();
    let mut out: Vec<Span> = Vec::new();
    for s in spans {
        if !out.iter().any(|&(a, b)| a <= s.0 && s.1 <= b) {
            out.push(s);
        }
    }
    out
}

/// Similarity of two strings in `[0, 1]` (difflib's ratio: twice the
/// matched characters over the total).
fn ratio(a: &str, b: &str, deadline: Instant) -> f32 {
    let (la, lb) = (a.chars().count(), b.chars().count());
    if la + lb == 0 {
        return 1.0;
    }
    // The ratio can be no higher than this; skip the diff when it cannot
    // reach the threshold.
    if 2.0 * la.min(lb) as f32 / ((la + lb) as f32) < CLOSEST_THRESHOLD {
        return 0.0;
    }
    similar::TextDiff::configure().deadline(deadline).diff_chars(a, b).ratio()
}

/// The region of the file most like `old`, if one is at least
/// [`CLOSEST_THRESHOLD`] similar.
fn closest(lines: &Lines<'_>, old: &str) -> Option<Closest> {
    if lines.len() > CLOSEST_MAX_LINES {
        return None;
    }
    let deadline = Instant::now() + CLOSEST_BUDGET;
    let needle: Vec<&str> = old.trim_matches('\n').split('\n').map(str::trim).collect();
    let k = needle.len();
    if k == 0 || k > lines.len() {
        return None;
    }
    let trimmed: Vec<&str> = (0..lines.len()).map(|i| lines.line(i).trim()).collect();
    let mut best: Option<(f32, usize)> = None;
    for i in 0..=lines.len() - k {
        if Instant::now() > deadline {
            break;
        }
        let score = needle.iter().zip(&trimmed[i..i + k]).map(|(n, h)| ratio(n, h, deadline)).sum::<f32>() / k as f32;
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, i));
        }
    }
    let (score, i) = best?;
    let line = |j: usize| lines.line(j).to_owned();
    let before = (i.saturating_sub(CONTEXT_LINES)..i).map(line).collect();
    let after = (i + k..(i + k + CONTEXT_LINES).min(lines.len())).map(line).collect();
    (score >= CLOSEST_THRESHOLD).then(|| Closest {
        first_line: i + 1,
        lines: (i..i + k).map(line).collect(),
        around: (before, after),
        needle: old.to_owned(),
        ratio: score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(content: &str, old: &str, new: &str) -> String {
        replace(content, old, new, false, None).unwrap()
    }

    #[test]
    fn exact_match_is_replaced() {
        assert_eq!(ok("a\nfoo(1)\nb\n", "foo(1)", "foo(2)"), "a\nfoo(2)\nb\n");
    }

    #[test]
    fn trimmed_match_ignores_indentation_and_replaces_whole_lines() {
        let content = "fn main() {\n        let x = 1;\n    let y = 2;\n}\n";
        let out = ok(content, "let x = 1;\nlet y = 2;", "    let z = 3;");
        assert_eq!(out, "fn main() {\n    let z = 3;\n}\n");
    }

    #[test]
    fn trimmed_match_with_trailing_newline_takes_the_newline_too() {
        let out = ok("a\n  b\nc\n", "b \n", "B\n");
        assert_eq!(out, "a\nB\nc\n");
    }

    #[test]
    fn punctuation_normalised_match_maps_curly_quotes_dashes_and_ellipsis() {
        let content = "say(\u{201c}hello\u{201d}) \u{2014} it\u{2019}s fine\u{2026}\nnext\n";
        let out = ok(content, "say(\"hello\") - it's fine...", "done");
        assert_eq!(out, "done\nnext\n");
        // And the other way round: ASCII in the file, typography sent.
        let out = ok("x = 'a'\u{a0}+ 1\n", "x = \u{2018}a\u{2019} + 1", "x = 2");
        assert_eq!(out, "x = 2\n");
    }

    #[test]
    fn ambiguous_match_lists_candidate_lines() {
        let content = "a = 1\nb = 2\na = 1\nc\na = 1\n";
        let err = replace(content, "a = 1", "a = 9", false, None).unwrap_err();
        assert_eq!(
            err,
            EditError::Ambiguous {
                count: 3,
                candidates: vec![(1, "a = 1".into()), (3, "a = 1".into()), (5, "a = 1".into())]
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("multiple matches (3 found)"), "{msg}");
        assert!(msg.contains("line 3: 'a = 1'"), "{msg}");
    }

    #[test]
    fn line_number_picks_one_of_several_matches() {
        let content = "a = 1\nb = 2\na = 1\n";
        let out = replace(content, "a = 1", "a = 9", false, Some(3)).unwrap();
        assert_eq!(out, "a = 1\nb = 2\na = 9\n");
    }

    #[test]
    fn stale_line_number_with_one_real_location_still_edits() {
        let out = replace("x\ny\nz\n", "y", "Y", false, Some(3)).unwrap();
        assert_eq!(out, "x\nY\nz\n");
    }

    #[test]
    fn stale_line_number_keeps_the_indentation_of_an_exact_match() {
        // The exact match nests in a whole-line window of the trimmed
        // pass; the exact one is replaced, so the indent stays.
        let content = "def total(xs):\n    s = 0\n    for i in range(len(xs) - 1):\n        s += xs[i]\n";
        let out = replace(content, "for i in range(len(xs) - 1):", "for i in range(len(xs)):", false, Some(4)).unwrap();
        assert_eq!(out, "def total(xs):\n    s = 0\n    for i in range(len(xs)):\n        s += xs[i]\n");
    }

    #[test]
    fn line_number_missing_every_candidate_names_them() {
        let err = replace("a\nb\na\nc\n", "a", "A", false, Some(4)).unwrap_err();
        assert_eq!(err, EditError::NotAtLine { line: 4, candidates: vec![1, 3] });
        assert!(err.to_string().contains("matches found at lines 1, 3"));
    }

    #[test]
    fn replace_all_replaces_every_match_and_ignores_line_number() {
        let out = replace("a a a\n", "a", "b", true, Some(7)).unwrap();
        assert_eq!(out, "b b b\n");
    }

    #[test]
    fn replace_all_fuzzy_terminates_when_new_matches_old() {
        let out = replace("  x\ny\n x\n", "x", "   x", true, None);
        // Exact pass decides here (substring "x"), so every x is replaced.
        assert_eq!(out.unwrap(), "     x\ny\n    x\n");
        // Trimmed pass decides, and the replacement itself trim-matches.
        let out = replace("  x = 1\n\tx = 1\n", "x = 1 ", "  x = 1", true, None);
        assert_eq!(out.unwrap(), "  x = 1\n  x = 1\n");
    }

    #[test]
    fn newline_is_absorbed_when_new_string_brings_its_own() {
        assert_eq!(ok("one\ntwo\nthree\n", "two", "2\n"), "one\n2\nthree\n");
    }

    #[test]
    fn identical_and_empty_old_string_are_refused() {
        assert_eq!(replace("a", "a", "a", false, None), Err(EditError::Identical));
        assert_eq!(replace("a", "", "b", false, None), Err(EditError::EmptyOld));
    }

    #[test]
    fn miss_reports_the_closest_region_with_line_numbers() {
        let content = "fn a() {}\nfn compute_total(items: &[u32]) -> u32 {\n    items.iter().sum()\n}\n";
        let err =
            replace(content, "fn compute_totals(items: &[u64]) -> u64 {\n    items.iter().sum()", "x", false, None)
                .unwrap_err();
        let EditError::NotFound(Some(c)) = &err else {
            panic!("expected a closest match, got {err:?}");
        };
        assert_eq!(c.first_line, 2);
        assert_eq!(c.lines.len(), 2);
        let msg = err.to_string();
        assert!(msg.contains("Closest match (lines 2-3"), "{msg}");
        assert!(msg.contains("    2: fn compute_total(items: &[u32]) -> u32 {"), "{msg}");
    }

    #[test]
    fn miss_with_nothing_close_says_to_reread() {
        let err = replace("alpha\nbeta\n", "zzzzzzzzzzzzzzzz", "x", false, None).unwrap_err();
        assert_eq!(err, EditError::NotFound(None));
        assert!(err.to_string().contains("re-read the file with read_file"));
    }

    #[test]
    fn multibyte_content_keeps_char_boundaries() {
        let out = ok("é\n  ünï\nß\n", "ünï", "u");
        assert_eq!(out, "é\n  u\nß\n");
        let out = ok("é\n  ünï  \nß\n", "ünï\n", "u\n");
        assert_eq!(out, "é\nu\nß\n");
    }
}
