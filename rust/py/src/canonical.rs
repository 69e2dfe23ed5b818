//! Python values to canonical JSON: the walk over Python objects that calls
//! `transcript_core::canonical`'s byte writers.
//!
//! It follows the checks of CPython 3.11's C encoder (`_json.c`) in its order
//! (str, None, True, False, int, float, list/tuple, dict), with the exact
//! built-in types tested first by pointer because they are nearly every value
//! a transcript holds. Subclasses are written the way `json.dumps` writes
//! them: an int or float subclass by `int.__repr__`/`float.__repr__` of its
//! value, a str subclass by its characters, a list or tuple subclass by
//! iterating it, a dict subclass through its `items()`.
//!
//! The walk is a loop over a heap stack of open containers ([`Frame`]), not
//! a recursion, so 512 levels fit any thread's stack.
//!
//! Object lifetimes: every list or tuple being walked is held by a strong
//! reference in its frame, and a dict's keys and values are held by strong
//! references from the moment they are collected until the dict is closed,
//! because walking a sibling may run Python code (a subclass's `items()` or
//! `__iter__`, a finalizer) that could drop them. A list's item is taken as a
//! new reference (`PyList_GetItemRef`), and a dict is walked inside its
//! critical section: no borrowed item is held, with or without the GIL.
//! Scalars are read through pointers their container's frame or entry owns:
//! reading a str, int or float runs no Python code.

use std::cell::RefCell;
use std::ffi::c_int;

use pyo3::exceptions::{PyTypeError, PyUnicodeEncodeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString, PyTuple};
use transcript_core::canonical::{self as wire, MAX_DEPTH};
use transcript_core::json::MAX_INT_DIGITS;

#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn canonical_json<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyString>> {
    with_buffer(|out| {
        Walker::new(py, out, false, 0).write(value)?;
        // SAFETY: `out` is a live buffer of `out.len()` bytes. The decoder
        // validates it (it is valid UTF-8 by construction: UTF-8 input, and
        // lone surrogates escaped) and copies it into a new str.
        unsafe {
            let len = ffi::Py_ssize_t::try_from(out.len())
                .map_err(|_| PyValueError::new_err("canonical JSON text too large"))?;
            let text = ffi::PyUnicode_FromStringAndSize(out.as_ptr().cast(), len);
            Ok(Bound::from_owned_ptr_or_err(py, text)?.cast_into_unchecked())
        }
    })
}

/// Every append's serialisation: it writes straight into the caller's buffer.
pub fn write_envelope(
    py: Python<'_>,
    out: &mut Vec<u8>,
    id: &str,
    payload: &Bound<'_, PyAny>,
    ts: &str,
    r#type: &str,
) -> PyResult<()> {
    out.extend_from_slice(b"{\"id\":");
    wire::write_str(out, id.as_bytes());
    out.extend_from_slice(b",\"payload\":");
    Walker::new(py, out, true, 0).write(payload)?;
    out.extend_from_slice(b",\"ts\":");
    wire::write_str(out, ts.as_bytes());
    out.extend_from_slice(b",\"type\":");
    wire::write_str(out, r#type.as_bytes());
    out.extend_from_slice(b",\"v\":1}\n");
    Ok(())
}

/// The fields of a `Message`, in `to_dict`'s order: role, content, name,
/// tool_calls, tool_call_id, sticky, sysprompt, depth.
pub type MessageFields<'a, 'py> = [&'a Bound<'py, PyAny>; 8];

/// Appends the envelope line of the message whose fields are `fields` (those
/// of a `Message`, not a subclass) to `out`, `\n` included: byte for byte what
/// [`write_envelope`] writes of `message.to_dict()` as a `"message"` payload
/// (role and content always, the other fields when set, in canonical key
/// order), without building that dict. `id` and `ts` are written as they are
/// (a fresh id's hex digits, a timestamp: nothing to escape). Returns whether
/// the message is sticky (`sticky`, `sysprompt` or a `depth`).
pub fn write_message_envelope<'py>(
    py: Python<'py>,
    out: &mut Vec<u8>,
    id: &[u8],
    fields: MessageFields<'_, 'py>,
    ts: &[u8],
) -> PyResult<bool> {
    let [role, content, name, tool_calls, tool_call_id, sticky, sysprompt, depth] = fields;
    // In `to_dict`'s order (a flag's truth may run Python code).
    let sticky = sticky.is_truthy()?;
    let sysprompt = sysprompt.is_truthy()?;
    out.extend_from_slice(b"{\"id\":\"");
    out.extend_from_slice(id);
    out.extend_from_slice(b"\",\"payload\":{\"content\":");
    let mut walker = Walker::new(py, out, true, 1); // inside the payload's own braces
    walker.write(content)?;
    if !depth.is_none() {
        walker.out.extend_from_slice(b",\"depth\":");
        walker.write(depth)?;
    }
    if !name.is_none() {
        walker.out.extend_from_slice(b",\"name\":");
        walker.write(name)?;
    }
    walker.out.extend_from_slice(b",\"role\":");
    walker.write(role)?;
    if sticky {
        walker.out.extend_from_slice(b",\"sticky\":true");
    }
    if sysprompt {
        walker.out.extend_from_slice(b",\"sysprompt\":true");
    }
    for (key, value) in
        [(&b",\"tool_call_id\":"[..], tool_call_id), (&b",\"tool_calls\":"[..], tool_calls)]
    {
        if !value.is_none() {
            walker.out.extend_from_slice(key);
            walker.write(value)?;
        }
    }
    out.extend_from_slice(b"},\"ts\":\"");
    out.extend_from_slice(ts);
    out.extend_from_slice(b"\",\"type\":\"message\",\"v\":1}\n");
    Ok(sticky || sysprompt || !depth.is_none())
}

