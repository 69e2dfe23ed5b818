//! `PageWalk` and `PageWriter`: `html`'s folder of pages, the walk over the
//! records and the writing of the files, without the GIL (see
//! `transcript_tools::page`).

use std::path::PathBuf;

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};
use transcript_tools::page::{Job, Limits, Walk, WriteError, Writer};

use crate::errors::{os_error, os_error_at};
use crate::peeked::Source;

/// The walk over a transcript's records, a page at a time.
#[pyclass(module = "agent_transcript._core")]
pub struct PageWalk {
    walk: Walk,
    source: Source,
}

type PageTuple<'py> = (u64, u64, u64, Bound<'py, PyList>, Bound<'py, PyList>, PageBytes);

/// A page's bytes, for `PageWriter.chunk` (which takes them: they are not copied).
#[pyclass(module = "agent_transcript._core")]
pub struct PageBytes {
    data: Vec<u8>,
    start: u64,
}

#[pymethods]
impl PageBytes {
    fn __len__(&self) -> usize {
        self.data.len()
    }
}

#[pymethods]
impl PageWalk {
    /// `PageWalk(source, end, soft_records, hard_records, soft_bytes, hard_bytes,
    /// big_line, head, first=0, /)`: the pages of the first `end` bytes of the
    /// file of `source` (a read-only `Transcript` or a `Peeked`), from the
    /// start of the file, or from envelope `first`'s line when it is not 0.
    #[new]
    #[pyo3(signature = (source, end, soft_records, hard_records, soft_bytes, hard_bytes, big_line, head, first=0, /))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        end: u64,
        soft_records: usize,
        hard_records: usize,
        soft_bytes: u64,
        hard_bytes: u64,
        big_line: u64,
        head: usize,
        first: usize,
    ) -> PyResult<Self> {
        let source = Source::of(source)
            .ok_or_else(|| PyTypeError::new_err("PageWalk() takes a Transcript or a Peeked"))?;
        let start = match first {
            0 => Some((0, 1, 0)),
            _ => source
                .with(py, |r, _| Ok(r.index().get(first).map(|r| (r.offset, r.number, first))))?,
        };
        let Some(start) = start else {
            return Err(PyIndexError::new_err("PageWalk(): no such envelope"));
        };
        let limits = Limits { soft_records, hard_records, soft_bytes, hard_bytes, big_line, head };
        Ok(PageWalk { walk: Walk::from(limits, start, end), source })
    }

    /// The next page, `(start, stop, first line, items, odd lines, bytes)`, or
    /// None after the last: items `(index, line, type, head)`, odd lines `(line,
    /// index or None, start, end)`, bytes its bytes but for its odd lines.
    fn next_page<'py>(&mut self, py: Python<'py>) -> PyResult<Option<PageTuple<'py>>> {
        let walk = &mut self.walk;
        self.source.with(py, |r, _| {
            let (index, file) = (r.index(), r.file()?);
            let Some(mut page) =
                py.detach(|| walk.next_page(index, &*file)).map_err(|e| os_error(&e))?
            else {
                return Ok(None);
            };
            let items = PyList::empty(py);
            for (k, &(i, line)) in page.items.iter().enumerate() {
                let ty = index.type_name(i as usize).unwrap_or("");
                items.append((i, line, ty, PyBytes::new(py, page.head(k))))?;
            }
            let odd = PyList::empty(py);
            for o in &page.odd {
                odd.append((o.line, o.index, o.start, o.end))?;
            }
            let bytes = PageBytes { data: std::mem::take(&mut page.data), start: page.start };
            Ok(Some((page.start, page.stop, page.first_line, items, odd, bytes)))
        })
    }
}

/// Writes the folder's files on a thread of its own.
#[pyclass(module = "agent_transcript._core")]
pub struct PageWriter {
    writer: Writer,
}

fn write_error(e: &WriteError) -> PyErr {
    os_error_at(&e.error, &e.path)
}

impl PageWriter {
    fn send(&mut self, py: Python<'_>, job: Job) -> PyResult<()> {
        let writer = &mut self.writer;
        py.detach(|| writer.send(job)).map_err(|e| write_error(&e))
    }
}

#[pymethods]
impl PageWriter {
    /// `PageWriter(depth, /)`: a writer with at most `depth` files waiting.
    #[new]
    #[pyo3(signature = (depth, /))]
    fn new(depth: usize) -> PyResult<Self> {
        let writer = Writer::new(depth.max(1)).map_err(|e| os_error(&e))?;
        Ok(PageWriter { writer })
    }

    /// `chunk(path, prefix, page, subs, suffix, /)`: queues the file `prefix` +
    /// the bytes of `page` (taken: `page` is empty after), each `(from, to,
    /// bytes)` of `subs` where its odd line `from..to` was, escaped for a
    /// `String.raw` template, + `suffix`. Raises the OSError of an earlier
    /// file that failed.
    #[pyo3(signature = (path, prefix, page, subs, suffix, /))]
    fn chunk(
        &mut self,
        py: Python<'_>,
        path: PathBuf,
        prefix: Vec<u8>,
        mut page: PyRefMut<'_, PageBytes>,
        subs: Vec<(u64, u64, Vec<u8>)>,
        suffix: Vec<u8>,
    ) -> PyResult<()> {
        let data = std::mem::take(&mut page.data);
        self.send(py, Job { path, prefix, data, start: page.start, subs, escape: true, suffix })
    }

    /// `file(path, pieces, /)`: queues the file of `pieces` (bytes), as they are.
    #[pyo3(signature = (path, pieces, /))]
    fn file(&mut self, py: Python<'_>, path: PathBuf, pieces: Vec<Vec<u8>>) -> PyResult<()> {
        self.send(py, Job { path, prefix: pieces.concat(), ..Job::default() })
    }

    /// `finish()`: waits for every queued file; raises the OSError of the first that failed.
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let writer = &mut self.writer;
        py.detach(|| writer.finish()).map_err(|e| write_error(&e))
    }
}
