//! A reply that repeats itself while it streams: small local models
//! (Qwen2.5-Coder-1.5B on llama.cpp) fall into a loop and write the same
//! line, or the same few words, until `max_tokens` — thousands of tokens,
//! minutes of a local server's time. [`Repetition`] watches one stream of
//! text (a reply's content, or one tool call's arguments) and says when
//! its tail has become a loop, so the reader can stop there.
//!
//! The criterion is the text's own shape, in bytes, with no word or
//! language in it: the tail is a loop when it is one unit of at most
//! [`MAX_UNIT`] bytes repeated back to back at least [`MIN_REPEATS`]
//! times, spanning at least [`MIN_SPAN`] bytes. A loop of a model decoding
//! greedily (or nearly: local presets run at low temperature) is exact
//! once entered, so exact repetition finds it; both bounds keep written
//! text out of it: a file's run of identical lines or a row of zeros is
//! seldom sixteen units and 2 KiB of nothing else, and a block of code
//! written twice is not sixteen times. What a loop costs before it is
//! cut is bounded by those 2 KiB, or sixteen units of at most 256 bytes
//! (4 KiB, about a thousand tokens): against the 32,768 tokens a reply
//! may otherwise run to.

use std::collections::VecDeque;

/// A reply cut while it streamed because it kept repeating itself: what
/// the turn loop tells the model, and its event.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Runaway {
    /// The tool call whose arguments repeated (its place in the reply);
    /// `None`: the reply's text.
    pub call: Option<usize>,
    /// The unit repeated, as text.
    pub unit: String,
    /// Copies of it in a row when the stream was cut.
    pub repeats: u64,
}

impl Runaway {
    /// The runaway `found` in `text` (the stream so far), of the tool call
    /// at `call` (`None`: the text); with the bytes of `text` to keep.
    pub fn cut(found: Loop, text: &str, call: Option<usize>) -> (Runaway, usize) {
        let bytes = text.as_bytes();
        let unit = String::from_utf8_lossy(&bytes[found.start..found.start + found.unit]).into_owned();
        (Runaway { call, unit, repeats: found.repeats() as u64 }, found.keep(text))
    }
}

/// The longest unit looked for, in bytes: a long line of code.
pub const MAX_UNIT: usize = 256;
/// Copies of the unit in a row, at least.
pub const MIN_REPEATS: usize = 16;
/// Bytes the copies span, at least.
pub const MIN_SPAN: usize = 2048;

/// Where a stream's loop is: it begins at byte `start` (from the start of
/// the stream) with a unit of `unit` bytes repeated to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loop {
    /// The offset of the first copy.
    pub start: usize,
    /// The unit's length in bytes.
    pub unit: usize,
    /// The bytes the copies span (`unit` times the copies, and a part).
    pub span: usize,
}

impl Loop {
    /// The copies of the unit, whole ones.
    pub fn repeats(&self) -> usize {
        self.span / self.unit
    }

    /// The bytes of `text` (the stream so far) to keep: what came before
    /// the loop and one copy of its unit, ending on a character boundary.
    pub fn keep(&self, text: &str) -> usize {
        let mut end = (self.start + self.unit).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        end
    }
}

/// Watches one stream for a loop, byte by byte: for every unit length it
/// counts how many bytes in a row have equalled the byte one unit before,
/// so each byte costs [`MAX_UNIT`] comparisons whatever the stream's length.
#[derive(Debug, Clone)]
pub struct Repetition {
    /// The last [`MAX_UNIT`] bytes.
    tail: VecDeque<u8>,
    /// For each unit length (index), the bytes in a row equal to the byte
    /// that length before them.
    runs: Vec<usize>,
    /// Bytes seen.
    seen: usize,
}

impl Default for Repetition {
    fn default() -> Repetition {
        Repetition { tail: VecDeque::with_capacity(MAX_UNIT), runs: vec![0; MAX_UNIT + 1], seen: 0 }
    }
}

