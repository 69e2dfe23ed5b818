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

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use transcript_core::scan::ReadAt;
use transcript_core::transcript::Index;
use transcript_tools::columns::{self as core, Batch, Bits, Column, FileState, Input, Utf8};

use crate::errors::load_error;
use crate::peeked::Peeked;
use crate::transcript::Transcript;

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

fn validity(py: Python<'_>, bits: &mut Bits) -> PyResult<Option<Py<ColumnBuffer>>> {
    if bits.unset > 0 {
        Ok(Some(buffer(py, &mut bits.bytes)?))
    } else {
        Ok(None)
    }
}

fn text_column<'py>(py: Python<'py>, name: &str, c: &mut Utf8) -> PyResult<Bound<'py, PyAny>> {
    let buffers = PyList::empty(py);
    buffers.append(validity(py, &mut c.valid)?)?;
    buffers.append(buffer(py, &mut c.offsets)?)?;
    buffers.append(buffer(py, &mut c.data)?)?;
    Ok((name, "utf8", c.len(), c.valid.unset, buffers, py.None()).into_pyobject(py)?.into_any())
}

fn column<'py>(py: Python<'py>, name: &str, c: Column<'_>) -> PyResult<Bound<'py, PyAny>> {
    let fixed = |kind: &str, f: &mut core::Fixed| -> PyResult<Bound<'py, PyAny>> {
        let buffers = PyList::empty(py);
        buffers.append(validity(py, &mut f.valid)?)?;
        buffers.append(buffer(py, &mut f.values)?)?;
        Ok((name, kind, f.valid.len, f.valid.unset, buffers, py.None())
            .into_pyobject(py)?
            .into_any())
    };
    match c {
        Column::Text(t) => text_column(py, name, t),
        Column::Int(f) => fixed("int64", f),
        Column::Timestamp(f) => fixed("timestamp", f),
        Column::Float(f) => fixed("float64", f),
        Column::Bool(b) => {
            let buffers = PyList::empty(py);
            buffers.append(validity(py, &mut b.valid)?)?;
            buffers.append(buffer(py, &mut b.values.bytes)?)?;
            Ok((name, "bool", b.valid.len, b.valid.unset, buffers, py.None())
                .into_pyobject(py)?
                .into_any())
        }
        Column::TextList(l) => {
            let buffers = PyList::empty(py);
            buffers.append(validity(py, &mut l.valid)?)?;
            buffers.append(buffer(py, &mut l.offsets)?)?;
            let child = text_column(py, "item", &mut l.items)?;
            Ok((name, "list_utf8", l.valid.len, l.valid.unset, buffers, child)
                .into_pyobject(py)?
                .into_any())
        }
    }
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

enum Source {
    Replayed(Py<Transcript>),
    Lenient(Py<Peeked>),
    // Nothing to read (an empty file, or one whose first line is not an envelope).
    Nothing(Index),
}

/// One file's export in progress, over a read-only `Transcript` (load accepts
/// the file: replay's answers are in the rows) or a `Peeked` (it does not).
#[pyclass(module = "agent_transcript._core")]
pub struct ExportFile {
    state: FileState,
    source: Source,
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
    source: &Source,
    f: impl FnOnce(Input<'_, dyn ReadAt + Sync>) -> T,
) -> PyResult<T> {
    Ok(match source {
        Source::Replayed(t) => {
            let t = t.bind(py).borrow();
            let (core, file, end) = t.export_input()?;
            f(Input { index: &core.index, src: &*file, replay: Some(core), end })
        }
        Source::Lenient(p) => {
            let p = p.bind(py).borrow();
            let (index, file, end) = p.export_input();
            f(Input { index, src: file, replay: None, end })
        }
        Source::Nothing(index) => f(Input { index, src: &NoBytes, replay: None, end: 0 }),
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
        let source = if let Ok(t) = source.cast::<Transcript>() {
            Source::Replayed(t.clone().unbind())
        } else if let Ok(p) = source.cast::<Peeked>() {
            Source::Lenient(p.clone().unbind())
        } else if source.is_none() {
            Source::Nothing(Index::default())
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "ExportFile() takes a Transcript, a Peeked or None",
            ));
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
