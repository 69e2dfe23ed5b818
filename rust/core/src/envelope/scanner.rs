//! The scanner for a line as this library writes it: canonical JSON, one of
//! the common types. It reads the bulk of every transcript and leaves any line
//! it is unsure of to the strict reader.

use super::{Detail, Envelope, EnvelopeType, Role};
use crate::json::{fast_string_end, fast_value_end, plain_run_from, Unsure};

/// What [`scan_line`] reads from a line: what replay needs, borrowed from the
/// line, nothing built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned<'a> {
    /// The envelope id (no escape in it).
    pub id: &'a [u8],
    /// Its type: a session-meta, message, grants, tool-dispatched or tool-settled.
    pub kind: EnvelopeType,
    /// A message's role, one of the four.
    pub role: Option<Role>,
    /// A message's `sticky`, `sysprompt` or `depth`.
    pub sticky: bool,
    /// A tool message's `tool_call_id`, a dispatch's `call-id`, a settle's
    /// `op-id` (when it is a string).
    pub call: Option<&'a [u8]>,
}

impl Scanned<'_> {
    /// The envelope [`parse_line_strict`](super::parse_line_strict) reads from
    /// the same line.
    pub fn envelope(&self) -> Envelope {
        let call = self.call.map(<[u8]>::to_vec);
        let detail = match self.kind {
            EnvelopeType::Message => Detail::Message {
                role: self.role.and_then(Role::wire_name).unwrap_or("").to_string(),
                sticky: self.sticky,
                tool_call_id: call,
            },
            EnvelopeType::ToolDispatched => Detail::ToolDispatched { call_id: call },
            EnvelopeType::ToolSettled => Detail::ToolSettled { op_id: call.unwrap_or_default() },
            _ => Detail::None,
        };
        Envelope { id: self.id.to_vec(), kind: self.kind, other_type: None, detail }
    }
}

// `expected` at `at` in `line`, and the offset past it.
fn expect(line: &[u8], at: usize, expected: &[u8]) -> Result<usize, Unsure> {
    match line.get(at..at + expected.len()) {
        Some(got) if got == expected => Ok(at + expected.len()),
        _ => Err(Unsure),
    }
}

// The string without escapes whose opening quote is just before `at`: its
// bytes and the offset past its closing quote.
fn plain_string(line: &[u8], at: usize) -> Result<(&[u8], usize), Unsure> {
    let end = plain_run_from(line, at);
    match line.get(end) {
        Some(b'"') => Ok((&line[at..end], end + 1)),
        _ => Err(Unsure),
    }
}

/// Reads a line written the way canonical JSON writes an envelope
/// (`{"id":…,"payload":…,"ts":…,"type":…,"v":1}`, no whitespace, no escape in
/// the id, the type or the payload's keys and the strings replay reads) of a
/// session-meta, message (one of the four roles), grants, tool-dispatched or
/// tool-settled: the bulk of every transcript. Every byte is checked as the
/// strict reader checks it; for anything else, or anything the strict reader
/// would refuse, the answer is [`Unsure`] and the strict reader decides.
pub(crate) fn scan_line(line: &[u8]) -> Result<Scanned<'_>, Unsure> {
    if simdutf8::basic::from_utf8(line).is_err() {
        return Err(Unsure);
    }
    scan_utf8_line(line)
}

/// [`scan_line`] of a line already known to be UTF-8.
pub(crate) fn scan_utf8_line(line: &[u8]) -> Result<Scanned<'_>, Unsure> {
    let at = expect(line, 0, b"{\"id\":\"")?;
    let (id, at) = plain_string(line, at)?;
    if id.is_empty() {
        return Err(Unsure);
    }
    let at = expect(line, at, b",\"payload\":")?;
    let mut role = None;
    let (mut sticky, mut sysprompt, mut depth) = (false, false, false);
    let (mut tool_call_id, mut call_id, mut op_id) = (None, None, None);
    let object = line.get(at) == Some(&b'{');
    let mut at = if !object {
        fast_value_end(line, at)?
    } else if line.get(at + 1) == Some(&b'}') {
        at + 2
    } else {
        let mut at = at + 1;
        loop {
            let (key, past) = plain_string(line, expect(line, at, b"\"")?)?;
            at = expect(line, past, b":")?;
            // A string value replay reads: its bytes (no escape), or None
            // for any other value (which is only checked).
            let string = |at: usize| -> Result<(Option<&[u8]>, usize), Unsure> {
                if line.get(at) == Some(&b'"') {
                    let (s, end) = plain_string(line, at + 1)?;
                    Ok((Some(s), end))
                } else {
                    Ok((None, fast_value_end(line, at)?))
                }
            };
            let flag = |at: usize| -> Result<(bool, usize), Unsure> {
                if line.get(at..at + 4) == Some(b"true") {
                    Ok((true, at + 4))
                } else if line.get(at..at + 5) == Some(b"false") {
                    Ok((false, at + 5))
                } else {
                    Err(Unsure)
                }
            };
            at = match key {
                b"role" => set(&mut role, string(at)?),
                b"tool_call_id" => set(&mut tool_call_id, string(at)?),
                b"call-id" => set(&mut call_id, string(at)?),
                b"op-id" => set(&mut op_id, string(at)?),
                b"sticky" => set(&mut sticky, flag(at)?),
                b"sysprompt" => set(&mut sysprompt, flag(at)?),
                b"depth" => {
                    let end = fast_value_end(line, at)?;
                    depth = &line[at..end] != b"null";
                    end
                }
                // What only the other types read: the strict reader's.
                b"replaces-through-id"
                | b"through-id"
                | b"replacement"
                | b"items"
                | b"sections" => return Err(Unsure),
                _ => fast_value_end(line, at)?,
            };
            match line.get(at) {
                Some(b',') => at += 1,
                Some(b'}') => break at + 1,
                _ => return Err(Unsure),
            }
        }
    };
    at = expect(line, at, b",\"ts\":\"")?;
    at = fast_string_end(line, at)?;
    at = expect(line, at, b",\"type\":\"")?;
    let (name, at) = plain_string(line, at)?;
    if line.get(at..) != Some(b",\"v\":1}") {
        return Err(Unsure);
    }
    let kind = EnvelopeType::from_wire(name);
    let (role, call) = match kind {
        EnvelopeType::SessionMeta | EnvelopeType::Grants => (None, None),
        _ if !object => return Err(Unsure),
        EnvelopeType::Message => {
            let role = match role {
                Some(b"user") => Role::User,
                Some(b"assistant") => Role::Assistant,
                Some(b"tool") => Role::Tool,
                Some(b"system") => Role::System,
                _ => return Err(Unsure),
            };
            (Some(role), tool_call_id.filter(|_| role == Role::Tool))
        }
        EnvelopeType::ToolDispatched => (None, call_id),
        EnvelopeType::ToolSettled => (None, Some(op_id.ok_or(Unsure)?)),
        _ => return Err(Unsure),
    };
    Ok(Scanned {
        id,
        kind,
        role,
        sticky: kind == EnvelopeType::Message && (sticky || sysprompt || depth),
        call,
    })
}

/// Stores a member's value read by the scanner and gives the offset after it.
#[inline(always)]
fn set<T>(slot: &mut T, (value, end): (T, usize)) -> usize {
    *slot = value;
    end
}
