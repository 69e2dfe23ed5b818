//! One line of a transcript read as an envelope: checked whole, with only the
//! few fields replay needs pulled out. Payloads are validated and skipped, never
//! built; whoever wants one decodes it later from the line's bytes.

use std::fmt;

use crate::json::{
    fast_string_end, fast_value_end, plain_run_from, JStr, JsonError, Kind, Number, Reader, Unsure,
};

/// The envelope types this library understands; anything else is [`EnvelopeType::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvelopeType {
    /// `session-meta`: always the first line.
    SessionMeta,
    /// `message`: one conversation message.
    Message,
    /// `grants`: the whole permission snapshot.
    Grants,
    /// `compaction`: earlier messages folded into a summary.
    Compaction,
    /// `elision`: messages' contents replaced by stubs.
    Elision,
    /// `tool-dispatched`: a tool operation about to cross to its provider.
    ToolDispatched,
    /// `tool-settled`: what became of a tool operation.
    ToolSettled,
    /// `run-context`: what the run was told about the world.
    RunContext,
    /// `rewind`: the live messages after one dropped.
    Rewind,
    /// A type this version does not know: kept, not replayed.
    Other,
}

impl EnvelopeType {
    /// The type named by a wire `type` string.
    pub fn from_wire(name: &[u8]) -> Self {
        match name {
            b"session-meta" => Self::SessionMeta,
            b"message" => Self::Message,
            b"grants" => Self::Grants,
            b"compaction" => Self::Compaction,
            b"elision" => Self::Elision,
            b"tool-dispatched" => Self::ToolDispatched,
            b"tool-settled" => Self::ToolSettled,
            b"run-context" => Self::RunContext,
            b"rewind" => Self::Rewind,
            _ => Self::Other,
        }
    }

    /// The wire `type` string; None for [`EnvelopeType::Other`], whose name is
    /// the line's own.
    pub fn wire_name(self) -> Option<&'static str> {
        Some(match self {
            Self::SessionMeta => "session-meta",
            Self::Message => "message",
            Self::Grants => "grants",
            Self::Compaction => "compaction",
            Self::Elision => "elision",
            Self::ToolDispatched => "tool-dispatched",
            Self::ToolSettled => "tool-settled",
            Self::RunContext => "run-context",
            Self::Rewind => "rewind",
            Self::Other => return None,
        })
    }
}

/// A message's role: the four every chat API has, or another one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `system`.
    System,
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `tool`.
    Tool,
    /// Any other role (`developer`, say): its name is the line's own.
    Other,
}

impl Role {
    /// The role named by a wire `role` string.
    pub fn from_wire(name: &str) -> Self {
        match name {
            "system" => Self::System,
            "user" => Self::User,
            "assistant" => Self::Assistant,
            "tool" => Self::Tool,
            _ => Self::Other,
        }
    }

    /// The wire `role` string; None for [`Role::Other`].
    pub fn wire_name(self) -> Option<&'static str> {
        Some(match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::Other => return None,
        })
    }
}

/// A byte range inside one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Offset of the first byte, from the line's start.
    pub start: u32,
    /// Offset just past the last byte.
    pub end: u32,
}

/// One message of a compaction's `replacement`: where its payload is in the
/// line, and what replay needs from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The message payload's span in the line.
    pub span: Span,
    /// `sticky`, `sysprompt` or a `depth`, as for a message line.
    pub sticky: bool,
    /// `role`.
    pub role: Box<str>,
}

/// What replay needs from a payload, by type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// Nothing (meta, grants, unknown types).
    None,
    /// A message: whether compaction keeps it, and the call it answers.
    Message {
        /// `role`.
        role: String,
        /// `sticky`, `sysprompt` or a `depth`.
        sticky: bool,
        /// `tool_call_id`, when it is a string and the role is `"tool"`: only a
        /// tool message answers a call.
        tool_call_id: Option<Id>,
    },
    /// A compaction: the id of the last message it replaces, and the messages
    /// it puts in their place when it carries a `replacement`.
    Compaction {
        /// `replaces-through-id`.
        through: Id,
        /// `replacement`, when the payload has one (an empty list included):
        /// then these go where the summary would have.
        replacement: Option<Vec<Part>>,
    },
    /// A rewind: the last live message it keeps, or None for none.
    Rewind {
        /// `through-id`.
        through: Option<Id>,
    },
    /// An elision: each item's message id and where its stub is in the line.
    Elision {
        /// `(id, stub)` per item, in order.
        items: Vec<(Id, Span)>,
    },
    /// A dispatched tool operation: the model's call id.
    ToolDispatched {
        /// `call-id`, when it is a string.
        call_id: Option<Id>,
    },
    /// A settled tool operation: the operation it names.
    ToolSettled {
        /// `op-id`.
        op_id: Id,
    },
    /// A run context: the digests of the sections this line carries the text of.
    RunContext {
        /// Digests of sections with `text`.
        carried: Vec<String>,
    },
}

