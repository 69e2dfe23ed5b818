//! Canonical JSON text: the bytes of Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! These are the byte-level primitives the binding's walker calls: a string
//! (with `json`'s escapes, plus lone surrogates written as `\udxxx`), a float
//! (Python's `repr`), an integer, and the rules the walker enforces (the
//! nesting limit, key order). The walk over Python objects itself lives in the
//! binding crate; nothing here knows Python.

use std::cmp::Ordering;

/// The deepest nesting a canonical value may have: 512 nested containers are
/// written, a 513th is refused. The reader enforces the same limit.
pub const MAX_DEPTH: usize = 512;

/// A float that JSON cannot hold: NaN or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonFiniteFloat;

impl std::fmt::Display for NonFiniteFloat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Out of range float values are not JSON compliant")
    }
}

impl std::error::Error for NonFiniteFloat {}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// What [`write_str`] does with a byte: copy it, or stop the run of plain
/// bytes and look at it.
const PLAIN: u8 = 0;
/// An escape of its own (`"`, `\`, a control character).
pub(crate) const ESCAPE: u8 = 1;
/// `0xED`: the first byte of U+D000..U+D7FF, or of a surrogate in WTF-8.
const MAYBE_SURROGATE: u8 = 2;

pub(crate) static CLASS: [u8; 256] = {
    let mut table = [PLAIN; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = ESCAPE;
        i += 1;
    }
    table[b'"' as usize] = ESCAPE;
    table[b'\\' as usize] = ESCAPE;
    table[0xED] = MAYBE_SURROGATE;
    table
};

