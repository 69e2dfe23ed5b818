//! Reading envelopes back, for the two readers (`Transcript`, `Peeked`): a
//! line by its index record, decoded into Python objects only as far as asked.

use std::borrow::Cow;
use std::fs::File;
use std::ops::Deref;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use transcript_core::envelope::{member_span_at, EnvelopeType};
use transcript_core::json::wtf8_from_utf16;
use transcript_core::transcript::{read_exact_at, Index, LineRec};

use crate::decode::{loads, DecodeError};
use crate::errors::{corrupt_at, corrupt_decode, load_error, os_error, CorruptTranscript};

/// What both readers read through: an index over a file.
pub(crate) trait Indexed {
    fn index(&self) -> &Index;
    fn file(&self) -> PyResult<Reader<'_>>;
    /// The bytes indexed.
    fn end(&self) -> u64;
    /// Lines read, blank (and skipped) ones included.
    fn lines_read(&self) -> u64;
}

/// The file a read goes through: the reader's own, or, once a session is
/// closed, its file opened again for this read.
pub(crate) enum Reader<'a> {
    Open(&'a File),
    Again(File),
}

impl Deref for Reader<'_> {
    type Target = File;
    fn deref(&self) -> &File {
        match self {
            Reader::Open(file) => file,
            Reader::Again(file) => file,
        }
    }
}

/// The `#[pymethods]` of a reader: the methods both share, then its own. A
/// macro because PyO3 takes one `#[pymethods]` block per class.
macro_rules! reader_methods {
    ($ty:ty { $($own:tt)* }) => {
        #[pyo3::pymethods]
        impl $ty {
            fn __len__(&self) -> usize {
                self.index().len()
            }

            fn line_count(&self) -> u64 {
                self.lines_read()
            }

            fn size(&self) -> u64 {
                self.end()
            }

            #[pyo3(signature = (index, /))]
            fn line_number(&self, index: usize) -> PyResult<u64> {
                Ok($crate::lines::rec_at(self.index(), index)?.number)
            }

            #[pyo3(signature = (index, /))]
            fn type_name(&self, index: usize) -> PyResult<String> {
                let name = self.index().type_name(index);
                name.map(str::to_owned).ok_or_else($crate::lines::out_of_range)
            }

            #[pyo3(signature = (index, /))]
            fn role(&self, index: usize) -> PyResult<Option<String>> {
                $crate::lines::rec_at(self.index(), index)?;
                Ok(self.index().role(index).map(str::to_owned))
            }

            #[pyo3(signature = (r#type, /))]
            fn indices_of_type(&self, r#type: &str) -> Vec<u32> {
                self.index().indices_of_type(r#type)
            }

            /// `(type, count, bytes)` per type (a line's `\n` counted), in
            /// the order the types first appear.
            fn type_totals(&self) -> Vec<(String, u64, u64)> {
                let totals = self.index().type_totals(self.end());
                totals.into_iter().map(|t| (t.name.to_owned(), t.count, t.bytes)).collect()
            }

            /// `(role, count)` of the message lines, in the order the roles
            /// first appear.
            fn role_counts(&self) -> Vec<(String, u64)> {
                let counts = self.index().role_counts();
                counts.into_iter().map(|(role, n)| (role.to_owned(), n)).collect()
            }

            /// `(id, type, ts, v, payload, line)`.
            #[pyo3(signature = (index, /))]
            fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
                let rec = $crate::lines::rec_at(self.index(), index)?;
                $crate::lines::event_tuple(py, &*self.file()?, &rec)
            }

            #[pyo3(signature = (index, indent, avail, max_lines, /))]
            fn shown<'py>(
                &self,
                py: Python<'py>,
                index: usize,
                indent: &str,
                avail: usize,
                max_lines: Option<usize>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let rec = $crate::lines::rec_at(self.index(), index)?;
                let shape = (indent, avail, max_lines);
                $crate::lines::shown_tuple(py, &*self.file()?, &rec, shape)
            }

            #[pyo3(signature = (index, /))]
            fn payload<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
                $crate::lines::member_of(py, &*self.file()?, self.index(), index, &["payload"])
            }

            /// Envelope `index`'s id; its payload is not decoded.
            #[pyo3(signature = (index, /))]
            fn envelope_id<'py>(
                &self,
                py: Python<'py>,
                index: usize,
            ) -> PyResult<Bound<'py, PyAny>> {
                $crate::lines::member_of(py, &*self.file()?, self.index(), index, &["id"])
            }

            #[pyo3(signature = (indices, keys, /))]
            fn payload_fields<'py>(
                &self,
                py: Python<'py>,
                indices: Vec<u32>,
                keys: Vec<String>,
            ) -> PyResult<Bound<'py, PyList>> {
                $crate::lines::fields_of(py, &*self.file()?, self.index(), indices, keys)
            }

            $($own)*
        }
    };
}
pub(crate) use reader_methods;

pub(crate) fn file_size(file: &File) -> PyResult<u64> {
    file.metadata().map(|m| m.len()).map_err(|e| os_error(&e))
}

