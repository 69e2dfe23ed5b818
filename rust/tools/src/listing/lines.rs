//! What a first or last line says: the session-meta's fields, an envelope's
//! `ts` and `type` (from the canonical end of a line this library wrote, read
//! without parsing, or from the line parsed by the strict reader load uses:
//! a line it refuses is damaged here as it is to load), and whether a last
//! line makes a tool call.

use transcript_core::json::{JsonError, Kind, Number, Reader};

use super::{Fields, LastLine, Meta, Text};

/// A last line that starts within [`TAIL`](super::TAIL) of its end: the
/// canonical end of a line this library wrote, else the line parsed.
pub(super) fn last_line(raw: &[u8]) -> LastLine {
    if raw.starts_with(br#"{"id":""#) {
        if let Some(fields) = canonical_end(raw) {
            return Some(fields);
        }
    }
    parsed(raw)
}

/// The line's `ts` and `type` when it is a JSON object, None when it is
/// another value or no JSON.
pub(super) fn parsed(raw: &[u8]) -> LastLine {
    envelope_fields(raw).ok().flatten()
}

/// The `ts` and `type` of a line that ends `"ts":"…","type":"…","v":N}`, the
/// end of every line this library writes (the canonical key order puts them
/// last), read without parsing the line; None for any other ending.
pub(super) fn canonical_end(raw: &[u8]) -> Option<Fields> {
    // `[ \t\r]*` after the brace.
    let end = raw.iter().rposition(|b| !matches!(b, b' ' | b'\t' | b'\r')).map_or(0, |i| i + 1);
    let rest = raw.get(..end)?.strip_suffix(b"}")?;
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let rest = rest.get(..rest.len() - digits)?.strip_suffix(b"\",\"v\":")?;
    // `quoted_tail` leaves each value's opening quote on what comes before.
    let (rest, type_) = quoted_tail(rest)?;
    let (rest, ts) = quoted_tail(rest.strip_suffix(b"\",\"type\":\"")?)?;
    if !rest.ends_with(b"\"ts\":\"") {
        return None;
    }
    // Bytes that are not UTF-8 are for the strict reader to refuse.
    let text = |b: &[u8]| simdutf8::basic::from_utf8(b).is_ok().then(|| b.to_vec());
    Some(Fields { ts: Some(text(ts)?), type_: Some(text(type_)?) })
}

/// Splits `bytes` before its trailing run of bytes that are neither `"` nor
/// `\`: (what comes before, the run); None when a `\` ends the run.
fn quoted_tail(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = bytes.iter().rposition(|&b| b == b'"' || b == b'\\').map_or(0, |i| i + 1);
    if at > 0 && bytes.get(at - 1) == Some(&b'\\') {
        return None;
    }
    Some((bytes.get(..at)?, bytes.get(at..)?))
}

