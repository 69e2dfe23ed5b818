//! JSON bytes to Python objects, built directly from the core's pull reader,
//! decoded the way `json.loads` decodes them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};
use transcript_core::json::{parse_float, JStr, JsonError, Kind, Number, Reader};

/// Why decoding failed: bad JSON, or Python refused a value (an int over the
/// digit limit).
pub enum DecodeError {
    Json(JsonError),
    Python(PyErr),
}

impl From<JsonError> for DecodeError {
    fn from(e: JsonError) -> Self {
        DecodeError::Json(e)
    }
}

impl From<PyErr> for DecodeError {
    fn from(e: PyErr) -> Self {
        DecodeError::Python(e)
    }
}

impl DecodeError {
    /// As a Python exception: `ValueError` for bad JSON.
    pub fn into_pyerr(self) -> PyErr {
        match self {
            DecodeError::Json(e) => PyValueError::new_err(format!("invalid JSON: {e}")),
            DecodeError::Python(e) => e,
        }
    }
}

/// A Python str from WTF-8 bytes: lone surrogates come back as themselves.
pub fn str_from_wtf8<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let len = isize::try_from(bytes.len()).map_err(|_| PyValueError::new_err("string too long"))?;
    // SAFETY: the pointer and length describe `bytes`, alive for the call; the
    // error name is a NUL-terminated literal; the result is a new reference or
    // NULL with an exception set, which `from_owned_ptr_or_err` handles.
    unsafe {
        let ptr =
            pyo3::ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr());
        Bound::from_owned_ptr_or_err(py, ptr)
    }
}

pub(crate) fn jstr<'py>(py: Python<'py>, s: JStr<'_>) -> PyResult<Bound<'py, PyAny>> {
    match s {
        JStr::Text(t) => Ok(PyString::new(py, t).into_any()),
        JStr::Wtf8(b) => str_from_wtf8(py, b),
    }
}

/// A member's key: the keys every message payload has (and its tool calls')
/// are the interpreter's interned strings, made once, their hashes kept, so
/// that a dict of them is filled without making and hashing a new str a key.
fn member_key<'py>(py: Python<'py>, s: JStr<'_>) -> PyResult<Bound<'py, PyAny>> {
    let JStr::Text(t) = s else {
        return jstr(py, s);
    };
    let known = match t {
        "role" => pyo3::intern!(py, "role"),
        "content" => pyo3::intern!(py, "content"),
        "tool_calls" => pyo3::intern!(py, "tool_calls"),
        "tool_call_id" => pyo3::intern!(py, "tool_call_id"),
        "name" => pyo3::intern!(py, "name"),
        "id" => pyo3::intern!(py, "id"),
        "type" => pyo3::intern!(py, "type"),
        "function" => pyo3::intern!(py, "function"),
        "arguments" => pyo3::intern!(py, "arguments"),
        "text" => pyo3::intern!(py, "text"),
        _ => return Ok(PyString::new(py, t).into_any()),
    };
    Ok(known.clone().into_any())
}

fn int<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    if text.len() <= 18 {
        if let Ok(v) = text.parse::<i64>() {
            return Ok(v.into_pyobject(py).map(|i| i.into_any())?);
        }
    }
    // Python's own int() keeps big ints exact and enforces its digit limit.
    py.get_type::<pyo3::types::PyInt>().call1((text,))
}

// A container being filled: a list, or a dict and the key of the member being read.
enum Open<'py> {
    List(Bound<'py, PyList>),
    Dict(Bound<'py, PyDict>, Bound<'py, PyAny>),
}

/// Decodes the value at the reader's position.
///
/// Iterative: the containers being filled are kept on the heap, so a value
/// nested as deep as the reader allows costs a few frames of stack whatever its
/// depth, and a thread with a small stack can decode it. Containers nested
/// more than `max_depth` deep are refused (the reader refuses more than 512
/// whatever `max_depth` is).
pub(crate) fn value<'py>(
    py: Python<'py>,
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
    max_depth: usize,
) -> Result<Bound<'py, PyAny>, DecodeError> {
    let mut open: Vec<Open<'py>> = Vec::new();
    loop {
        let kind = r.peek()?;
        if matches!(kind, Kind::Array | Kind::Object) && open.len() >= max_depth {
            return Err(refused(r, "nested deeper than allowed here"));
        }
        // One value, or the opening of a container and its first member.
        let mut done = match kind {
            Kind::Array => {
                let list = PyList::empty(py);
                r.begin_array()?;
                if r.next_item()? {
                    open.push(Open::List(list));
                    continue;
                }
                list.into_any()
            }
            Kind::Object => {
                let dict = PyDict::new(py);
                r.begin_object()?;
                if let Some(k) = r.next_key(scratch)? {
                    let key = member_key(py, k)?;
                    open.push(Open::Dict(dict, key));
                    continue;
                }
                dict.into_any()
            }
            _ => scalar(py, r, scratch)?,
        };
        // Put it in its container; close each container it completes, up to the
        // next member or item, or the end of the whole value.
        loop {
            match open.pop() {
                None => return Ok(done),
                Some(Open::List(list)) => {
                    list.append(done)?;
                    if r.next_item()? {
                        open.push(Open::List(list));
                        break;
                    }
                    done = list.into_any();
                }
                Some(Open::Dict(dict, key)) => {
                    dict.set_item(key, done)?;
                    if let Some(k) = r.next_key(scratch)? {
                        let key = member_key(py, k)?;
                        open.push(Open::Dict(dict, key));
                        break;
                    }
                    done = dict.into_any();
                }
            }
        }
    }
}