// A buffer this large or larger is not kept for the next call.
const KEPT_CAPACITY: usize = 1 << 20;

thread_local! {
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `write` with this thread's empty output buffer, or with a new one
/// when that one is in use (a call re-entered from Python code run by the
/// walk) or gone (the thread is exiting).
fn with_buffer<R>(write: impl FnOnce(&mut Vec<u8>) -> PyResult<R>) -> PyResult<R> {
    let mut write = Some(write);
    let reused = BUFFER.try_with(|cell| {
        let mut buffer = cell.try_borrow_mut().ok()?;
        let write = write.take()?;
        buffer.clear();
        let result = write(&mut buffer);
        if buffer.capacity() >= KEPT_CAPACITY {
            *buffer = Vec::new();
        }
        Some(result)
    });
    match (reused, write) {
        (Ok(Some(result)), _) => result,
        (_, Some(write)) => write(&mut Vec::with_capacity(256)),
        (_, None) => Err(PyValueError::new_err("canonical writer: buffer lost")),
    }
}

/// Owned (`PyList_GetItemRef`: never a borrowed pointer another thread could
/// free), or None past the end.
fn list_item<'py>(
    py: Python<'py>,
    list: &Bound<'py, PyAny>,
    index: ffi::Py_ssize_t,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    // SAFETY: `list` is a live list; the item comes back as a new reference.
    unsafe {
        if index >= ffi::PyList_Size(list.as_ptr()) {
            return Ok(None);
        }
        let item = ffi::compat::PyList_GetItemRef(list.as_ptr(), index);
        if !item.is_null() {
            return Ok(Some(Bound::from_owned_ptr(py, item)));
        }
    }
    // Shrunk by another thread since its length was read: it ends here.
    let err = PyErr::fetch(py);
    if err.is_instance_of::<pyo3::exceptions::PyIndexError>(py) {
        return Ok(None);
    }
    Err(err)
}

/// One dict item, collected before the dict's keys are sorted, and the bytes
/// of its key once read (UTF-8, or WTF-8 when it holds lone surrogates).
struct Entry<'py> {
    /// When a str, `ptr..ptr+len` is its cached UTF-8.
    key: Bound<'py, PyAny>,
    value: Bound<'py, PyAny>,
    /// The key encoded with `surrogatepass`, when it has no UTF-8 form;
    /// `ptr..ptr+len` is then this object's buffer.
    wtf8: Option<Bound<'py, PyBytes>>,
    ptr: *const u8,
    len: usize,
}

