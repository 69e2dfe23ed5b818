//! Reading envelopes back: a line by its index record, decoded into Python
//! objects only as far as asked (one member, a few payload members, the
//! message a live-list entry is).

use std::borrow::Cow;
use std::fs::File;

use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use transcript_core::envelope::{member_span_at, EnvelopeType, Span};
use transcript_core::json::wtf8_from_utf16;
use transcript_core::scan::ReadAt;
use transcript_core::transcript::{self as core, Index, LineRec, Source, WHOLE};

use crate::decode::loads;
use crate::errors::{corrupt_at, corrupt_decode, load_error, os_error, CorruptTranscript};

pub(crate) fn file_size(file: &File) -> PyResult<u64> {
    file.metadata().map(|m| m.len()).map_err(|e| os_error(&e))
}

pub(crate) fn read_line(file: &File, rec: &LineRec) -> PyResult<Vec<u8>> {
    let mut buf = Vec::new();
    read_line_into(file, rec, &mut buf)?;
    Ok(buf)
}

pub(crate) fn read_line_into(file: &File, rec: &LineRec, buf: &mut Vec<u8>) -> PyResult<()> {
    buf.clear();
    buf.resize(rec.len as usize, 0);
    let mut filled = 0;
    while filled < buf.len() {
        let n = file
            .read_at(&mut buf[filled..], rec.offset + filled as u64)
            .map_err(|e| os_error(&e))?;
        if n == 0 {
            return Err(PyOSError::new_err(
                "the transcript shrank under the session",
            ));
        }
        filled += n;
    }
    Ok(())
}

/// Reads the lines of one file, keeping the last one read: the messages of one
/// compaction's replacement are next to each other in the live list and share
/// their line, which is read once for all of them.
pub(crate) struct Lines<'a> {
    file: &'a File,
    index: &'a Index,
    at: Option<u32>,
    bytes: Vec<u8>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(file: &'a File, index: &'a Index) -> Self {
        Lines {
            file,
            index,
            at: None,
            bytes: Vec::new(),
        }
    }

    /// Envelope `line`'s record and bytes.
    pub(crate) fn get(&mut self, line: u32) -> PyResult<(LineRec, &[u8])> {
        let rec = rec_at(self.index, line as usize)?;
        if self.at != Some(line) {
            self.at = None;
            read_line_into(self.file, &rec, &mut self.bytes)?;
            self.at = Some(line);
        }
        Ok((rec, &self.bytes))
    }
}

/// The decoded envelope of one line, as a dict with `id, type, ts, v, payload`.
pub(crate) fn decode_line<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = read_line(file, rec)?;
    let value = loads(py, &bytes).map_err(corrupt_decode(rec))?;
    value
        .cast_into::<PyDict>()
        .map_err(|_| CorruptTranscript::new_err(("not an object", rec.number)))
}

/// `(id, type, ts, v, payload)` of a decoded envelope; a missing key is None.
pub(crate) fn envelope_fields<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
) -> PyResult<[Bound<'py, PyAny>; 5]> {
    let get = |k: &str| -> PyResult<Bound<'py, PyAny>> {
        Ok(d.get_item(k)?.unwrap_or_else(|| py.None().into_bound(py)))
    };
    Ok([
        get("id")?,
        get("type")?,
        get("ts")?,
        get("v")?,
        get("payload")?,
    ])
}

