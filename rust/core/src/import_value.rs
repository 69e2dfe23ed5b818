//! What the native importers share below the record level: a borrowed JSON
//! value (read with [`crate::json::Reader`]), written back either canonically
//! (sorted keys, as `canonical_json`) or in source order (as
//! `json.dumps(v, ensure_ascii=False, separators=(",", ":"))`), the
//! deterministic envelope ids (UUIDv5, so SHA-1) and the source timestamps as
//! envelope `ts`.
//!
//! The importers handle only what they can reproduce byte for byte; anything
//! else (a lone surrogate, a duplicate key, a timestamp in another form) is
//! [`Unsupported`], and the caller falls back to the Python importer for the
//! whole file.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::canonical;
use crate::json::{JStr, Kind, Number, Reader};

/// The native path cannot reproduce this source exactly: the Python importer
/// takes the whole file. The text says why (for tests and debugging).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

/// A string of a [`Value`]: borrowed from the line, or (decoded from escapes)
/// shared, so that a value is copied into a payload without copying its text.
/// A string read from a line whose token is already as canonical JSON writes
/// it ([`JText::Plain`], [`JText::Escaped`]) is written back as that token,
/// neither decoded nor escaped again.
#[derive(Debug, Clone)]
pub enum JText<'a> {
    /// Text (from anywhere: it is escaped when written).
    Borrowed(&'a str),
    /// Decoded text.
    Shared(Arc<str>),
    /// A string token of the line without a backslash: its text, which is
    /// also its canonical JSON (no quote, backslash or control character).
    Plain(&'a str),
    /// The inside of a string token of the line whose every escape is the one
    /// canonical JSON writes; decoded the first time its text is asked for.
    Escaped(&'a str, OnceLock<Box<str>>),
}

impl Deref for JText<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            JText::Borrowed(s) | JText::Plain(s) => s,
            JText::Shared(s) => s,
            JText::Escaped(raw, text) => text.get_or_init(|| decode_canonical(raw)),
        }
    }
}

/// True when every escape in `raw` (the inside of a JSON string token) is
/// the one canonical JSON writes for its character: `\"`, `\\`, `\b`, `\f`,
/// `\n`, `\r`, `\t`, and `\u00xx` (lowercase) for the other control characters.
fn canonical_escapes(raw: &[u8]) -> bool {
    let mut at = 0usize;
    while let Some(found) = raw.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let slash = at + found;
        match raw.get(slash + 1) {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => at = slash + 2,
            Some(b'u') => {
                let Some(&[b'0', b'0', hi @ (b'0' | b'1'), lo]) = raw.get(slash + 2..slash + 6)
                else {
                    return false;
                };
                let lo = match lo {
                    b'0'..=b'9' => lo - b'0',
                    b'a'..=b'f' => lo - b'a' + 10,
                    _ => return false,
                };
                let code = (hi - b'0') * 16 + lo;
                if matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                    return false;
                }
                at = slash + 6;
            }
            _ => return false,
        }
    }
    true
}

/// The text of `raw`, the inside of a string token with only canonical escapes.
fn decode_canonical(raw: &str) -> Box<str> {
    let bytes = raw.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut at = 0usize;
    while let Some(found) = bytes.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let slash = at + found;
        out.extend_from_slice(bytes.get(at..slash).unwrap_or_default());
        let (byte, width) = match bytes.get(slash + 1) {
            Some(b'b') => (0x08, 2),
            Some(b'f') => (0x0c, 2),
            Some(b'n') => (b'\n', 2),
            Some(b'r') => (b'\r', 2),
            Some(b't') => (b'\t', 2),
            Some(b'u') => {
                let hex = bytes.get(slash + 4..slash + 6).unwrap_or_default();
                let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                let code = hex.iter().fold(0u8, |v, &c| v.wrapping_mul(16) | digit(c));
                (code, 6)
            }
            Some(&c) => (c, 2),
            None => break,
        };
        out.push(byte);
        at = slash + width;
    }
    out.extend_from_slice(bytes.get(at..).unwrap_or_default());
    // Runs of the (UTF-8) token cut at ASCII bytes, and ASCII bytes: UTF-8
    // (checked all the same, with SIMD).
    match simdutf8::basic::from_utf8(&out) {
        // SAFETY: `from_utf8` just checked that `out` is UTF-8.
        Ok(_) => unsafe { String::from_utf8_unchecked(out) }.into_boxed_str(),
        Err(_) => String::from_utf8_lossy(&out).into(),
    }
}

