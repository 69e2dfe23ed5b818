//! Reading what a line says: its members found and decoded with the core's
//! JSON reader, from text checked as UTF-8 once; a message payload walked for
//! the members its row takes, and a content made text.

pub(super) use transcript_core::envelope::member_spans_in_text as members;
use transcript_core::envelope::Span;
use transcript_core::json::{JStr, JsonError, Kind, Number, Reader};
use transcript_core::transcript::{LineRec, LoadError};

pub(super) fn malformed(rec: &LineRec) -> impl Fn(JsonError) -> LoadError + '_ {
    move |e| LoadError::Line {
        line: rec.number,
        error: transcript_core::envelope::LineError::Malformed(e),
    }
}

pub(super) fn slice(text: &str, at: Span) -> &str {
    text.get(at.start as usize..at.end as usize).unwrap_or_default()
}

/// `line` as text: every line is checked once (with SIMD), then read through
/// slices of it, never checked again.
pub(super) fn utf8<'l>(line: &'l [u8], rec: &LineRec) -> Result<&'l str, LoadError> {
    simdutf8::basic::from_utf8(line)
        .map_err(|_| malformed(rec)(JsonError { offset: 0, reason: "invalid UTF-8" }))
}

/// The JSON string `value` decoded (WTF-8), or None when it is not a string.
pub(super) fn string_of<'s>(
    value: &'s str,
    scratch: &'s mut Vec<u8>,
) -> Result<Option<&'s [u8]>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::String {
        return Ok(None);
    }
    let s = r.string(scratch)?;
    Ok(Some(match s {
        JStr::Text(t) => t.as_bytes(),
        JStr::Wtf8(b) => b,
    }))
}

/// The JSON string `value`, owned, or None.
pub(super) fn owned_string(value: Option<&str>) -> Result<Option<Vec<u8>>, JsonError> {
    let Some(value) = value else { return Ok(None) };
    let mut scratch = Vec::new();
    Ok(string_of(value, &mut scratch)?.map(<[u8]>::to_vec))
}

/// The JSON number `value` as an integer, or None (a float, or not a number).
pub(super) fn int_of(value: &str) -> Result<Option<i64>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::Number {
        return Ok(None);
    }
    Ok(match r.number()? {
        Number::Int(text) => text.parse().ok(),
        Number::Float(_) => None,
    })
}

/// The JSON number `value` as a float, or None (not a number).
pub(super) fn float_of(value: &str) -> Result<Option<f64>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::Number {
        return Ok(None);
    }
    Ok(match r.number()? {
        Number::Int(text) | Number::Float(text) => text.parse().ok(),
    })
}

pub(super) fn is_null(value: &str) -> bool {
    value == "null"
}

/// The spans of the items of the JSON array `value` (empty when it is not one).
pub(super) fn items_of(value: &str) -> Result<Vec<Span>, JsonError> {
    let mut r = Reader::new(value);
    let mut out = Vec::new();
    if r.peek()? != Kind::Array {
        return Ok(out);
    }
    r.begin_array()?;
    while r.next_item()? {
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        out.push(Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(r.offset()).unwrap_or(u32::MAX),
        });
    }
    Ok(out)
}

pub(super) fn span_of(start: usize, end: usize) -> Span {
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(end).unwrap_or(u32::MAX),
    }
}