impl<'py> Entry<'py> {
    /// Its key's bytes read as empty until they are read.
    fn new(key: Bound<'py, PyAny>, value: Bound<'py, PyAny>) -> Self {
        Entry { key, value, wtf8: None, ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(), len: 0 }
    }

    fn key_bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is either empty (a dangling, aligned pointer
        // with no length) or the UTF-8 cache of the str `key` or the buffer of
        // the bytes `wtf8`; this entry keeps that object alive, and neither
        // buffer changes while the object lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A container being written: the walk keeps these on a heap stack rather
/// than recursing, so deep nesting cannot overflow the thread's stack (a
/// Python thread's may be small).
enum Frame<'py> {
    /// A list, read anew at each index (walking an item may run Python code
    /// that changes it).
    List {
        list: Bound<'py, PyAny>,
        next: ffi::Py_ssize_t,
    },
    Tuple {
        tuple: Bound<'py, PyAny>,
        next: ffi::Py_ssize_t,
        len: ffi::Py_ssize_t,
    },
    /// A dict, whose sorted items are `entries[start..end]`.
    Dict {
        start: usize,
        next: usize,
        end: usize,
    },
}

/// What the innermost open container gives next.
enum Step<'py> {
    /// An item to write; `None` for one that needs no reference of its own
    /// (a dict value, or a tuple item, kept alive by its container).
    Item(*mut ffi::PyObject, Option<Bound<'py, PyAny>>),
    /// The container is done: its closing bracket.
    Close(u8),
}

struct Walker<'py, 'b> {
    py: Python<'py>,
    out: &'b mut Vec<u8>,
    /// The containers being written, innermost last.
    frames: Vec<Frame<'py>>,
    /// The items of the dicts being written, innermost last: one stack for
    /// the whole walk, so most calls allocate it once.
    entries: Vec<Entry<'py>>,
    /// The value is an envelope's payload: the envelope's own object is one
    /// of the line's [`MAX_DEPTH`] levels, so the payload may take one fewer;
    /// and a str with a high surrogate right before a low one is refused (a
    /// transcript line must read back as written; `canonical_json` itself
    /// follows json.dumps and writes both escapes).
    in_envelope: bool,
    /// Containers open around what this walker writes, written by its caller.
    outer_depth: usize,
}

impl<'py, 'b> Walker<'py, 'b> {
    fn new(py: Python<'py>, out: &'b mut Vec<u8>, in_envelope: bool, outer_depth: usize) -> Self {
        Walker { py, out, frames: Vec::new(), entries: Vec::new(), in_envelope, outer_depth }
    }

    fn write(&mut self, value: &Bound<'py, PyAny>) -> PyResult<()> {
        self.write_item(value.as_ptr())?;
        while let Some(step) = self.next_step()? {
            match step {
                Step::Item(item, _owner) => self.write_item(item)?,
                Step::Close(bracket) => {
                    self.out.push(bracket);
                    if let Some(Frame::Dict { start, .. }) = self.frames.pop() {
                        self.entries.truncate(start);
                    }
                }
            }
        }
        Ok(())
    }

    /// Advances the innermost open container: writes the separator (and, in
    /// a dict, the key and colon) and returns the next item to write, or its
    /// closing bracket; `None` when no container is open.
    fn next_step(&mut self) -> PyResult<Option<Step<'py>>> {
        let Some(frame) = self.frames.last_mut() else {
            return Ok(None);
        };
        let step = match frame {
            Frame::List { list, next } => match list_item(self.py, list, *next)? {
                None => Step::Close(b']'),
                Some(item) => {
                    if *next > 0 {
                        self.out.push(b',');
                    }
                    *next += 1;
                    Step::Item(item.as_ptr(), Some(item))
                }
            },
            Frame::Tuple { tuple, next, len } => {
                if *next >= *len {
                    Step::Close(b']')
                } else {
                    // SAFETY: `tuple` is a live tuple, owned by the frame; it
                    // never changes, and its items live as long as it does.
                    let item = unsafe { ffi::PyTuple_GetItem(tuple.as_ptr(), *next) };
                    if item.is_null() {
                        return Err(PyErr::fetch(self.py));
                    }
                    if *next > 0 {
                        self.out.push(b',');
                    }
                    *next += 1;
                    Step::Item(item, None)
                }
            }
            Frame::Dict { start, next, end } => match self.entries.get(*next) {
                Some(entry) if *next < *end => {
                    if *next > *start {
                        self.out.push(b',');
                    }
                    *next += 1;
                    wire::write_str(self.out, entry.key_bytes());
                    self.out.push(b':');
                    // The entry owns the value until the dict is closed.
                    Step::Item(entry.value.as_ptr(), None)
                }
                _ => Step::Close(b'}'),
            },
        };
        Ok(Some(step))
    }