pub(crate) fn read_line_into(file: &File, rec: &LineRec, buf: &mut Vec<u8>) -> PyResult<()> {
    buf.clear();
    buf.resize(rec.len as usize, 0);
    read_exact_at(file, buf, rec.offset).map_err(|e| os_error(&e))
}

fn read_line(file: &File, rec: &LineRec) -> PyResult<Vec<u8>> {
    let mut buf = Vec::new();
    read_line_into(file, rec, &mut buf)?;
    Ok(buf)
}

/// `(id, type, ts, v, payload)` of a decoded envelope (line `line`); a missing
/// key is None.
pub(crate) fn envelope_fields<'py>(
    py: Python<'py>,
    value: Bound<'py, PyAny>,
    line: u64,
) -> PyResult<[Bound<'py, PyAny>; 5]> {
    let d = value
        .cast_into::<PyDict>()
        .map_err(|_| CorruptTranscript::new_err(("not an object", line)))?;
    let get = |k: &str| -> PyResult<Bound<'py, PyAny>> {
        Ok(d.get_item(k)?.unwrap_or_else(|| py.None().into_bound(py)))
    };
    Ok([get("id")?, get("type")?, get("ts")?, get("v")?, get("payload")?])
}

/// `(id, type, ts, v, payload, line, as_is, excerpt)`: [`event_tuple`], whether
/// every string in the line is already what `show` prints (see
/// `transcript_tools::excerpt::printable_as_is`), and for a message whose content
/// is a string, that excerpt as `(lines, total, chars)`
/// in place of the content (see `crate::excerpt::message_with_excerpt`); from
/// one read of the line.
pub(crate) fn shown_tuple<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
    shape: (&str, usize, Option<usize>),
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = read_line(file, rec)?;
    let as_is = transcript_tools::excerpt::printable_as_is(&bytes);
    let corrupt = corrupt_decode(rec);
    let (value, excerpt) = if rec.kind == EnvelopeType::Message {
        let (indent, avail, max_lines) = shape;
        crate::excerpt::message_with_excerpt(py, &bytes, indent, avail, max_lines)
            .map_err(corrupt)?
    } else {
        (loads(py, &bytes).map_err(corrupt)?, None)
    };
    let [id, kind, ts, v, payload] = envelope_fields(py, value, rec.number)?;
    Ok((id, kind, ts, v, payload, rec.number, as_is, excerpt).into_pyobject(py)?.into_any())
}

pub(crate) fn event_tuple<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
) -> PyResult<Bound<'py, PyAny>> {
    let value = loads(py, &read_line(file, rec)?).map_err(corrupt_decode(rec))?;
    let [id, kind, ts, v, payload] = envelope_fields(py, value, rec.number)?;
    Ok((id, kind, ts, v, payload, rec.number).into_pyobject(py)?.into_any())
}

/// An id from Python as the core compares ids: the bytes its line decodes to
/// (WTF-8, see `transcript_core::envelope::Id`), lone surrogates included.
pub(crate) fn id_key<'a>(id: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(text) = id.to_str() {
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    let utf16 = id.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = utf16.cast::<PyBytes>()?.as_bytes();
    Ok(Cow::Owned(wtf8_from_utf16(units.chunks_exact(2).map(|u| u16::from_le_bytes([u[0], u[1]])))))
}

pub(crate) fn out_of_range() -> PyErr {
    PyIndexError::new_err("envelope index out of range")
}

pub(crate) fn rec_at(index: &Index, i: usize) -> PyResult<LineRec> {
    index.get(i).ok_or_else(out_of_range)
}

/// The member at `path` of envelope `i` (`["payload"]`, `["id"]`), decoded
/// alone: the rest of the line is not built (None if the line has none).
pub(crate) fn member_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let rec = rec_at(index, i)?;
    let bytes = read_line(file, &rec)?;
    match member_span_at(&bytes, path).map_err(corrupt_at(&rec))? {
        Some(at) => {
            loads(py, &bytes[at.start as usize..at.end as usize]).map_err(DecodeError::into_pyerr)
        }
        None => Ok(py.None().into_bound(py)),
    }
}

/// For each envelope in `indices`, the members `keys` of its payload that it
/// has, decoded into a dict (empty when the payload is not an object). The
/// lines are read and searched on every core without the GIL, then only
/// those members are built.
pub(crate) fn fields_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    indices: Vec<u32>,
    keys: Vec<String>,
) -> PyResult<Bound<'py, PyList>> {
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    let found = py.detach(|| index.payload_members(file, &indices, &names)).map_err(load_error)?;
    let list = PyList::empty(py);
    for m in found {
        let d = PyDict::new(py);
        for (key, at) in names.iter().zip(&m.spans) {
            if let Some(at) = at {
                let value = loads(py, &m.line[at.start as usize..at.end as usize])
                    .map_err(DecodeError::into_pyerr)?;
                d.set_item(*key, value)?;
            }
        }
        list.append(d)?;
    }
    Ok(list)
}