impl Repetition {
    /// Take the next piece of the stream: the loop its tail has become
    /// with it, found at the first byte that completes one.
    pub fn feed(&mut self, piece: &str) -> Option<Loop> {
        for &byte in piece.as_bytes() {
            let held = self.tail.len();
            let mut found = None;
            for unit in 1..=held {
                let run = &mut self.runs[unit];
                *run = if self.tail[held - unit] == byte { *run + 1 } else { 0 };
                // The copies span the bytes that matched and the first unit.
                let span = *run + unit;
                if found.is_none() && span >= MIN_SPAN && span >= unit * MIN_REPEATS {
                    found = Some(Loop { start: self.seen + 1 - span, unit, span });
                }
            }
            if self.tail.len() == MAX_UNIT {
                self.tail.pop_front();
            }
            self.tail.push_back(byte);
            self.seen += 1;
            if found.is_some() {
                return found;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first loop of `text` fed in pieces of `size` characters.
    fn first_loop(text: &str, size: usize) -> Option<(Loop, usize)> {
        let mut r = Repetition::default();
        let chars: Vec<char> = text.chars().collect();
        let mut fed = String::new();
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            fed.push_str(&piece);
            if let Some(l) = r.feed(&piece) {
                return Some((l, l.keep(&fed)));
            }
        }
        None
    }

    #[test]
    fn the_same_line_again_and_again_is_a_loop_cut_after_its_first_copy() {
        let intro = "Here is the fix:\n";
        let line = "    print('hello world')\n";
        let text = format!("{intro}{}", line.repeat(200));
        let (l, keep) = first_loop(&text, 7).expect("a loop");
        assert_eq!(l.unit, line.len());
        assert!(l.repeats() >= MIN_REPEATS && l.span >= MIN_SPAN, "{l:?}");
        // The loop's first copy begins at the intro's own newline.
        assert_eq!(&text[..keep], format!("{intro}{}", line.trim_end()));
        // Cut as soon as the bounds are met, not at the stream's end.
        assert!(l.start + l.span < MIN_SPAN + intro.len() + 2 * line.len(), "{l:?}");
    }

    #[test]
    fn a_word_or_a_character_repeated_is_a_loop_in_any_script() {
        let (l, keep) = first_loop(&format!("答案是{}", "很好".repeat(2000)), 3).expect("a loop");
        assert_eq!(l.unit, "很好".len());
        assert_eq!(keep, "答案是很好".len());
        let (l, _) = first_loop(&"\n".repeat(5000), 100).expect("a loop");
        assert_eq!((l.start, l.unit), (0, 1));
    }

    #[test]
    fn written_text_is_not_a_loop() {
        // Varied lines, numbered lines, a block written twice, a short
        // run of identical lines: none is a loop.
        let numbered: String = (0..400).map(|i| format!("line {i}: value\n")).collect();
        assert!(first_loop(&numbered, 5).is_none());
        let block: String = (0..40).map(|i| format!("def f{i}(x):\n    return x * {i}\n")).collect();
        assert!(first_loop(&block.repeat(2), 9).is_none());
        let rows = "0,0,0,0,0,0,0,0\n".repeat(12);
        assert!(first_loop(&format!("data = '''\n{rows}'''\n"), 4).is_none());
        let unit: String = (0..100).map(|i| format!("{i} ")).collect();
        assert!(unit.len() > MAX_UNIT);
        assert!(first_loop(&unit.repeat(20), 50).is_none(), "a unit longer than MAX_UNIT is not looked for");
    }

    #[test]
    fn a_loop_split_across_multibyte_characters_keeps_a_character_boundary() {
        let text = format!("é{}", "aé".repeat(1500));
        let (l, keep) = first_loop(&text, 1).expect("a loop");
        assert!(text.is_char_boundary(keep), "{l:?} {keep}");
    }
}
