//! Token alphabets: the ordered set of characters a token body is made of.
//! A body is read as numerals in base `radix` (a character's position in the
//! alphabet), encrypted as such, and written back with the same alphabet, which
//! is what keeps a ciphertext's length and character set equal to the plaintext's.

use std::collections::HashMap;
use std::sync::LazyLock;

/// Marks an ASCII character absent from the alphabet in the lookup table.
const ABSENT: u16 = u16::MAX;

/// An ordered set of distinct characters.
#[derive(Clone)]
pub(crate) struct Alphabet {
    /// The characters, in numeral order.
    chars: Vec<char>,
    /// Numeral of each ASCII character, `ABSENT` when not in the alphabet.
    ascii: [u16; 128],
    /// Numerals of the non-ASCII characters (custom alphabets only).
    other: HashMap<char, u16>,
}

/// A `body_alphabet` that cannot number a secret's body.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AlphabetError {
    /// More characters than a `u16` numbers.
    #[error("body_alphabet has more than {ABSENT} distinct characters")]
    TooLarge,
    /// Fewer than two distinct characters.
    #[error("body_alphabet needs at least two distinct characters")]
    TooSmall,
}

impl Alphabet {
    /// The alphabet of `chars` in order, duplicates dropped. Fails with a
    /// human-readable reason when fewer than two distinct characters remain or
    /// there are too many to number in a `u16`.
    pub(crate) fn new(chars: &str) -> Result<Self, AlphabetError> {
        let mut alphabet = Alphabet { chars: Vec::new(), ascii: [ABSENT; 128], other: HashMap::new() };
        for c in chars.chars() {
            if alphabet.contains(c) {
                continue;
            }
            if alphabet.chars.len() >= usize::from(ABSENT) {
                return Err(AlphabetError::TooLarge);
            }
            let numeral = alphabet.chars.len() as u16;
            if c.is_ascii() {
                alphabet.ascii[c as usize] = numeral;
            } else {
                alphabet.other.insert(c, numeral);
            }
            alphabet.chars.push(c);
        }
        if alphabet.chars.len() < 2 {
            return Err(AlphabetError::TooSmall);
        }
        Ok(alphabet)
    }

    /// A built-in alphabet by Swival's name (`ALPHANUMERIC`, `BASE64URL`, ...).
    pub(crate) fn named(name: &str) -> Option<&'static Alphabet> {
        Some(match name {
            "DIGITS" => &DIGITS,
            "HEX_LOWER" => &HEX_LOWER,
            "ALPHANUMERIC" => &ALPHANUMERIC,
            "ALPHANUMERIC_LOWER" => &ALPHANUMERIC_LOWER,
            "ALPHANUMERIC_UPPER" => &ALPHANUMERIC_UPPER,
            "BASE64" => &BASE64,
            "BASE64URL" => &BASE64URL,
            _ => return None,
        })
    }

    /// The numeral of `c`, if `c` is in the alphabet.
    pub(crate) fn numeral(&self, c: char) -> Option<u16> {
        if c.is_ascii() {
            Some(self.ascii[c as usize]).filter(|&n| n != ABSENT)
        } else {
            self.other.get(&c).copied()
        }
    }

    /// Whether `c` is in the alphabet.
    pub(crate) fn contains(&self, c: char) -> bool {
        self.numeral(c).is_some()
    }

    /// The character of numeral `n` (`n < radix`).
    pub(crate) fn char_of(&self, n: u16) -> char {
        self.chars[usize::from(n)]
    }

    /// Whether every character is ASCII (then a body's length in characters
    /// is its length in bytes).
    pub(crate) fn is_ascii(&self) -> bool {
        self.other.is_empty()
    }

    /// Length in characters of `body`, made of this alphabet's characters.
    pub(crate) fn body_len(&self, body: &str) -> usize {
        if self.is_ascii() {
            body.len()
        } else {
            body.chars().count()
        }
    }

    /// Number of characters, the radix bodies are encrypted in.
    pub(crate) fn radix(&self) -> u32 {
        self.chars.len() as u32
    }
}

/// Builds a built-in alphabet (known to be valid).
fn builtin(chars: &str) -> Alphabet {
    Alphabet::new(chars).unwrap_or_else(|e| panic!("built-in alphabet {chars:?}: {e}"))
}

/// `0-9`.
pub(crate) static DIGITS: LazyLock<Alphabet> = LazyLock::new(|| builtin("0123456789"));
/// `0-9a-f`.
pub(crate) static HEX_LOWER: LazyLock<Alphabet> = LazyLock::new(|| builtin("0123456789abcdef"));
/// `0-9A-Za-z`.
pub(crate) static ALPHANUMERIC: LazyLock<Alphabet> =
    LazyLock::new(|| builtin("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"));
/// `0-9a-z`.
pub(crate) static ALPHANUMERIC_LOWER: LazyLock<Alphabet> =
    LazyLock::new(|| builtin("0123456789abcdefghijklmnopqrstuvwxyz"));
/// `0-9A-Z`.
pub(crate) static ALPHANUMERIC_UPPER: LazyLock<Alphabet> =
    LazyLock::new(|| builtin("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"));
/// Standard base64 (`A-Za-z0-9+/`, no padding).
pub(crate) static BASE64: LazyLock<Alphabet> =
    LazyLock::new(|| builtin("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"));
/// URL-safe base64 (`A-Za-z0-9-_`).
pub(crate) static BASE64URL: LazyLock<Alphabet> =
    LazyLock::new(|| builtin("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"));
