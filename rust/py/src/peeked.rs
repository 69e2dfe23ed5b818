//! `Peeked`, what `Session.peek` reads: every line of a file indexed, the bad
//! ones skipped; and the checks of one line and of a file's tail.

use std::fs::File;
use std::os::fd::RawFd;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use transcript_core::envelope::{parse_line, EnvelopeType};
use transcript_core::scan::{tail_scan, Tail};
use transcript_core::transcript::{self as core, Index};

use crate::decode::loads;
use crate::errors::{line_error, os_error};
use crate::fds::dup;
use crate::lines::{
    envelope_fields, event_tuple, fields_of, file_size, id_of, out_of_range, payload_of, rec_at,
    role_counts, shown_tuple, type_totals,
};
use crate::signals::Signals;

/// `tail_check(fd, /)`: the tail check of an open file, as
/// `(kind, keep, line, removed, missing_newline, bytes_read)` with kind one of
/// `"empty"`, `"whole"`, `"torn"`, `"corrupt"`, `"damaged"`.
#[pyfunction]
#[pyo3(signature = (fd, /))]
pub fn tail_check(py: Python<'_>, fd: RawFd) -> PyResult<(&'static str, u64, u64, u64, bool, u64)> {
    let file = dup(fd)?;
    let size = file_size(&file)?;
    let (tail, read) = py
        .detach(|| tail_scan(&file, size))
        .map_err(|e| os_error(&e))?;
    Ok(match tail {
        Tail::Empty => ("empty", size, 0, 0, false, read),
        Tail::Whole { missing_newline } => ("whole", size, 0, 0, missing_newline, read),
        Tail::Torn {
            keep,
            line,
            removed,
        } => ("torn", keep, line, removed, false, read),
        Tail::Corrupt { line } => ("corrupt", size, line, 0, false, read),
        Tail::Damaged { line } => ("damaged", size, line, 0, false, read),
    })
}

/// A read-only index of a file as peek sees it.
#[pyclass(module = "agent_transcript._core")]
pub struct Peeked {
    file: File,
    index: Index,
    skipped: Vec<(u64, String)>,
    skipped_more: u64,
    line_count: u64,
    size: u64,
}

#[pymethods]
impl Peeked {
    /// `Peeked.open(fd, /)`: index every line of an open file, skipping the bad ones.
    #[staticmethod]
    #[pyo3(signature = (fd, /))]
    fn open(py: Python<'_>, fd: RawFd) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        let signals = Signals::new(py);
        let stop = || signals.check();
        let p = py
            .detach(|| core::peek_or_stop(&file, size, &stop))
            .map_err(|e| signals.raised(&e, os_error))?;
        Ok(Peeked {
            file,
            index: p.index,
            skipped: p.skipped,
            skipped_more: p.skipped_more,
            line_count: p.line_count,
            size,
        })
    }

    fn __len__(&self) -> usize {
        self.index.len()
    }

    /// Lines read, blank and skipped ones included.
    fn line_count(&self) -> u64 {
        self.line_count
    }

    /// `line_number(i, /)`: envelope `i`'s 1-based line number.
    #[pyo3(signature = (index, /))]
    fn line_number(&self, index: usize) -> PyResult<u64> {
        Ok(rec_at(&self.index, index)?.number)
    }

    /// `type_name(i, /)`: envelope `i`'s type, read from the index.
    #[pyo3(signature = (index, /))]
    fn type_name(&self, index: usize) -> PyResult<String> {
        self.index
            .type_name(index)
            .map(str::to_owned)
            .ok_or_else(out_of_range)
    }

    /// `role(i, /)`: envelope `i`'s role if it is a message, else None.
    #[pyo3(signature = (index, /))]
    fn role(&self, index: usize) -> PyResult<Option<String>> {
        rec_at(&self.index, index)?;
        Ok(self.index.role(index).map(str::to_owned))
    }