    /// Writes the object `obj` if it is a scalar; opens it (writes its
    /// opening bracket and pushes its frame) if it is a container.
    ///
    /// `obj` must be a live object that stays alive for the call (the caller
    /// holds a strong reference to it, directly or through a container that
    /// cannot change while it is read).
    fn write_item(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: `obj` is a live object (see above); the type objects are
        // static; every check below only reads the object's type.
        unsafe {
            let ty = ffi::Py_TYPE(obj);
            if ty == &raw mut ffi::PyUnicode_Type {
                return self.write_string(obj);
            }
            if ty == &raw mut ffi::PyDict_Type {
                return self.open_dict(obj);
            }
            if ty == &raw mut ffi::PyList_Type {
                return self.open_list(Bound::from_borrowed_ptr(self.py, obj));
            }
            if ty == &raw mut ffi::PyLong_Type {
                return self.write_int(obj);
            }
            if ty == &raw mut ffi::PyFloat_Type {
                return self.write_float(obj);
            }
            if obj == ffi::Py_None() {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            if obj == ffi::Py_True() {
                self.out.extend_from_slice(b"true");
                return Ok(());
            }
            if obj == ffi::Py_False() {
                self.out.extend_from_slice(b"false");
                return Ok(());
            }
            if ty == &raw mut ffi::PyTuple_Type {
                return self.open_tuple(Bound::from_borrowed_ptr(self.py, obj));
            }
            // Subclasses, in json's order.
            if ffi::PyUnicode_Check(obj) != 0 {
                return self.write_string(obj);
            }
            if ffi::PyLong_Check(obj) != 0 {
                return self.write_int(obj);
            }
            if ffi::PyFloat_Check(obj) != 0 {
                return self.write_float(obj);
            }
            if ffi::PyList_Check(obj) != 0 || ffi::PyTuple_Check(obj) != 0 {
                // json iterates a subclass (its `__iter__` may differ from
                // the list it holds): `list(obj)`, then that list.
                self.check_depth()?;
                let items = Bound::from_owned_ptr_or_err(self.py, ffi::PySequence_List(obj))?;
                return self.open_list(items);
            }
            if ffi::PyDict_Check(obj) != 0 {
                return self.open_dict_subclass(obj);
            }
            Err(PyTypeError::new_err(format!(
                "Object of type {} is not JSON serializable",
                type_name(&Bound::from_borrowed_ptr(self.py, obj))
            )))
        }
    }

    fn check_depth(&self) -> PyResult<()> {
        let open = self.frames.len() + self.outer_depth;
        if self.in_envelope && open >= MAX_DEPTH - 1 {
            return Err(PyValueError::new_err(format!(
                "a transcript line nests at most {MAX_DEPTH} containers deep, the \
                 envelope's object and the payload two of them: a payload's values \
                 (a message's content, its extras, a grants snapshot, a tool's \
                 arguments) may nest {} deep (is there a circular reference?)",
                MAX_DEPTH - 2
            )));
        }
        if open >= MAX_DEPTH {
            return Err(PyValueError::new_err(format!(
                "canonical JSON nests at most {MAX_DEPTH} containers deep \
                 (is there a circular reference?)"
            )));
        }
        Ok(())
    }

    fn write_string(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let mut wtf8 = None;
        // SAFETY: `obj` is a live str; its bytes are copied out before
        // anything else runs.
        wire::write_str(self.out, unsafe { str_bytes(self.py, obj, self.in_envelope, &mut wtf8)? });
        Ok(())
    }

    /// Writes an int (or int subclass, IntEnum included) as `int.__repr__`.
    fn write_int(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        let mut overflow: c_int = 0;
        // SAFETY: `obj` is a live int. For an int (subclass or not) this
        // reads the value without calling `__index__`.
        let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(obj, &mut overflow) };
        if overflow == 0 {
            if value == -1 {
                if let Some(err) = PyErr::take(self.py) {
                    return Err(err);
                }
            }
            wire::write_i64(self.out, value);
            return Ok(());
        }
        // Beyond 64 bits: `int.__repr__` itself, which also enforces Python's
        // limit on digits (ValueError past `sys.get_int_max_str_digits()`).
        // SAFETY: `obj` is live; a borrowed Bound is only used in this call.
        let obj = unsafe { Bound::from_borrowed_ptr(self.py, obj) };
        let text = self
            .py
            .get_type::<PyInt>()
            .call_method1(intern!(self.py, "__repr__"), (obj,))?
            .cast_into::<PyString>()?;
        let text = text.to_str()?;
        // Python's own limit may have been raised (sys.set_int_max_str_digits):
        // a line must still read back, and the reader takes 4300 digits.
        if self.in_envelope && text.trim_start_matches('-').len() > MAX_INT_DIGITS {
            return Err(PyValueError::new_err(format!(
                "an int of more than {MAX_INT_DIGITS} digits cannot be appended: \
                 load refuses it"
            )));
        }
        self.out.extend_from_slice(text.as_bytes());
        Ok(())
    }

