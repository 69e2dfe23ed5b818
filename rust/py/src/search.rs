//! `grep`: the hits of a pattern in a batch of transcripts, searched by the
//! core on a few threads with the GIL released.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::IntoPyObjectExt;
use transcript_tools::search::{search_files, Hit, Query, SearchError};

use crate::errors::os_reason;

/// `grep(paths, pattern, literal, ignore_case, all_lines, role, kind, threads, /)`:
/// for each path, in order, its hits as `(line, id, type, role, field, text,
/// spans)` tuples (`spans`: `(start, end)` in characters of `text`), or, when
/// the file cannot be searched, `(errno, reason)` with `errno` None for a file
/// replay refuses. ValueError for a pattern the regex syntax refuses.
#[pyfunction]
#[pyo3(signature = (paths, pattern, literal, ignore_case, all_lines, role, kind, threads, /))]
#[allow(clippy::too_many_arguments)]
pub fn grep<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    pattern: &str,
    literal: bool,
    ignore_case: bool,
    all_lines: bool,
    role: Option<String>,
    kind: Option<String>,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let query = Query::new(pattern, literal, ignore_case, all_lines, role, kind)
        .map_err(PyValueError::new_err)?;
    let found = py.detach(|| search_files(&paths, &query, threads));
    let mut out = Vec::with_capacity(found.len());
    for result in found {
        out.push(match result {
            Ok(hits) => {
                let rows = hits.into_iter().map(|h| row(py, h)).collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, rows)?.into_any()
            }
            Err(SearchError::Io(e)) => (e.raw_os_error(), os_reason(&e)).into_bound_py_any(py)?,
            Err(SearchError::Unreplayable(why)) => (None::<i32>, why).into_bound_py_any(py)?,
        });
    }
    PyList::new(py, out)
}

fn row<'py>(py: Python<'py>, h: Hit) -> PyResult<Bound<'py, PyAny>> {
    // Byte offsets to character offsets, walking the text once.
    let mut spans = Vec::with_capacity(h.spans.len());
    let (mut byte, mut chars) = (0usize, 0usize);
    let mut advance = |to: usize| {
        chars += h.text.get(byte..to).map_or(0, |s| s.chars().count());
        byte = to;
        chars
    };
    for &(start, end) in &h.spans {
        let s = advance(start);
        let e = advance(end);
        spans.push((s, e));
    }
    (h.line, h.id, h.kind, h.role, h.field, h.text, spans).into_bound_py_any(py)
}