/// `(id, type, ts, v, payload, line, as_is, excerpt)`: [`event_tuple`], whether
/// every string in the line is already what `show` prints (see
/// `transcript_tools::excerpt::printable_as_is`), and for a message whose content
/// is a string, that excerpt as `(lines, total, chars)`
/// in place of the content (see `crate::excerpt::message_with_excerpt`); from
/// one read of the line.
pub(crate) fn shown_tuple<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
    shape: (&str, usize, Option<usize>),
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = read_line(file, rec)?;
    let as_is = transcript_tools::excerpt::printable_as_is(&bytes);
    let corrupt = corrupt_decode(rec);
    let (value, excerpt) = if matches!(rec.kind, transcript_core::envelope::EnvelopeType::Message) {
        let (indent, avail, max_lines) = shape;
        crate::excerpt::message_with_excerpt(py, &bytes, indent, avail, max_lines)
            .map_err(corrupt)?
    } else {
        (loads(py, &bytes).map_err(corrupt)?, None)
    };
    let d = value
        .cast_into::<PyDict>()
        .map_err(|_| CorruptTranscript::new_err(("not an object", rec.number)))?;
    let [id, kind, ts, v, payload] = envelope_fields(py, &d)?;
    Ok((id, kind, ts, v, payload, rec.number, as_is, excerpt)
        .into_pyobject(py)?
        .into_any())
}

pub(crate) fn event_tuple<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
) -> PyResult<Bound<'py, PyAny>> {
    let [id, kind, ts, v, payload] = envelope_fields(py, &decode_line(py, file, rec)?)?;
    Ok((id, kind, ts, v, payload, rec.number)
        .into_pyobject(py)?
        .into_any())
}

/// An id from Python as the core compares ids: the bytes its line decodes to
/// (WTF-8, see `transcript_core::envelope::Id`), lone surrogates included.
pub(crate) fn id_key<'a>(id: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(text) = id.to_str() {
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    let utf16 = id.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = utf16.cast::<PyBytes>()?.as_bytes();
    Ok(Cow::Owned(wtf8_from_utf16(
        units
            .chunks_exact(2)
            .map(|u| u16::from_le_bytes([u[0], u[1]])),
    )))
}

pub(crate) fn out_of_range() -> PyErr {
    PyIndexError::new_err("envelope index out of range")
}

pub(crate) fn rec_at(index: &Index, i: usize) -> PyResult<LineRec> {
    index.get(i).ok_or_else(out_of_range)
}

/// The value at `path` in `bytes`, the line of `rec` (None if it has none).
pub(crate) fn decode_at<'py>(
    py: Python<'py>,
    rec: &LineRec,
    bytes: &[u8],
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    match member_span_at(bytes, path).map_err(corrupt_at(rec))? {
        Some(at) => decode_bytes(py, bytes, at),
        None => Ok(py.None().into_bound(py)),
    }
}

pub(crate) fn decode_bytes<'py>(
    py: Python<'py>,
    bytes: &[u8],
    at: Span,
) -> PyResult<Bound<'py, PyAny>> {
    let part = bytes
        .get(at.start as usize..at.end as usize)
        .unwrap_or_default();
    loads(py, part).map_err(crate::decode::DecodeError::into_pyerr)
}

/// What `show` says of one message an elision stubbed: its line index, role,
/// `tool_call_id` and the size of the content it had (`elision_rows`).
pub(crate) type ElisionRow<'py> = (u32, Bound<'py, PyAny>, Bound<'py, PyAny>, Option<u64>);

/// A message as a payload dict: a message line's payload, a replacement
/// message's payload, or `{"role": "user", "content": summary}` for a
/// compaction's summary; with the stub in place of the content when an elision
/// stubbed it. Lines are read through `lines` (the message's) and `stubs`.
pub(crate) fn message_dict<'py>(
    py: Python<'py>,
    t: &core::Transcript,
    lines: &mut Lines<'_>,
    stubs: &mut Lines<'_>,
    at: Source,
    stub: Option<(u32, Span)>,
) -> PyResult<Bound<'py, PyDict>> {
    let (rec, bytes) = lines.get(at.line)?;
    let message = if at.part != WHOLE {
        let span = t
            .part(at.line, at.part)
            .map(|p| p.span)
            .ok_or_else(|| PyValueError::new_err("no such replacement message"))?;
        decode_bytes(py, bytes, span)?.cast_into::<PyDict>()?
    } else if rec.kind == EnvelopeType::Compaction {
        let d = PyDict::new(py);
        d.set_item("role", "user")?;
        d.set_item(
            "content",
            decode_at(py, &rec, bytes, &["payload", "summary"])?,
        )?;
        d
    } else {
        decode_at(py, &rec, bytes, &["payload"])?.cast_into::<PyDict>()?
    };
    if let Some((line, span)) = stub {
        let (_, bytes) = stubs.get(line)?;
        message.set_item("content", decode_bytes(py, bytes, span)?)?;
    }
    Ok(message)
}