impl PartialEq for JText<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<'a> From<&'a str> for JText<'a> {
    fn from(s: &'a str) -> Self {
        JText::Borrowed(s)
    }
}

impl From<String> for JText<'_> {
    fn from(s: String) -> Self {
        JText::Shared(Arc::from(s))
    }
}

/// A JSON value borrowed from one source line.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer, as its text (any size).
    Int(Cow<'a, str>),
    /// A float, as Python reads it.
    Float(f64),
    /// A string (never with a lone surrogate: those are unsupported).
    Str(JText<'a>),
    /// An array.
    Arr(Vec<Value<'a>>),
    /// An object, its members in source order, no key twice.
    Obj(Vec<(Cow<'a, str>, Value<'a>)>),
    /// A value already written as canonical JSON.
    Raw(Arc<[u8]>),
}

impl<'a> Value<'a> {
    /// The member `key` of an object (None for any other value).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The member `key` when it is a string.
    pub fn str_of(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items, if this is an array.
    pub fn as_arr(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Arr(items) => Some(items),
            _ => None,
        }
    }

    /// True for an object.
    pub fn is_obj(&self) -> bool {
        matches!(self, Value::Obj(_))
    }

    /// Python's truth value of the decoded value.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(t) => !t.trim_start_matches('-').trim_start_matches('0').is_empty(),
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Arr(a) => !a.is_empty(),
            Value::Obj(o) => !o.is_empty(),
            Value::Raw(r) => !matches!(
                &r[..],
                b"null" | b"false" | b"0" | b"0.0" | b"-0.0" | b"\"\"" | b"[]" | b"{}"
            ),
        }
    }

    /// A string value.
    pub fn string(s: impl Into<JText<'a>>) -> Self {
        Value::Str(s.into())
    }

    /// An object from its members (keys need not be sorted).
    pub fn obj(members: Vec<(&'a str, Value<'a>)>) -> Self {
        Value::Obj(
            members
                .into_iter()
                .map(|(k, v)| (Cow::Borrowed(k), v))
                .collect(),
        )
    }

    /// Sets `key` (replacing a member of that name, as a dict assignment does).
    pub fn set(&mut self, key: &'a str, value: Value<'a>) {
        if let Value::Obj(members) = self {
            if let Some(slot) = members.iter_mut().find(|(k, _)| k == key) {
                slot.1 = value;
            } else {
                members.push((Cow::Borrowed(key), value));
            }
        }
    }
}

/// Reads one whole JSON value from `text`.
///
/// # Errors
///
/// `Ok(None)` when the text is not one JSON value (the line is damaged: the
/// Python importer says how); [`Unsupported`] for a value this module cannot
/// write back exactly.
pub fn parse(text: &str) -> Result<Option<Value<'_>>, Unsupported> {
    let mut reader = Reader::new(text);
    let mut scratch = Vec::new();
    let value = match read(&mut reader, text, &mut scratch) {
        Ok(v) => v,
        Err(Fail::Json) => return Ok(None),
        Err(Fail::Unsupported(why)) => return Err(Unsupported(why)),
    };
    match reader.finish() {
        Ok(()) => Ok(Some(value)),
        Err(_) => Ok(None),
    }
}

