//! `excerpt(text, indent, avail, max_lines)`: the lines `show` prints of a
//! text, built by `transcript_tools::excerpt` (see there for what it follows),
//! with Python's own Unicode tables answering for the characters it asks of.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use transcript_core::json::{JStr, Kind, Reader};
use transcript_tools::excerpt::{Class, Excerpt};

use crate::decode::{jstr, str_from_wtf8, value, DecodeError};

/// Texts longer than this are wrapped with the GIL released.
const DETACH_BYTES: usize = 1 << 16;

/// `(lines, total, chars)` of `text`'s excerpt.
#[pyfunction]
#[pyo3(signature = (text, indent, avail, max_lines, /))]
pub fn excerpt<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let wtf8;
    let bytes = match text.to_str() {
        Ok(s) => s.as_bytes(),
        Err(_) => {
            // A lone surrogate: its WTF-8 is what `surrogatepass` writes.
            wtf8 =
                text.call_method1("encode", ("utf-8", "surrogatepass"))?.cast_into::<PyBytes>()?;
            wtf8.as_bytes()
        }
    };
    let build = || excerpt_of(bytes, indent, avail, max_lines);
    let found = if bytes.len() > DETACH_BYTES { py.detach(build) } else { build() };
    to_python(py, found?)
}

/// The excerpt of WTF-8 `text`, each non-ASCII character beside a hyphen
/// classed by Python's `str.isalnum` and `str.isdecimal`: the `\w` and `\d`
/// of the `re` module textwrap's patterns use.
fn excerpt_of(
    text: &[u8],
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> PyResult<Excerpt> {
    let mut failed = None;
    let mut class = |c: char| {
        Python::attach(|py| {
            let s = PyString::new(py, c.encode_utf8(&mut [0; 4]));
            let ask = |name| s.call_method0(name)?.is_truthy();
            match ask("isalnum").and_then(|word| Ok((word, word && ask("isdecimal")?))) {
                Ok((false, _)) => Class::Other,
                Ok((true, false)) => Class::Letter,
                Ok((true, true)) => Class::Digit,
                Err(e) => {
                    failed.get_or_insert(e);
                    Class::Other
                }
            }
        })
    };
    let found = transcript_tools::excerpt::excerpt(text, indent, avail, max_lines, &mut class);
    failed.map_or(Ok(found), Err)
}

/// `(lines, total, chars)`, the lines as str (a lone surrogate kept).
fn to_python(py: Python<'_>, e: Excerpt) -> PyResult<Bound<'_, PyAny>> {
    let lines = PyList::empty(py);
    for line in &e.lines {
        lines.append(str_from_wtf8(py, line)?)?;
    }
    Ok((lines, e.total, e.chars).into_pyobject(py)?.into_any())
}

/// A message envelope's line decoded as `decode::loads` decodes it, but for
/// its payload's `content` when that is a string: that one is not made a
/// Python str, its excerpt `(lines, total, chars)` is built instead (and the
/// payload then has no `content`). Duplicate keys: the last wins, as in
/// `loads`.
pub(crate) fn message_with_excerpt<'py>(
    py: Python<'py>,
    bytes: &[u8],
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> Result<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>), DecodeError> {
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
                let shape = (indent, avail, max_lines);
                let (payload, excerpt) = payload_with_excerpt(py, &mut r, &mut scratch, shape)?;
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
    (indent, avail, max_lines): (&str, usize, Option<usize>),
) -> Result<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>), DecodeError> {
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
                let text = r.string(scratch)?.as_bytes();
                found = Some(to_python(py, excerpt_of(text, indent, avail, max_lines)?)?);
                continue;
            }
        }
        let v = value(py, r, scratch, usize::MAX)?;
        payload.set_item(key, v)?;
    }
    Ok((payload.into_any(), found))
}
