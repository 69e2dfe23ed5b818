//! `ExportBatch` and `ExportFile`: the export's tables as Arrow-layout
//! buffers, built by `transcript_tools::columns` without the GIL and handed to
//! Python as `ColumnBuffer`s, which pyarrow wraps where they are
//! (`pyarrow.foreign_buffer`) for `pyarrow.Array.from_buffers`: no copy, and
//! no arrow crate here.
//!
//! A column is `(name, kind, length, null_count, buffers, child)`: `kind` is
//! `"utf8"` (Arrow `large_utf8`: validity, `i64` offsets, data), `"int64"`,
//! `"timestamp"` (µs, UTC), `"float64"` (validity, values), `"bool"`
//! (validity, value bits) or `"list_utf8"` (validity, `i32` offsets; `child`
//! is the items' `"utf8"` column). A validity buffer is None when no row is null.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use transcript_core::scan::ReadAt;
use transcript_core::transcript::Index;
use transcript_tools::columns::{Batch, Column, FileState, Input};

use crate::errors::load_error;
use crate::peeked::Source;

/// The rows of the four export tables gathered so far.
#[pyclass(module = "agent_transcript._core")]
#[derive(Default)]
pub struct ExportBatch {
    batch: Batch,
}

/// One buffer of a column, moved out of the batch and never changed again:
/// pyarrow wraps it where it is (`pyarrow.foreign_buffer(address(), len(),
/// base=self)`), so the rows are not copied on their way to Parquet. The
/// bytes live as long as this object, and nothing can resize them (no method
/// changes them), so the address stays good while pyarrow holds the object.
#[pyclass(module = "agent_transcript._core", frozen)]
pub struct ColumnBuffer {
    data: Vec<u8>,
}

#[pymethods]
impl ColumnBuffer {
    /// The address of the first byte.
    fn address(&self) -> usize {
        self.data.as_ptr() as usize
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }

    /// A copy of the bytes (for tests and debugging).
    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }
}

fn buffer(py: Python<'_>, data: &mut Vec<u8>) -> PyResult<Py<ColumnBuffer>> {
    Py::new(py, ColumnBuffer { data: std::mem::take(data) })
}

/// `(name, kind, length, null_count, buffers, child)` of column `c`, its
/// buffers the validity (None when no row is null) and then its data.
fn column<'py>(py: Python<'py>, name: &str, c: Column<'_>) -> PyResult<Bound<'py, PyAny>> {
    let (kind, valid, data, child) = match c {
        Column::Text(t) => ("utf8", &mut t.valid, vec![&mut t.offsets, &mut t.data], None),
        Column::Int(f) => ("int64", &mut f.valid, vec![&mut f.values], None),
        Column::Timestamp(f) => ("timestamp", &mut f.valid, vec![&mut f.values], None),
        Column::Float(f) => ("float64", &mut f.valid, vec![&mut f.values], None),
        Column::Bool(b) => ("bool", &mut b.valid, vec![&mut b.values.bytes], None),
        Column::TextList(l) => {
            let child = column(py, "item", Column::Text(&mut l.items))?;
            ("list_utf8", &mut l.valid, vec![&mut l.offsets], Some(child))
        }
    };
    let validity = if valid.unset > 0 { Some(buffer(py, &mut valid.bytes)?) } else { None };
    let buffers = PyList::new(py, [validity])?;
    for d in data {
        buffers.append(buffer(py, d)?)?;
    }
    (name, kind, valid.len, valid.unset, buffers, child).into_pyobject(py).map(Bound::into_any)
}

fn table<'py>(
    py: Python<'py>,
    columns: Vec<(&'static str, Column<'_>)>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (name, c) in columns {
        list.append(column(py, name, c)?)?;
    }
    Ok(list)
}

#[pymethods]
impl ExportBatch {
    #[new]
    fn new() -> Self {
        ExportBatch::default()
    }

    /// About how many bytes the batch holds.
    fn bytes(&self) -> usize {
        self.batch.bytes()
    }

    /// Rows per table: `(sessions, envelopes, messages, tool_operations)`.
    fn rows(&self) -> (usize, usize, usize, usize) {
        let [s, e, m, t] = self.batch.rows();
        (s, e, m, t)
    }

