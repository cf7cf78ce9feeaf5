//! A map of the project for a new conversation's first request: its files
//! and, for source files, their top-level definitions (as `outline` shows
//! them), the parts the task most likely concerns first, within a token
//! budget (`project_map_tokens`). A small model then starts from where
//! things are instead of guessing a URL or making a new file.
//!
//! The ranking reads no natural language. The task is cut into terms (its
//! words, and the parts of its identifiers and paths); a file ranks by the
//! terms its path names, and by the terms its text holds (an identifier,
//! a part of one, or a phrase such as a route), each weighed by how few
//! files hold it (a word every file has, in any language, weighs
//! nothing); then shallower files first. Only the files the map shows are
//! parsed for their definitions.
//!
//! What the map shows is what `list_files` and `outline` would: the same
//! walk (ignore files honoured, concealed paths left out), without hidden
//! files or directories (as a survey), each
//! file opened beneath its root as `read_file` opens it.

use super::files::{looks_binary, open_for_read, Opened};
use super::lang::declared;
use super::{outline, search, ToolBox};
use std::collections::HashSet;
use std::io::Read as _;
use std::path::Path;

/// Files the map looks at most.
const MAX_FILES: usize = 500;
/// Bytes of one file read for its definitions and terms.
const MAX_BYTES: u64 = 128 << 10;
/// Bytes read for the map at most: past them, files are listed without
/// their definitions.
const MAX_READ: usize = 8 << 20;
/// Terms of the task looked for at most.
const MAX_TERMS: usize = 64;
/// Tokens of a map at most, whatever `project_map_tokens` asks.
const MAX_BUDGET: u64 = 8000;
/// Characters of one definition shown.
const MAX_DEF: usize = 70;
/// Definitions shown under one file at most.
const MAX_DEFS: usize = 12;
/// Characters kept for the last line, which says how many files were left out.
const TRAILER: usize = 48;
/// Characters per token of the budget (the daemon's estimate's rule).
const CHARS_PER_TOKEN: u64 = 4;

/// One file of the project as the map sees it.
struct Entry {
    /// Its path from the base dir.
    rel: String,
    /// Its text (empty for a file not read: not source, too large, binary).
    text: String,
    /// The task's terms its text holds (their indices).
    found: HashSet<usize>,
    /// Its rank.
    score: f64,
}

impl Entry {
    /// A file the map names without reading it.
    fn unread(rel: String) -> Entry {
        Entry { rel, text: String::new(), found: HashSet::new(), score: 0.0 }
    }
}

impl ToolBox {
    /// The map of the project for `task`, within `budget` tokens; `None`
    /// with a budget of 0 or an empty project.
    pub fn project_map(&self, task: &str, budget: u64) -> Option<String> {
        if budget == 0 {
            return None;
        }
        let root = self.policy.base.clone();
        let (found, _) = search::walk(self, &root, |_| true);
        let hidden = |rel: &Path| rel.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
        // Hidden files and directories are left out, as a survey leaves them
        // (a link to one too).
        let mut visible: Vec<_> = found
            .iter()
            .filter_map(|f| Some((f, f.path.strip_prefix(&root).ok()?)))
            .filter(|(f, rel)| !hidden(rel) && !f.real.strip_prefix(&root).is_ok_and(hidden))
            .collect();
        let total = visible.len();
        let terms = terms(task);
        // The files read are those whose path says most, then in walk order.
        let by_path = |rel: &Path| path_score(&rel.to_string_lossy().to_lowercase(), &terms, |_| 1.0);
        visible.sort_by(|a, b| by_path(b.1).total_cmp(&by_path(a.1)));
        let finder = aho_corasick::AhoCorasick::builder().ascii_case_insensitive(true).build(&terms).ok()?;
        let mut read = 0;
        let mut entries: Vec<Entry> = visible
            .iter()
            .take(MAX_FILES)
            .map(|(f, rel)| {
                let rel = rel.to_string_lossy().into_owned();
                match read < MAX_READ {
                    true => self.map_entry(&f.real, rel, &finder, &mut read),
                    false => Entry::unread(rel),
                }
            })
            .collect();
        if entries.is_empty() {
            return None;
        }
        rank(&mut entries, &terms);
        let budget = budget.min(MAX_BUDGET);
        Some(render(&entries, total, budget.saturating_mul(CHARS_PER_TOKEN) as usize))
    }

    /// The file `rel` (opened at `real`), with its text when it is a small
    /// source file.
    fn map_entry(&self, real: &Path, rel: String, finder: &aho_corasick::AhoCorasick, read: &mut usize) -> Entry {
        let mut entry = Entry::unread(rel);
        let name = Path::new(&entry.rel).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !outline::is_source(&name) {
            return entry;
        }
        let Ok(Opened::File(file)) = open_for_read(self, real, &entry.rel) else { return entry };
        let mut bytes = Vec::new();
        let ok = file.take(MAX_BYTES + 1).read_to_end(&mut bytes).is_ok();
        *read += bytes.len();
        if !ok || bytes.len() as u64 > MAX_BYTES || looks_binary(&bytes) {
            return entry;
        }
        entry.found = finder.find_overlapping_iter(&bytes).map(|m| m.pattern().as_usize()).collect();
        entry.text = String::from_utf8_lossy(&bytes).into_owned();
        entry
    }
}

