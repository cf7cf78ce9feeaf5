//! Finding tokens in text, with the matching rules of `fast_cipher.tokens`
//! (the scanner Swival uses):
//!
//! * a prefix must start at a word boundary (the previous character is not
//!   `[A-Za-z0-9_-]`);
//! * the body extends over the pattern's alphabet and must then fully match
//!   the body rule, so a longer run of alphabet characters makes it fail —
//!   unless another pattern's prefix inside the run starts a token of its own,
//!   in which case the body is cut there (two tokens written back to back);
//! * candidates are ordered by position, then longest prefix, then longest
//!   match, and overlapping ones dropped.
//!
//! Two deliberate differences, both so that fewer secrets slip through: a
//! JSON escape such as `\n` right before a token also counts as a word
//! boundary (tool-call arguments are JSON text, and Swival misses a key at the
//! start of a line there), and a token that starts exactly where another
//! token's body was cut is found too (Swival leaves the second of two tokens
//! written back to back in plain text).
//!
//! Positions are byte offsets into the text (always on character boundaries).

use super::patterns::{Kind, TokenPattern};
use aho_corasick::AhoCorasick;
use std::cmp::Reverse;
use std::collections::HashMap;

/// Longest body looked at, in characters (a custom pattern's longer
/// `min_body_length` raises it). Real tokens are far shorter; the cap keeps
/// scanning linear on pathological text (long runs with many prefixes
/// inside): a longer run is read as if the token ended there.
const MAX_BODY_CHARS: usize = 512;

/// The characters a scan looks at, counted in tests so that a test can hold
/// scanning to linear work by counting instead of timing it; nothing in
/// other builds.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local! {
        static STEPS: Cell<u64> = const { Cell::new(0) };
    }

    /// Counts `chars` characters looked at.
    pub(crate) fn add(chars: usize) {
        STEPS.with(|s| s.set(s.get() + chars as u64));
    }

    /// The characters counted on this thread since the last call.
    pub(crate) fn take() -> u64 {
        STEPS.with(|s| s.replace(0))
    }
}

#[cfg(not(test))]
mod work {
    #[inline(always)]
    pub(crate) fn add(_chars: usize) {}
}

/// One token found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Where the token (its prefix) starts.
    pub(crate) start: usize,
    /// Where its body starts (`start` + prefix length).
    pub(crate) body_start: usize,
    /// Where it ends (exclusive).
    pub(crate) end: usize,
    /// Index of the pattern in the list scanned with.
    pub(crate) pattern: usize,
}

/// Patterns to scan with, custom first, and an automaton over their
/// prefixes: one pass over a text finds where every prefix occurs, where
/// a search per pattern read the text once per pattern.
#[derive(Clone)]
pub(crate) struct PatternSet {
    /// The patterns.
    list: Vec<TokenPattern>,
    /// The distinct non-empty prefixes; `None` when there are none.
    prefixes: Option<AhoCorasick>,
    /// For each distinct prefix (by the automaton's pattern id), the
    /// patterns that have it.
    owners: Vec<Vec<usize>>,
}

impl PatternSet {
    pub(crate) fn new(list: Vec<TokenPattern>) -> PatternSet {
        let mut distinct: Vec<&str> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        for (index, pattern) in list.iter().enumerate().filter(|(_, p)| !p.prefix.is_empty()) {
            match distinct.iter().position(|d| *d == pattern.prefix) {
                Some(at) => owners[at].push(index),
                None => {
                    distinct.push(&pattern.prefix);
                    owners.push(vec![index]);
                }
            }
        }
        // Building fails only past the automaton's size limits, far beyond
        // a few dozen short prefixes; without it every pattern is searched
        // for on its own.
        let prefixes = if distinct.is_empty() { None } else { AhoCorasick::new(&distinct).ok() };
        PatternSet { list, prefixes, owners }
    }

