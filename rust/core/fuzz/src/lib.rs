//! What the fuzz targets share: a JSON value tree built with the core's pull
//! reader, the same tree written with the core's canonical primitives, and a
//! `ReadAt` that answers in short pieces.
//!
//! Only the core crate's public functions are used: the targets check what the
//! binding calls, not a copy of it.

use std::collections::BTreeMap;
use std::io;

use transcript_core::canonical::{compare_keys, write_f64, write_str};
use transcript_core::json::{parse_float, JsonError, Kind, Number, Reader, MAX_DEPTH};
use transcript_core::scan::ReadAt;

/// A JSON value as the reader decodes it: numbers keep their text, strings
/// their WTF-8 bytes, objects their last value per key (as Python's json).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `null`
    Null,
    /// `true`/`false`
    Bool(bool),
    /// An int's text.
    Int(String),
    /// A float's text.
    Float(String),
    /// WTF-8 bytes, and whether they hold a lone surrogate.
    Str(Vec<u8>, bool),
    /// Items in order.
    Array(Vec<Value>),
    /// Last value per key.
    Object(BTreeMap<Vec<u8>, Value>),
}

/// What building a value saw besides the tree.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// A number Python cannot hold (an int over 4300 digits, a float out of range).
    pub unholdable_number: bool,
    /// A string with a lone surrogate.
    pub lone_surrogate: bool,
    /// The deepest nesting of containers.
    pub depth: usize,
}

/// Reads one whole value (whitespace around it allowed) with the core's reader,
/// numbers checked for syntax only: the tail check's notion of a value.
pub fn read_value(bytes: &[u8]) -> Result<(Value, Seen), JsonError> {
    let mut r = Reader::from_bytes(bytes)?;
    let mut seen = Seen::default();
    let v = build(&mut r, &mut seen, 0)?;
    r.finish()?;
    Ok((v, seen))
}

fn build(r: &mut Reader<'_>, seen: &mut Seen, depth: usize) -> Result<Value, JsonError> {
    let mut scratch = Vec::new();
    Ok(match r.peek()? {
        Kind::Null => {
            r.null()?;
            Value::Null
        }
        Kind::Bool => Value::Bool(r.boolean()?),
        Kind::Number => {
            let n = r.number()?;
            match n {
                Number::Int(t) => {
                    if t.trim_start_matches('-').len() > transcript_core::json::MAX_INT_DIGITS {
                        seen.unholdable_number = true;
                    }
                    Value::Int(t.to_string())
                }
                Number::Float(t) => {
                    if parse_float(t).is_err() {
                        seen.unholdable_number = true;
                    }
                    Value::Float(t.to_string())
                }
            }
        }
        Kind::String => {
            let s = r.string(&mut scratch)?;
            let lone = matches!(s, transcript_core::json::JStr::Wtf8(_));
            seen.lone_surrogate |= lone;
            Value::Str(s.as_bytes().to_vec(), lone)
        }
        Kind::Array => {
            r.begin_array()?;
            seen.depth = seen.depth.max(depth + 1);
            let mut items = Vec::new();
            while r.next_item()? {
                items.push(build(r, seen, depth + 1)?);
            }
            Value::Array(items)
        }
        Kind::Object => {
            r.begin_object()?;
            seen.depth = seen.depth.max(depth + 1);
            let mut map = BTreeMap::new();
            let mut key_buf = Vec::new();
            loop {
                let key = match r.next_key(&mut key_buf)? {
                    None => break,
                    Some(k) => {
                        if matches!(k, transcript_core::json::JStr::Wtf8(_)) {
                            seen.lone_surrogate = true;
                        }
                        k.as_bytes().to_vec()
                    }
                };
                let v = build(r, seen, depth + 1)?;
                map.insert(key, v);
            }
            Value::Object(map)
        }
    })
}

/// `value` as canonical JSON, with the core's primitives: keys sorted by
/// [`compare_keys`], floats as Python's `repr`, strings escaped as `json.dumps`.
/// None when a float is not finite or the value nests deeper than the limit.
pub fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Option<()> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(t) => out.extend_from_slice(t.as_bytes()),
        Value::Float(t) => {
            let f = parse_float(t).ok()?;
            write_f64(out, f).ok()?;
        }
        Value::Str(b, _) => write_str(out, b),
        Value::Array(items) => {
            if depth >= MAX_DEPTH {
                return None;
            }
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, v, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let mut keys: Vec<&Vec<u8>> = map.keys().collect();
            keys.sort_by(|a, b| compare_keys(a, b));
            out.push(b'{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_value(out, &map[*k], depth + 1)?;
            }
            out.push(b'}');
        }
    }
    Some(())
}

/// Bytes served by `read_at` at most `step` at a time (never 0 before the end),
/// so that every caller's loop over short reads runs.
pub struct Trickle<'a> {
    /// The bytes.
    pub bytes: &'a [u8],
    /// The most one read returns (at least 1).
    pub step: usize,
}

impl ReadAt for Trickle<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let cap = buf.len().min(self.step.max(1));
        self.bytes.read_at(&mut buf[..cap], offset)
    }
}

/// The non-blank lines of `buf` by the simplest reading of the contract: split
/// at `\n`, number each piece from 1, drop the blank ones (only spaces, tabs,
/// `\r`); a last piece without `\n` counts unless it is empty.
/// `(start, end, number)` each, and the count of lines.
pub fn naive_lines(buf: &[u8]) -> (Vec<(usize, usize, u64)>, u64) {
    let mut out = Vec::new();
    let mut start = 0;
    let mut number = 0u64;
    while start < buf.len() {
        let end = buf[start..].iter().position(|&b| b == b'\n').map_or(buf.len(), |i| start + i);
        number += 1;
        if !buf[start..end].iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r') {
            out.push((start, end, number));
        }
        start = end + 1;
    }
    (out, number)
}
