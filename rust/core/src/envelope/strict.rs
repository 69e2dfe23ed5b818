//! The strict reader of a line: any RFC 8259 JSON, any key order, whitespace
//! and escapes. It decides every line the scanner is unsure of and says why a
//! line is refused.

use super::types::span;
use super::{Detail, Envelope, EnvelopeType, Id, LineError, Part, Span};
use crate::json::{JStr, JsonError, Kind, Number, Reader};

fn invalid<T>(why: impl Into<String>) -> Result<T, LineError> {
    Err(LineError::Invalid(why.into()))
}

fn owned(s: JStr<'_>) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
}

fn id_or_skip(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<Id>, JsonError> {
    if r.peek()? == Kind::String {
        Ok(Some(r.string(scratch)?.as_bytes().to_vec()))
    } else {
        r.skip_value()?;
        Ok(None)
    }
}

/// The fields of a payload that replay may want, whatever the type: read in one
/// pass because the payload comes before `type` in canonical key order.
#[derive(Default)]
struct PayloadFields {
    is_object: bool,
    sticky: bool,
    sysprompt: bool,
    depth: bool,
    role: Option<String>,
    tool_call_id: Option<Id>,
    through: Option<Id>,
    replacement: Option<Result<Vec<Part>, String>>,
    // `through-id`: Some(Ok(None)) for null, Some(Err) for neither a string nor null.
    rewind_through: Option<Result<Option<Id>, ()>>,
    items: Option<Result<Vec<(Id, Span)>, String>>,
    call_id: Option<Id>,
    op_id: Option<Id>,
    carried: Option<Result<Vec<String>, String>>,
}

/// [`parse_line`](super::parse_line) by the strict reader alone: any RFC 8259
/// JSON, any key order, whitespace and escapes.
pub fn parse_line_strict(line: &[u8]) -> Result<Envelope, LineError> {
    let mut r = Reader::from_bytes(line)?;
    // Keys decode into one buffer and values into another, so a key can be
    // matched while its value is read.
    let mut key_buf = Vec::new();
    let mut scratch = Vec::new();
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        r.finish()?;
        return invalid("the line is not a JSON object");
    }
    r.begin_object()?;
    let mut id = None;
    let mut kind = None;
    let mut other_type = None;
    let mut ts = false;
    let mut v: Option<Result<(), String>> = None;
    let mut payload = None;
    // Duplicate keys: the last one wins, as in Python's json.
    loop {
        let key = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => k,
        };
        match key.as_bytes() {
            b"id" => id = id_or_skip(&mut r, &mut scratch)?,
            b"type" => {
                (kind, other_type) = match r.peek()? {
                    Kind::String => {
                        let name = r.string(&mut scratch)?;
                        let kind = EnvelopeType::from_wire(name.as_bytes());
                        let other =
                            (kind == EnvelopeType::Other).then(|| owned(name).into_boxed_str());
                        (Some(kind), other)
                    }
                    _ => {
                        r.skip_value()?;
                        (None, None)
                    }
                }
            }
            b"ts" => {
                ts = r.peek()? == Kind::String;
                r.skip_value()?;
            }
            b"v" => {
                v = Some(match r.peek()? {
                    Kind::Number => match r.number()? {
                        Number::Int("1") => Ok(()),
                        Number::Int(other) => Err(other.to_string()),
                        Number::Float(_) => Err("a float".into()),
                    },
                    Kind::Bool => {
                        let b = r.boolean()?;
                        Err(if b { "true".into() } else { "false".into() })
                    }
                    _ => {
                        r.skip_value()?;
                        Err("not a number".into())
                    }
                })
            }
            b"payload" => payload = Some(read_payload(&mut r)?),
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    let Some(id) = id.filter(|s| !s.is_empty()) else {
        return invalid("no non-empty string 'id'");
    };
    let Some(kind) = kind else {
        return invalid("no string 'type'");
    };
    if !ts {
        return invalid("no string 'ts'");
    }
    match v {
        None => return invalid("no 'v'"),
        Some(Err(v)) if v == "not a number" || v == "a float" || v == "true" || v == "false" => {
            return invalid(format!("'v' is {v}, not an int"));
        }
        Some(Err(v)) => return Err(LineError::Version(v)),
        Some(Ok(())) => {}
    }
    let Some(p) = payload else {
        return invalid("no 'payload'");
    };
    let detail = detail_of(kind, p)?;
    Ok(Envelope { id, kind, other_type, detail })
}

fn detail_of(kind: EnvelopeType, p: PayloadFields) -> Result<Detail, LineError> {
    let need_object =
        !matches!(kind, EnvelopeType::Other | EnvelopeType::Grants | EnvelopeType::SessionMeta);
    if need_object && !p.is_object {
        return invalid("the payload is not an object");
    }
    Ok(match kind {
        EnvelopeType::SessionMeta | EnvelopeType::Grants | EnvelopeType::Other => Detail::None,
        EnvelopeType::Message => {
            let Some(role) = p.role else {
                return invalid("a message payload needs a string 'role'");
            };
            let tool = role == "tool";
            Detail::Message {
                role,
                sticky: p.sticky || p.sysprompt || p.depth,
                tool_call_id: if tool { p.tool_call_id } else { None },
            }
        }
        EnvelopeType::Compaction => {
            let Some(through) = p.through else {
                return invalid("a compaction needs a string 'replaces-through-id'");
            };
            let replacement = match p.replacement {
                None => None,
                Some(Ok(parts)) => Some(parts),
                Some(Err(why)) => return invalid(why),
            };
            Detail::Compaction { through, replacement }
        }
        EnvelopeType::Rewind => match p.rewind_through {
            Some(Ok(through)) => Detail::Rewind { through },
            _ => return invalid("a rewind needs a 'through-id' that is a string or null"),
        },
        EnvelopeType::Elision => match p.items {
            Some(Ok(items)) => Detail::Elision { items },
            Some(Err(why)) => return invalid(why),
            None => return invalid("an elision needs 'items'"),
        },
        EnvelopeType::ToolDispatched => Detail::ToolDispatched { call_id: p.call_id },
        EnvelopeType::ToolSettled => match p.op_id {
            Some(op_id) => Detail::ToolSettled { op_id },
            None => return invalid("a tool-settled needs a string 'op-id'"),
        },
        EnvelopeType::RunContext => match p.carried {
            Some(Ok(carried)) => Detail::RunContext { carried },
            Some(Err(why)) => return invalid(why),
            None => Detail::RunContext { carried: Vec::new() },
        },
    })
}

// Python's truthiness of a JSON value, which is what `bool(d.get(...))` gives:
// false for null, false, 0, "", [] and {}.
fn truthy(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<bool, JsonError> {
    Ok(match r.peek()? {
        Kind::Null => {
            r.null()?;
            false
        }
        Kind::Bool => r.boolean()?,
        Kind::Number => match r.checked_number()? {
            Number::Int(t) | Number::Float(t) => !is_zero(t),
        },
        Kind::String => !r.string(scratch)?.as_bytes().is_empty(),
        Kind::Array => {
            r.begin_array()?;
            let mut any = false;
            while r.next_item()? {
                any = true;
                r.skip_value()?;
            }
            any
        }
        Kind::Object => {
            r.begin_object()?;
            let mut any = false;
            while r.next_key(scratch)?.is_some() {
                any = true;
                r.skip_value()?;
            }
            any
        }
    })
}

// True when a number's text is zero: no non-zero digit in its mantissa.
fn is_zero(text: &str) -> bool {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    !mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

fn string_or_skip(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<String>, JsonError> {
    if r.peek()? == Kind::String {
        Ok(Some(owned(r.string(scratch)?)))
    } else {
        r.skip_value()?;
        Ok(None)
    }
}

fn read_payload(r: &mut Reader<'_>) -> Result<PayloadFields, LineError> {
    let mut p = PayloadFields::default();
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(p);
    }
    p.is_object = true;
    let mut scratch = Vec::new();
    let mut inner = Vec::new();
    r.begin_object()?;
    loop {
        let key = match r.next_key(&mut scratch)? {
            None => break,
            Some(k) => k,
        };
        match key.as_bytes() {
            b"role" => p.role = string_or_skip(r, &mut inner)?,
            b"sticky" => p.sticky = truthy(r, &mut inner)?,
            b"sysprompt" => p.sysprompt = truthy(r, &mut inner)?,
            b"depth" => {
                p.depth = r.peek()? != Kind::Null;
                r.skip_value()?;
            }
            b"tool_call_id" => p.tool_call_id = id_or_skip(r, &mut inner)?,
            b"replaces-through-id" => p.through = id_or_skip(r, &mut inner)?,
            b"through-id" => {
                p.rewind_through = Some(match r.peek()? {
                    Kind::Null => {
                        r.null()?;
                        Ok(None)
                    }
                    Kind::String => Ok(id_or_skip(r, &mut inner)?),
                    _ => {
                        r.skip_value()?;
                        Err(())
                    }
                })
            }
            b"replacement" => p.replacement = Some(read_replacement(r, &mut inner)?),
            b"call-id" => p.call_id = id_or_skip(r, &mut inner)?,
            b"op-id" => p.op_id = id_or_skip(r, &mut inner)?,
            b"items" => p.items = Some(read_items(r, &mut inner)?),
            b"sections" => p.carried = Some(read_sections(r, &mut inner)?),
            _ => r.skip_value()?,
        }
    }
    Ok(p)
}

// A compaction's `replacement`: a list of message payloads, each an object
// with a string `role`. Only what replay needs is read from each.
fn read_replacement(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Result<Vec<Part>, String>, JsonError> {
    if r.peek()? != Kind::Array {
        r.skip_value()?;
        return Ok(Err("a compaction's 'replacement' is not a list".into()));
    }
    let mut parts = Vec::new();
    let mut bad = None;
    let mut key = Vec::new();
    r.begin_array()?;
    while r.next_item()? {
        r.peek()?;
        let start = r.offset();
        if r.peek()? != Kind::Object {
            r.skip_value()?;
            bad = Some("a replacement message is not an object");
            continue;
        }
        let (mut role, mut sticky, mut sysprompt, mut depth) = (None, false, false, false);
        r.begin_object()?;
        while let Some(k) = r.next_key(scratch)? {
            key.clear();
            key.extend_from_slice(k.as_bytes());
            match key.as_slice() {
                b"role" => role = string_or_skip(r, scratch)?,
                b"sticky" => sticky = truthy(r, scratch)?,
                b"sysprompt" => sysprompt = truthy(r, scratch)?,
                b"depth" => {
                    depth = r.peek()? != Kind::Null;
                    r.skip_value()?;
                }
                _ => r.skip_value()?,
            }
        }
        match role {
            Some(role) => parts.push(Part {
                span: span(start, r.offset()),
                sticky: sticky || sysprompt || depth,
                role: role.into_boxed_str(),
            }),
            None => bad = Some("a replacement message needs a string 'role'"),
        }
    }
    Ok(match bad {
        Some(why) => Err(why.into()),
        None => Ok(parts),
    })
}

fn read_items(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Result<Vec<(Id, Span)>, String>, JsonError> {
    if r.peek()? != Kind::Array {
        r.skip_value()?;
        return Ok(Err("an elision's 'items' is not a list".into()));
    }
    let mut items = Vec::new();
    let mut bad = None;
    r.begin_array()?;
    while r.next_item()? {
        if r.peek()? != Kind::Object {
            r.skip_value()?;
            bad = Some("an elision item is not an object");
            continue;
        }
        let mut id = None;
        let mut stub = None;
        r.begin_object()?;
        let mut key = Vec::new();
        while let Some(k) = r.next_key(scratch)? {
            key.clear();
            key.extend_from_slice(k.as_bytes());
            match key.as_slice() {
                b"id" => id = id_or_skip(r, scratch)?,
                b"stub" => {
                    r.peek()?;
                    let start = r.offset();
                    r.skip_value()?;
                    stub = Some(span(start, r.offset()));
                }
                _ => r.skip_value()?,
            }
        }
        match (id, stub) {
            (Some(id), Some(stub)) => items.push((id, stub)),
            _ => bad = Some("an elision item needs a string 'id' and a 'stub'"),
        }
    }
    Ok(match bad {
        Some(why) => Err(why.into()),
        None => Ok(items),
    })
}

fn read_sections(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Result<Vec<String>, String>, JsonError> {
    if r.peek()? != Kind::Array {
        r.skip_value()?;
        return Ok(Err("a run context's 'sections' is not a list".into()));
    }
    let mut carried = Vec::new();
    r.begin_array()?;
    let mut key = Vec::new();
    while r.next_item()? {
        if r.peek()? != Kind::Object {
            r.skip_value()?;
            continue;
        }
        let mut digest = None;
        let mut has_text = false;
        r.begin_object()?;
        while let Some(k) = r.next_key(scratch)? {
            key.clear();
            key.extend_from_slice(k.as_bytes());
            match key.as_slice() {
                b"digest" => digest = string_or_skip(r, scratch)?,
                b"text" => {
                    has_text = true;
                    r.skip_value()?;
                }
                _ => r.skip_value()?,
            }
        }
        if let (Some(d), true) = (digest, has_text) {
            carried.push(d);
        }
    }
    Ok(Ok(carried))
}