/// One line, checked and read as an envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// The envelope id.
    pub id: Id,
    /// The envelope type.
    pub kind: EnvelopeType,
    /// The wire `type`, kept only for [`EnvelopeType::Other`] (the others'
    /// names are fixed).
    pub other_type: Option<Box<str>>,
    /// What replay needs from the payload.
    pub detail: Detail,
}

/// Why a line is not a usable envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// Not one JSON value.
    Malformed(JsonError),
    /// JSON, but not an envelope (a missing or mistyped field, a bad payload).
    Invalid(String),
    /// An envelope of a format version this library does not read.
    Version(String),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::Malformed(e) => write!(f, "not JSON: {e}"),
            LineError::Invalid(why) => write!(f, "not an envelope: {why}"),
            LineError::Version(v) => write!(
                f,
                "unsupported envelope version v={v} (this library reads v=1)"
            ),
        }
    }
}

impl From<JsonError> for LineError {
    fn from(e: JsonError) -> Self {
        LineError::Malformed(e)
    }
}

fn invalid<T>(why: impl Into<String>) -> Result<T, LineError> {
    Err(LineError::Invalid(why.into()))
}

fn owned(s: JStr<'_>) -> String {
    String::from_utf8_lossy(s.as_bytes()).into_owned()
}

/// An id as its line has it, decoded: WTF-8 bytes, a lone surrogate escape
/// (`"\ud800"`) kept as its three bytes. Ids are compared as these bytes, so
/// two ids that differ only in lone surrogates stay two ids (a lossy decoding
/// would make both U+FFFD).
pub type Id = Vec<u8>;

/// `id` as text for a message: itself, with each lone surrogate written as
/// its `\uXXXX` escape.
pub fn id_text(id: &[u8]) -> String {
    let mut out = String::with_capacity(id.len());
    let mut rest = id;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                return out;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                match bad {
                    // A surrogate in UTF-8's encoding scheme: ED A0..BF xx.
                    [0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF, ..] => {
                        let code = 0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F);
                        out.push_str(&format!("\\u{code:04x}"));
                        rest = &bad[3..];
                    }
                    _ => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        rest = &bad[e.error_len().unwrap_or(bad.len())..];
                    }
                }
            }
        }
    }
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

/// Reads one line (without its `\n`) as an envelope.
///
/// A line as this library writes it (canonical JSON, one of the common types)
/// is read by a scanner made for that shape; any other line, and any line that
/// scanner is unsure of, by the strict reader, which decides and says why a
/// line is refused. Both accept exactly the same lines with the same result.
pub fn parse_line(line: &[u8]) -> Result<Envelope, LineError> {
    match scan_line(line) {
        Ok(s) => Ok(s.envelope()),
        Err(Unsure) => parse_line_strict(line),
    }
}

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
    /// The envelope [`parse_line_strict`] reads from the same line.
    pub fn envelope(&self) -> Envelope {
        let call = self.call.map(<[u8]>::to_vec);
        let detail = match self.kind {
            EnvelopeType::Message => Detail::Message {
                role: self
                    .role
                    .and_then(Role::wire_name)
                    .unwrap_or("")
                    .to_string(),
                sticky: self.sticky,
                tool_call_id: call,
            },
            EnvelopeType::ToolDispatched => Detail::ToolDispatched { call_id: call },
            EnvelopeType::ToolSettled => Detail::ToolSettled {
                op_id: call.unwrap_or_default(),
            },
            _ => Detail::None,
        };
        Envelope {
            id: self.id.to_vec(),
            kind: self.kind,
            other_type: None,
            detail,
        }
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
                b"role" => {
                    let (s, end) = string(at)?;
                    role = s;
                    end
                }
                b"tool_call_id" => {
                    let (s, end) = string(at)?;
                    tool_call_id = s;
                    end
                }
                b"call-id" => {
                    let (s, end) = string(at)?;
                    call_id = s;
                    end
                }
                b"op-id" => {
                    let (s, end) = string(at)?;
                    op_id = s;
                    end
                }
                b"sticky" => {
                    let (b, end) = flag(at)?;
                    sticky = b;
                    end
                }
                b"sysprompt" => {
                    let (b, end) = flag(at)?;
                    sysprompt = b;
                    end
                }
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
            (
                Some(role),
                if role == Role::Tool {
                    tool_call_id
                } else {
                    None
                },
            )
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

/// [`parse_line`] by the strict reader alone: any RFC 8259 JSON, any key
/// order, whitespace and escapes.
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
    Ok(Envelope {
        id,
        kind,
        other_type,
        detail,
    })
}

