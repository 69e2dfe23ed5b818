//! One line of a transcript read as an envelope: checked whole, with only the
//! few fields replay needs pulled out. Payloads are validated and skipped, never
//! built; whoever wants one decodes it later from the line's bytes.
//!
//! By concern:
//!
//! * `types`: the envelope's types ([`Envelope`], [`EnvelopeType`], [`Role`],
//!   [`Detail`], [`Part`], [`Span`], [`Id`], [`LineError`]) and [`id_text`];
//! * `scanner`: the scanner of a line as this library writes it, which reads
//!   the bulk of every transcript;
//! * `strict`: the strict reader, [`parse_line_strict`], which decides every
//!   other line and says why a line is refused;
//! * `members`: member lookups ([`member_spans`], [`member_span_at`],
//!   [`string_size_at`]) that find members without decoding them;
//! * `tests`: the tests of all of these, the scanner checked against the
//!   strict reader.

mod members;
mod scanner;
mod strict;
mod types;

pub use members::{member_span_at, member_spans, member_spans_in_text, string_size_at};
pub(crate) use scanner::{scan_line, scan_utf8_line};
pub use strict::parse_line_strict;
pub use types::{id_text, Detail, Envelope, EnvelopeType, Id, LineError, Part, Role, Span};

use crate::json::Unsure;

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

#[cfg(test)]
mod tests;