    /// Where each pattern's prefix occurs in `text` (every occurrence,
    /// overlapping ones too, ascending), indexed like the patterns.
    fn prefix_positions(&self, text: &str) -> Vec<Vec<usize>> {
        let mut found: Vec<Vec<usize>> = vec![Vec::new(); self.list.len()];
        match &self.prefixes {
            Some(automaton) => {
                work::add(text.len());
                for m in automaton.find_overlapping_iter(text) {
                    for &index in &self.owners[m.pattern().as_usize()] {
                        found[index].push(m.start());
                    }
                }
                // Matches come in order of where they end.
                found.iter_mut().for_each(|f| f.sort_unstable());
            }
            None => {
                for (index, pattern) in self.list.iter().enumerate() {
                    found[index] = find_all(text, &pattern.prefix);
                }
            }
        }
        found
    }
}

impl std::ops::Deref for PatternSet {
    type Target = [TokenPattern];

    fn deref(&self) -> &[TokenPattern] {
        &self.list
    }
}

/// The tokens of `text`, in order, not overlapping.
pub(crate) fn scan(text: &str, patterns: &PatternSet) -> Vec<Span> {
    let scanner = Scanner::new(text, patterns);
    if scanner.prefix_positions.is_empty() && patterns.iter().all(|p| cannot_start_without_prefix(p, text)) {
        // Most strings (a report's names, numbers, short texts): no
        // pattern's prefix occurs, and the text is shorter than any
        // prefix-less token.
        return Vec::new();
    }
    let mut candidates = Vec::new();
    for (index, pattern) in patterns.iter().enumerate() {
        match pattern.kind {
            Kind::Simple { .. } => scanner.scan_simple(index, &mut candidates),
            Kind::Structured { .. } => scanner.scan_structured(index, &mut candidates),
            Kind::Heuristic { .. } => scanner.scan_heuristic(index, &mut candidates),
        }
    }
    scanner.scan_after_cuts(&mut candidates);
    // Stable sort: at equal keys the pattern order (custom first) decides.
    candidates.sort_by_cached_key(|s| {
        let prefix_len = patterns[s.pattern].prefix.chars().count();
        (s.start, Reverse(prefix_len), Reverse(text[s.start..s.end].chars().count()))
    });
    let mut kept: Vec<Span> = Vec::with_capacity(candidates.len());
    let mut last_end = 0;
    for span in candidates {
        if span.start >= last_end {
            last_end = span.end;
            kept.push(span);
        }
    }
    kept
}

/// Whether `pattern` can find nothing in `text` when no prefix occurs in
/// it: prefixed patterns need their prefix (a structured pattern's regex
/// starts with it), a heuristic word needs `min_len` characters (at least
/// as many bytes).
fn cannot_start_without_prefix(pattern: &TokenPattern, text: &str) -> bool {
    match pattern.kind {
        Kind::Heuristic { min_len, .. } => text.len() < min_len,
        Kind::Simple { .. } | Kind::Structured { .. } => !pattern.prefix.is_empty(),
    }
}