// A value that is not a container.
fn scalar<'py>(
    py: Python<'py>,
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Bound<'py, PyAny>, DecodeError> {
    Ok(match r.peek()? {
        Kind::Null => {
            r.null()?;
            py.None().into_bound(py)
        }
        Kind::Bool => pyo3::types::PyBool::new(py, r.boolean()?).to_owned().into_any(),
        Kind::Number => match r.number()? {
            Number::Int(t) => int(py, t)?,
            Number::Float(t) => {
                PyFloat::new(py, parse_float(t).map_err(|why| refused(r, why))?).into_any()
            }
        },
        Kind::String => jstr(py, r.string(scratch)?)?,
        Kind::Array | Kind::Object => {
            return Err(refused(r, "expected a value that is not a container"))
        }
    })
}

// Bad JSON `reason` at the reader's position.
fn refused(r: &Reader<'_>, reason: &'static str) -> DecodeError {
    DecodeError::Json(JsonError { offset: r.offset(), reason })
}

/// Decodes `bytes`, which must be exactly one JSON value.
pub fn loads<'py>(py: Python<'py>, bytes: &[u8]) -> Result<Bound<'py, PyAny>, DecodeError> {
    loads_within(py, bytes, usize::MAX)
}

fn loads_within<'py>(
    py: Python<'py>,
    bytes: &[u8],
    max_depth: usize,
) -> Result<Bound<'py, PyAny>, DecodeError> {
    let mut r = Reader::from_bytes(bytes)?;
    let mut scratch = Vec::new();
    let v = value(py, &mut r, &mut scratch, max_depth)?;
    r.finish()?;
    Ok(v)
}

/// The UTF-8 JSON text of a str that holds lone surrogates (which UTF-8 cannot
/// hold), read as `json.loads` reads it: inside a JSON string, a lone surrogate
/// is itself, so it becomes its `\uXXXX` escape, which the reader decodes to
/// it. Anywhere else `json.loads` refuses it, and so will the reader: right
/// after a backslash (which would make the escape an escaped backslash and
/// text) or outside a string, it is left as bytes that are not UTF-8.
fn escaped_surrogates(text: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    let utf16 = text.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = utf16.cast::<pyo3::types::PyBytes>()?.as_bytes();
    let mut out = Vec::with_capacity(units.len());
    let mut in_string = false;
    let mut backslashes = 0usize;
    let units = units.chunks_exact(2).map(|u| u16::from_le_bytes([u[0], u[1]]));
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                if c == '"' && backslashes % 2 == 0 {
                    in_string = !in_string;
                }
                backslashes = if c == '\\' { backslashes + 1 } else { 0 };
            }
            Err(lone) => {
                let code = lone.unpaired_surrogate();
                if in_string && backslashes % 2 == 0 {
                    out.extend_from_slice(format!("\\u{code:04x}").as_bytes());
                } else {
                    // Not UTF-8: the reader refuses it, as json.loads does.
                    out.extend_from_slice(&[0xED, 0xA0, 0x80]);
                }
                backslashes = 0;
            }
        }
    }
    Ok(out)
}

/// `loads(data, max_depth=512, /)`: one JSON value from bytes or str, as
/// `json.loads` reads it; containers nested more than `max_depth` deep are
/// refused (`ValueError`), as they are past 512 whatever `max_depth` is.
#[pyfunction]
#[pyo3(name = "loads", signature = (data, max_depth = 512, /))]
pub fn py_loads<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    max_depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let mut escaped = None;
    let bytes = if let Ok(b) = data.cast::<pyo3::types::PyBytes>() {
        b.as_bytes()
    } else if let Ok(s) = data.cast::<PyString>() {
        match s.to_str() {
            Ok(text) => text.as_bytes(),
            Err(_) => escaped.insert(escaped_surrogates(s)?).as_slice(),
        }
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err("loads() takes bytes or str"));
    };
    loads_within(py, bytes, max_depth).map_err(DecodeError::into_pyerr)
}