    /// `indices_of_type(type, /)`: the indices of the envelopes of that type.
    #[pyo3(signature = (r#type, /))]
    fn indices_of_type(&self, r#type: &str) -> Vec<u32> {
        self.index.indices_of_type(r#type)
    }

    /// `(type, count, bytes)` per type (a line's `\n` counted), in the order
    /// the types first appear.
    fn type_totals(&self) -> Vec<(String, u64, u64)> {
        type_totals(&self.index, self.size)
    }

    /// `(role, count)` of the message lines, in the order the roles first appear.
    fn role_counts(&self) -> Vec<(String, u64)> {
        role_counts(&self.index)
    }

    /// The size read.
    fn size(&self) -> u64 {
        self.size
    }

    /// `(line number, why)` for the first lines skipped (at most 100).
    fn skipped(&self) -> Vec<(u64, String)> {
        self.skipped.clone()
    }

    /// How many more lines were skipped than `skipped()` lists.
    fn skipped_more(&self) -> u64 {
        self.skipped_more
    }

    /// `kind(i, /)`: whether envelope `i` is a message (1), a session-meta (2) or other (0).
    #[pyo3(signature = (index, /))]
    fn kind(&self, index: usize) -> PyResult<u8> {
        let rec = rec_at(&self.index, index)?;
        Ok(match rec.kind {
            EnvelopeType::Message => 1,
            EnvelopeType::SessionMeta => 2,
            _ => 0,
        })
    }

    /// Indices of the message envelopes.
    fn message_indices(&self) -> Vec<usize> {
        (0..self.index.len())
            .filter(|&i| self.index.kind(i) == Some(EnvelopeType::Message))
            .collect()
    }

    /// `event(i, /)`: envelope `i` as `(id, type, ts, v, payload, line)`.
    #[pyo3(signature = (index, /))]
    fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        event_tuple(py, &self.file, &rec_at(&self.index, index)?)
    }

    /// `shown(i, indent, avail, max_lines, /)`: envelope `i` as `show` reads it,
    /// `(id, type, ts, v, payload, line, as_is, excerpt)` (see `shown_tuple`).
    #[pyo3(signature = (index, indent, avail, max_lines, /))]
    fn shown<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        indent: &str,
        avail: usize,
        max_lines: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shown_tuple(
            py,
            &self.file,
            &rec_at(&self.index, index)?,
            (indent, avail, max_lines),
        )
    }

    /// `payload(i, /)`: envelope `i`'s payload.
    #[pyo3(signature = (index, /))]
    fn payload<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        payload_of(py, &self.file, &self.index, index)
    }

    /// `envelope_id(i, /)`: envelope `i`'s id (its payload is not decoded).
    #[pyo3(signature = (index, /))]
    fn envelope_id<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        id_of(py, &self.file, &self.index, index)
    }

    /// `payload_fields(indices, keys, /)`: for each envelope in `indices`, the
    /// members `keys` of its payload that it has, as a dict; nothing else is
    /// decoded.
    #[pyo3(signature = (indices, keys, /))]
    fn payload_fields<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u32>,
        keys: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        fields_of(py, &self.file, &self.index, indices, keys)
    }
}

/// `parse_envelope(line, /)`: one line's envelope as `(id, type, ts, v, payload)`,
/// checked as load checks it; `CorruptTranscript` or `UnsupportedVersion` if not.
#[pyfunction]
#[pyo3(signature = (line, /))]
pub fn parse_envelope<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyBytes>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = line.as_bytes();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    parse_line(body).map_err(|e| line_error(&e, 0))?;
    let d = loads(py, body)
        .map_err(crate::decode::DecodeError::into_pyerr)?
        .cast_into::<PyDict>()?;
    let [id, kind, ts, v, payload] = envelope_fields(py, &d)?;
    Ok((id, kind, ts, v, payload).into_pyobject(py)?.into_any())
}

// What the export's columns (`crate::columns`) read: the index, the file and
// the bytes read.
impl Peeked {
    pub(crate) fn export_input(&self) -> (&Index, &File, u64) {
        (&self.index, &self.file, self.size)
    }
}