enum Fail {
    Json,
    Unsupported(&'static str),
}

impl From<crate::json::JsonError> for Fail {
    fn from(_: crate::json::JsonError) -> Self {
        Fail::Json
    }
}

/// The string `s` decoded: borrowed from `text` when it is a slice of it.
fn own<'a>(text: &'a str, s: JStr<'_>) -> Result<Cow<'a, str>, Fail> {
    match s {
        JStr::Text(t) => {
            let base = text.as_ptr() as usize;
            let at = t.as_ptr() as usize;
            if at >= base && at + t.len() <= base + text.len() {
                if let Some(slice) = text.get(at - base..at - base + t.len()) {
                    return Ok(Cow::Borrowed(slice));
                }
            }
            Ok(Cow::Owned(t.to_owned()))
        }
        JStr::Wtf8(_) => Err(Fail::Unsupported("a lone surrogate in a string")),
    }
}

fn read<'a>(r: &mut Reader<'a>, text: &'a str, scratch: &mut Vec<u8>) -> Result<Value<'a>, Fail> {
    Ok(match r.peek()? {
        Kind::Null => {
            r.null()?;
            Value::Null
        }
        Kind::Bool => Value::Bool(r.boolean()?),
        Kind::Number => match r.checked_number()? {
            Number::Int(t) => Value::Int(Cow::Borrowed(t)),
            Number::Float(t) => match crate::json::parse_float(t) {
                Ok(f) => Value::Float(f),
                Err(_) => return Err(Fail::Json),
            },
        },
        Kind::String => {
            // The token is skipped (checked, not decoded): most are written
            // back as they are, and only those whose escapes are not
            // canonical are decoded now.
            let start = r.offset();
            r.skip_value()?;
            let end = r.offset();
            let raw = text
                .get(start + 1..end.saturating_sub(1))
                .ok_or(Fail::Json)?;
            let escaped = if raw.len() < 32 {
                raw.as_bytes().contains(&b'\\')
            } else {
                memchr::memchr(b'\\', raw.as_bytes()).is_some()
            };
            if !escaped {
                Value::Str(JText::Plain(raw))
            } else if canonical_escapes(raw.as_bytes()) {
                Value::Str(JText::Escaped(raw, OnceLock::new()))
            } else {
                let token = text.get(start..end).ok_or(Fail::Json)?;
                let mut again = Reader::new(token);
                match again.string(scratch)? {
                    JStr::Text(t) => Value::Str(JText::Shared(Arc::from(t))),
                    JStr::Wtf8(_) => return Err(Fail::Unsupported("a lone surrogate in a string")),
                }
            }
        }
        Kind::Array => {
            r.begin_array()?;
            let mut items = Vec::new();
            while r.next_item()? {
                items.push(read(r, text, scratch)?);
            }
            Value::Arr(items)
        }
        Kind::Object => {
            r.begin_object()?;
            let mut members: Vec<(Cow<'a, str>, Value<'a>)> = Vec::new();
            while let Some(k) = r.next_key(scratch)? {
                let key = own(text, k)?;
                if members.iter().any(|(k, _)| *k == key) {
                    return Err(Fail::Unsupported("a key twice in one object"));
                }
                let value = read(r, text, scratch)?;
                members.push((key, value));
            }
            Value::Obj(members)
        }
    })
}

/// Bit `i` set when byte `i` of `block` is a quote, a backslash or a control
/// character.
#[cfg(target_arch = "x86_64")]
fn special_mask(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86_64 baseline; the load reads exactly the
    // 16 bytes of `block` (unaligned loads need no alignment).
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let slash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, slash))) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn special_mask(block: &[u8; 16]) -> u32 {
    let mut mask = 0u32;
    for (i, &b) in block.iter().enumerate() {
        if b < 0x20 || b == b'"' || b == b'\\' {
            mask |= 1 << i;
        }
    }
    mask
}

fn write_escape(out: &mut Vec<u8>, byte: u8) {
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0C => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0x0f)],
        ]),
    }
}

