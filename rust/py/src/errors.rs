//! Errors as Python sees them, each mapping in one place: the exception
//! classes, imported from `agent_transcript.errors` so that Rust raises the
//! same documented, picklable classes Python code catches; an `io::Error` as
//! the `OSError` Python's own call would raise ([`os_error`]); a failed load
//! as its exception ([`load_error`], [`line_error`]).

use std::ffi::OsString;
use std::io;

use pyo3::exceptions::PyOSError;
use pyo3::PyErr;
use transcript_core::envelope::LineError;
use transcript_core::transcript::LoadError;

pyo3::import_exception!(agent_transcript.errors, CorruptTranscript);
pyo3::import_exception!(agent_transcript.errors, UnsupportedVersion);
pyo3::import_exception!(agent_transcript.errors, SessionBroken);
pyo3::import_exception!(agent_transcript.errors, UnknownId);
pyo3::import_exception!(agent_transcript.errors, ToolOperationError);

/// An `OSError` that keeps errno, so Python picks the right subclass, and says
/// what Python's own would (`strerror`), without Rust's " (os error N)".
pub fn os_error(e: &io::Error) -> PyErr {
    os_error_at(e, None)
}

/// [`os_error`] with the `filename` of the file it is about, when known.
pub fn os_error_at(e: &io::Error, path: Option<OsString>) -> PyErr {
    let text = e.to_string();
    match (e.raw_os_error(), path) {
        (Some(code), path) => {
            let suffix = format!(" (os error {code})");
            let strerror = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
            match path {
                Some(path) => PyOSError::new_err((code, strerror, path)),
                None => PyOSError::new_err((code, strerror)),
            }
        }
        (None, Some(path)) => {
            PyOSError::new_err(format!("{}: {text}", std::path::Path::new(&path).display()))
        }
        (None, None) => PyOSError::new_err(text),
    }
}

/// A line that is no envelope of this version, at 1-based line `line`.
pub fn line_error(error: &LineError, line: u64) -> PyErr {
    match error {
        LineError::Version(_) => UnsupportedVersion::new_err((error.to_string(), line)),
        _ => CorruptTranscript::new_err((error.to_string(), line)),
    }
}

/// A load that failed, as the exception `Session.load` documents.
pub fn load_error(e: LoadError) -> PyErr {
    match e {
        LoadError::Io(e) => os_error(&e),
        LoadError::Line { line, error } => line_error(&error, line),
        LoadError::Replay { line, error } => CorruptTranscript::new_err((error.to_string(), line)),
        LoadError::Empty => CorruptTranscript::new_err(("the transcript is empty",)),
    }
}
