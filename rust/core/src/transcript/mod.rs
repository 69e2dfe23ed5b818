//! The envelope index and replay: what load builds from a file and what every
//! append extends, through the same code, so that the state after a load is the
//! state the writer had.
//!
//! The index keeps a few words per line (where it is, its number, type and, for
//! a message, role) and an id table; payloads stay in the file. Replay keeps the
//! live message list as references to lines (or to one message of a
//! compaction's replacement), plus what an elision put in place of a message's
//! content: enough to build `messages` and `entries` without a second pass. A
//! reader that shows a transcript can also ask replay to keep its [`History`]:
//! what each compaction, elision, rewind and settle did.
//!
//! Messages, compactions (with or without a replacement), elisions and rewinds
//! compose in file order, each applied to the live list the lines before it left.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

// Keyed by line numbers and places in the file, which no writer chooses; what
// is keyed by a file's bytes (ids, digests, type names) gets a seeded hash.
use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::io;

use crate::envelope::{
    id_text, member_span_at, member_spans, string_size_at, Detail, Envelope, EnvelopeType, Id,
    LineError, Part, Role, Span,
};
use crate::json::string_size;
use crate::scan::{is_blank, ReadAt};
use crate::stamp::IdGen;
use crate::threads::spawn_or_run;

mod error;
mod ids;
mod index;
mod load;
mod replay;

pub use self::error::*;
use self::ids::*;
pub use self::index::*;
pub use self::load::*;
pub use self::replay::*;

#[cfg(test)]
mod load_tests;
#[cfg(test)]
pub(crate) mod replay_tests;