/// Appends `text` as a canonical JSON string: what `canonical::write_str`
/// writes for it (a `str` has no lone surrogate), sixteen bytes at a time.
pub fn write_text(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut plain = 0usize; // the start of the bytes not written yet
    let mut chunks = bytes.chunks_exact(16);
    let mut base = 0usize;
    for chunk in &mut chunks {
        let Ok(block) = <&[u8; 16]>::try_from(chunk) else {
            break;
        };
        let mut mask = special_mask(block);
        while mask != 0 {
            let at = base + mask.trailing_zeros() as usize;
            out.extend_from_slice(bytes.get(plain..at).unwrap_or_default());
            write_escape(out, bytes.get(at).copied().unwrap_or(b' '));
            plain = at + 1;
            mask &= mask - 1;
        }
        base += 16;
    }
    for (i, &b) in chunks.remainder().iter().enumerate() {
        if b < 0x20 || b == b'"' || b == b'\\' {
            let at = base + i;
            out.extend_from_slice(bytes.get(plain..at).unwrap_or_default());
            write_escape(out, b);
            plain = at + 1;
        }
    }
    out.extend_from_slice(bytes.get(plain..).unwrap_or_default());
    out.push(b'"');
}

/// Appends `value` as canonical JSON (keys sorted).
pub fn write_canonical(out: &mut Vec<u8>, value: &Value<'_>) {
    write_value(out, value, true);
}

/// Appends `value` as `json.dumps(value, ensure_ascii=False, separators=(",", ":"))`
/// writes it: keys in source order.
pub fn write_dumps(out: &mut Vec<u8>, value: &Value<'_>) {
    write_value(out, value, false);
}

fn write_value(out: &mut Vec<u8>, value: &Value<'_>, sorted: bool) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(t) => write_int(out, t),
        Value::Float(f) => {
            // Finite: the reader refuses the rest.
            if canonical::write_f64(out, *f).is_err() {
                out.extend_from_slice(b"null");
            }
        }
        Value::Str(JText::Plain(raw) | JText::Escaped(raw, _)) => {
            out.push(b'"');
            out.extend_from_slice(raw.as_bytes());
            out.push(b'"');
        }
        Value::Str(s) => write_text(out, s),
        Value::Raw(r) => out.extend_from_slice(r),
        Value::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, sorted);
            }
            out.push(b']');
        }
        Value::Obj(members) => {
            out.push(b'{');
            if sorted
                && !members
                    .windows(2)
                    .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
            {
                let mut order: Vec<&(Cow<'_, str>, Value<'_>)> = members.iter().collect();
                order.sort_by(|a, b| canonical::compare_keys(a.0.as_bytes(), b.0.as_bytes()));
                write_members(out, order.into_iter(), sorted);
            } else {
                write_members(out, members.iter(), sorted);
            }
            out.push(b'}');
        }
    }
}

fn write_members<'x, 'a: 'x>(
    out: &mut Vec<u8>,
    members: impl Iterator<Item = &'x (Cow<'a, str>, Value<'a>)>,
    sorted: bool,
) {
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        canonical::write_str(out, k.as_bytes());
        out.push(b':');
        write_value(out, v, sorted);
    }
}

