//! Text the model controls, made safe to show on a terminal.
//!
//! An answer, a tool's output, a file name, a diff or a session title may
//! carry escape sequences a terminal obeys: OSC 52 sets the clipboard,
//! OSC 0 the window title, OSC 8 hides a link behind other text, CSI
//! sequences move the cursor to rewrite what is already on the screen, a
//! carriage return or backspaces overwrite an approval's command line.
//! Every such byte is made visible instead of obeyed: ESC becomes `␛`,
//! other C0 controls their control picture (`␇`, `␈`, `␍`), C1 controls and
//! bidirectional overrides `�`; what followed ESC is left as plain text,
//! which a terminal prints. Newlines and tabs stay, and so does a carriage
//! return just before a newline (CRLF line ends). The client's own styling
//! is added after this, so it is the only styling a terminal receives.
//!
//! Commands given `--json` print what the daemon sent, exactly.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// `s` with every control character made visible (see the module).
pub fn text(s: &str) -> Cow<'_, str> {
    let crlf = |i: usize, c: char| c == '\r' && s[i + 1..].starts_with('\n');
    if !s.char_indices().any(|(i, c)| needs_cleaning(c) && !crlf(i, c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => out.push('\r'),
            '\u{1b}' => out.push('␛'),
            '\u{7f}' => out.push('␡'),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('�'))
            }
            c if needs_cleaning(c) => out.push('�'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is one a terminal may act on rather than print.
fn needs_cleaning(c: char) -> bool {
    let n = c as u32;
    (n < 0x20 && c != '\n' && c != '\t')
        || n == 0x7f
        || (0x80..0xa0).contains(&n)
        // Bidirectional embeddings, overrides and isolates reorder what
        // follows them on the screen.
        || (0x202a..=0x202e).contains(&n)
        || (0x2066..=0x2069).contains(&n)
        // Direction marks and the line and paragraph separators a terminal
        // may take as a line break.
        || matches!(n, 0x061c | 0x200e | 0x200f | 0x2028 | 0x2029)
}

/// `v` with every string in it cleaned: an event, a result, a report as
/// it is about to be shown. A value that does not survive the trip back
/// (it cannot: cleaning changes only string contents) is returned as it
/// was serialised, cleaned or not.
pub fn value<T: Serialize + DeserializeOwned>(v: T) -> T {
    let Ok(mut tree) = serde_json::to_value(&v) else {
        return v;
    };
    if !clean_tree(&mut tree) {
        return v;
    }
    serde_json::from_value(tree).unwrap_or(v)
}

/// Clean every string (and key) in `v`; whether anything changed.
fn clean_tree(v: &mut Value) -> bool {
    match v {
        Value::String(s) => match text(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(c) => {
                *s = c;
                true
            }
        },
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| clean_tree(item) | changed),
        Value::Object(map) => {
            let dirty: Vec<String> = map.keys().filter(|k| k.chars().any(needs_cleaning)).cloned().collect();
            for key in &dirty {
                if let Some(item) = map.remove(key) {
                    map.insert(text(key).into_owned(), item);
                }
            }
            map.values_mut().fold(!dirty.is_empty(), |changed, item| clean_tree(item) | changed)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        let osc52 = "ok\u{1b}]52;c;ZWNobyBoaQ==\u{7}done";
        assert_eq!(text(osc52), "ok␛]52;c;ZWNobyBoaQ==␇done");
        let title = "\u{1b}]0;pwned\u{1b}\\x";
        assert_eq!(text(title), "␛]0;pwned␛\\x");
        assert_eq!(text("a\u{9b}31mb"), "a�31mb");
        assert_eq!(text("rm -rf /\r safe"), "rm -rf /␍ safe");
        assert_eq!(text("x\u{8}\u{8}y"), "x␈␈y");
        assert_eq!(text("abc\u{202e}fed"), "abc�fed");
    }

    #[test]
    fn plain_text_newlines_tabs_and_crlf_stay() {
        let plain = "line 1\r\n\tline 2 — ünïcode ✓\n";
        assert!(matches!(text(plain), Cow::Borrowed(_)));
        assert_eq!(text(plain), plain);
    }

    #[test]
    fn every_string_of_a_value_is_cleaned_keys_too() {
        let v: Value =
            serde_json::from_str(r#"{"answer": "\u001b[2J", "list": ["\u0007"], "\u001bk": 1, "n": 3}"#).unwrap();
        let want: Value = serde_json::from_str(r#"{"answer": "␛[2J", "list": ["␇"], "␛k": 1, "n": 3}"#).unwrap();
        assert_eq!(value(v), want);
    }
}
