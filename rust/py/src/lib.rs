//! `agent_transcript._core`: the thin PyO3 skin over `transcript_core`.
//!
//! Private and positional-only; the public API, its defaults and docstrings live
//! in the Python package. Heavy calls extract their arguments, release the GIL
//! (`py.detach`) for the byte work, and convert the result back.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

mod archive;
mod canonical;
mod columns;
mod decode;
mod errors;
mod excerpt;
mod fds;
mod history;
mod holding;
mod lines;
mod listing;
mod page;
mod peeked;
mod search;
mod session;
mod signals;
mod transcript;

// The canonical writer holds no borrowed list or dict item (owned references,
// critical sections: canonical.rs), so the module is sound with the GIL off
// (PYTHON_GIL=0). It still asks for the GIL (`gil_used = true`) until a run
// on a free-threaded interpreter has checked it.
#[pymodule(gil_used = true)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The package's version, from the Cargo workspace: its only source.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    signals::learn_main_thread(m.py())?;
    m.add_function(wrap_pyfunction!(canonical::canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(digest, m)?)?;
    m.add_function(wrap_pyfunction!(decode::py_loads, m)?)?;
    m.add_function(wrap_pyfunction!(peeked::tail_check, m)?)?;
    m.add_function(wrap_pyfunction!(holding::lines_holding, m)?)?;
    m.add_function(wrap_pyfunction!(peeked::parse_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(archive::zstd_compress, m)?)?;
    m.add_function(wrap_pyfunction!(archive::zstd_decompress, m)?)?;
    m.add_function(wrap_pyfunction!(archive::zstd_matches, m)?)?;
    m.add("ZSTD_LEVEL", transcript_core::archive::LEVEL)?; // the level archives are written at
    m.add_function(wrap_pyfunction!(archive::zstd_head, m)?)?;
    m.add_function(wrap_pyfunction!(listing::list_rows, m)?)?;
    m.add_function(wrap_pyfunction!(excerpt::excerpt, m)?)?;
    m.add_function(wrap_pyfunction!(search::grep, m)?)?;
    m.add_class::<transcript::Transcript>()?;
    m.add_class::<session::SessionBase>()?;
    m.add_class::<session::SessionLock>()?;
    m.add_class::<peeked::Peeked>()?;
    m.add_class::<columns::ExportBatch>()?;
    m.add_class::<columns::ColumnBuffer>()?;
    m.add_class::<columns::ExportFile>()?;
    m.add_class::<page::PageWalk>()?;
    m.add_class::<page::PageBytes>()?;
    m.add_class::<page::PageWriter>()?;
    Ok(())
}

/// `"sha256:" + hexdigest` of `data` (a `str` is UTF-8 encoded first).
#[pyfunction]
#[pyo3(signature = (data, /))]
fn digest(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
    use pyo3::types::{PyBytes, PyString};
    let bytes = if let Ok(bytes) = data.cast::<PyBytes>() {
        bytes.as_bytes()
    } else if let Ok(text) = data.cast::<PyString>() {
        text.to_str()?.as_bytes()
    } else {
        let name = data.get_type().name()?;
        return Err(PyTypeError::new_err(format!("digest() takes str or bytes, not {name}")));
    };
    Ok(py.detach(|| transcript_core::digest::sha256_digest(bytes)))
}
