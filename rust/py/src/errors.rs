//! Every core failure as its Python exception, here and nowhere else. The
//! exception classes are imported from `agent_transcript.errors`, so Rust
//! raises the same documented, picklable classes Python code catches.

use std::io;
use std::path::Path;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::PyErr;
use transcript_core::envelope::LineError;
use transcript_core::json::JsonError;
use transcript_core::transcript::{LineRec, LoadError, ReplayError};
use transcript_core::writer::WriteError;

use crate::decode::DecodeError;

pyo3::import_exception!(agent_transcript.errors, CorruptTranscript);
pyo3::import_exception!(agent_transcript.errors, UnsupportedVersion);
pyo3::import_exception!(agent_transcript.errors, SessionBroken);
pyo3::import_exception!(agent_transcript.errors, SessionClosed);
pyo3::import_exception!(agent_transcript.errors, UnknownId);
pyo3::import_exception!(agent_transcript.errors, ToolOperationError);

/// An `OSError` that keeps errno, so Python picks the right subclass, and says
/// what Python's own would (`strerror`, without Rust's " (os error N)").
pub fn os_error(e: &io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, os_reason(e))),
        None => PyOSError::new_err(e.to_string()),
    }
}

/// [`os_error`] of a call on `path`, which Python keeps as `.filename`.
pub fn os_error_at(e: &io::Error, path: &Path) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, os_reason(e), path.as_os_str().to_owned())),
        None => PyOSError::new_err(format!("{}: {e}", path.display())),
    }
}

/// What Python's own `OSError` says of `e`: `strerror`, without Rust's
/// " (os error N)".
pub fn os_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_owned(),
        None => text,
    }
}

/// The error of a byte pass: `ValueError` for bytes that are not what they
/// must be (`InvalidData`), an `OSError` otherwise.
pub fn pass_error(e: &io::Error) -> PyErr {
    if e.kind() == io::ErrorKind::InvalidData {
        PyValueError::new_err(e.to_string())
    } else {
        os_error(e)
    }
}

/// An envelope replay refuses.
pub fn replay_error(e: ReplayError) -> PyErr {
    match e {
        ReplayError::UnknownId { .. } => UnknownId::new_err(e.to_string()),
        ReplayError::UnknownOperation(_) | ReplayError::AlreadySettled(_) => {
            ToolOperationError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Line `line` (1-based; 0: not in a file) that is not a usable envelope.
pub fn line_error(error: &LineError, line: u64) -> PyErr {
    match error {
        LineError::Version(_) => UnsupportedVersion::new_err((error.to_string(), line)),
        _ => CorruptTranscript::new_err((error.to_string(), line)),
    }
}

/// A file load, inspect or export refuses.
pub fn load_error(e: LoadError) -> PyErr {
    match e {
        LoadError::Io(e) => os_error(&e),
        LoadError::Line { line, error } => line_error(&error, line),
        LoadError::Replay { line, error } => CorruptTranscript::new_err((error.to_string(), line)),
        LoadError::Empty => CorruptTranscript::new_err(("the transcript is empty",)),
    }
}

/// An append the writer refuses or fails.
pub fn write_error(e: WriteError) -> PyErr {
    match e {
        WriteError::Broken(why) => SessionBroken::new_err(why),
        WriteError::Invalid(why) => PyValueError::new_err(why),
        WriteError::Refused(e) => replay_error(e),
        WriteError::Io(e) => os_error(&e),
    }
}

/// Bad JSON in the line of `rec`.
pub fn corrupt_at(rec: &LineRec) -> impl Fn(JsonError) -> PyErr + '_ {
    move |e| CorruptTranscript::new_err((e.to_string(), rec.number))
}

/// A decode of the line of `rec` that failed: bad JSON is a corrupt line.
pub fn corrupt_decode(rec: &LineRec) -> impl Fn(DecodeError) -> PyErr + '_ {
    move |e| match e {
        DecodeError::Json(e) => CorruptTranscript::new_err((e.to_string(), rec.number)),
        DecodeError::Python(e) => e,
    }
}