/// At most `n` characters of `s`, with `…` when cut.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// The terms of `text`: its words (punctuation around them dropped), and
/// the parts of its identifiers and paths, lowercased, three characters
/// or more; at most [`MAX_TERMS`], the longest (the most specific) first.
fn terms(text: &str) -> Vec<String> {
    let mut out = HashSet::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '/' && c != '.' && c != '-');
        let word = word.trim_end_matches('.');
        if word.chars().count() >= 3 {
            out.insert(word.to_lowercase());
        }
        for part in word.split(|c: char| !c.is_alphanumeric()) {
            for piece in camel_parts(part) {
                if piece.chars().count() >= 3 {
                    out.insert(piece.to_lowercase());
                }
            }
        }
    }
    let mut terms: Vec<String> = out.into_iter().collect();
    terms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    terms.truncate(MAX_TERMS);
    terms
}

/// `titleSearch` as `title`, `Search` (and the word whole).
fn camel_parts(word: &str) -> Vec<&str> {
    let mut parts = vec![word];
    let mut start = 0;
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    for pair in chars.windows(2) {
        if pair[0].1.is_lowercase() && pair[1].1.is_uppercase() {
            parts.push(&word[start..pair[1].0]);
            start = pair[1].0;
        }
    }
    if start > 0 {
        parts.push(&word[start..]);
    }
    parts
}

/// How much the path `path` (lowercased) says of `terms`, each weighed.
fn path_score(path: &str, terms: &[String], weight: impl Fn(usize) -> f64) -> f64 {
    let parts: HashSet<&str> = path.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
    let named = |t: &str| path == t || parts.contains(t) || path.ends_with(&format!("/{t}"));
    terms.iter().enumerate().filter(|(_, t)| named(t)).map(|(i, _)| weight(i)).sum()
}

/// Score every entry for `terms`, best first (then the shallower, then
/// by path).
fn rank(entries: &mut [Entry], terms: &[String]) {
    let n = entries.len() as f64;
    // How many files hold each term: the fewer, the more it says.
    let df: Vec<usize> = (0..terms.len())
        .map(|i| entries.iter().filter(|e| e.found.contains(&i) || e.rel.to_lowercase().contains(&terms[i])).count())
        .collect();
    let weight = |i: usize| ((n + 1.0) / (df[i] as f64 + 1.0)).ln();
    for e in entries.iter_mut() {
        let mut score = 4.0 * path_score(&e.rel.to_lowercase(), terms, weight);
        for &i in &e.found {
            // A phrase (`/password-reset`) says more than one of its words.
            score += if is_word(&terms[i]) { weight(i) } else { 2.0 * weight(i) };
        }
        e.score = score;
    }
    let depth = |e: &Entry| e.rel.matches('/').count();
    entries.sort_by(|a, b| b.score.total_cmp(&a.score).then(depth(a).cmp(&depth(b))).then_with(|| a.rel.cmp(&b.rel)));
}

