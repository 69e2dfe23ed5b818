//! The native importers (`transcript_core::import_claude`): one call converts a
//! source into its derived envelopes (written to a spool descriptor) and keeps
//! what the source lines need; a second writes the `source-line` envelopes.
//! Both write behind (`transcript_core::write_behind`): another thread does
//! their writes. The GIL is released for both; Python's signal handlers still
//! run between stretches of the work, so a Ctrl-C stops an import of a GiB at
//! once.

use std::fs::File;
use std::os::fd::RawFd;

use pyo3::prelude::*;
use transcript_core::import_run::{write_source_lines, Imported};
use transcript_core::import_value::Ids;
use transcript_core::write_behind::{write_behind, Durable};

use crate::fds::{dup, pass_error};
use crate::signals::Signals;

/// How much the converter fills before another thread writes it.
const WRITE_BUFFER: usize = 1 << 20;

fn ts_text(ts: &[u8; 27]) -> String {
    String::from_utf8_lossy(ts).into_owned()
}

/// A source converted natively: what the session-meta needs, and the source
/// lines still to write.
#[pyclass(module = "agent_transcript._core")]
pub struct NativeImport {
    src: File,
    done: Imported,
}

/// What `NativeImport.summary()` answers.
type Summary = (
    String,
    usize,
    Vec<String>,
    Option<String>,
    String,
    u64,
    String,
    u64,
    usize,
    Option<String>,
    Vec<String>,
);

#[pymethods]
impl NativeImport {
    /// `(info_json, message_count, pending, first_ts, last_ts, ids_used, sha256,
    /// size, line_count, first_line_ts, warnings)`.
    fn summary(&self) -> Summary {
        let d = &self.done;
        (
            String::from_utf8_lossy(&d.info).into_owned(),
            d.message_count,
            d.pending.clone(),
            d.first_ts.as_ref().map(ts_text),
            ts_text(&d.last_ts),
            d.ids_used,
            d.sha.clone(),
            d.size,
            d.lines.len(),
            d.lines.iter().find_map(|l| l.when).as_ref().map(ts_text),
            d.warnings.clone(),
        )
    }

    /// `write_lines(dest_fd, ids_used, /)`: the source-line envelopes, appended
    /// to `dest_fd`'s file; `ids_used` is how many ids the file has so far.
    #[pyo3(signature = (dest_fd, ids_used, /))]
    fn write_lines(&self, py: Python<'_>, dest_fd: RawFd, ids_used: u64) -> PyResult<()> {
        let dest = dup(dest_fd)?;
        let src = &self.src;
        let done = &self.done;
        let signals = Signals::new(py);
        let stop = || signals.check();
        py.detach(|| {
            let mut ids = Ids::new(&done.sha);
            ids.n = ids_used;
            write_behind(&dest, WRITE_BUFFER, Durable::Soon, |out| {
                write_source_lines(src, &done.lines, &mut ids, done.last_ts, out, &stop)
            })
        })
        .map_err(|e| signals.raised(&e, pass_error))
    }
}

/// `import_native(format, src_fd, spool_fd, /)`: a `NativeImport` of the source
/// (its derived envelopes appended to `spool_fd`'s file), or a `str` saying why
/// the native path does not take it (the Python importer must).
#[pyfunction]
#[pyo3(signature = (format, src_fd, spool_fd, /))]
pub fn import_native(
    py: Python<'_>,
    format: &str,
    src_fd: RawFd,
    spool_fd: RawFd,
) -> PyResult<Py<PyAny>> {
    let src = dup(src_fd)?;
    let spool = dup(spool_fd)?;
    let signals = Signals::new(py);
    let stop = || signals.check();
    let result = py
        .detach(|| {
            write_behind(&spool, WRITE_BUFFER, Durable::Never, |out| {
                Ok(match format {
                    "claude-code" => transcript_core::import_claude::import(&src, out, &stop)?,
                    "codex" => transcript_core::import_codex::import(&src, out, &stop)?,
                    _ => Err(transcript_core::import_value::Unsupported(
                        "a format without a native importer",
                    )),
                })
            })
        })
        .map_err(|e| signals.raised(&e, pass_error))?;
    match result {
        Ok(done) => Ok(Py::new(py, NativeImport { src, done })?.into_any()),
        Err(why) => Ok(pyo3::types::PyString::new(py, why.0).into_any().unbind()),
    }
}

/// `zstd_head(src_fd, limit, /)`: the first `limit` bytes of the zstd stream
/// that is `src_fd`'s file, decompressed. ValueError when it does not start one.
#[pyfunction]
#[pyo3(signature = (src_fd, limit, /))]
pub fn zstd_head(py: Python<'_>, src_fd: RawFd, limit: usize) -> PyResult<Py<PyAny>> {
    let src = dup(src_fd)?;
    let head = py
        .detach(|| transcript_core::import_run::zstd_head(&src, limit))
        .map_err(|e| pass_error(&e))?;
    Ok(pyo3::types::PyBytes::new(py, &head).into_any().unbind())
}
