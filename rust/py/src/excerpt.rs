//! `excerpt(text, indent, avail, max_lines)`: the lines `show` prints of a
//! text, built by `transcript_core::excerpt` (see there for what it follows).

use pyo3::prelude::*;
use pyo3::types::PyString;

/// Texts longer than this are wrapped with the GIL released.
const DETACH_BYTES: usize = 1 << 16;

/// `(lines, total, chars)` of `text`'s excerpt, or None when Python must build
/// it: the text holds a lone surrogate, or a break depends on how Python's
/// Unicode tables class a non-ASCII character.
#[pyfunction]
#[pyo3(signature = (text, indent, avail, max_lines, /))]
pub fn excerpt(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> Option<(Vec<String>, usize, usize)> {
    // A lone surrogate has no UTF-8: Python renders that text.
    let text = text.to_str().ok()?;
    let build = || transcript_core::excerpt::excerpt(text, indent, avail, max_lines);
    let found = if text.len() > DETACH_BYTES {
        py.detach(build)
    } else {
        build()
    };
    found.map(|e| (e.lines, e.total, e.chars))
}