/// A string value as its WTF-8 bytes, `None` for any other value (skipped).
fn string_or_none(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<Text>, JsonError> {
    if r.peek()? == Kind::String {
        Ok(Some(r.string(scratch)?.as_bytes().to_vec()))
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
) -> Result<bool, JsonError> {
    if r.peek()? == Kind::String {
        Ok(r.string(scratch)?.as_bytes() == want.as_bytes())
    } else {
        r.skip_value()?;
        Ok(false)
    }
}

/// Calls `each(key, r)` for each member of the object `r` is at; `each`
/// reads or skips the member's value. Any other value is skipped: false.
pub(super) fn members<'a>(
    r: &mut Reader<'a>,
    mut each: impl FnMut(&[u8], &mut Reader<'a>) -> Result<(), JsonError>,
) -> Result<bool, JsonError> {
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(false);
    }
    let mut key = Vec::new();
    r.begin_object()?;
    while let Some(k) = r.next_key(&mut key)? {
        each(k.as_bytes(), r)?;
    }
    Ok(true)
}

/// The `ts` and `type` of a line that is a JSON object; None when it is
/// another JSON value.
fn envelope_fields(raw: &[u8]) -> Result<LastLine, JsonError> {
    let mut r = Reader::from_bytes(raw)?;
    let mut fields = Fields { ts: None, type_: None };
    let mut scratch = Vec::new();
    let object = members(&mut r, |key, r| {
        match key {
            b"ts" => fields.ts = string_or_none(r, &mut scratch)?,
            b"type" => fields.type_ = string_or_none(r, &mut scratch)?,
            _ => r.skip_value()?,
        }
        Ok(())
    })?;
    r.finish()?;
    Ok(object.then_some(fields))
}

/// The first line as a session-meta (with an `id`), the way load reads it:
/// `v` an int (its version), else the line is no envelope. None for any
/// other line.
pub(super) fn session_meta(raw: &[u8]) -> Option<Meta> {
    read_meta(raw).ok().flatten()
}

fn read_meta(raw: &[u8]) -> Result<Option<Meta>, JsonError> {
    let mut r = Reader::from_bytes(raw)?;
    let mut meta = Meta { version: Ok(()), ts: None, agent: None, model: None };
    let (mut is_meta, mut has_id, mut version) = (false, false, None);
    let mut scratch = Vec::new();
    members(&mut r, |key, r| {
        match key {
            b"id" => {
                has_id = true;
                r.skip_value()?;
            }
            b"type" => is_meta = string_is(r, &mut scratch, "session-meta")?,
            b"ts" => meta.ts = string_or_none(r, &mut scratch)?,
            // An int; a float or a bool (1.0, true) makes no envelope to load.
            b"v" => {
                version = match r.peek()? {
                    Kind::Number => match r.checked_number()? {
                        Number::Int(v) => Some(v.to_owned()),
                        Number::Float(_) => None,
                    },
                    _ => r.skip_value().map(|()| None)?,
                }
            }
            b"payload" => {
                (meta.agent, meta.model) = (None, None);
                members(r, |k, r| {
                    match k {
                        b"agent" => meta.agent = string_or_none(r, &mut scratch)?,
                        b"model" => meta.model = string_or_none(r, &mut scratch)?,
                        _ => r.skip_value()?,
                    }
                    Ok(())
                })?;
            }
            _ => r.skip_value()?,
        }
        Ok(())
    })?;
    r.finish()?;
    let Some(v) = version.filter(|_| is_meta && has_id) else {
        return Ok(None);
    };
    meta.version = if v == "1" { Ok(()) } else { Err(v) };
    Ok(Some(meta))
}

/// Whether a last line is an assistant message making a tool call: an entry
/// of its payload's `tool_calls` with a string `id`, which no tool message
/// answers when it is the last line. Duplicate keys: the last one counts, as
/// in load.
pub(super) fn makes_calls(raw: &[u8]) -> Result<bool, JsonError> {
    let mut r = Reader::from_bytes(raw)?;
    let (mut scratch, mut calls) = (Vec::new(), false);
    members(&mut r, |key, r| {
        if key != b"payload" {
            return r.skip_value();
        }
        // A later payload replaces an earlier one, an object or not.
        let (mut assistant, mut any) = (false, false);
        members(r, |k, r| {
            match k {
                b"role" => assistant = string_is(r, &mut scratch, "assistant")?,
                b"tool_calls" if r.peek()? == Kind::Array => {
                    any = false;
                    r.begin_array()?;
                    while r.next_item()? {
                        any |= call_has_id(r)?;
                    }
                }
                b"tool_calls" => {
                    any = false;
                    r.skip_value()?;
                }
                _ => r.skip_value()?,
            }
            Ok(())
        })?;
        calls = assistant && any;
        Ok(())
    })?;
    r.finish()?;
    Ok(calls)
}

/// Whether the next value is an object whose `id` is a string.
fn call_has_id(r: &mut Reader<'_>) -> Result<bool, JsonError> {
    let mut has = false;
    members(r, |k, r| {
        if k == b"id" {
            has = r.peek()? == Kind::String;
        }
        r.skip_value()
    })?;
    Ok(has)
}
