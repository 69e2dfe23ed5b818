//! What a first or last line says: the session-meta's fields, an envelope's
//! `ts` and `type` (from the canonical end of a line this library wrote, read
//! without parsing, or from the line parsed), and whether Python's `json`
//! might read a line this reader refuses.

use transcript_core::json::{JStr, Kind, Number, Reader};

use super::blocks::is_blank_byte;
use super::{Bad, Fields, LastLine, Meta, Stop};

/// A last line that starts within [`TAIL`](super::TAIL) of its end: the
/// canonical end of a line this library wrote, else the line parsed.
pub(super) fn last_line(raw: &[u8]) -> Result<LastLine, Stop> {
    if raw.starts_with(br#"{"id":""#) {
        if let Some(fields) = canonical_end(raw)? {
            return Ok(Some(fields));
        }
    }
    parsed_or_defer(raw)
}

/// The line's `ts` and `type` when it is a JSON object, None when it is
/// another value or no JSON; deferred when Python's `json` might read what
/// this reader refuses.
pub(super) fn parsed_or_defer(raw: &[u8]) -> Result<LastLine, Stop> {
    match envelope_fields(raw) {
        Ok(fields) => Ok(fields),
        Err(Bad::Invalid) if !python_might_read(raw) => Ok(None),
        Err(_) => Err(Stop::Defer),
    }
}

/// Whether Python's `json.loads(raw)` might read a dict where this reader
/// refuses one: the value ends with `}` (and held `NaN`, a lone surrogate's
/// UTF-8, a float too big for a double, deeper nesting than ours…), or the
/// bytes start as `json.loads` takes for UTF-16, UTF-32 or a BOM.
pub(super) fn python_might_read(raw: &[u8]) -> bool {
    let trimmed = raw
        .iter()
        .rposition(|&b| !is_blank_byte(b))
        .and_then(|i| raw.get(..=i))
        .unwrap_or(&[]);
    trimmed.last() == Some(&b'}')
        || raw.iter().take(4).any(|&b| b == 0)
        || matches!(raw.first(), Some(0xEF | 0xFE | 0xFF))
}

/// The `ts` and `type` of a line that ends `"ts":"…","type":"…","v":N}`, the
/// end of every line this library writes (the canonical key order puts them
/// last), read without parsing the line; None for any other ending.
pub(super) fn canonical_end(raw: &[u8]) -> Result<Option<Fields>, Stop> {
    let mut end = raw.len();
    // `[ \t\r]*` after the brace.
    while end > 0 && matches!(raw.get(end - 1), Some(b' ' | b'\t' | b'\r')) {
        end -= 1;
    }
    let Some(rest) = raw.get(..end).and_then(|r| r.strip_suffix(b"}")) else {
        return Ok(None);
    };
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Ok(None);
    }
    let Some(rest) = rest
        .get(..rest.len() - digits)
        .and_then(|r| r.strip_suffix(br#"","v":"#))
    else {
        return Ok(None);
    };
    let Some((rest, type_)) = quoted_tail(rest) else {
        return Ok(None);
    };
    let Some(rest) = rest.strip_suffix(br#"","type":"#) else {
        return Ok(None);
    };
    let Some((rest, ts)) = quoted_tail(rest) else {
        return Ok(None);
    };
    if !rest.ends_with(br#""ts":"#) {
        return Ok(None);
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| Stop::Defer)
    };
    Ok(Some(Fields {
        ts: Some(text(ts)?),
        type_: Some(text(type_)?),
    }))
}

/// Splits `bytes` before its trailing run of bytes that are neither `"` nor
/// `\`: (what comes before, the run); None when a `\` ends the run.
fn quoted_tail(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = bytes
        .iter()
        .rposition(|&b| b == b'"' || b == b'\\')
        .map_or(0, |i| i + 1);
    if at > 0 && bytes.get(at - 1) == Some(&b'\\') {
        return None;
    }
    Some((bytes.get(..at)?, bytes.get(at..)?))
}

/// A string value as an owned `String`, `None` for any other value (skipped);
/// a lone surrogate defers.
fn string_or_none(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<String>, Bad> {
    if r.peek()? == Kind::String {
        match r.string(scratch)? {
            JStr::Text(s) => Ok(Some(s.to_owned())),
            JStr::Wtf8(_) => Err(Bad::Defer),
        }
    } else {
        r.skip_value()?;
        Ok(None)
    }
}

/// Whether the next value is the string `want` (any other value is skipped).
pub(super) fn string_is(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
    want: &str,
) -> Result<bool, Bad> {
    if r.peek()? == Kind::String {
        Ok(matches!(r.string(scratch)?, JStr::Text(s) if s == want))
    } else {
        r.skip_value()?;
        Ok(false)
    }
}

/// The `ts` and `type` of a line that is a JSON object; None when it is
/// another JSON value.
fn envelope_fields(raw: &[u8]) -> Result<LastLine, Bad> {
    let mut r = Reader::from_bytes(raw)?;
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        r.finish()?;
        return Ok(None);
    }
    let mut fields = Fields {
        ts: None,
        type_: None,
    };
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"ts" => fields.ts = string_or_none(&mut r, &mut value_scratch)?,
            b"type" => fields.type_ = string_or_none(&mut r, &mut value_scratch)?,
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    Ok(Some(fields))
}

/// The first line as a version 1 session-meta (with an `id`); anything else
/// is for the reference reader.
pub(super) fn session_meta(raw: &[u8]) -> Result<Meta, Bad> {
    let mut r = Reader::from_bytes(raw)?;
    let mut meta = Meta {
        ts: None,
        agent: None,
        model: None,
    };
    let (mut is_meta, mut has_id, mut v1) = (false, false, false);
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"id" => {
                has_id = true;
                r.skip_value()?;
            }
            b"type" => {
                is_meta =
                    string_or_none(&mut r, &mut value_scratch)?.as_deref() == Some("session-meta")
            }
            b"ts" => meta.ts = string_or_none(&mut r, &mut value_scratch)?,
            b"v" => {
                // Only the int 1 here: whatever else it is (1.0 and true equal
                // 1 in Python), the reference decides.
                v1 = if r.peek()? == Kind::Number {
                    r.checked_number()? == Number::Int("1")
                } else {
                    r.skip_value()?;
                    false
                };
            }
            b"payload" => {
                meta.agent = None;
                meta.model = None;
                if r.peek()? == Kind::Object {
                    r.begin_object()?;
                    let mut inner = Vec::new();
                    while let Some(k) = r.next_key(&mut inner)? {
                        match k.as_bytes() {
                            b"agent" => meta.agent = string_or_none(&mut r, &mut value_scratch)?,
                            b"model" => meta.model = string_or_none(&mut r, &mut value_scratch)?,
                            _ => r.skip_value()?,
                        }
                    }
                } else {
                    r.skip_value()?;
                }
            }
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    if is_meta && has_id && v1 {
        Ok(meta)
    } else {
        Err(Bad::Defer)
    }
}