fn detail_of(kind: EnvelopeType, p: PayloadFields) -> Result<Detail, LineError> {
    let need_object = !matches!(
        kind,
        EnvelopeType::Other | EnvelopeType::Grants | EnvelopeType::SessionMeta
    );
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
            Detail::Compaction {
                through,
                replacement,
            }
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
            None => Detail::RunContext {
                carried: Vec::new(),
            },
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

fn span(start: usize, end: usize) -> Span {
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(end).unwrap_or(u32::MAX),
    }
}

/// Where the members named `keys` are in the JSON object `value`: one span per
/// key, in `keys` order (the last of duplicate members wins), None for a key it
/// does not have; all None when `value` is not an object. Nothing but the keys
/// is decoded, so a reader can decode the few members it wants and no more.
pub fn member_spans(value: &[u8], keys: &[&str]) -> Result<Vec<Option<Span>>, JsonError> {
    let mut spans = vec![None; keys.len()];
    let mut r = Reader::from_bytes(value)?;
    if r.peek()? != Kind::Object {
        return Ok(spans);
    }
    r.begin_object()?;
    let mut key_buf = Vec::new();
    loop {
        let wanted = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => keys.iter().position(|w| w.as_bytes() == k.as_bytes()),
        };
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        if let Some(at) = wanted {
            spans[at] = Some(span(start, r.offset()));
        }
    }
    Ok(spans)
}

/// Where the value at `path` is in the JSON value `value`: each step names a
/// member of an object (the last of duplicate members wins); None when a step
/// is missing or not an object. One pass, nothing decoded but the keys:
/// `&["payload", "content"]` finds a message's content.
pub fn member_span_at(value: &[u8], path: &[&str]) -> Result<Option<Span>, JsonError> {
    let mut r = Reader::from_bytes(value)?;
    visit_at(&mut r, path, &mut |r| {
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        Ok(span(start, r.offset()))
    })
}

/// The decoded UTF-8 size of the string at `path` in `value` (see
/// [`member_span_at`]), measured in the same pass without building it:
/// `Some(Some(n))` for a string, `Some(Some(0))` for null, `Some(None)` for
/// any other value, None when there is nothing at `path`.
pub fn string_size_at(value: &[u8], path: &[&str]) -> Result<Option<Option<u64>>, JsonError> {
    let mut r = Reader::from_bytes(value)?;
    visit_at(&mut r, path, &mut |r| {
        Ok(match r.peek()? {
            Kind::String => Some(r.string_size()?),
            Kind::Null => {
                r.null()?;
                Some(0)
            }
            _ => {
                r.skip_value()?;
                None
            }
        })
    })
}