/// The string `r` is at, decoded and owned; None (and the value skipped) when
/// it is not a string.
pub(super) fn read_string(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Option<Vec<u8>>, JsonError> {
    if r.peek()? != Kind::String {
        r.skip_value()?;
        return Ok(None);
    }
    Ok(Some(r.string(scratch)?.as_bytes().to_vec()))
}

/// What a message row takes from a message payload.
#[derive(Debug, Default)]
pub(super) struct MessageFields {
    pub(super) role: Option<Vec<u8>>,
    pub(super) name: Option<Vec<u8>>,
    pub(super) tool_call_id: Option<Vec<u8>>,
    // The content's text is at the end of the text column's data (see `walk_message`).
    pub(super) has_text: bool,
    // That text may hold a lone surrogate (WTF-8); else it is UTF-8, decoded
    // from a `str`, and not checked again.
    pub(super) text_wtf8: bool,
    // Where `tool_calls` is in the text walked.
    pub(super) tool_calls: Option<Span>,
    pub(super) sticky: bool,
}

/// Reads the message payload `r` is at (in `text`, the text `r` reads),
/// decoding the members a row takes as it meets them; the content's text is
/// appended to `out` (the text column's data: the row is ended by the caller,
/// see [`FileState::message`](super::FileState::message)). `r` ends past the
/// payload.
pub(super) fn walk_message(
    r: &mut Reader<'_>,
    text: &str,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<MessageFields, JsonError> {
    let mut f = MessageFields::default();
    let row_start = out.len();
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(f);
    }
    r.begin_object()?;
    let mut key_buf = Vec::new();
    let (mut sticky, mut sysprompt, mut depth) = (false, false, false);
    loop {
        let key = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => k.as_bytes().to_owned(),
        };
        match &key[..] {
            b"role" => f.role = read_string(r, scratch)?,
            b"name" => f.name = read_string(r, scratch)?,
            b"tool_call_id" => f.tool_call_id = read_string(r, scratch)?,
            b"content" => {
                let kind = r.peek()?;
                // A later `content` wins (duplicate keys): the earlier one's text goes.
                out.truncate(row_start);
                match kind {
                    Kind::String => {
                        f.text_wtf8 = r.string_into(out)?;
                        f.has_text = true;
                    }
                    Kind::Null => {
                        r.null()?;
                        f.has_text = false;
                    }
                    _ => {
                        let start = r.offset();
                        r.skip_value()?;
                        let mut built = Vec::new();
                        f.has_text =
                            content_text(slice(text, span_of(start, r.offset())), &mut built)?;
                        out.extend_from_slice(&built);
                        f.text_wtf8 = true;
                    }
                }
            }
            b"tool_calls" => {
                r.peek()?;
                let start = r.offset();
                r.skip_value()?;
                f.tool_calls = Some(span_of(start, r.offset()));
            }
            b"sticky" | b"sysprompt" => {
                let on = match r.peek()? {
                    Kind::Bool => r.boolean()?,
                    _ => {
                        r.skip_value()?;
                        false
                    }
                };
                if key == b"sticky" {
                    sticky = on;
                } else {
                    sysprompt = on;
                }
            }
            b"depth" => {
                depth = r.peek()? != Kind::Null;
                r.skip_value()?;
            }
            _ => r.skip_value()?,
        }
    }
    f.sticky = sticky || sysprompt || depth;
    Ok(f)
}

/// A message's content as text to read: a string as it is; a list of parts
/// with each text part's `text` and `[type]` for any other part, joined by
/// newlines; null as None; any other value as its JSON text.
pub(super) fn content_text(content: &str, out: &mut Vec<u8>) -> Result<bool, JsonError> {
    out.clear();
    let mut scratch = Vec::new();
    let mut r = Reader::new(content);
    match r.peek()? {
        Kind::Null => return Ok(false),
        Kind::String => {
            let s = r.string(&mut scratch)?;
            out.extend_from_slice(s.as_bytes());
        }
        Kind::Array => {
            for (k, at) in items_of(content)?.into_iter().enumerate() {
                if k > 0 {
                    out.push(b'\n');
                }
                let item = slice(content, at);
                let found = members(item, &["type", "text"])?;
                let kind = match found[0] {
                    Some(s) => owned_string(Some(slice(item, s)))?,
                    None => None,
                };
                let text = match found[1] {
                    Some(s) => string_of(slice(item, s), &mut scratch)?,
                    None => None,
                };
                match (kind.as_deref(), text) {
                    (Some(b"text"), Some(t)) => out.extend_from_slice(t),
                    (Some(kind), _) => {
                        out.push(b'[');
                        out.extend_from_slice(kind);
                        out.push(b']');
                    }
                    (None, _) if item.starts_with('{') => out.extend_from_slice(b"[part]"),
                    (None, _) => out.extend_from_slice(item.as_bytes()),
                }
            }
        }
        _ => out.extend_from_slice(content.as_bytes()),
    }
    Ok(true)
}
