//! What a transcript's live list holds and what replay did to it: the reads
//! behind `Transcript.live_*`, `later` and the `*_effect` accessors.

use std::fs::File;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use transcript_core::envelope::{member_spans, EnvelopeType, Span};
use transcript_core::transcript::{self as core, Source, WHOLE};

use crate::errors::{corrupt_at, load_error};
use crate::lines::{
    decode_at, decode_bytes, message_dict, message_id, place, places, rec_at, ElisionRow, Later,
    Lines, Place,
};

/// The replay's history: read-only transcripts keep it.
pub(crate) fn history(t: &core::Transcript) -> PyResult<&core::History> {
    t.history
        .as_ref()
        .ok_or_else(|| PyValueError::new_err("only a read-only transcript keeps its history"))
}

/// The live messages' ids (`"<compaction id>:<k>"` for a replacement's).
pub(crate) fn live_ids<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut lines = Lines::new(file, &t.index);
    for m in &t.live {
        list.append(message_id(py, &mut lines, m.source())?)?;
    }
    Ok(list)
}

/// The live messages as payload dicts: stubs in place of elided content,
/// `{"role": "user", "content": summary}` for a compaction's summary.
pub(crate) fn live_payloads<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut lines = Lines::new(file, &t.index);
    let mut stubs = Lines::new(file, &t.index);
    for m in &t.live {
        let d = message_dict(py, t, &mut lines, &mut stubs, m.source(), m.stub())?;
        list.append(d)?;
    }
    Ok(list)
}

/// The live messages as `(id, payload dict, line number, elided)`, the
/// payloads as `live_payloads` has them: one read of each line for both.
pub(crate) fn live_entries<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut lines = Lines::new(file, &t.index);
    let mut stubs = Lines::new(file, &t.index);
    for m in &t.live {
        let at = m.source();
        let (rec, bytes) = lines.get(at.line)?;
        let (id, d) = if at.part == WHOLE && rec.kind == EnvelopeType::Message {
            // A message line: its id and payload found in one pass.
            let spans = member_spans(bytes, &["id", "payload"]).map_err(corrupt_at(&rec))?;
            let decode = |span: Option<Span>| match span {
                Some(at) => decode_bytes(py, bytes, at),
                None => Ok(py.None().into_bound(py)),
            };
            let id = decode(spans[0])?;
            let d = decode(spans[1])?.cast_into::<PyDict>()?;
            if let Some((line, span)) = m.stub() {
                let (_, bytes) = stubs.get(line)?;
                d.set_item("content", decode_bytes(py, bytes, span)?)?;
            }
            (id, d)
        } else {
            let id = message_id(py, &mut lines, at)?;
            (
                id,
                message_dict(py, t, &mut lines, &mut stubs, at, m.stub())?,
            )
        };
        list.append((id, d, rec.number, m.stub().is_some()))?;
    }
    Ok(list)
}

/// The live list without reading a line: `(envelope index, index of the
/// elision whose stub it carries or None, role, replacement position or
/// None)` per message, in order (a compaction's summary is the
/// compaction's index, role `"user"`; a replacement message, the
/// compaction's index, its own role and its position).
pub(crate) fn live(t: &core::Transcript) -> Vec<(u32, Option<u32>, String, Option<u32>)> {
    t.live
        .iter()
        .map(|m| {
            let role = if m.part != WHOLE {
                t.part(m.line, m.part).map_or("", |p| &*p.role)
            } else {
                match t.index.get(m.line as usize).map(|r| r.kind) {
                    Some(EnvelopeType::Compaction) => "user",
                    _ => t.index.role(m.line as usize).unwrap_or(""),
                }
            };
            let (_, part) = place(m.source());
            (m.line, m.stub().map(|(l, _)| l), role.to_owned(), part)
        })
        .collect()
}

/// `live_message(k, /)`: the `k`-th live message as a payload dict (as
/// `live_payloads` has it).
pub(crate) fn live_message<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
    k: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let m = t
        .live
        .get(k)
        .ok_or_else(|| PyIndexError::new_err("live message index out of range"))?;
    let mut lines = Lines::new(file, &t.index);
    let mut stubs = Lines::new(file, &t.index);
    message_dict(py, t, &mut lines, &mut stubs, m.source(), m.stub())
}

/// `later(i, part, /)`: what later lines did to envelope `i` (with `part`,
/// to that message of compaction `i`'s replacement), as line indices:
/// `(the settle that settled this dispatch, the first elision that stubbed
/// this message, the compaction that took it out of the live list, the
/// rewind that dropped it)`, each or None. Read-only transcripts only.
pub(crate) fn later(t: &core::Transcript, index: u32, part: Option<u32>) -> PyResult<Later> {
    let h = history(t)?;
    let at = Source {
        line: index,
        part: part.unwrap_or(WHOLE),
    };
    Ok((
        if part.is_none() {
            h.settled_by.get(&index).copied()
        } else {
            None
        },
        h.elided_by.get(&at).copied(),
        h.compacted_by.get(&at).copied(),
        h.rewound_by.get(&at).copied(),
    ))
}

