//! `list_rows`: a listing's rows of a batch of files, read by the core on a
//! few threads with the GIL released.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::{intern, IntoPyObjectExt};
use transcript_tools::listing::{self, Status};

/// `list_rows(paths, threads, /)`: for each path, in order, `(status, size,
/// mtime, dev, ino, title, agent, model, started, last_activity, last_type)`,
/// or None where Python's own reader is to read the file (it cannot be read,
/// is not a regular file or not a version 1 transcript, is an archive, or is
/// otherwise out of the ordinary). Never raises for a file.
#[pyfunction]
#[pyo3(signature = (paths, threads, /))]
pub fn list_rows<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    threads: usize,
) -> PyResult<Bound<'py, PyList>> {
    let rows = py.detach(|| listing::read_rows(&paths, threads));
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let item = match row {
            None => py.None().into_bound(py),
            Some(r) => {
                let status = match r.ends.status {
                    Status::Clean => intern!(py, "clean"),
                    Status::TornTail => intern!(py, "torn tail"),
                    Status::Corrupt => intern!(py, "corrupt"),
                    Status::DamagedEnd => intern!(py, "damaged end"),
                };
                let e = r.ends;
                (
                    status,
                    r.size,
                    r.mtime,
                    r.dev,
                    r.ino,
                    e.title,
                    e.agent,
                    e.model,
                    e.started,
                    e.last_activity,
                    e.last_type,
                )
                    .into_bound_py_any(py)?
            }
        };
        out.push(item);
    }
    PyList::new(py, out)
}
