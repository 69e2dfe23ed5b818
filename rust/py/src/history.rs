//! What a transcript's live list holds and what replay did to it: the reads
//! behind `Transcript.live_*`, `later` and the `*_effect` accessors.

use std::fs::File;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use transcript_core::envelope::{member_span_at, member_spans, EnvelopeType, Span};
use transcript_core::transcript::{self as core, Index, LineRec, LiveMessage, Source, WHOLE};

use crate::decode::{loads, DecodeError};
use crate::errors::corrupt_at;
use crate::lines::{read_line_into, rec_at};

/// Where a message comes from, for Python: `(envelope index, replacement
/// position or None)`.
pub(crate) type Place = (u32, Option<u32>);

/// What `show` says of one message an elision stubbed: its line index, role,
/// `tool_call_id` and the size of the content it had.
pub(crate) type ElisionRow<'py> = (u32, Bound<'py, PyAny>, Bound<'py, PyAny>, Option<u64>);

pub(crate) fn place(at: Source) -> Place {
    (at.line, (at.part != WHOLE).then_some(at.part))
}

pub(crate) fn places(at: &[Source]) -> Vec<Place> {
    at.iter().copied().map(place).collect()
}

/// The replay's history: read-only transcripts keep it.
pub(crate) fn history(t: &core::Transcript) -> PyResult<&core::History> {
    t.history
        .as_ref()
        .ok_or_else(|| PyValueError::new_err("only a read-only transcript keeps its history"))
}

/// Where the replacement message `at` is in its compaction's line.
pub(crate) fn part_span(t: &core::Transcript, at: Source) -> PyResult<Span> {
    let part = t.part(at.line, at.part);
    part.map(|p| p.span).ok_or_else(|| PyValueError::new_err("no such replacement message"))
}

pub(crate) fn not_a(what: &str) -> PyErr {
    PyValueError::new_err(format!("not {what} of this transcript"))
}

/// The last line read and its bytes: the messages of one compaction's
/// replacement are next to each other in the live list and share their line,
/// which is read once for all of them.
#[derive(Default)]
pub(crate) struct Kept(Option<u32>, Vec<u8>);

impl Kept {
    pub(crate) fn get(
        &mut self,
        file: &File,
        index: &Index,
        line: u32,
    ) -> PyResult<(LineRec, &[u8])> {
        let rec = rec_at(index, line as usize)?;
        if self.0 != Some(line) {
            self.0 = None;
            read_line_into(file, &rec, &mut self.1)?;
            self.0 = Some(line);
        }
        Ok((rec, &self.1))
    }
}

/// The value at `path` in `bytes`, the line of `rec` (None if it has none).
pub(crate) fn decode_at<'py>(
    py: Python<'py>,
    rec: &LineRec,
    bytes: &[u8],
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let span = member_span_at(bytes, path).map_err(corrupt_at(rec))?;
    decode_span(py, bytes, span)
}

fn decode_span<'py>(
    py: Python<'py>,
    bytes: &[u8],
    at: Option<Span>,
) -> PyResult<Bound<'py, PyAny>> {
    let Some(at) = at else {
        return Ok(py.None().into_bound(py));
    };
    let part = bytes.get(at.start as usize..at.end as usize).unwrap_or_default();
    loads(py, part).map_err(DecodeError::into_pyerr)
}

/// Messages read back: each from its line, with the content of the stub an
/// elision put in its place from that elision's line.
pub(crate) struct Messages<'a> {
    t: &'a core::Transcript,
    file: &'a File,
    line: Kept,
    stub: Kept,
}

impl<'a> Messages<'a> {
    pub(crate) fn new(t: &'a core::Transcript, file: &'a File) -> Self {
        let (line, stub) = (Kept::default(), Kept::default());
        Messages { t, file, line, stub }
    }

    /// The message `at` as a payload dict: a message line's payload, a
    /// replacement message's payload, or `{"role": "user", "content":
    /// summary}` for a compaction's summary; `stub`'s content in place of its
    /// own when an elision stubbed it.
    pub(crate) fn dict<'py>(
        &mut self,
        py: Python<'py>,
        at: Source,
        stub: Option<(u32, Span)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (rec, bytes) = self.line.get(self.file, &self.t.index, at.line)?;
        let message = if at.part != WHOLE {
            decode_span(py, bytes, Some(part_span(self.t, at)?))?.cast_into::<PyDict>()?
        } else if rec.kind == EnvelopeType::Compaction {
            let d = PyDict::new(py);
            d.set_item("role", "user")?;
            let summary = decode_at(py, &rec, bytes, &["payload", "summary"])?;
            d.set_item("content", summary)?;
            d
        } else {
            decode_at(py, &rec, bytes, &["payload"])?.cast_into::<PyDict>()?
        };
        self.stub(py, &message, stub)?;
        Ok(message)
    }

    fn stub(
        &mut self,
        py: Python<'_>,
        message: &Bound<'_, PyDict>,
        stub: Option<(u32, Span)>,
    ) -> PyResult<()> {
        if let Some((line, span)) = stub {
            let (_, bytes) = self.stub.get(self.file, &self.t.index, line)?;
            message.set_item("content", decode_span(py, bytes, Some(span))?)?;
        }
        Ok(())
    }

    /// The id of the message `at`: its line's envelope id, or
    /// `"<compaction id>:<k>"` for the `k`-th message of a replacement.
    pub(crate) fn id<'py>(&mut self, py: Python<'py>, at: Source) -> PyResult<Bound<'py, PyAny>> {
        let (rec, bytes) = self.line.get(self.file, &self.t.index, at.line)?;
        let id = decode_at(py, &rec, bytes, &["id"])?;
        if at.part == WHOLE {
            Ok(id)
        } else {
            id.add(format!(":{}", at.part))
        }
    }

    /// `(id, payload dict, line number, elided)` of the live message `m`.
    pub(crate) fn entry<'py>(
        &mut self,
        py: Python<'py>,
        m: &LiveMessage,
    ) -> PyResult<Bound<'py, PyAny>> {
        let at = m.source();
        let (rec, bytes) = self.line.get(self.file, &self.t.index, at.line)?;
        let (id, d) = if at.part == WHOLE && rec.kind == EnvelopeType::Message {
            // A message line: its id and payload found in one pass.
            let spans = member_spans(bytes, &["id", "payload"]).map_err(corrupt_at(&rec))?;
            let id = decode_span(py, bytes, spans[0])?;
            let d = decode_span(py, bytes, spans[1])?.cast_into::<PyDict>()?;
            self.stub(py, &d, m.stub())?;
            (id, d)
        } else {
            (self.id(py, at)?, self.dict(py, at, m.stub())?)
        };
        (id, d, rec.number, m.stub().is_some()).into_pyobject(py).map(Bound::into_any)
    }
}

/// A list of `each` live message of `t` as read by `read`.
pub(crate) fn live_list<'py, T: IntoPyObject<'py>>(
    py: Python<'py>,
    t: &core::Transcript,
    file: &File,
    read: impl Fn(&mut Messages<'_>, &LiveMessage) -> PyResult<T>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut messages = Messages::new(t, file);
    for m in &t.live {
        list.append(read(&mut messages, m)?)?;
    }
    Ok(list)
}

pub(crate) fn elided(t: &core::Transcript, index: u32) -> PyResult<&[core::Elided]> {
    let elisions = &history(t)?.elisions;
    let items = elisions.get(&index).ok_or_else(|| not_a("an elision"))?;
    Ok(items)
}