/// `compaction_effect(i, /)`: what compaction `i` did to the live list:
/// `(replaced, kept, replacement)`, the first two as `(envelope index,
/// replacement position or None)` in live order, the last the number of
/// messages its replacement put in, or None when it has none (its summary
/// went in). Read-only transcripts only.
pub(crate) fn compaction_effect(
    t: &core::Transcript,
    index: u32,
) -> PyResult<(Vec<Place>, Vec<Place>, Option<usize>)> {
    let done = history(t)?
        .compactions
        .get(&index)
        .ok_or_else(|| PyValueError::new_err("not a compaction of this transcript"))?;
    let put = t.parts_of(index).map(<[_]>::len);
    Ok((places(&done.replaced), places(&done.kept), put))
}

/// `rewind_effect(i, /)`: the live messages rewind `i` dropped, as
/// `(envelope index, replacement position or None)` in live order.
/// Read-only transcripts only.
pub(crate) fn rewind_effect(t: &core::Transcript, index: u32) -> PyResult<Vec<Place>> {
    let dropped = history(t)?
        .rewinds
        .get(&index)
        .ok_or_else(|| PyValueError::new_err("not a rewind of this transcript"))?;
    Ok(places(dropped))
}

/// `elision_effect(i, /)`: the messages elision `i` stubbed, in item order,
/// as `(envelope index, the message as it was just before)`. Read-only
/// transcripts only.
pub(crate) fn elision_effect<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
    index: u32,
) -> PyResult<Bound<'py, PyList>> {
    let items = history(t)?
        .elisions
        .get(&index)
        .ok_or_else(|| PyValueError::new_err("not an elision of this transcript"))?;
    let list = PyList::empty(py);
    let mut lines = Lines::new(file, &t.index);
    let mut stubs = Lines::new(file, &t.index);
    for e in items {
        let before = message_dict(py, t, &mut lines, &mut stubs, e.source(), e.stub_before)?;
        list.append((e.line, before))?;
    }
    Ok(list)
}

/// `elision_rows(index, /)`: what `show` says of each message elision
/// `index` stubbed, without decoding its content: `(line, role,
/// tool_call_id, size)`, the message's line index, its role and call id
/// (None where absent) and the UTF-8 size of the content it had just
/// before (as `elided_sizes` measures it; None for a content that is
/// neither a string nor null, which `elision_effect` then gives).
pub(crate) fn elision_rows<'py>(
    t: &core::Transcript,
    file: &File,
    py: Python<'py>,
    index: u32,
) -> PyResult<Vec<ElisionRow<'py>>> {
    let items = history(t)?
        .elisions
        .get(&index)
        .ok_or_else(|| PyValueError::new_err("not an elision of this transcript"))?;
    let core = t;
    let sizes = py
        .detach(|| core.elided_sizes(file, &[index]))
        .map_err(load_error)?
        .pop()
        .unwrap_or_default();
    let mut lines = Lines::new(file, &t.index);
    let mut rows = Vec::with_capacity(items.len());
    for (e, size) in items.iter().zip(sizes) {
        let (rec, bytes) = lines.get(e.line)?;
        let (role, call) = if e.part != WHOLE {
            let span = t
                .part(e.line, e.part)
                .map(|p| p.span)
                .ok_or_else(|| PyValueError::new_err("no such replacement message"))?;
            let part = bytes
                .get(span.start as usize..span.end as usize)
                .unwrap_or_default();
            (
                decode_at(py, &rec, part, &["role"])?,
                decode_at(py, &rec, part, &["tool_call_id"])?,
            )
        } else if rec.kind == EnvelopeType::Compaction {
            (
                "user".into_pyobject(py)?.into_any(),
                py.None().into_bound(py),
            )
        } else {
            (
                decode_at(py, &rec, bytes, &["payload", "role"])?,
                decode_at(py, &rec, bytes, &["payload", "tool_call_id"])?,
            )
        };
        rows.push((e.line, role, call, size));
    }
    Ok(rows)
}

/// `elided_sizes(indices, /)`: for each elision in `indices`, the UTF-8
/// size of the content each message it stubbed had just before (as
/// `elision_effect` has it), in item order, measured in the core on every
/// core without decoding it; None for a content that is neither a string
/// nor null. Read-only transcripts only.
pub(crate) fn elided_sizes(
    t: &core::Transcript,
    file: &File,
    py: Python<'_>,
    indices: Vec<u32>,
) -> PyResult<Vec<Vec<Option<u64>>>> {
    history(t)?;
    for &i in &indices {
        if rec_at(&t.index, i as usize)?.kind != EnvelopeType::Elision {
            return Err(PyValueError::new_err("not an elision of this transcript"));
        }
    }
    let core = t;
    py.detach(|| core.elided_sizes(file, &indices))
        .map_err(load_error)
}