/// An integer's JSON text as Python writes the int it reads as (`-0` is `0`).
fn write_int(out: &mut Vec<u8>, text: &str) {
    if text == "-0" {
        out.push(b'0');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// `value` as a [`Value::Raw`]: its canonical text, kept past its line.
pub fn raw(value: &Value<'_>) -> Value<'static> {
    Value::Raw(Arc::from(canonical_bytes(value)))
}

/// The canonical JSON text of `value`.
pub fn canonical_bytes(value: &Value<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    write_canonical(&mut out, value);
    out
}

// -- ids ----------------------------------------------------------------------

const SHA1_INIT: [u32; 5] = [
    0x6745_2301,
    0xEFCD_AB89,
    0x98BA_DCFE,
    0x1032_5476,
    0xC3D2_E1F0,
];

/// One SHA-1 compression of the 64-byte `block` into `h`.
fn sha1_block(h: &mut [u32; 5], block: &[u8; 64]) {
    let mut w = [0u32; 80];
    for (i, word) in block.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
    }
    for i in 16..80 {
        w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *h;
    for (i, wi) in w.iter().enumerate() {
        let (f, k) = match i {
            0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
            20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
            40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
            _ => (b ^ c ^ d, 0xCA62_C1D6),
        };
        let t = a
            .rotate_left(5)
            .wrapping_add(f)
            .wrapping_add(e)
            .wrapping_add(k)
            .wrapping_add(*wi);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = t;
    }
    for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
        *x = x.wrapping_add(y);
    }
}

/// SHA-1 of `blocks * 64` bytes already compressed into `h`, then `rest`
/// (any length): the digest of the whole.
fn sha1_finish(mut h: [u32; 5], blocks: u64, rest: &[u8]) -> [u8; 20] {
    let bit_len = (blocks * 64 + rest.len() as u64).wrapping_mul(8);
    let mut chunks = rest.chunks_exact(64);
    for block in &mut chunks {
        if let Ok(block) = <&[u8; 64]>::try_from(block) {
            sha1_block(&mut h, block);
        }
    }
    let tail = chunks.remainder();
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let end = if tail.len() < 56 { 64 } else { 128 };
    last[end - 8..end].copy_from_slice(&bit_len.to_be_bytes());
    for block in last[..end].chunks_exact(64) {
        if let Ok(block) = <&[u8; 64]>::try_from(block) {
            sha1_block(&mut h, block);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// SHA-1 of `data` (for UUIDv5 only: not a security use).
pub fn sha1(data: &[u8]) -> [u8; 20] {
    sha1_finish(SHA1_INIT, 0, data)
}

/// `uuid.uuid5(namespace, name).bytes`.
pub fn uuid5(namespace: &[u8; 16], name: &[u8]) -> [u8; 16] {
    let mut data = Vec::with_capacity(16 + name.len());
    data.extend_from_slice(namespace);
    data.extend_from_slice(name);
    let hash = sha1(&data);
    let mut out = [0u8; 16];
    out.copy_from_slice(&hash[..16]);
    out[6] = (out[6] & 0x0f) | 0x50;
    out[8] = (out[8] & 0x3f) | 0x80;
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// 32 lowercase hex digits.
pub fn hex32(bytes: &[u8; 16]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = HEX[usize::from(b >> 4)];
        out[2 * i + 1] = HEX[usize::from(b & 0x0f)];
    }
    out
}

/// `uuid.NAMESPACE_URL`.
const NAMESPACE_URL: [u8; 16] = [
    0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
];

/// The importers' deterministic ids: `uuid5(NS, f"{kind}:{source digest}:{n}").hex`
/// with one counter for every kind (the Python importer's `Ids`).
///
/// The SHA-1 of an id's name starts with the same bytes for every id of one
/// kind (the namespace, the kind, the digest): their whole 64-byte blocks are
/// compressed once per kind, and each id compresses only the rest.
#[derive(Clone)]
pub struct Ids {
    namespace: [u8; 16],
    base: String,
    /// How many ids were handed out.
    pub n: u64,
    /// Per kind: the SHA-1 state after the prefix's whole blocks, how many
    /// blocks that is, and the prefix's bytes after them.
    kinds: Vec<(String, [u32; 5], u64, Vec<u8>)>,
}

impl Ids {
    /// Ids for the source whose digest is `source_digest` (`"sha256:…"`).
    pub fn new(source_digest: &str) -> Self {
        Ids {
            namespace: uuid5(&NAMESPACE_URL, b"agent-transcript/import"),
            base: source_digest.to_owned(),
            n: 0,
            kinds: Vec::new(),
        }
    }

    fn prefix(&mut self, kind: &str) -> usize {
        if let Some(i) = self.kinds.iter().position(|k| k.0 == kind) {
            return i;
        }
        let mut data = Vec::with_capacity(16 + kind.len() + self.base.len() + 2);
        data.extend_from_slice(&self.namespace);
        data.extend_from_slice(kind.as_bytes());
        data.push(b':');
        data.extend_from_slice(self.base.as_bytes());
        data.push(b':');
        let whole = data.len() / 64;
        let mut h = SHA1_INIT;
        for block in data.chunks_exact(64) {
            if let Ok(block) = <&[u8; 64]>::try_from(block) {
                sha1_block(&mut h, block);
            }
        }
        let rest = data.get(whole * 64..).unwrap_or_default().to_vec();
        self.kinds.push((kind.to_owned(), h, whole as u64, rest));
        self.kinds.len() - 1
    }

    /// The next id, of `kind`.
    pub fn next(&mut self, kind: &str) -> [u8; 32] {
        self.n += 1;
        let at = self.prefix(kind);
        let mut number = itoa::Buffer::new();
        let digits = number.format(self.n).as_bytes();
        let Some((_, h, blocks, rest)) = self.kinds.get(at) else {
            return [b'0'; 32];
        };
        let mut tail = [0u8; 96];
        let len = rest.len() + digits.len();
        let hash = match tail.get_mut(..len) {
            Some(t) => {
                t[..rest.len()].copy_from_slice(rest);
                t[rest.len()..].copy_from_slice(digits);
                sha1_finish(*h, *blocks, t)
            }
            None => {
                let mut t = rest.clone();
                t.extend_from_slice(digits);
                sha1_finish(*h, *blocks, &t)
            }
        };
        let mut out = [0u8; 16];
        out.copy_from_slice(&hash[..16]);
        out[6] = (out[6] & 0x0f) | 0x50;
        out[8] = (out[8] & 0x3f) | 0x80;
        hex32(&out)
    }
}

// -- timestamps ------------------------------------------------------------------

/// An envelope `ts`: `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub type Ts = [u8; 27];

/// The Unix epoch as an envelope ts: the Python importer's `EPOCH_TS`.
pub const EPOCH_TS: Ts = *b"1970-01-01T00:00:00.000000Z";

/// A source timestamp string as an envelope ts, the way the Python importer's
/// `to_ts` converts it: `…SS.f{1,6}Z`, the digits padded to six.
///
/// # Errors
///
/// [`Unsupported`] for any other form (Python parses those with `datetime`).
pub fn to_ts(value: &str) -> Result<Ts, Unsupported> {
    let b = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .is_some_and(|s| s.iter().all(u8::is_ascii_digit))
    };
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !shape {
        return Err(Unsupported("a timestamp of another form"));
    }
    let mut out = EPOCH_TS;
    out[..19].copy_from_slice(&b[..19]);
    let frac = b.get(20..b.len() - 1).unwrap_or_default();
    if b[19] == b'.'
        && b.last() == Some(&b'Z')
        && (1..=6).contains(&frac.len())
        && frac.iter().all(u8::is_ascii_digit)
    {
        out[19] = b'.';
        out[20..20 + frac.len()].copy_from_slice(frac);
        for slot in out.iter_mut().take(26).skip(20 + frac.len()) {
            *slot = b'0';
        }
        return Ok(out);
    }
    Err(Unsupported("a timestamp of another form"))
}

/// A record's `timestamp` member as the Python importer's `to_ts(value, "") or None`
/// reads it: None for a missing or non-string, non-number value.
///
/// # Errors
///
/// [`Unsupported`] for a number (epoch seconds) or a string of another form.
pub fn when_of(value: Option<&Value<'_>>) -> Result<Option<Ts>, Unsupported> {
    match value {
        Some(Value::Str(s)) => {
            if s.is_empty() {
                Ok(None)
            } else {
                to_ts(s).map(Some)
            }
        }
        Some(Value::Int(_) | Value::Float(_)) => Err(Unsupported("a timestamp in epoch seconds")),
        _ => Ok(None),
    }
}

/// Python's `str.isspace` for one character.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha1_known_vectors() {
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        let long = vec![b'a'; 1000];
        assert_eq!(
            hex(&sha1(&long)),
            "291e9a6c66994949b57ba5e650361e98fc36b1ba"
        );
    }

    #[test]
    fn strings_write_back_as_canonical_json_writes_them() {
        let cases = [
            r#""plain é 日""#,
            r#""a\"b\\c\nd\re\tf\bg\fh\u0001\u001f""#,
            r#""not canonical: \/ \u00e9 \u0041 \u000a \u001F""#,
            r#""a pair \ud83d\ude00 and \"""#,
            r#""""#,
        ];
        for case in cases {
            let v = parse(case).ok().flatten().unwrap_or(Value::Null);
            let decoded: String = match &v {
                Value::Str(s) => s.to_string(),
                _ => String::from("?"),
            };
            let mut want = Vec::new();
            canonical::write_str(&mut want, decoded.as_bytes());
            let mut got = Vec::new();
            write_canonical(&mut got, &v);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{case}"
            );
            let mut text = Vec::new();
            write_text(&mut text, &decoded);
            assert_eq!(text, want, "{case}");
        }
        let all: String = (0u8..=127)
            .map(char::from)
            .chain("é日€".chars())
            .cycle()
            .take(700)
            .collect();
        let mut want = Vec::new();
        canonical::write_str(&mut want, all.as_bytes());
        for start in 0..20 {
            let piece = all.get(start..).unwrap_or_default();
            let mut want = Vec::new();
            canonical::write_str(&mut want, piece.as_bytes());
            let mut got = Vec::new();
            write_text(&mut got, piece);
            assert_eq!(got, want);
            let token = String::from_utf8_lossy(&want).into_owned();
            let v = parse(&token).ok().flatten().unwrap_or(Value::Null);
            assert_eq!(v.as_str(), Some(piece));
        }
        let _ = want;
    }

    #[test]
    fn ids_match_the_plain_uuid5() {
        let ns = uuid5(&NAMESPACE_URL, b"agent-transcript/import");
        for base in [
            "scratch",
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            let mut ids = Ids::new(base);
            for kind in [
                "line",
                "msg",
                "line",
                "a-kind-long-enough-to-cross-a-block-boundary-alone-x",
            ] {
                for _ in 0..3 {
                    let got = ids.next(kind);
                    let name = format!("{kind}:{base}:{}", ids.n);
                    assert_eq!(got, hex32(&uuid5(&ns, name.as_bytes())));
                }
            }
        }
        // uuid.uuid5(uuid.NAMESPACE_URL, "agent-transcript/import") then
        // uuid.uuid5(that, "msg:sha256:x:1").hex
        let mut ids = Ids::new("sha256:x");
        assert_eq!(&ids.next("msg"), b"a59812abd4295147972e8c8d384f34fe");
    }

    #[test]
    fn uuid5_matches_python() {
        // uuid.uuid5(uuid.NAMESPACE_URL, "agent-transcript/import").hex
        let ns = uuid5(&NAMESPACE_URL, b"agent-transcript/import");
        assert_eq!(hex(&ns), "e03adf979e68510bb3e9d1e63ad7adbd");
    }

    #[test]
    fn values_write_back_canonically_and_in_order() {
        let text = r#"{"b":1,"a":[1.5,-0,"x\n",null,true,{"z":1e5,"y":{}}]}"#;
        let v = parse(text).ok().flatten().unwrap_or(Value::Null);
        let mut c = Vec::new();
        write_canonical(&mut c, &v);
        assert_eq!(
            c,
            br#"{"a":[1.5,0,"x\n",null,true,{"y":{},"z":100000.0}],"b":1}"#
        );
        let mut d = Vec::new();
        write_dumps(&mut d, &v);
        assert_eq!(
            d,
            br#"{"b":1,"a":[1.5,0,"x\n",null,true,{"z":100000.0,"y":{}}]}"#
        );
        assert_eq!(
            parse(r#"{"a":1,"a":2}"#),
            Err(Unsupported("a key twice in one object"))
        );
        assert!(parse(r#""\ud800""#).is_err());
        assert_eq!(parse("{").ok().flatten(), None);
    }

    #[test]
    fn timestamps_convert_as_the_python_importer_does() {
        assert_eq!(
            &to_ts("2026-03-01T10:00:00.5Z").unwrap_or(EPOCH_TS),
            b"2026-03-01T10:00:00.500000Z"
        );
        assert!(to_ts("2026-03-01T10:00:00Z").is_err());
        assert!(to_ts("2026-03-01T10:00:00+01:00").is_err());
    }
}
