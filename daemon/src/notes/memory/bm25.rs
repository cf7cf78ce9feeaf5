//! Swival's retrieval: `rank_bm25`'s `BM25Okapi` (k1 1.5, b 0.75, a floor
//! of 0.25 × the average IDF for negative IDFs) over entries tokenised as
//! lowercase ASCII letter and digit runs; only entries sharing a word with
//! the task are ranked, highest score first (ties in file order), and
//! taken while fewer than `top_k` are and the token budget is not spent.

use super::Entry;
use std::collections::{HashMap, HashSet};

/// Term frequency saturation.
const K1: f64 = 1.5;
/// Length normalisation.
const B: f64 = 0.75;
/// The floor of a negative IDF, as a share of the average IDF.
const EPSILON: f64 = 0.25;

/// Swival's `_tokenize`: `[a-z0-9]+` runs of the lowercased text.
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The BM25Okapi score of each document for `query`.
fn scores(corpus: &[Vec<String>], query: &[String]) -> Vec<f64> {
    let n = corpus.len() as f64;
    let avgdl = corpus.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let freqs: Vec<HashMap<&str, f64>> = corpus
        .iter()
        .map(|doc| {
            let mut f = HashMap::new();
            for w in doc {
                *f.entry(w.as_str()).or_insert(0.0) += 1.0;
            }
            f
        })
        .collect();
    let mut df: HashMap<&str, f64> = HashMap::new();
    for f in &freqs {
        for w in f.keys() {
            *df.entry(w).or_insert(0.0) += 1.0;
        }
    }
    let mut idf: HashMap<&str, f64> = df.iter().map(|(w, &d)| (*w, (n - d + 0.5).ln() - (d + 0.5).ln())).collect();
    let average = idf.values().sum::<f64>() / idf.len().max(1) as f64;
    for v in idf.values_mut().filter(|v| **v < 0.0) {
        *v = EPSILON * average;
    }
    freqs
        .iter()
        .zip(corpus)
        .map(|(f, doc)| {
            let norm = K1 * (1.0 - B + B * doc.len() as f64 / avgdl);
            query
                .iter()
                .map(|q| {
                    let tf = f.get(q.as_str()).copied().unwrap_or(0.0);
                    idf.get(q.as_str()).copied().unwrap_or(0.0) * (tf * (K1 + 1.0) / (tf + norm))
                })
                .sum()
        })
        .collect()
}

/// The entries to inject for `query` (Swival's `retrieve_bm25`).
pub fn retrieve<'a>(query: &str, entries: &[&'a Entry], top_k: usize, budget: usize) -> Vec<&'a Entry> {
    if query.is_empty() || entries.is_empty() {
        return Vec::new();
    }
    // An entry without words counts as one empty word, as Swival pads it.
    let corpus: Vec<Vec<String>> = entries
        .iter()
        .map(|e| tokenize(&e.content))
        .map(|d| if d.is_empty() { vec![String::new()] } else { d })
        .collect();
    let query = tokenize(query);
    if query.is_empty() {
        return Vec::new();
    }
    let scores = scores(&corpus, &query);
    let wanted: HashSet<&str> = query.iter().map(String::as_str).collect();
    let mut ranked: Vec<(&Entry, f64)> = entries
        .iter()
        .zip(&corpus)
        .zip(&scores)
        .filter(|((_, doc), _)| doc.iter().any(|w| wanted.contains(w.as_str())))
        .map(|((e, _), s)| (*e, *s))
        .collect();
    // Stable: equal scores keep file order, as Python's sort does.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = Vec::new();
    let mut remaining = budget as i64;
    for (entry, _) in ranked {
        if out.len() >= top_k || remaining <= 0 {
            break;
        }
        out.push(entry);
        remaining -= entry.tokens() as i64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_lowercase_ascii_runs() {
        assert_eq!(tokenize("Use `cargo nextest` (v0.9)!"), ["use", "cargo", "nextest", "v0", "9"]);
    }

    #[test]
    fn scores_match_rank_bm25() {
        // rank_bm25's BM25Okapi over three documents, by its formulas: "b"
        // and "c" are in two of three, so their IDF is negative and floored.
        let corpus: Vec<Vec<String>> = [vec!["a", "b"], vec!["b", "c"], vec!["c", "d", "e"]]
            .iter()
            .map(|d| d.iter().map(|w| w.to_string()).collect())
            .collect();
        let s = scores(&corpus, &["a".to_string(), "c".to_string()]);
        let idf_a = (3.0f64 - 1.0 + 0.5).ln() - 1.5f64.ln();
        let idf_raw_b = (3.0f64 - 2.0 + 0.5).ln() - 2.5f64.ln();
        let idf_d = idf_a;
        let average = (idf_a + idf_raw_b * 2.0 + idf_d * 2.0) / 5.0;
        let idf_c = EPSILON * average;
        let avgdl = 7.0 / 3.0;
        let term = |tf: f64, len: f64, idf: f64| idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avgdl));
        assert!((s[0] - term(1.0, 2.0, idf_a)).abs() < 1e-12);
        assert!((s[1] - term(1.0, 2.0, idf_c)).abs() < 1e-12);
        assert!((s[2] - term(1.0, 3.0, idf_c)).abs() < 1e-12);
    }
}
