//! The export tables (`sessions`, `envelopes`, `messages`, `tool_operations`)
//! as columns in Arrow's memory layout, built in one pass over a transcript's
//! lines: little-endian value buffers, `i64` offsets and UTF-8 data for text,
//! LSB-first validity bitmaps. A binding wraps them as Arrow arrays without
//! copying a value one by one (no arrow crate needed: the layout is the spec's).
//!
//! What a line says comes from the line (the payload's members, read with the
//! same JSON reader load uses); what replay made of it (live or not, its live
//! position, what later compacted, elided or rewound it, which settle settled
//! an operation, which operations are pending) comes from the core's own
//! replay and its [`History`](transcript_core::transcript::History), never
//! from a second opinion. A file load refuses is exported from peek's lenient
//! index, without any replayed state (those columns are null) and with
//! settles matched to dispatches by id.
//!
//! The pass works a budget at a time ([`FileState::fill`]): a caller can write
//! out what a batch holds and go on, so memory holds a batch, not a file.
//!
//! Buffers are little-endian, as Arrow's are on every platform this builds for.
//!
//! The parts: `arrow` holds the Arrow layouts a column is built in ([`Bits`],
//! [`Utf8`], [`Fixed`], [`Bool`], [`TextList`], [`Column`]); `tables` the four
//! tables and [`Batch`]; `timestamp` [`parse_ts`]; `payload` the reading of a
//! line's members and a message's content; `pass` [`FileState`] and [`Input`],
//! the pass over one file's envelopes; `rows` the message, summary, operation
//! and session rows the pass writes.

mod arrow;
mod pass;
mod payload;
mod rows;
mod tables;
mod timestamp;

pub use arrow::{Bits, Bool, Column, Fixed, TextList, Utf8};
pub use pass::{FileState, Input};
pub use tables::{Batch, Envelopes, Messages, Sessions, ToolOperations};
pub use timestamp::{days_from_civil, parse_ts};