/// One scan of one text.
struct Scanner<'a> {
    /// The text scanned.
    text: &'a str,
    /// The patterns, custom first.
    patterns: &'a [TokenPattern],
    /// Where each pattern's prefix occurs, ascending, indexed like the patterns.
    positions_of: Vec<Vec<usize>>,
    /// Every position where some pattern's prefix occurs, ascending.
    prefix_positions: Vec<usize>,
    /// For each prefix position: would some pattern match a token there
    /// (word boundary not required)? Filled from the end of the text
    /// backwards, since the answer at one position depends only on later ones.
    match_at: HashMap<usize, bool>,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str, set: &'a PatternSet) -> Self {
        let positions_of = set.prefix_positions(text);
        let mut prefix_positions: Vec<usize> = positions_of.iter().flatten().copied().collect();
        prefix_positions.sort_unstable();
        prefix_positions.dedup();
        let mut scanner = Scanner { text, patterns: set, positions_of, prefix_positions, match_at: HashMap::new() };
        for i in (0..scanner.prefix_positions.len()).rev() {
            let pos = scanner.prefix_positions[i];
            let matches = scanner.would_match_at(pos);
            scanner.match_at.insert(pos, matches);
        }
        scanner
    }

    /// Whether some prefixed pattern matches a token at `pos`.
    fn would_match_at(&self, pos: usize) -> bool {
        let rest = &self.text[pos..];
        self.patterns.iter().enumerate().any(|(index, p)| {
            !p.prefix.is_empty()
                && rest.starts_with(&p.prefix)
                && match p.kind {
                    Kind::Simple { .. } => self.simple_end(index, pos).is_some(),
                    Kind::Structured { .. } => self.structured_end(index, pos).is_some(),
                    Kind::Heuristic { .. } => false,
                }
        })
    }

    /// Where a simple token of pattern `index` whose prefix is at `pos` ends.
    fn simple_end(&self, index: usize, pos: usize) -> Option<usize> {
        let pattern = &self.patterns[index];
        let Kind::Simple { alphabet, min_body, max_body, .. } = &pattern.kind else { return None };
        let body_start = pos + pattern.prefix.len();
        let limit = MAX_BODY_CHARS.max(*min_body);
        let (body_end, body_chars) = run_end(self.text, body_start, limit, |c| alphabet.contains(c));
        if body_chars < *min_body {
            return None;
        }
        // With an ASCII alphabet a body of at most `max_body` characters is as many bytes.
        let max_left = max_body.filter(|_| alphabet.is_ascii()).unwrap_or(usize::MAX);
        if let Some(cut) = self.truncated_end(body_start, body_end, max_left, |body| pattern.body_valid(body)) {
            return Some(cut);
        }
        work::add(body_end - body_start);
        pattern.body_valid(&self.text[body_start..body_end]).then_some(body_end)
    }

    /// Where a structured token of pattern `index` starting exactly at `pos` ends.
    fn structured_end(&self, index: usize, pos: usize) -> Option<usize> {
        let Kind::Structured { anchored, structure, .. } = &self.patterns[index].kind else { return None };
        let match_end = pos + anchored.find(&self.text[pos..])?.end();
        work::add(match_end - pos);
        let body_start = pos + self.patterns[index].prefix.len();
        if let Some(cut) =
            self.truncated_end(body_start, match_end, MAX_BODY_CHARS, |body| structure.parse(body).is_some())
        {
            return Some(cut);
        }
        structure.parse(&self.text[body_start..match_end])?;
        self.not_followed_by_word(index, match_end).then_some(match_end)
    }

    /// Whether a structured match of pattern `index` ending at `end` is not
    /// just the start of a longer word (another token starting there is fine).
    fn not_followed_by_word(&self, index: usize, end: usize) -> bool {
        let Kind::Structured { trailing, .. } = &self.patterns[index].kind else { return true };
        let followed_by_word = self.text[end..].chars().next().is_some_and(|c| trailing.contains(c));
        !followed_by_word || self.is_prefix_position(end)
    }

    /// When another token starts inside the body `[body_start, body_end)`,
    /// where to cut the body: the last prefix position inside it such that the
    /// part before is a valid body and a token really starts there. Cuts
    /// leaving more than `max_left` bytes before them cannot be valid and are
    /// not tried.
    fn truncated_end(
        &self,
        body_start: usize,
        body_end: usize,
        max_left: usize,
        valid_left: impl Fn(&str) -> bool,
    ) -> Option<usize> {
        let last = body_end.min(body_start.saturating_add(max_left).saturating_add(1));
        let from = self.prefix_positions.partition_point(|&p| p <= body_start);
        let to = self.prefix_positions.partition_point(|&p| p < last);
        self.prefix_positions[from..to.max(from)].iter().rev().copied().find(|&cut| {
            work::add(cut - body_start);
            valid_left(&self.text[body_start..cut]) && self.match_at.get(&cut).copied().unwrap_or(false)
        })
    }

    fn is_prefix_position(&self, pos: usize) -> bool {
        self.prefix_positions.binary_search(&pos).is_ok()
    }

    /// Tokens written back to back: a body cut where another token starts
    /// ends there, so that token is scanned too although no word boundary
    /// precedes it (Swival would leave it in plain text).
    fn scan_after_cuts(&self, out: &mut Vec<Span>) {
        let mut done = std::collections::HashSet::new();
        let mut next = 0;
        while next < out.len() {
            let pos = out[next].end;
            next += 1;
            if is_boundary_before(self.text, pos) || !self.is_prefix_position(pos) || !done.insert(pos) {
                continue;
            }
            for (index, pattern) in self.patterns.iter().enumerate() {
                if pattern.prefix.is_empty() || !self.text[pos..].starts_with(&pattern.prefix) {
                    continue;
                }
                let end = match pattern.kind {
                    Kind::Simple { .. } => self.simple_end(index, pos),
                    Kind::Structured { .. } => self.structured_end(index, pos),
                    Kind::Heuristic { .. } => None,
                };
                if let Some(end) = end {
                    out.push(Span { start: pos, body_start: pos + pattern.prefix.len(), end, pattern: index });
                }
            }
        }
    }

    fn scan_simple(&self, index: usize, out: &mut Vec<Span>) {
        let pattern = &self.patterns[index];
        for &pos in &self.positions_of[index] {
            if !is_boundary_before(self.text, pos) {
                continue;
            }
            if let Some(end) = self.simple_end(index, pos) {
                out.push(Span { start: pos, body_start: pos + pattern.prefix.len(), end, pattern: index });
            }
        }
    }

    fn scan_structured(&self, index: usize, out: &mut Vec<Span>) {
        let pattern = &self.patterns[index];
        let Kind::Structured { full, .. } = &pattern.kind else { return };
        for m in full.find_iter(self.text) {
            if !is_boundary_before(self.text, m.start()) {
                continue;
            }
            if let Some(end) = self.structured_end_of_match(index, m.start(), m.end()) {
                out.push(Span { start: m.start(), body_start: m.start() + pattern.prefix.len(), end, pattern: index });
            }
        }
    }

    /// Where a token of structured pattern `index` ends, given a regex match
    /// at `[start, end)` (the match itself is not re-parsed, as in Swival).
    fn structured_end_of_match(&self, index: usize, start: usize, end: usize) -> Option<usize> {
        let Kind::Structured { structure, .. } = &self.patterns[index].kind else { return None };
        let body_start = start + self.patterns[index].prefix.len();
        if let Some(cut) = self.truncated_end(body_start, end, MAX_BODY_CHARS, |body| structure.parse(body).is_some()) {
            return Some(cut);
        }
        self.not_followed_by_word(index, end).then_some(end)
    }

    fn scan_heuristic(&self, index: usize, out: &mut Vec<Span>) {
        let Kind::Heuristic { alphabet, min_len, max_len, min_entropy, min_classes } = &self.patterns[index].kind
        else {
            return;
        };
        let text = self.text;
        let mut i = 0;
        while let Some(c) = text[i..].chars().next() {
            if !alphabet.contains(c) {
                i += c.len_utf8();
                continue;
            }
            let (end, chars) = run_end(text, i, usize::MAX, |c| alphabet.contains(c));
            // In JSON text `\nAbC…` the word starts after the escape's letter.
            let after_escape = is_json_escape_letter(c) && text[..i].ends_with('\\');
            let starts = [(i, chars), (i + 1, chars.saturating_sub(1))];
            let found = starts.into_iter().take(if after_escape { 2 } else { 1 }).find(|&(start, len)| {
                let word = &text[start..end];
                is_boundary_before(text, start)
                    && (*min_len..=*max_len).contains(&len)
                    && is_boundary_after(text, end)
                    && char_classes(word) >= *min_classes
                    && shannon_entropy(word) >= *min_entropy
            });
            if let Some((start, _)) = found {
                out.push(Span { start, body_start: start, end, pattern: index });
            }
            i = end;
        }
    }
}

