//! `excerpt(text, indent, avail, max_lines)`: the lines `show` prints of a
//! text, built by `transcript_tools::excerpt` (see there for what it follows).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use transcript_core::json::{JStr, Kind, Reader};
use transcript_tools::excerpt::Excerpt;

use crate::decode::{jstr, str_from_wtf8, value, DecodeError};

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
    let build = || transcript_tools::excerpt::excerpt(text, indent, avail, max_lines);
    let found = if text.len() > DETACH_BYTES {
        py.detach(build)
    } else {
        build()
    };
    found.map(|e| (e.lines, e.total, e.chars))
}

/// A message envelope's line decoded as `decode::loads` decodes it, but for
/// its payload's `content` when that is a string the core can excerpt: that
/// one is not made a Python str, its excerpt is built instead (and the
/// payload then has no `content`). Duplicate keys: the last wins, as in
/// `loads`.
pub(crate) fn message_with_excerpt<'py>(
    py: Python<'py>,
    bytes: &[u8],
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> Result<(Bound<'py, PyAny>, Option<Excerpt>), DecodeError> {
    let mut r = Reader::from_bytes(bytes)?;
    let mut scratch = Vec::new();
    if !matches!(r.peek()?, Kind::Object) {
        let v = value(py, &mut r, &mut scratch, usize::MAX)?;
        r.finish()?;
        return Ok((v, None));
    }
    let envelope = PyDict::new(py);
    let mut found = None;
    r.begin_object()?;
    while let Some(k) = r.next_key(&mut scratch)? {
        let is_payload = matches!(k, JStr::Text("payload"));
        let key = jstr(py, k)?;
        if is_payload {
            found = None;
            if matches!(r.peek()?, Kind::Object) {
                let (payload, excerpt) =
                    payload_with_excerpt(py, &mut r, &mut scratch, indent, avail, max_lines)?;
                found = excerpt;
                envelope.set_item(key, payload)?;
                continue;
            }
        }
        let v = value(py, &mut r, &mut scratch, usize::MAX)?;
        envelope.set_item(key, v)?;
    }
    r.finish()?;
    Ok((envelope.into_any(), found))
}

fn payload_with_excerpt<'py>(
    py: Python<'py>,
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> Result<(Bound<'py, PyAny>, Option<Excerpt>), DecodeError> {
    let payload = PyDict::new(py);
    let mut found = None;
    r.begin_object()?;
    while let Some(k) = r.next_key(scratch)? {
        let is_content = matches!(k, JStr::Text("content"));
        let key = jstr(py, k)?;
        if is_content {
            found = None;
            if payload.contains(&key)? {
                payload.del_item(&key)?; // an earlier `content`: the last one wins
            }
            if matches!(r.peek()?, Kind::String) {
                let text = r.string(scratch)?;
                let v = match text {
                    JStr::Text(t) => {
                        match transcript_tools::excerpt::excerpt(t, indent, avail, max_lines) {
                            Some(e) => {
                                found = Some(e);
                                continue;
                            }
                            None => PyString::new(py, t).into_any(),
                        }
                    }
                    JStr::Wtf8(b) => str_from_wtf8(py, b)?,
                };
                payload.set_item(key, v)?;
                continue;
            }
        }
        let v = value(py, r, scratch, usize::MAX)?;
        payload.set_item(key, v)?;
    }
    Ok((payload.into_any(), found))
}