/// Appends `wtf8` as a JSON string, quotes included, escaped exactly as
/// Python's `json.dumps(..., ensure_ascii=False)` escapes it: `\"`, `\\`,
/// `\n`, `\r`, `\t`, `\b`, `\f`, any other character below U+0020 as
/// `\u00xx` (lowercase hex), everything else as its raw UTF-8 bytes.
///
/// `wtf8` is UTF-8 that may also hold surrogate code points encoded as
/// three-byte sequences `ED A0..BF 80..BF` (what Python's
/// `str.encode("utf-8", "surrogatepass")` produces). Each such surrogate is
/// written as a lowercase `\udxxx` escape, so the output is valid UTF-8
/// whenever the input is well-formed WTF-8. Malformed input is copied as it
/// is; this function never panics.
pub fn write_str(out: &mut Vec<u8>, wtf8: &[u8]) {
    out.reserve(wtf8.len() + 2);
    out.push(b'"');
    let mut rest = wtf8;
    loop {
        // Find the next byte that needs a look, sixteen then eight bytes at a
        // time, and copy the plain run before it at once.
        let mut plain = plain_run16(rest);
        while let Some(word) = rest.get(plain..).and_then(<[u8]>::first_chunk::<8>) {
            let mask = look_mask(u64::from_le_bytes(*word));
            if mask != 0 {
                plain += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            plain += 8;
        }
        let (run, after_run) = rest.split_at(plain.min(rest.len()));
        out.extend_from_slice(run);
        rest = after_run;
        let Some((&byte, after)) = rest.split_first() else {
            break;
        };
        rest = after;
        match CLASS[usize::from(byte)] {
            PLAIN => out.push(byte),
            MAYBE_SURROGATE => match after {
                [second @ 0xA0..=0xBF, third, tail @ ..] => {
                    let code = 0xD000 | (u32::from(second & 0x3F) << 6) | u32::from(third & 0x3F);
                    write_unicode_escape(out, code);
                    rest = tail;
                }
                _ => out.push(byte),
            },
            _ => match byte {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0C => out.extend_from_slice(b"\\f"),
                _ => write_unicode_escape(out, u32::from(byte)),
            },
        }
    }
    out.push(b'"');
}

/// True when `wtf8` holds a high surrogate immediately followed by a low one
/// (`ED A0..AF xx ED B0..BF xx`): written as two escapes, every JSON reader
/// would read them back as the one code point they pair into, not as written.
pub fn has_surrogate_pair(wtf8: &[u8]) -> bool {
    wtf8.windows(6).any(|w| {
        w[0] == 0xED
            && (0xA0..=0xAF).contains(&w[1])
            && w[3] == 0xED
            && (0xB0..=0xBF).contains(&w[4])
    })
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each of the eight bytes of `word` (little-endian: the
/// lowest byte first) that [`write_str`] must look at: below 0x20, `"`, `\\`,
/// or 0xED. From the bit tricks of "Bit Twiddling Hacks" (`haszero`,
/// `hasless`, valid for thresholds up to 128): the mask is zero exactly when
/// no byte needs a look, and its lowest set bit is always a byte that does
/// (a borrow may add false marks only above it).
#[inline]
fn look_mask(word: u64) -> u64 {
    let below = |w: u64, n: u64| w.wrapping_sub(ONES.wrapping_mul(n)) & !w & HIGH_BITS;
    let zero = |w: u64| below(w, 1);
    below(word, 0x20)
        | zero(word ^ ONES.wrapping_mul(u64::from(b'"')))
        | zero(word ^ ONES.wrapping_mul(u64::from(b'\\')))
        | zero(word ^ ONES.wrapping_mul(0xED))
}

/// How many bytes from the start of `wtf8` need no look (see [`look_mask`]),
/// sixteen at a time: a multiple of 16, or the offset of the first byte
/// that needs one.
#[cfg(target_arch = "x86_64")]
fn plain_run16(wtf8: &[u8]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut at = 0;
    while let Some(block) = wtf8.get(at..at + 16) {
        // SAFETY: SSE2 is part of the x86_64 baseline, so these instructions
        // exist on every machine this code runs on; the load reads exactly the
        // 16 bytes of `block`, a slice of `wtf8`; unaligned loads need no
        // alignment.
        let mask = unsafe {
            let x = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            // x <= 0x1f (unsigned) exactly when min(x, 0x1f) == x.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
            let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
            let surrogate = _mm_cmpeq_epi8(x, _mm_set1_epi8(0xEDu8 as i8));
            _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(quote, backslash),
                _mm_or_si128(control, surrogate),
            )) as u32
        };
        if mask != 0 {
            return at + mask.trailing_zeros() as usize;
        }
        at += 16;
    }
    at
}

/// The portable [`plain_run16`]: the eight-byte loop does the work.
#[cfg(not(target_arch = "x86_64"))]
fn plain_run16(_wtf8: &[u8]) -> usize {
    0
}

/// `\uXXXX` with four lowercase hex digits of the low 16 bits of `code`.
fn write_unicode_escape(out: &mut Vec<u8>, code: u32) {
    let nibble = |shift: u32| HEX[((code >> shift) & 0x0F) as usize];
    out.extend_from_slice(&[b'\\', b'u', nibble(12), nibble(8), nibble(4), nibble(0)]);
}

/// Appends `value` in decimal, as Python's `int.__repr__` writes it.
pub fn write_i64(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends `value` in decimal, as Python's `int.__repr__` writes it.
pub fn write_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// Appends `value` exactly as Python's `repr(float)` writes it (which is what
/// `json.dumps` writes for a finite float).
///
/// The digits are the shortest that round-trip. Python writes them in fixed
/// notation when the decimal point position `decpt` (the value is
/// `0.DIGITS × 10**decpt`) satisfies `-4 < decpt <= 16`, with `.0` added to an
/// integral value (`0.0001`, `100.0`, `1234567890123456.0`), and otherwise as
/// `D.DDDe±XX` with at least two exponent digits (`1e-05`, `1.5e-07`,
/// `1e+16`, `5e-324`). Zero keeps its sign (`-0.0`).
///
/// # Errors
///
/// [`NonFiniteFloat`] for NaN and the infinities, which JSON cannot hold;
/// nothing is written then.
pub fn write_f64(out: &mut Vec<u8>, value: f64) -> Result<(), NonFiniteFloat> {
    if !value.is_finite() {
        return Err(NonFiniteFloat);
    }
    if value == 0.0 {
        out.extend_from_slice(if value.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return Ok(());
    }
    out.reserve(32);
    let mut ryu_buffer = ryu::Buffer::new();
    let shortest = Shortest::parse(ryu_buffer.format_finite(value).as_bytes());
    if value.is_sign_negative() {
        out.push(b'-');
    }
    shortest.write_python_repr(out);
    Ok(())
}

/// The shortest round-trip decimal digits of a finite, non-zero float: the
/// value is `0.DIGITS × 10**decpt`, no leading or trailing zero in DIGITS.
struct Shortest {
    digits: [u8; 32],
    len: usize,
    decpt: i32,
}

impl Shortest {
    /// Reads the digits and decimal point position out of `ryu`'s text (any
    /// of its forms: `123.45`, `0.0001`, `1e16`, `1.5E-7`, with or without a
    /// sign). Stray bytes are skipped; nothing here can panic.
    fn parse(text: &[u8]) -> Self {
        let mut shortest = Shortest { digits: [0; 32], len: 0, decpt: 0 };
        let mut int_len: i32 = 0;
        let mut seen_point = false;
        let mut leading_zeros = true;
        let mut rest = text;
        while let Some((&byte, tail)) = rest.split_first() {
            match byte {
                b'0'..=b'9' => {
                    if leading_zeros && byte == b'0' {
                        // A leading zero moves the point left if it is after it.
                        if seen_point {
                            int_len -= 1;
                        }
                    } else {
                        leading_zeros = false;
                        if let Some(slot) = shortest.digits.get_mut(shortest.len) {
                            *slot = byte;
                            shortest.len += 1;
                        }
                        if !seen_point {
                            int_len += 1;
                        }
                    }
                }
                b'.' => seen_point = true,
                b'e' | b'E' => {
                    rest = tail;
                    break;
                }
                _ => {}
            }
            rest = tail;
        }
        let mut exponent: i32 = 0;
        let mut negative = false;
        for &byte in rest {
            match byte {
                b'-' => negative = true,
                b'0'..=b'9' => {
                    exponent = exponent.saturating_mul(10).saturating_add(i32::from(byte - b'0'))
                }
                _ => {}
            }
        }
        if negative {
            exponent = -exponent;
        }
        while shortest.len > 1 && shortest.digits.get(shortest.len - 1) == Some(&b'0') {
            shortest.len -= 1;
        }
        shortest.decpt = int_len.saturating_add(exponent);
        shortest
    }

    fn digits(&self) -> &[u8] {
        self.digits.get(..self.len).unwrap_or_default()
    }

    /// Python's `format_float_short` for `repr` (mode `'r'`, `Py_DTSF_ADD_DOT_0`).
    fn write_python_repr(&self, out: &mut Vec<u8>) {
        let digits = self.digits();
        let decpt = self.decpt;
        if -4 < decpt && decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + decpt.unsigned_abs() as usize, b'0');
            out.extend_from_slice(digits);
        } else if 0 < decpt && decpt <= 16 {
            let int_len = decpt.unsigned_abs() as usize;
            if int_len >= digits.len() {
                out.extend_from_slice(digits);
                out.resize(out.len() + (int_len - digits.len()), b'0');
                out.extend_from_slice(b".0");
            } else {
                let (int_part, frac_part) = digits.split_at(int_len);
                out.extend_from_slice(int_part);
                out.push(b'.');
                out.extend_from_slice(frac_part);
            }
        } else {
            let (first, rest) = digits.split_at(digits.len().min(1));
            out.extend_from_slice(first);
            if !rest.is_empty() {
                out.push(b'.');
                out.extend_from_slice(rest);
            }
            let exponent = decpt.saturating_sub(1);
            out.extend_from_slice(if exponent < 0 { b"e-" } else { b"e+" });
            let magnitude = exponent.unsigned_abs();
            if magnitude < 10 {
                out.push(b'0');
            }
            write_u64(out, u64::from(magnitude));
        }
    }
}

/// The order of two dict keys in canonical JSON: code-point order, which is
/// the byte order of their UTF-8 (or WTF-8, for surrogates) encodings.
pub fn compare_keys(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wtf8_string(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_str(&mut out, bytes);
        out
    }

    #[test]
    fn the_sixteen_byte_scan_stops_where_the_byte_table_would() {
        let plain_by_table = |s: &[u8]| {
            let first = s.iter().position(|b| CLASS[usize::from(*b)] != PLAIN);
            first.unwrap_or(s.len())
        };
        for len in 0..48 {
            for position in 0..len {
                for byte in 0..=255u8 {
                    let mut text = vec![b'a'; len];
                    text[position] = byte;
                    let run = plain_run16(&text);
                    let want = plain_by_table(&text);
                    // A run of whole blocks short of the byte, or the byte itself.
                    assert!(run == want || (run % 16 == 0 && run <= want), "{text:x?}");
                    if cfg!(target_arch = "x86_64") && want < len / 16 * 16 {
                        assert_eq!(run, want, "{text:x?}");
                    }
                }
            }
        }
    }

    /// The index of the first byte of `word` the byte table sends for a look.
    fn first_by_table(word: [u8; 8]) -> Option<u32> {
        word.iter().position(|b| CLASS[usize::from(*b)] != PLAIN).map(|p| p as u32)
    }

    fn first_by_mask(word: [u8; 8]) -> Option<u32> {
        let mask = look_mask(u64::from_le_bytes(word));
        (mask != 0).then(|| mask.trailing_zeros() / 8)
    }

    #[test]
    fn look_mask_finds_the_first_byte_the_table_would() {
        for filler in [b'a', b' ', 0x7F, 0x80, 0xA0, 0xEC, 0xEE, 0xFF, 0x21, 0x00, 0xED] {
            for position in 0..8 {
                for byte in 0..=255u8 {
                    let mut word = [filler; 8];
                    word[position] = byte;
                    assert_eq!(first_by_mask(word), first_by_table(word), "{word:x?}");
                }
            }
        }
        let mut state = 7;
        for _ in 0..200_000 {
            let mut word = split_mix(&mut state).to_le_bytes();
            // Mostly plain bytes, so that the first flagged one moves around.
            for byte in &mut word {
                if *byte & 0x60 != 0 && *byte != 0xED {
                    *byte = b'a' + (*byte & 0x0F);
                }
            }
            assert_eq!(first_by_mask(word), first_by_table(word), "{word:x?}");
            let word = split_mix(&mut state).to_le_bytes();
            assert_eq!(first_by_mask(word), first_by_table(word), "{word:x?}");
        }
    }

    #[test]
    fn truncated_or_malformed_input_does_not_panic() {
        assert_eq!(wtf8_string(b"\xed"), b"\"\xed\"".to_vec());
        assert_eq!(wtf8_string(b"\xed\xa0"), b"\"\xed\xa0\"".to_vec());
        assert_eq!(wtf8_string(b"\xff\xfe"), b"\"\xff\xfe\"".to_vec());
    }

    #[test]
    fn non_finite_floats_are_refused_and_write_nothing() {
        for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -f64::NAN] {
            let mut out = b"x".to_vec();
            assert_eq!(write_f64(&mut out, value), Err(NonFiniteFloat));
            assert_eq!(out, b"x");
        }
    }

    /// A small deterministic generator (SplitMix64).
    fn split_mix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
