//! The exception classes, imported from `agent_transcript.errors` so that Rust
//! raises the same documented, picklable classes Python code catches.

pyo3::import_exception!(agent_transcript.errors, CorruptTranscript);
pyo3::import_exception!(agent_transcript.errors, UnsupportedVersion);
pyo3::import_exception!(agent_transcript.errors, SessionBroken);
pyo3::import_exception!(agent_transcript.errors, UnknownId);
pyo3::import_exception!(agent_transcript.errors, ToolOperationError);
