//! The envelope's types: what a line's type and a message's role are, the
//! spans into a line, and what replay needs from a payload.

use std::fmt;

use crate::json::JsonError;

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
            LineError::Version(v) => {
                write!(f, "unsupported envelope version v={v} (this library reads v=1)")
            }
        }
    }
}

impl From<JsonError> for LineError {
    fn from(e: JsonError) -> Self {
        LineError::Malformed(e)
    }
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

pub(super) fn span(start: usize, end: usize) -> Span {
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(end).unwrap_or(u32::MAX),
    }
}