// Walks `path` down from the value `r` is at, calling `leaf` (which must read
// the value it is at) on each value found there; answers the last call's
// result. `r` ends past the value it started at.
fn visit_at<T>(
    r: &mut Reader<'_>,
    path: &[&str],
    leaf: &mut impl FnMut(&mut Reader<'_>) -> Result<T, JsonError>,
) -> Result<Option<T>, JsonError> {
    let Some((step, rest)) = path.split_first() else {
        return leaf(r).map(Some);
    };
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(None);
    }
    r.begin_object()?;
    let mut found = None;
    let mut key_buf = Vec::new();
    loop {
        let hit = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => k.as_bytes() == step.as_bytes(),
        };
        if hit {
            found = visit_at(r, rest, leaf)?;
        } else {
            r.skip_value()?;
        }
    }
    Ok(found)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Envelope, LineError> {
        parse_line(s.as_bytes())
    }

    #[test]
    fn ids_keep_their_lone_surrogates_and_are_shown_with_them_escaped() {
        let e = parse(r#"{"id":"\ud800","payload":{"content":"hi","role":"tool","tool_call_id":"\udc00x"},"ts":"t","type":"message","v":1}"#).unwrap();
        assert_eq!(e.id, b"\xed\xa0\x80");
        match &e.detail {
            Detail::Message { tool_call_id, .. } => {
                assert_eq!(tool_call_id.as_deref(), Some(&b"\xed\xb0\x80x"[..]))
            }
            other => panic!("{other:?}"),
        }
        // A pair of escapes is one code point; U+FFFD is itself.
        let pair =
            parse(r#"{"id":"\ud83d\ude00\ufffd","payload":{},"ts":"t","type":"x","v":1}"#).unwrap();
        assert_eq!(pair.id, "\u{1f600}\u{fffd}".as_bytes());
        assert_eq!(id_text(&e.id), "\\ud800");
        assert_eq!(id_text(b"a\xed\xbf\xbfb\xc3\xa9"), "a\\udfffb\u{e9}");
    }

    #[test]
    fn a_message_line() {
        let e = parse(r#"{"id":"a1","payload":{"content":"hi","role":"tool","tool_call_id":"c1"},"ts":"t","type":"message","v":1}"#).unwrap();
        assert_eq!(e.id, b"a1");
        assert_eq!(e.kind, EnvelopeType::Message);
        assert_eq!(
            e.detail,
            Detail::Message {
                role: "tool".into(),
                sticky: false,
                tool_call_id: Some("c1".into())
            }
        );
        assert_eq!(e.other_type, None);
    }

    #[test]
    fn an_unknown_type_keeps_its_name_and_the_known_ones_have_theirs() {
        let e = parse(r#"{"id":"z","payload":null,"ts":"t","type":"later-thing","v":1}"#).unwrap();
        assert_eq!(e.kind, EnvelopeType::Other);
        assert_eq!(e.other_type.as_deref(), Some("later-thing"));
        assert_eq!(e.kind.wire_name(), None);
        for name in [
            "session-meta",
            "message",
            "grants",
            "compaction",
            "elision",
            "tool-dispatched",
            "tool-settled",
            "run-context",
            "rewind",
        ] {
            let kind = EnvelopeType::from_wire(name.as_bytes());
            assert_eq!(kind.wire_name(), Some(name));
        }
        for name in ["system", "user", "assistant", "tool"] {
            assert_eq!(Role::from_wire(name).wire_name(), Some(name));
        }
        assert_eq!(Role::from_wire("developer"), Role::Other);
    }

    #[test]
    fn only_a_tool_message_answers_a_call() {
        for role in ["user", "assistant", "system"] {
            let line = format!(
                r#"{{"id":"a","payload":{{"role":"{role}","tool_call_id":"c1"}},"ts":"t","type":"message","v":1}}"#
            );
            match parse(&line).unwrap().detail {
                Detail::Message { tool_call_id, .. } => assert_eq!(tool_call_id, None, "{role}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn stickiness_follows_python_truthiness() {
        for (flags, sticky) in [
            (r#""sticky":true"#, true),
            (r#""sticky":false"#, false),
            (r#""sticky":0"#, false),
            (r#""sticky":0.0e5"#, false),
            (r#""sticky":2"#, true),
            (r#""sticky":"""#, false),
            (r#""sticky":"x""#, true),
            (r#""sticky":[]"#, false),
            (r#""sysprompt":{"a":1}"#, true),
            (r#""depth":null"#, false),
            (r#""depth":0"#, true),
        ] {
            let line = format!(
                r#"{{"id":"a","payload":{{"role":"user",{flags}}},"ts":"t","type":"message","v":1}}"#
            );
            match parse(&line).unwrap().detail {
                Detail::Message { sticky: got, .. } => assert_eq!(got, sticky, "{flags}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn any_key_order_and_whitespace_and_the_last_duplicate_wins() {
        let e = parse(r#" { "v" : 1 , "type":"grants", "id":"x", "payload" : {"grants": []}, "ts":"t", "id":"y" } "#).unwrap();
        assert_eq!((e.id.as_slice(), e.kind), (&b"y"[..], EnvelopeType::Grants));
    }

    #[test]
    fn an_elision_records_where_each_stub_is() {
        let line = r#"{"id":"e","payload":{"items":[{"id":"m1","stub":"[gone]"}]},"ts":"t","type":"elision","v":1}"#;
        let e = parse(line).unwrap();
        let Detail::Elision { items } = e.detail else {
            panic!()
        };
        assert_eq!(items.len(), 1);
        let Span { start, end } = items[0].1;
        assert_eq!(&line[start as usize..end as usize], "\"[gone]\"");
    }

    #[test]
    fn missing_fields_and_bad_versions_are_refused() {
        assert!(matches!(
            parse(r#"{"payload":{},"ts":"t","type":"x","v":1}"#),
            Err(LineError::Invalid(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"","payload":{},"ts":"t","type":"x","v":1}"#),
            Err(LineError::Invalid(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"a","ts":"t","type":"x","v":1}"#),
            Err(LineError::Invalid(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"a","payload":{},"ts":1,"type":"x","v":1}"#),
            Err(LineError::Invalid(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"a","payload":{},"ts":"t","type":"x","v":2}"#),
            Err(LineError::Version(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"a","payload":{},"ts":"t","type":"x","v":"1"}"#),
            Err(LineError::Invalid(_))
        ));
        assert!(matches!(parse(r#"[1]"#), Err(LineError::Invalid(_))));
        assert!(matches!(
            parse(r#"{"id":"a""#),
            Err(LineError::Malformed(_))
        ));
        assert!(matches!(
            parse(r#"{"id":"a","payload":{"content":"x"},"ts":"t","type":"message","v":1}"#),
            Err(LineError::Invalid(_))
        ));
    }

    #[test]
    fn member_spans_find_members_without_decoding_them() {
        let line = r#"{"id":"a","payload":{"content":"x\ny","role":"tool","role":"user","n":[1,{"role":2}]},"ts":"t","type":"message","v":1}"#;
        let spans = member_spans(line.as_bytes(), &["v", "payload", "nope", "id"]).unwrap();
        let text: Vec<_> = spans
            .iter()
            .map(|s| s.map(|s| &line[s.start as usize..s.end as usize]))
            .collect();
        assert_eq!(text[0], Some("1"));
        assert!(text[1].unwrap().starts_with(r#"{"content""#));
        assert_eq!((text[2], text[3]), (None, Some(r#""a""#)));
        let at = |line: &str, path: &[&str]| {
            member_span_at(line.as_bytes(), path)
                .unwrap()
                .map(|s| line[s.start as usize..s.end as usize].to_string())
        };
        assert_eq!(
            at(line, &["payload", "role"]).as_deref(),
            Some(r#""user""#),
            "the last duplicate wins"
        );
        assert_eq!(
            at(line, &["payload", "content"]).as_deref(),
            Some(r#""x\ny""#)
        );
        assert_eq!(at(line, &["payload", "x"]), None);
        assert_eq!(at(line, &["v"]).as_deref(), Some("1"));
        let not_object = r#"{"id":"a","payload":[1],"ts":"t","type":"x","v":1}"#;
        assert_eq!(at(not_object, &["payload", "role"]), None);
        let twice = r#"{"payload":{"role":"a"},"payload":{"n":1}}"#;
        assert_eq!(at(twice, &["payload", "role"]), None);
        let size = |line: &str, path: &[&str]| string_size_at(line.as_bytes(), path).unwrap();
        assert_eq!(size(line, &["payload", "content"]), Some(Some(3)));
        assert_eq!(size(line, &["payload", "n"]), Some(None));
        assert_eq!(size(line, &["payload", "x"]), None);
        assert_eq!(
            size(r#"{"payload":{"content":null}}"#, &["payload", "content"]),
            Some(Some(0))
        );
        assert_eq!(member_spans(b"[1]", &["a"]).unwrap(), vec![None]);
    }

    #[test]
    fn a_rewind_names_an_id_or_null_and_nothing_else() {
        let rewind = |through: &str| {
            parse(&format!(
                r#"{{"id":"r","payload":{{"through-id":{through}}},"ts":"t","type":"rewind","v":1}}"#
            ))
        };
        assert_eq!(
            rewind(r#""m1""#).unwrap().detail,
            Detail::Rewind {
                through: Some("m1".into())
            }
        );
        assert_eq!(
            rewind("null").unwrap().detail,
            Detail::Rewind { through: None }
        );
        for bad in ["1", "[]", r#"{"id":"m1"}"#] {
            assert!(matches!(rewind(bad), Err(LineError::Invalid(_))), "{bad}");
        }
        assert!(matches!(
            parse(r#"{"id":"r","payload":{},"ts":"t","type":"rewind","v":1}"#),
            Err(LineError::Invalid(_))
        ));
    }

    #[test]
    fn a_replacement_records_where_each_message_is_and_whether_it_is_sticky() {
        let line = r#"{"id":"c","payload":{"replacement":[{"content":"a","role":"user"}, {"role":"system","sysprompt":true,"x":[1]},{"depth":0,"role":"tool"}],"replaces-through-id":"m","summary":"s"},"ts":"t","type":"compaction","v":1}"#;
        let Detail::Compaction {
            through,
            replacement: Some(parts),
        } = parse(line).unwrap().detail
        else {
            panic!()
        };
        assert_eq!(through, b"m");
        let got: Vec<_> = parts
            .iter()
            .map(|p| {
                (
                    &line[p.span.start as usize..p.span.end as usize],
                    p.sticky,
                    &*p.role,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (r#"{"content":"a","role":"user"}"#, false, "user"),
                (
                    r#"{"role":"system","sysprompt":true,"x":[1]}"#,
                    true,
                    "system"
                ),
                (r#"{"depth":0,"role":"tool"}"#, true, "tool"),
            ]
        );
        let compaction = |replacement: &str| {
            parse(&format!(
                r#"{{"id":"c","payload":{{"replaces-through-id":"m","summary":"s"{replacement}}},"ts":"t","type":"compaction","v":1}}"#
            ))
        };
        let Detail::Compaction { replacement, .. } = compaction("").unwrap().detail else {
            panic!()
        };
        assert_eq!(replacement, None, "no replacement");
        let Detail::Compaction { replacement, .. } =
            compaction(r#","replacement":[]"#).unwrap().detail
        else {
            panic!()
        };
        assert_eq!(replacement, Some(vec![]), "an empty one");
        for bad in [
            "null",
            "{}",
            "[1]",
            r#"[{"content":"x"}]"#,
            r#"[{"role":1}]"#,
        ] {
            assert!(
                matches!(
                    compaction(&format!(r#","replacement":{bad}"#)),
                    Err(LineError::Invalid(_))
                ),
                "{bad}"
            );
        }
    }

    // Lines of every shape the scanner reads, and a few it leaves to the
    // strict reader.
    const SCANNED: &[&str] = &[
        r#"{"id":"f2a4d27bdcf4bb99f4bea97300000001","payload":{"agent":"a","n":[1,-2.5e3,{"x":null}]},"ts":"2026-08-09T13:10:09.492057Z","type":"session-meta","v":1}"#,
        r#"{"id":"09325626e6b58de744ab6cce00000003","payload":{"content":"a \"q\" \u00e9 日本語 🚀","role":"user"},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"2e8d4b8a8f54f8ceacaab39e00000005","payload":{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"src/d.py\"}","name":"Bash"},"id":"call_1","type":"function"}]},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"bc01bfce6a27e0dfcbf8754400000006","payload":{"arguments":{"path":"x"},"call-id":"call_1","round":0,"tool":"Bash"},"ts":"t","type":"tool-dispatched","v":1}"#,
        r#"{"id":"7c9260dc74e088a9b9492f2500000007","payload":{"content":"x\ty\n","role":"tool","tool_call_id":"call_1"},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"d08f1bb2531d6460f0caeef000000008","payload":{"op-id":"bc01bfce6a27e0dfcbf8754400000006","outcome":"completed"},"ts":"t","type":"tool-settled","v":1}"#,
        r#"{"id":"s","payload":{"content":"x","role":"system","sysprompt":true},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"d","payload":{"content":[],"depth":0,"role":"user","sticky":false},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"g","payload":{"grants":[true,false,{}]},"ts":"t","type":"grants","v":1}"#,
        r#"{"id":"g2","payload":[],"ts":"t","type":"grants","v":1}"#,
        r#"{"id":"m","payload":{},"ts":"t","type":"session-meta","v":1}"#,
        r#"{"id":"u","payload":{"role":"user","role":"tool","tool_call_id":"c","tool_call_id":7},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"x","payload":{"call-id":null},"ts":"t","type":"tool-dispatched","v":1}"#,
    ];

    #[test]
    fn the_scanner_reads_what_the_strict_reader_reads() {
        for line in SCANNED {
            let scanned = scan_line(line.as_bytes());
            assert!(scanned.is_ok(), "not scanned: {line}");
            let strict = parse_line_strict(line.as_bytes());
            assert_eq!(scanned.map(|s| s.envelope()).ok(), strict.ok(), "{line}");
        }
        for line in [
            r#"{"id": "a","payload":{},"ts":"t","type":"grants","v":1}"#,
            r#"{"id":"a","payload":{"role":"user"},"ts":"t","type":"message","v":1} "#,
            r#"{"id":"a","payload":{"role":"us\u0065r"},"ts":"t","type":"message","v":1}"#,
            r#"{"id":"a","payload":{"role":"developer"},"ts":"t","type":"message","v":1}"#,
            r#"{"id":"a","payload":{"replaces-through-id":"m","summary":"s"},"ts":"t","type":"compaction","v":1}"#,
            r#"{"id":"a","payload":{"role":"user","sticky":1},"ts":"t","type":"message","v":1}"#,
            r#"{"id":"a","payload":{},"ts":"t","type":"later-thing","v":1}"#,
            r#"{"id":"","payload":{},"ts":"t","type":"grants","v":1}"#,
        ] {
            assert!(scan_line(line.as_bytes()).is_err(), "scanned: {line}");
        }
    }

    // Every one-byte change, cut and insertion of the lines above: whatever the
    // scanner accepts, the strict reader accepts with the same envelope.
    #[test]
    fn the_scanner_accepts_nothing_the_strict_reader_refuses() {
        let mut tried = 0u64;
        let mut scanned = 0u64;
        let check = |bytes: &[u8], tried: &mut u64, scanned: &mut u64| {
            *tried += 1;
            if let Ok(s) = scan_line(bytes) {
                *scanned += 1;
                let strict = parse_line_strict(bytes);
                assert_eq!(
                    Ok(s.envelope()),
                    strict,
                    "{}",
                    String::from_utf8_lossy(bytes)
                );
            }
        };
        let replacements: &[u8] = b"\"\\{}[],:0-.eE+ntfu1a\x00\x1f\x7f\xc3\xff/ \t";
        for line in SCANNED {
            let line = line.as_bytes();
            for i in 0..line.len() {
                let mut m = line.to_vec();
                for &r in replacements {
                    m[i] = r;
                    check(&m, &mut tried, &mut scanned);
                }
                m[i] = line[i];
                check(&line[..i], &mut tried, &mut scanned);
                let mut cut = line.to_vec();
                cut.remove(i);
                check(&cut, &mut tried, &mut scanned);
                for &r in replacements {
                    let mut ins = line.to_vec();
                    ins.insert(i, r);
                    check(&ins, &mut tried, &mut scanned);
                }
            }
        }
        assert!(
            scanned > 1000 && tried > 2 * scanned,
            "{scanned} of {tried}"
        );
    }

    #[test]
    fn run_context_lists_the_sections_it_carries() {
        let e = parse(r#"{"id":"r","payload":{"facts":[],"sections":[{"digest":"d1","name":"a","text":"x"},{"digest":"d2","name":"b","rendered-in":"q"}]},"ts":"t","type":"run-context","v":1}"#).unwrap();
        assert_eq!(
            e.detail,
            Detail::RunContext {
                carried: vec!["d1".into()]
            }
        );
    }
}
