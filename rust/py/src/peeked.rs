//! `Peeked`, what `Session.peek` reads: every line of a file indexed, the bad
//! ones skipped; and the checks of one line and of a file's tail.

use std::fs::File;
use std::os::fd::RawFd;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use transcript_core::envelope::parse_line;
use transcript_core::scan::{tail_scan, Tail};
use transcript_core::transcript::{self as core, Index};

use crate::decode::{loads, DecodeError};
use crate::errors::{line_error, os_error};
use crate::fds::dup;
use crate::lines::{envelope_fields, file_size, reader_methods, Indexed, Reader};
use crate::signals::Signals;
use crate::transcript::Transcript;

/// `tail_check(fd, /)`: the tail check of an open file, as
/// `(kind, keep, line, removed, missing_newline, bytes_read)` with kind one of
/// `"empty"`, `"whole"`, `"torn"`, `"corrupt"`, `"damaged"`.
#[pyfunction]
#[pyo3(signature = (fd, /))]
pub fn tail_check(py: Python<'_>, fd: RawFd) -> PyResult<(&'static str, u64, u64, u64, bool, u64)> {
    let file = dup(fd)?;
    let size = file_size(&file)?;
    let (tail, read) = py.detach(|| tail_scan(&file, size)).map_err(|e| os_error(&e))?;
    Ok(match tail {
        Tail::Empty => ("empty", size, 0, 0, false, read),
        Tail::Whole { missing_newline } => ("whole", size, 0, 0, missing_newline, read),
        Tail::Torn { keep, line, removed } => ("torn", keep, line, removed, false, read),
        Tail::Corrupt { line } => ("corrupt", size, line, 0, false, read),
        Tail::Damaged { line } => ("damaged", size, line, 0, false, read),
    })
}

/// A read-only index of a file as peek sees it: every line, the bad ones skipped.
#[pyclass(module = "agent_transcript._core")]
pub struct Peeked {
    file: File,
    peeked: core::Peeked,
    size: u64,
}

impl Indexed for Peeked {
    fn index(&self) -> &Index {
        &self.peeked.index
    }
    fn file(&self) -> PyResult<Reader<'_>> {
        Ok(Reader::Open(&self.file))
    }
    fn end(&self) -> u64 {
        self.size
    }
    fn lines_read(&self) -> u64 {
        self.peeked.line_count
    }
}

reader_methods!(Peeked {
    /// `Peeked.open(fd, /)`: index every line of an open file, skipping the bad ones.
    #[staticmethod]
    #[pyo3(signature = (fd, /))]
    fn open(py: Python<'_>, fd: RawFd) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        let peeked =
            Signals::run(py, |stop| core::peek_or_stop(&file, size, stop), |e| os_error(&e))?;
        Ok(Peeked { file, peeked, size })
    }

    /// `(line number, why)` for the first lines skipped (at most 100).
    fn skipped(&self) -> Vec<(u64, String)> {
        self.peeked.skipped.clone()
    }

    /// How many more lines were skipped than `skipped()` lists.
    fn skipped_more(&self) -> u64 {
        self.peeked.skipped_more
    }
});

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
    let value = loads(py, body).map_err(DecodeError::into_pyerr)?;
    let [id, kind, ts, v, payload] = envelope_fields(py, value, 0)?;
    Ok((id, kind, ts, v, payload).into_pyobject(py)?.into_any())
}

/// What the export's columns and the pages read: a read-only `Transcript`
/// (load accepts the file: replay's answers are in the rows) or a `Peeked`
/// (it does not).
pub(crate) enum Source {
    Replayed(Py<Transcript>),
    Lenient(Py<Peeked>),
}

impl Source {
    /// `source` as one, or None when it is neither.
    pub(crate) fn of(source: &Bound<'_, PyAny>) -> Option<Self> {
        if let Ok(t) = source.cast::<Transcript>() {
            return Some(Source::Replayed(t.clone().unbind()));
        }
        source.cast::<Peeked>().ok().map(|p| Source::Lenient(p.clone().unbind()))
    }

    /// Runs `f` on the reader, borrowed from its Python object, and its replay
    /// when it has one.
    pub(crate) fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&dyn Indexed, Option<&core::Transcript>) -> PyResult<T>,
    ) -> PyResult<T> {
        match self {
            Source::Replayed(t) => {
                let t = t.bind(py).borrow();
                f(&*t, Some(t.core()))
            }
            Source::Lenient(p) => f(&*p.bind(py).borrow(), None),
        }
    }
}
