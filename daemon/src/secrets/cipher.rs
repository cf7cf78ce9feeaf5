//! The format-preserving cipher: NIST FF1 (SP 800-38G) over AES, through the
//! `fpe` crate. A token body is read as numerals in its alphabet's radix and
//! encrypted to a numeral string of the same length in the same radix, so the
//! ciphertext has the plaintext's length and character set. FF1 is a
//! deterministic permutation for a given key, tweak, radix and length: the same
//! secret always gets the same ciphertext, and two secrets never share one.

use super::alphabet::Alphabet;
use super::SecretsError;
use aes::{Aes128, Aes192, Aes256};
use fpe::ff1::{FlexibleNumeralString, FF1};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// FF1 keyed with one AES key size.
enum Engine {
    /// AES-128 (16-byte key).
    Aes128(FF1<Aes128>),
    /// AES-192 (24-byte key).
    Aes192(FF1<Aes192>),
    /// AES-256 (32-byte key).
    Aes256(FF1<Aes256>),
}

impl Engine {
    /// FF1 for `radix` under `key` (16, 24 or 32 bytes, checked by the caller).
    fn new(key: &[u8], radix: u32) -> Result<Self, SecretsError> {
        let radix_error = |e: fpe::ff1::InvalidRadix| SecretsError::Cipher(e.to_string());
        Ok(match key.len() {
            16 => Engine::Aes128(FF1::new(key, radix).map_err(radix_error)?),
            24 => Engine::Aes192(FF1::new(key, radix).map_err(radix_error)?),
            32 => Engine::Aes256(FF1::new(key, radix).map_err(radix_error)?),
            n => return Err(SecretsError::KeyLength(n)),
        })
    }

    /// Encrypt (or decrypt) one numeral string; `None` when FF1 refuses it
    /// (too short for the radix's minimum domain of 10^6 values).
    fn apply(&self, tweak: &[u8], ns: &FlexibleNumeralString, decrypt: bool) -> Option<FlexibleNumeralString> {
        let out = match (self, decrypt) {
            (Engine::Aes128(f), false) => f.encrypt(tweak, ns),
            (Engine::Aes128(f), true) => f.decrypt(tweak, ns),
            (Engine::Aes192(f), false) => f.encrypt(tweak, ns),
            (Engine::Aes192(f), true) => f.decrypt(tweak, ns),
            (Engine::Aes256(f), false) => f.encrypt(tweak, ns),
            (Engine::Aes256(f), true) => f.decrypt(tweak, ns),
        };
        out.ok()
    }
}

/// FF1 engines for every radix the session's patterns use. The AES key
/// schedules inside are zeroed on drop (`aes`'s `zeroize` feature); the raw
/// key is not kept.
pub(crate) struct BodyCipher {
    /// One engine per radix.
    engines: HashMap<u32, Engine>,
}

impl BodyCipher {
    /// Engines for `radixes` under `key`.
    pub(crate) fn new(key: &[u8], radixes: impl IntoIterator<Item = u32>) -> Result<Self, SecretsError> {
        if ![16, 24, 32].contains(&key.len()) {
            return Err(SecretsError::KeyLength(key.len()));
        }
        let mut engines = HashMap::new();
        for radix in radixes {
            if let Entry::Vacant(slot) = engines.entry(radix) {
                slot.insert(Engine::new(key, radix)?);
            }
        }
        Ok(BodyCipher { engines })
    }

    /// `body` encrypted within `alphabet`: same length, same characters.
    /// `None` when a character is outside the alphabet or the body is too
    /// short for FF1 in this radix.
    pub(crate) fn encrypt(&self, alphabet: &Alphabet, tweak: &[u8], body: &str) -> Option<String> {
        self.apply(alphabet, tweak, body, false)
    }

    /// The inverse of [`BodyCipher::encrypt`] (the shield itself decrypts
    /// through its registry; this proves the cipher is a real permutation).
    #[cfg(test)]
    pub(crate) fn decrypt(&self, alphabet: &Alphabet, tweak: &[u8], body: &str) -> Option<String> {
        self.apply(alphabet, tweak, body, true)
    }

    /// Map `body` to numerals, run FF1 one way, map back.
    fn apply(&self, alphabet: &Alphabet, tweak: &[u8], body: &str, decrypt: bool) -> Option<String> {
        let engine = self.engines.get(&alphabet.radix())?;
        let numerals = body.chars().map(|c| alphabet.numeral(c)).collect::<Option<Vec<u16>>>()?;
        let out = engine.apply(tweak, &FlexibleNumeralString::from(numerals), decrypt)?;
        Some(Vec::<u16>::from(out).into_iter().map(|n| alphabet.char_of(n)).collect())
    }
}

/// Whether FF1 accepts bodies of `len` characters in `radix`: NIST requires
/// at least 10^6 possible values (and two numerals).
pub(crate) fn domain_large_enough(radix: u32, len: usize) -> bool {
    const MIN_DOMAIN: u64 = 1_000_000;
    let mut domain: u64 = 1;
    for _ in 0..len {
        domain = domain.saturating_mul(u64::from(radix));
        if domain >= MIN_DOMAIN {
            break;
        }
    }
    len >= 2 && domain >= MIN_DOMAIN
}