/// Every (possibly overlapping) occurrence of `needle` in `text`.
fn find_all(text: &str, needle: &str) -> Vec<usize> {
    // Most texts hold no prefix at all, and setting up a substring search
    // costs more than one scan for its first byte.
    let Some(first) = needle.as_bytes().first() else { return Vec::new() };
    if text.len() < needle.len() || !text.as_bytes().contains(first) {
        return Vec::new();
    }
    work::add(text.len());
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(needle) {
        let pos = from + offset;
        found.push(pos);
        from = pos + text[pos..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// End of the run of characters accepted by `accept` starting at `start`
/// (at most `limit` of them), and its length in characters.
fn run_end(text: &str, start: usize, limit: usize, accept: impl Fn(char) -> bool) -> (usize, usize) {
    let mut end = start;
    let mut chars = 0;
    for c in text[start..].chars() {
        if chars == limit || !accept(c) {
            break;
        }
        end += c.len_utf8();
        chars += 1;
    }
    work::add(chars);
    (end, chars)
}

/// Characters that continue a word (Swival's `[A-Za-z0-9_-]`).
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Whether a token may start at `pos`.
fn is_boundary_before(text: &str, pos: usize) -> bool {
    let mut before = text[..pos].chars().rev();
    match before.next() {
        None => true,
        Some(c) if !is_word_char(c) => true,
        // `\n`, `\t`, ... inside JSON text end the previous word.
        Some(c) => is_json_escape_letter(c) && before.next() == Some('\\'),
    }
}

/// The letter of a JSON whitespace escape (`\n`, `\t`, `\r`, `\b`, `\f`).
fn is_json_escape_letter(c: char) -> bool {
    matches!(c, 'n' | 't' | 'r' | 'b' | 'f')
}

/// Whether a token may end at `pos`.
fn is_boundary_after(text: &str, pos: usize) -> bool {
    text[pos..].chars().next().is_none_or(|c| !is_word_char(c))
}

/// Shannon entropy of `s` in bits per character.
pub(crate) fn shannon_entropy(s: &str) -> f64 {
    let mut counts: HashMap<char, usize> = HashMap::new();
    let mut total = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_default() += 1;
        total += 1;
    }
    counts
        .values()
        .map(|&n| {
            let p = n as f64 / total as f64;
            -p * p.log2()
        })
        .sum()
}

/// How many of upper case, lower case, digits and anything else `s` has.
fn char_classes(s: &str) -> usize {
    let (mut upper, mut lower, mut digit, mut other) = (false, false, false, false);
    for c in s.chars() {
        match c {
            'A'..='Z' => upper = true,
            'a'..='z' => lower = true,
            '0'..='9' => digit = true,
            _ => other = true,
        }
    }
    [upper, lower, digit, other].into_iter().filter(|&b| b).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::patterns;

    #[test]
    fn one_pass_finds_every_prefix_where_a_search_per_pattern_would() {
        let set = PatternSet::new(patterns::builtin());
        let texts = [
            String::new(),
            "no prefix here".to_owned(),
            "AKIAAKIA sk-proj-sk-ant-xoxb-xoxp-ghp_gho_ glpat-AKIA".to_owned(),
            format!("é{}ü sk-sk-sk- ghp_{}", "AKIA".repeat(5), "x".repeat(40)),
        ];
        for text in &texts {
            let one_pass = set.prefix_positions(text);
            for (index, pattern) in set.iter().enumerate() {
                assert_eq!(one_pass[index], find_all(text, &pattern.prefix), "{:?} in {text:?}", pattern.prefix);
            }
        }
    }
}