    /// Writes a float (or float subclass) as `float.__repr__`.
    fn write_float(&mut self, obj: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: `obj` is a live float; for a float (subclass or not) this
        // reads the value without calling `__float__`.
        let value = unsafe { ffi::PyFloat_AsDouble(obj) };
        if value == -1.0 {
            if let Some(err) = PyErr::take(self.py) {
                return Err(err);
            }
        }
        // Python's repr of it: `nan`, `inf` or `-inf`.
        let shown = || format!("{value}").to_lowercase();
        wire::write_f64(self.out, value)
            .map_err(|e| PyValueError::new_err(format!("{e}: {}", shown())))
    }

    /// An exact list (or the list made from a list or tuple subclass).
    fn open_list(&mut self, list: Bound<'py, PyAny>) -> PyResult<()> {
        self.check_depth()?;
        self.out.push(b'[');
        self.frames.push(Frame::List { list, next: 0 });
        Ok(())
    }

    fn open_tuple(&mut self, tuple: Bound<'py, PyAny>) -> PyResult<()> {
        self.check_depth()?;
        // SAFETY: `tuple` is a live tuple.
        let len = unsafe { ffi::PyTuple_Size(tuple.as_ptr()) };
        self.out.push(b'[');
        self.frames.push(Frame::Tuple { tuple, next: 0, len });
        Ok(())
    }

    fn open_dict(&mut self, dict: *mut ffi::PyObject) -> PyResult<()> {
        self.check_depth()?;
        let start = self.entries.len();
        let mut position: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        let py = self.py;
        let entries = &mut self.entries;
        // SAFETY: `dict` is a live dict (the caller holds it).
        let held = unsafe { Bound::from_borrowed_ptr(py, dict) };
        // Walked inside the dict's critical section (nothing without the
        // GIL; on a free-threaded build, no other thread changes the dict
        // meanwhile), and each key and value is owned before the next.
        pyo3::sync::critical_section::with_critical_section(&held, || {
            // SAFETY: `dict` is a live dict. This loop runs no Python code (it
            // only takes a strong reference to each key and value), so the
            // dict does not change while `PyDict_Next` walks it.
            unsafe {
                while ffi::PyDict_Next(dict, &mut position, &mut key, &mut value) != 0 {
                    let (key, value) =
                        (Bound::from_borrowed_ptr(py, key), Bound::from_borrowed_ptr(py, value));
                    entries.push(Entry::new(key, value));
                }
            }
        });
        self.open_entries(start, false)
    }