    /// `take()`: every table's columns (see the module's doc) as a dict by
    /// table name; the batch is empty afterwards.
    fn take<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut b = std::mem::take(&mut self.batch);
        let d = PyDict::new(py);
        d.set_item("sessions", table(py, b.sessions.columns())?)?;
        d.set_item("envelopes", table(py, b.envelopes.columns())?)?;
        d.set_item("messages", table(py, b.messages.columns())?)?;
        d.set_item("tool_operations", table(py, b.tool_operations.columns())?)?;
        Ok(d)
    }
}

/// One file's export in progress, over a read-only `Transcript` (load accepts
/// the file: replay's answers are in the rows) or a `Peeked` (it does not).
#[pyclass(module = "agent_transcript._core")]
pub struct ExportFile {
    state: FileState,
    // None: nothing to read (an empty file, or one whose first line is not an envelope).
    source: Option<Source>,
}

// The bytes of a file with nothing to read.
struct NoBytes;

impl ReadAt for NoBytes {
    fn read_at(&self, _buf: &mut [u8], _offset: u64) -> std::io::Result<usize> {
        Ok(0)
    }
}

// Runs `f` on the export's input, borrowed from the Python object.
fn with_input<T>(
    py: Python<'_>,
    source: &Option<Source>,
    f: impl FnOnce(Input<'_, dyn ReadAt + Sync>) -> T,
) -> PyResult<T> {
    let Some(source) = source else {
        return Ok(f(Input { index: &Index::default(), src: &NoBytes, replay: None, end: 0 }));
    };
    source.with(py, |r, replay| {
        Ok(f(Input { index: r.index(), src: &*r.file()?, replay, end: r.end() }))
    })
}

#[pymethods]
impl ExportFile {
    /// `ExportFile(session, source, /)`: `session` is the key every row of the
    /// file carries; `source` a read-only `Transcript`, a `Peeked`, or None
    /// for a file with nothing to read (its sessions row only).
    #[new]
    #[pyo3(signature = (session, source, /))]
    fn new(py: Python<'_>, session: &str, source: &Bound<'_, PyAny>) -> PyResult<Self> {
        let source = match Source::of(source) {
            None if !source.is_none() => {
                return Err(PyTypeError::new_err(
                    "ExportFile() takes a Transcript, a Peeked or None",
                ))
            }
            source => source,
        };
        let state = with_input(py, &source, |input| FileState::new(session.as_bytes(), input))?
            .map_err(load_error)?;
        Ok(ExportFile { state, source })
    }

    /// The session-meta's timestamp in µs since the epoch, or None.
    fn started(&self) -> Option<i64> {
        self.state.started()
    }

    /// `fill(batch, budget, /)`: adds the next envelopes' rows to `batch` until
    /// the file is read (True) or `batch` holds `budget` bytes (False). The
    /// lines are read and parsed without the GIL.
    #[pyo3(signature = (batch, budget, /))]
    fn fill(
        &mut self,
        py: Python<'_>,
        mut batch: PyRefMut<'_, ExportBatch>,
        budget: usize,
    ) -> PyResult<bool> {
        let state = &mut self.state;
        let batch = &mut batch.batch;
        with_input(py, &self.source, |input| py.detach(|| state.fill(batch, input, budget)))?
            .map_err(load_error)
    }

    /// `finish(batch, status, reason, size, mtime, lines, /)`: adds the file's
    /// tool operations and its sessions row (`mtime` in µs since the epoch).
    #[pyo3(signature = (batch, status, reason, size, mtime, lines, /))]
    #[allow(clippy::too_many_arguments)]
    fn finish(
        &mut self,
        py: Python<'_>,
        mut batch: PyRefMut<'_, ExportBatch>,
        status: &str,
        reason: Option<&str>,
        size: i64,
        mtime: Option<i64>,
        lines: i64,
    ) -> PyResult<()> {
        let state = &mut self.state;
        let batch = &mut batch.batch;
        with_input(py, &self.source, |input| {
            state.finish(batch, input, status, reason, size, mtime, lines);
        })
    }
}