/// Whether a term is one word (letters, digits, `_`).
fn is_word(term: &str) -> bool {
    term.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The map as the model reads it, at most `chars` characters: files in
/// rank order with their definitions; when those no longer fit, paths
/// alone; then how many files were left out.
fn render(entries: &[Entry], total: usize, chars: usize) -> String {
    let mut out = String::from(
        "A map of this project (its files, those the task most likely concerns first, with their \
         top-level definitions and line numbers; read_file or outline shows more):\n",
    );
    // Room is kept for the line saying what was left out.
    let chars = chars.saturating_sub(TRAILER);
    let mut shown = 0;
    for e in entries {
        let mut block = format!("{}\n", e.rel);
        // Parsed only for the files the map shows.
        let defs = match e.text.is_empty() {
            true => Vec::new(),
            false => declared(Path::new(&e.rel), &e.text, 1).lines,
        };
        for def in defs.iter().take(MAX_DEFS) {
            block.push_str(&format!("  {}\n", cut(def.trim_end(), MAX_DEF)));
        }
        if defs.len() > MAX_DEFS {
            block.push_str(&format!("  … {} more\n", defs.len() - MAX_DEFS));
        }
        let fits = |b: &str| out.len() + b.len() <= chars;
        if fits(&block) {
            out.push_str(&block);
        } else if fits(&format!("{}\n", e.rel)) {
            out.push_str(&format!("{}\n", e.rel));
        } else {
            break;
        }
        shown += 1;
    }
    if total > shown {
        out.push_str(&format!("… and {} more files (list_files shows them)\n", total - shown));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small web project: routes, views, a template, a data file, a README.
    fn project() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, text: &str| {
            let path = d.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        w("README.md", "# Shop\n\nA small shop.\n");
        w("app/routes.py", "from app import views\n\nROUTES = {\n    '/login': views.login,\n    '/password-reset': views.reset_password,\n}\n");
        w("app/views.py", "def login(request):\n    return 'ok'\n\ndef reset_password(request):\n    return 'sent'\n\ndef logout(request):\n    return 'bye'\n");
        w("app/models.py", "class User:\n    name = ''\n\nclass Order:\n    total = 0\n");
        w("app/search.py", "def title_search(items, query):\n    return [i for i in items if query in i['title']]\n");
        w("data/books.json", "[{\"title\": \"Dune\"}]\n");
        w("scripts/predeploy.sh", "#!/bin/sh\n[ -n \"$DATABASE_URL\" ] || exit 1\n");
        d
    }

    #[test]
    fn the_file_a_task_concerns_comes_first_with_its_definitions() {
        let d = project();
        let tb = crate::tools::test_toolbox(d.path());
        let map = tb.project_map("which function handles /password-reset?", 400).unwrap();
        let first = map.lines().nth(1).unwrap();
        assert_eq!(first, "app/routes.py", "{map}");
        assert!(map.contains("app/views.py\n  1    def login(request)\n  4    def reset_password(request)"), "{map}");
        let map = tb.project_map("make the title search ignore case", 400).unwrap();
        assert_eq!(map.lines().nth(1).unwrap(), "app/search.py", "{map}");
        let map = tb.project_map("le contrôle avant déploiement doit aussi exiger REDIS_URL (predeploy)", 400).unwrap();
        assert_eq!(map.lines().nth(1).unwrap(), "scripts/predeploy.sh", "a task in French ranks the same way: {map}");
    }

    #[test]
    fn the_map_keeps_to_its_budget_and_says_what_it_left_out() {
        let d = project();
        let tb = crate::tools::test_toolbox(d.path());
        let whole = tb.project_map("anything", 4000).unwrap();
        assert!(!whole.contains("more files"), "{whole}");
        for file in ["README.md", "app/models.py", "data/books.json", "scripts/predeploy.sh"] {
            assert!(whole.contains(&format!("{file}\n")), "{file}: {whole}");
        }
        let small = tb.project_map("anything", 40).unwrap();
        assert!(small.len() <= 40 * 4 + 60, "{} chars: {small}", small.len());
        assert!(small.ends_with("more files (list_files shows them)\n"), "{small}");
        assert_eq!(tb.project_map("anything", 0), None);
    }

    #[test]
    fn hidden_and_ignored_files_are_not_in_the_map() {
        let d = project();
        std::fs::write(d.path().join(".env"), "SECRET=1\n").unwrap();
        std::fs::create_dir_all(d.path().join("build")).unwrap();
        std::fs::write(d.path().join("build/out.py"), "def built(): pass\n").unwrap();
        std::fs::write(d.path().join(".gitignore"), "build/\n").unwrap();
        // A git work tree, whose ignore files the walk honours.
        std::fs::create_dir(d.path().join(".git")).unwrap();
        let tb = crate::tools::test_toolbox(d.path());
        let map = tb.project_map("built secret", 4000).unwrap();
        assert!(!map.contains(".env") && !map.contains("build/out.py"), "{map}");
    }

    #[test]
    fn a_long_task_is_cut_to_its_most_specific_terms() {
        let task: String = (0..500).map(|n| format!("word{n:03} ")).collect();
        let t = terms(&format!("{task} very_long_identifier_name"));
        assert_eq!(t.len(), MAX_TERMS);
        assert_eq!(t[0], "very_long_identifier_name");
    }

    #[test]
    fn a_link_to_a_hidden_file_is_not_in_the_map() {
        let d = project();
        std::fs::write(d.path().join(".env"), "API_KEY = 'secret-value'\n").unwrap();
        std::os::unix::fs::symlink(d.path().join(".env"), d.path().join("settings.py")).unwrap();
        let tb = crate::tools::test_toolbox(d.path());
        let map = tb.project_map("settings api key", 4000).unwrap();
        assert!(!map.contains("settings.py") && !map.contains("secret-value"), "{map}");
    }

    #[test]
    fn a_fifo_the_model_planted_neither_blocks_nor_shows() {
        let d = project();
        nix::unistd::mkfifo(&d.path().join("app/handlers.py"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let tb = crate::tools::test_toolbox(d.path());
        let map = tb.project_map("handlers", 4000).unwrap();
        assert!(!map.contains("handlers.py"), "{map}");
    }

    #[test]
    fn terms_are_words_and_the_parts_of_identifiers_and_paths() {
        let t = terms("Fix `titleSearch` in app/search.py, please!");
        for want in ["titlesearch", "title", "search", "app/search.py", "app", "fix", "please"] {
            assert!(t.iter().any(|x| x == want), "{want}: {t:?}");
        }
        assert!(!t.iter().any(|x| x == "in"), "{t:?}");
    }
}