    /// Opens a dict subclass as json does: `{}` when the dict itself is
    /// empty, else the 2-tuples of its `items()` (which may run Python code).
    fn open_dict_subclass(&mut self, dict: *mut ffi::PyObject) -> PyResult<()> {
        self.check_depth()?;
        // SAFETY: `dict` is a live dict subclass.
        let items = unsafe {
            if ffi::PyDict_Size(dict) == 0 {
                self.out.extend_from_slice(b"{}");
                return Ok(());
            }
            Bound::from_owned_ptr_or_err(self.py, ffi::PyMapping_Items(dict))?
        };
        let start = self.entries.len();
        let mut index: ffi::Py_ssize_t = 0;
        while let Some(item) = list_item(self.py, &items, index)? {
            let pair = item.cast::<PyTuple>().ok().filter(|pair| pair.len() == 2);
            let pair = pair.ok_or_else(|| PyValueError::new_err("items must return 2-tuples"))?;
            self.entries.push(Entry::new(pair.get_item(0)?, pair.get_item(1)?));
            index += 1;
        }
        self.open_entries(start, true)
    }

    /// Checks that the keys of the entries from `start` on are str, reads
    /// their bytes, sorts the entries by key, and opens them as one object.
    /// `stable` keeps the order of equal keys (only a dict subclass's
    /// `items()` can repeat a key).
    fn open_entries(&mut self, start: usize, stable: bool) -> PyResult<()> {
        let (py, in_envelope) = (self.py, self.in_envelope);
        let Some(entries) = self.entries.get_mut(start..) else {
            return Err(PyValueError::new_err("canonical writer: lost its dict items"));
        };
        for entry in entries.iter_mut() {
            let obj = entry.key.as_ptr();
            // SAFETY: `obj` is live, owned by `entry.key`; the bytes
            // `str_bytes` returns live as long as it (or `entry.wtf8`) does.
            unsafe {
                if ffi::Py_TYPE(obj) != &raw mut ffi::PyUnicode_Type
                    && ffi::PyUnicode_Check(obj) == 0
                {
                    return Err(PyTypeError::new_err(format!(
                        "keys must be str, not {}",
                        type_name(&entry.key)
                    )));
                }
                let bytes = str_bytes(py, obj, in_envelope, &mut entry.wtf8)?;
                (entry.ptr, entry.len) = (bytes.as_ptr(), bytes.len());
            }
        }
        let by_key =
            |a: &Entry<'_>, b: &Entry<'_>| wire::compare_keys(a.key_bytes(), b.key_bytes());
        if stable {
            entries.sort_by(by_key);
        } else {
            entries.sort_unstable_by(by_key);
        }
        let end = self.entries.len();
        self.out.push(b'{');
        self.frames.push(Frame::Dict { start, next: start, end });
        Ok(())
    }
}

/// The bytes of the str `obj`: its UTF-8 (cached in the object), or, when
/// it holds a lone surrogate and has no UTF-8 form, its WTF-8
/// (`obj.encode("utf-8", "surrogatepass")`), kept in `wtf8`. With
/// `refuse_pairs`, WTF-8 holding a high surrogate right before a low one is
/// refused: escaped, the two read back as the one character they pair into,
/// not as the str that was given.
///
/// # Safety
/// `obj` is a live str (or subclass); the slice lives as long as it does.
unsafe fn str_bytes<'a, 'py>(
    py: Python<'py>,
    obj: *mut ffi::PyObject,
    refuse_pairs: bool,
    wtf8: &'a mut Option<Bound<'py, PyBytes>>,
) -> PyResult<&'a [u8]> {
    let mut size: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(obj, &mut size);
    if !data.is_null() {
        return Ok(std::slice::from_raw_parts(
            data.cast::<u8>(),
            usize::try_from(size).unwrap_or(0),
        ));
    }
    let err = PyErr::fetch(py);
    if !err.is_instance_of::<PyUnicodeEncodeError>(py) {
        return Err(err);
    }
    let encoded = ffi::PyUnicode_AsEncodedString(obj, c"utf-8".as_ptr(), c"surrogatepass".as_ptr());
    let encoded = wtf8.insert(Bound::from_owned_ptr_or_err(py, encoded)?.cast_into::<PyBytes>()?);
    if refuse_pairs && wire::has_surrogate_pair(encoded.as_bytes()) {
        return Err(PyValueError::new_err(
            "a str holding a high surrogate followed by a low one cannot be \
             appended: JSON reads the two back as one character",
        ));
    }
    Ok(encoded.as_bytes())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "?".to_owned())
}