/// The id of the message `at`: its line's envelope id, or `"<compaction id>:<k>"`
/// for the `k`-th message of a compaction's replacement.
pub(crate) fn message_id<'py>(
    py: Python<'py>,
    lines: &mut Lines<'_>,
    at: Source,
) -> PyResult<Bound<'py, PyAny>> {
    let (rec, bytes) = lines.get(at.line)?;
    let id = decode_at(py, &rec, bytes, &["id"])?;
    if at.part == WHOLE {
        Ok(id)
    } else {
        id.add(format!(":{}", at.part))
    }
}

/// The member at `path` of envelope `i` (`["payload"]`, `["id"]`), decoded
/// alone: the rest of the line is not built (None if the line has none).
pub(crate) fn member_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let rec = rec_at(index, i)?;
    let bytes = read_line(file, &rec)?;
    match member_span_at(&bytes, path).map_err(corrupt_at(&rec))? {
        Some(at) => loads(py, &bytes[at.start as usize..at.end as usize])
            .map_err(crate::decode::DecodeError::into_pyerr),
        None => Ok(py.None().into_bound(py)),
    }
}

/// Envelope `i`'s payload, decoded alone.
pub(crate) fn payload_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    member_of(py, file, index, i, &["payload"])
}

/// Envelope `i`'s id, read without decoding its payload.
pub(crate) fn id_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    member_of(py, file, index, i, &["id"])
}

/// For each envelope in `indices`, the members `keys` of its payload that it
/// has, decoded into a dict (empty when the payload is not an object); nothing
/// else is decoded. The lines are read and searched on every core without the
/// GIL, then only those members are built.
pub(crate) fn fields_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    indices: Vec<u32>,
    keys: Vec<String>,
) -> PyResult<Bound<'py, PyList>> {
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    let found = py
        .detach(|| index.payload_members(file, &indices, &names))
        .map_err(load_error)?;
    let list = PyList::empty(py);
    for m in found {
        let d = PyDict::new(py);
        for (key, at) in names.iter().zip(&m.spans) {
            if let Some(at) = at {
                let value = loads(py, &m.line[at.start as usize..at.end as usize])
                    .map_err(crate::decode::DecodeError::into_pyerr)?;
                d.set_item(*key, value)?;
            }
        }
        list.append(d)?;
    }
    Ok(list)
}

/// `(type, count, bytes)` per type, in the order the types first appear.
pub(crate) fn type_totals(index: &Index, end: u64) -> Vec<(String, u64, u64)> {
    index
        .type_totals(end)
        .into_iter()
        .map(|t| (t.name.to_owned(), t.count, t.bytes))
        .collect()
}

pub(crate) fn role_counts(index: &Index) -> Vec<(String, u64)> {
    index
        .role_counts()
        .into_iter()
        .map(|(role, n)| (role.to_owned(), n))
        .collect()
}

/// Where a message comes from, for Python: `(envelope index, replacement
/// position or None)`.
pub(crate) type Place = (u32, Option<u32>);

/// What `later` answers: four line indices, each or None.
pub(crate) type Later = (Option<u32>, Option<u32>, Option<u32>, Option<u32>);

pub(crate) fn place(at: Source) -> Place {
    (at.line, (at.part != WHOLE).then_some(at.part))
}

pub(crate) fn places(at: &[Source]) -> Vec<Place> {
    at.iter().copied().map(place).collect()
}
