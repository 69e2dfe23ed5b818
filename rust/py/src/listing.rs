//! `list_rows`: a listing's rows of a batch of files, read by the core on a
//! few threads with the GIL released.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::IntoPyObjectExt;
use transcript_tools::listing::{self, Status, Text, Unreadable};

use crate::decode::str_from_wtf8;

/// `list_rows(paths, threads, /)`: for each path, in order, `(status, reason,
/// size, mtime, dev, ino, title, agent, model, started, last_activity,
/// last_type)`; `reason` is an errno (an int) when an `OSError` made the file
/// unreadable; `dev` and `ino` are None when `stat` failed. Never raises for
/// a file.
#[pyfunction]
#[pyo3(signature = (paths, threads, /))]
pub fn list_rows<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let rows = py.detach(|| listing::read_rows(&paths, threads));
    let text = |t: Option<Text>| t.map(|t| str_from_wtf8(py, &t)).transpose();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let reason = match r.ends.status {
            Status::Unreadable(Unreadable::Errno(e)) => e.into_bound_py_any(py)?,
            ref s => s.reason().into_bound_py_any(py)?,
        };
        let e = r.ends;
        let item = (
            e.status.name(),
            reason,
            r.size,
            r.mtime,
            r.file_id.map(|(dev, _)| dev),
            r.file_id.map(|(_, ino)| ino),
            text(e.title)?,
            text(e.agent)?,
            text(e.model)?,
            text(e.started)?,
            text(e.last_activity)?,
            text(e.last_type)?,
        );
        out.push(item.into_bound_py_any(py)?);
    }
    PyList::new(py, out)
}
