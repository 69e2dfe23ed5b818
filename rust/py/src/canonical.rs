//! Python values to canonical JSON bytes (placeholder until the canonical writer lands).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// `canonical_json(value)`: see `agent_transcript.canonical_json`.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn canonical_json(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let _ = value;
    Err(pyo3::exceptions::PyNotImplementedError::new_err(
        "canonical writer not built yet",
    ))
}

/// `envelope_line(id, payload, ts, type)`: one whole envelope line, `\n` included.
#[pyfunction]
#[pyo3(signature = (id, payload, ts, r#type, /))]
pub fn envelope_line<'py>(
    py: Python<'py>,
    id: &str,
    payload: &Bound<'py, PyAny>,
    ts: &str,
    r#type: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let _ = (py, id, payload, ts, r#type);
    Err(pyo3::exceptions::PyNotImplementedError::new_err(
        "canonical writer not built yet",
    ))
}
