//! `Transcript` and `Peeked`: the native halves of `Session` and `Session.peek`.
//!
//! Python opens, locks and repairs the file and hands over its descriptor; this
//! side indexes the file, replays it, writes each new line with one `write(2)`,
//! and decodes lines into Python objects only when they are asked for.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::RawFd;

use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use transcript_core::envelope::{member_span_at, member_spans, parse_line, EnvelopeType, Span};
use transcript_core::fork;
use transcript_core::json::{wtf8_from_utf16, JsonError};
use transcript_core::scan::{tail_scan, ReadAt, Tail};
use transcript_core::stamp::{IdGen, Instant, Stamper};
use transcript_core::transcript::{
    self as core, Index, LineRec, LoadError, ReplayError, Source, WHOLE,
};

use crate::canonical::{write_message_envelope, MessageRead};
use crate::decode::loads;
use crate::errors::{
    line_error, load_error, os_error, CorruptTranscript, SessionBroken, ToolOperationError,
    UnknownId,
};
use crate::fds::dup;
use crate::signals::Signals;

fn file_size(file: &File) -> PyResult<u64> {
    file.metadata().map(|m| m.len()).map_err(|e| os_error(&e))
}

fn read_line(file: &File, rec: &LineRec) -> PyResult<Vec<u8>> {
    let mut buf = Vec::new();
    read_line_into(file, rec, &mut buf)?;
    Ok(buf)
}

fn read_line_into(file: &File, rec: &LineRec, buf: &mut Vec<u8>) -> PyResult<()> {
    buf.clear();
    buf.resize(rec.len as usize, 0);
    let mut filled = 0;
    while filled < buf.len() {
        let n = file
            .read_at(&mut buf[filled..], rec.offset + filled as u64)
            .map_err(|e| os_error(&e))?;
        if n == 0 {
            return Err(PyOSError::new_err(
                "the transcript shrank under the session",
            ));
        }
        filled += n;
    }
    Ok(())
}

/// Reads the lines of one file, keeping the last one read: the messages of one
/// compaction's replacement are next to each other in the live list and share
/// their line, which is read once for all of them.
struct Lines<'a> {
    file: &'a File,
    index: &'a Index,
    at: Option<u32>,
    bytes: Vec<u8>,
}

impl<'a> Lines<'a> {
    fn new(file: &'a File, index: &'a Index) -> Self {
        Lines {
            file,
            index,
            at: None,
            bytes: Vec::new(),
        }
    }

    /// Envelope `line`'s record and bytes.
    fn get(&mut self, line: u32) -> PyResult<(LineRec, &[u8])> {
        let rec = rec_at(self.index, line as usize)?;
        if self.at != Some(line) {
            self.at = None;
            read_line_into(self.file, &rec, &mut self.bytes)?;
            self.at = Some(line);
        }
        Ok((rec, &self.bytes))
    }
}

fn replay_error(e: ReplayError) -> PyErr {
    match e {
        ReplayError::UnknownId { .. } => UnknownId::new_err(e.to_string()),
        ReplayError::UnknownOperation(_) | ReplayError::AlreadySettled(_) => {
            ToolOperationError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// The decoded envelope of one line, as a dict with `id, type, ts, v, payload`.
fn decode_line<'py>(py: Python<'py>, file: &File, rec: &LineRec) -> PyResult<Bound<'py, PyDict>> {
    let bytes = read_line(file, rec)?;
    let value = loads(py, &bytes).map_err(|e| match e {
        crate::decode::DecodeError::Json(e) => {
            CorruptTranscript::new_err((e.to_string(), rec.number))
        }
        crate::decode::DecodeError::Python(e) => e,
    })?;
    value
        .cast_into::<PyDict>()
        .map_err(|_| CorruptTranscript::new_err(("not an object", rec.number)))
}

/// `(id, type, ts, v, payload)` of a decoded envelope; a missing key is None.
fn envelope_fields<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
) -> PyResult<[Bound<'py, PyAny>; 5]> {
    let get = |k: &str| -> PyResult<Bound<'py, PyAny>> {
        Ok(d.get_item(k)?.unwrap_or_else(|| py.None().into_bound(py)))
    };
    Ok([
        get("id")?,
        get("type")?,
        get("ts")?,
        get("v")?,
        get("payload")?,
    ])
}

/// `(id, type, ts, v, payload, line, as_is, excerpt)`: [`event_tuple`], whether
/// every string in the line is already what `show` prints (see
/// `transcript_core::excerpt::printable_as_is`), and for a message whose content
/// is a string the core can excerpt, that excerpt as `(lines, total, chars)`
/// in place of the content (see `crate::excerpt::message_with_excerpt`); from
/// one read of the line.
fn shown_tuple<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
    shape: (&str, usize, Option<usize>),
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = read_line(file, rec)?;
    let as_is = transcript_core::excerpt::printable_as_is(&bytes);
    let corrupt = |e| match e {
        crate::decode::DecodeError::Json(e) => {
            CorruptTranscript::new_err((e.to_string(), rec.number))
        }
        crate::decode::DecodeError::Python(e) => e,
    };
    let (value, excerpt) = if matches!(rec.kind, transcript_core::envelope::EnvelopeType::Message) {
        let (indent, avail, max_lines) = shape;
        crate::excerpt::message_with_excerpt(py, &bytes, indent, avail, max_lines)
            .map_err(corrupt)?
    } else {
        (loads(py, &bytes).map_err(corrupt)?, None)
    };
    let d = value
        .cast_into::<PyDict>()
        .map_err(|_| CorruptTranscript::new_err(("not an object", rec.number)))?;
    let [id, kind, ts, v, payload] = envelope_fields(py, &d)?;
    let excerpt = excerpt.map(|e| (e.lines, e.total, e.chars));
    Ok((id, kind, ts, v, payload, rec.number, as_is, excerpt)
        .into_pyobject(py)?
        .into_any())
}

fn event_tuple<'py>(py: Python<'py>, file: &File, rec: &LineRec) -> PyResult<Bound<'py, PyAny>> {
    let [id, kind, ts, v, payload] = envelope_fields(py, &decode_line(py, file, rec)?)?;
    Ok((id, kind, ts, v, payload, rec.number)
        .into_pyobject(py)?
        .into_any())
}

/// An id from Python as the core compares ids: the bytes its line decodes to
/// (WTF-8, see `transcript_core::envelope::Id`), lone surrogates included.
fn id_key<'a>(id: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(text) = id.to_str() {
        return Ok(Cow::Borrowed(text.as_bytes()));
    }
    let utf16 = id.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let units = utf16.cast::<PyBytes>()?.as_bytes();
    Ok(Cow::Owned(wtf8_from_utf16(
        units
            .chunks_exact(2)
            .map(|u| u16::from_le_bytes([u[0], u[1]])),
    )))
}

fn out_of_range() -> PyErr {
    PyIndexError::new_err("envelope index out of range")
}

fn rec_at(index: &Index, i: usize) -> PyResult<LineRec> {
    index.get(i).ok_or_else(out_of_range)
}

/// The value at `path` in `bytes`, the line of `rec` (None if it has none).
fn decode_at<'py>(
    py: Python<'py>,
    rec: &LineRec,
    bytes: &[u8],
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    match member_span_at(bytes, path).map_err(corrupt_at(rec))? {
        Some(at) => decode_bytes(py, bytes, at),
        None => Ok(py.None().into_bound(py)),
    }
}

fn decode_bytes<'py>(py: Python<'py>, bytes: &[u8], at: Span) -> PyResult<Bound<'py, PyAny>> {
    let part = bytes
        .get(at.start as usize..at.end as usize)
        .unwrap_or_default();
    loads(py, part).map_err(crate::decode::DecodeError::into_pyerr)
}

/// What `show` says of one message an elision stubbed: its line index, role,
/// `tool_call_id` and the size of the content it had (`elision_rows`).
type ElisionRow<'py> = (u32, Bound<'py, PyAny>, Bound<'py, PyAny>, Option<u64>);

/// A message as a payload dict: a message line's payload, a replacement
/// message's payload, or `{"role": "user", "content": summary}` for a
/// compaction's summary; with the stub in place of the content when an elision
/// stubbed it. Lines are read through `lines` (the message's) and `stubs`.
fn message_dict<'py>(
    py: Python<'py>,
    t: &core::Transcript,
    lines: &mut Lines<'_>,
    stubs: &mut Lines<'_>,
    at: Source,
    stub: Option<(u32, Span)>,
) -> PyResult<Bound<'py, PyDict>> {
    let (rec, bytes) = lines.get(at.line)?;
    let message = if at.part != WHOLE {
        let span = t
            .part(at.line, at.part)
            .map(|p| p.span)
            .ok_or_else(|| PyValueError::new_err("no such replacement message"))?;
        decode_bytes(py, bytes, span)?.cast_into::<PyDict>()?
    } else if rec.kind == EnvelopeType::Compaction {
        let d = PyDict::new(py);
        d.set_item("role", "user")?;
        d.set_item(
            "content",
            decode_at(py, &rec, bytes, &["payload", "summary"])?,
        )?;
        d
    } else {
        decode_at(py, &rec, bytes, &["payload"])?.cast_into::<PyDict>()?
    };
    if let Some((line, span)) = stub {
        let (_, bytes) = stubs.get(line)?;
        message.set_item("content", decode_bytes(py, bytes, span)?)?;
    }
    Ok(message)
}

/// The id of the message `at`: its line's envelope id, or `"<compaction id>:<k>"`
/// for the `k`-th message of a compaction's replacement.
fn message_id<'py>(
    py: Python<'py>,
    lines: &mut Lines<'_>,
    at: Source,
) -> PyResult<Bound<'py, PyAny>> {
    let (rec, bytes) = lines.get(at.line)?;
    let id = decode_at(py, &rec, bytes, &["id"])?;
    if at.part == WHOLE {
        Ok(id)
    } else {
        id.add(format!(":{}", at.part))
    }
}

fn corrupt_at(rec: &LineRec) -> impl Fn(JsonError) -> PyErr + '_ {
    move |e| CorruptTranscript::new_err((e.to_string(), rec.number))
}

/// The member at `path` of envelope `i` (`["payload"]`, `["id"]`), decoded
/// alone: the rest of the line is not built (None if the line has none).
fn member_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
    path: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let rec = rec_at(index, i)?;
    let bytes = read_line(file, &rec)?;
    match member_span_at(&bytes, path).map_err(corrupt_at(&rec))? {
        Some(at) => loads(py, &bytes[at.start as usize..at.end as usize])
            .map_err(crate::decode::DecodeError::into_pyerr),
        None => Ok(py.None().into_bound(py)),
    }
}

/// Envelope `i`'s payload, decoded alone.
fn payload_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    member_of(py, file, index, i, &["payload"])
}

/// Envelope `i`'s id, read without decoding its payload.
fn id_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    member_of(py, file, index, i, &["id"])
}

/// For each envelope in `indices`, the members `keys` of its payload that it
/// has, decoded into a dict (empty when the payload is not an object); nothing
/// else is decoded. The lines are read and searched on every core without the
/// GIL, then only those members are built.
fn fields_of<'py>(
    py: Python<'py>,
    file: &File,
    index: &Index,
    indices: Vec<u32>,
    keys: Vec<String>,
) -> PyResult<Bound<'py, PyList>> {
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    let found = py
        .detach(|| index.payload_members(file, &indices, &names))
        .map_err(load_error)?;
    let list = PyList::empty(py);
    for m in found {
        let d = PyDict::new(py);
        for (key, at) in names.iter().zip(&m.spans) {
            if let Some(at) = at {
                let value = loads(py, &m.line[at.start as usize..at.end as usize])
                    .map_err(crate::decode::DecodeError::into_pyerr)?;
                d.set_item(*key, value)?;
            }
        }
        list.append(d)?;
    }
    Ok(list)
}

/// `(type, count, bytes)` per type, in the order the types first appear.
fn type_totals(index: &Index, end: u64) -> Vec<(String, u64, u64)> {
    index
        .type_totals(end)
        .into_iter()
        .map(|t| (t.name.to_owned(), t.count, t.bytes))
        .collect()
}

fn role_counts(index: &Index) -> Vec<(String, u64)> {
    index
        .role_counts()
        .into_iter()
        .map(|(role, n)| (role.to_owned(), n))
        .collect()
}

/// Where a message comes from, for Python: `(envelope index, replacement
/// position or None)`.
type Place = (u32, Option<u32>);

/// What `later` answers: four line indices, each or None.
type Later = (Option<u32>, Option<u32>, Option<u32>, Option<u32>);

fn place(at: Source) -> Place {
    (at.line, (at.part != WHOLE).then_some(at.part))
}

fn places(at: &[Source]) -> Vec<Place> {
    at.iter().copied().map(place).collect()
}

/// `tail_check(fd, /)`: the tail check of an open file, as
/// `(kind, keep, line, removed, missing_newline, bytes_read)` with kind one of
/// `"empty"`, `"whole"`, `"torn"`, `"corrupt"`, `"damaged"`.
#[pyfunction]
#[pyo3(signature = (fd, /))]
pub fn tail_check(py: Python<'_>, fd: RawFd) -> PyResult<(&'static str, u64, u64, u64, bool, u64)> {
    let file = dup(fd)?;
    let size = file_size(&file)?;
    let (tail, read) = py
        .detach(|| tail_scan(&file, size))
        .map_err(|e| os_error(&e))?;
    Ok(match tail {
        Tail::Empty => ("empty", size, 0, 0, false, read),
        Tail::Whole { missing_newline } => ("whole", size, 0, 0, missing_newline, read),
        Tail::Torn {
            keep,
            line,
            removed,
        } => ("torn", keep, line, removed, false, read),
        Tail::Corrupt { line } => ("corrupt", size, line, 0, false, read),
        Tail::Damaged { line } => ("damaged", size, line, 0, false, read),
    })
}

/// One transcript open for appending: its index, its replayed state and its file.
#[pyclass(module = "agent_transcript._core")]
pub struct Transcript {
    core: core::Transcript,
    file: File,
    // The file's length after the last good line: a failed write is cut back to it.
    good_len: u64,
    missing_newline: bool,
    fsync: bool,
    broken: Option<String>,
    ids: IdGen,
    // The timestamp text of the last second an append was stamped in.
    stamps: Stamper,
    buf: Vec<u8>,
    // The fork generation the transcript was opened in: a forked child never
    // writes through its parent's writer, even where no Python at-fork hook ran.
    opened_in: u64,
}

impl Transcript {
    fn rec(&self, index: usize) -> PyResult<LineRec> {
        rec_at(&self.core.index, index)
    }

    fn history(&self) -> PyResult<&core::History> {
        self.core
            .history
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("only a read-only transcript keeps its history"))
    }

    // Indexes and replays the first `size` bytes of `file`; with `history`, the
    // replay keeps what it did, for a reader (a writer has no use for it).
    fn replay(
        py: Python<'_>,
        file: File,
        size: u64,
        fsync: bool,
        missing_newline: bool,
        broken: Option<String>,
        history: bool,
    ) -> PyResult<Self> {
        // A Ctrl-C is heard between stretches of a MiB, not when a GiB is read.
        let signals = Signals::new(py);
        let stop = || signals.check();
        let loaded = py.detach(|| {
            if history {
                core::inspect_or_stop(&file, size, &stop)
            } else {
                core::load_or_stop(&file, size, &stop)
            }
        });
        let core = loaded.map_err(|e| match e {
            LoadError::Io(io) => signals.raised(&io, os_error),
            other => load_error(other),
        })?;
        Ok(Transcript {
            core,
            file,
            good_len: size,
            missing_newline,
            fsync,
            broken,
            ids: IdGen::new(),
            stamps: Stamper::default(),
            buf: Vec::new(),
            opened_in: fork::generation(),
        })
    }

    // Checks that replay accepts the envelope serialised in `body` (one line,
    // without its `\n`) after what this transcript holds; returns it.
    fn check_line(&self, body: &[u8]) -> PyResult<core::Accepted> {
        core::check_line_length(body.len() as u64)
            .map_err(|e| PyValueError::new_err(format!("the envelope cannot be written: {e}")))?;
        let env = parse_line(body)
            .map_err(|e| PyValueError::new_err(format!("the envelope does not read back: {e}")))?;
        self.core.accept(env, true).map_err(replay_error)
    }

    // Writes the lines serialised in `buf` (a `\n`, then whole lines each with
    // its `\n`) with one write(2), the leading `\n` only when the file's last
    // line lacks its own.
    fn write_lines(&mut self, py: Python<'_>, buf: &[u8]) -> PyResult<()> {
        let line = if self.missing_newline { buf } else { &buf[1..] };
        if self.fsync {
            py.detach(|| self.write_line(line))
        } else {
            self.write_line(line)
        }
        .map_err(|e| os_error(&e))
    }

    fn refuse_if_broken(&self) -> PyResult<()> {
        match &self.broken {
            Some(why) => Err(SessionBroken::new_err(why.clone())),
            None if self.opened_in != fork::generation() => Err(SessionBroken::new_err(
                "this session was opened before a fork(), by the parent process; it cannot \
                 append in the child (open the transcript there instead, once the parent has \
                 closed it)",
            )),
            None => Ok(()),
        }
    }

    // After the lines of `written` were written (each envelope with the
    // length of its line, in file order, the last one ending at `good_len`;
    // `total` bytes in all, each line's `\n` included): checks that the file
    // is still the one this session writes, then adds the envelopes.
    fn after_write(
        &mut self,
        total: u64,
        written: impl IntoIterator<Item = (core::Accepted, usize)>,
    ) -> PyResult<()> {
        // A transcript deleted, or replaced by a rename, has no name left: the
        // line just written can never be read again, so refuse it (and every
        // later one) rather than return its id. Checked after the write, so no
        // deletion slips in between. (Renamed away, it keeps a name: appends go on.)
        // A file whose length is not the one this session wrote was truncated in
        // place (logrotate's copytruncate) or written by someone else: load
        // would refuse it, or the index no longer says where the lines are.
        // Whenever the check cannot vouch for the line, the session is broken:
        // the line is in the file, so an error must not let it pass as unwritten.
        // One statx(2) per append, with no state kept about the file between
        // appends: Linux tells a process of another's unlink or rename only
        // through a descriptor it must watch, which would cost every process
        // a kernel facility (and be late: the link count drops first). It asks
        // for the link count and the length only: asking for the times too
        // would make every next write stamp and journal the inode (file_state).
        let meta = match transcript_core::file_state::links_and_length(&self.file) {
            Ok(meta) => meta,
            Err(e) => {
                self.broken = Some(format!(
                    "the file could not be checked after a write ({e}): that line may be in it"
                ));
                return Err(os_error(&e));
            }
        };
        let changed = if meta.links == 0 {
            Some("the transcript was deleted or replaced under the session".to_string())
        } else if meta.len < self.good_len {
            Some(format!(
                "the transcript was truncated under the session ({} bytes, {} expected)",
                meta.len, self.good_len
            ))
        } else if meta.len > self.good_len {
            Some(format!(
                "another program wrote to the transcript under the session ({} bytes, {} expected)",
                meta.len, self.good_len
            ))
        } else {
            None
        };
        if let Some(why) = changed {
            self.broken = Some(why.clone());
            return Err(SessionBroken::new_err(why));
        }
        let mut offset = self.good_len - total;
        self.missing_newline = false;
        for (accepted, len) in written {
            let number = self.core.line_count + 1;
            let rec = accepted.line_rec(offset, len, number);
            offset += len as u64 + 1;
            // Checked before the write, against this same state.
            self.core.push_accepted(accepted, rec);
        }
        Ok(())
    }

    // Writes `line` with one write(2); on failure, cuts the file back to the last
    // good length, or, failing that, refuses every later append.
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        let mut written = 0;
        let result = loop {
            match self.file.write(&line[written..]) {
                Ok(0) => {
                    break Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "write(2) wrote nothing",
                    ))
                }
                Ok(n) => {
                    written += n;
                    if written == line.len() {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        let result = result.and_then(|()| {
            if self.fsync {
                self.file.sync_data()
            } else {
                Ok(())
            }
        });
        if let Err(e) = result {
            if written > 0 || self.fsync {
                if let Err(cut) = self.file.set_len(self.good_len) {
                    self.broken = Some(format!(
                        "a write failed ({e}) and the partial line could not be removed ({cut})"
                    ));
                }
            }
            return Err(e);
        }
        self.good_len += line.len() as u64;
        Ok(())
    }
}

impl Transcript {
    // Stamps, serialises (with `write`, into the buffer: the id, the
    // timestamp), checks, writes and replays one envelope; returns its id.
    fn append_with(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        id: Option<String>,
        write: impl FnOnce(&mut Vec<u8>, &str, &str) -> PyResult<()>,
    ) -> PyResult<String> {
        // The payload is serialised with no borrow of this object held: the
        // walk may run Python code (a list subclass's `__iter__`, a dict
        // subclass's `items()`) that reads this transcript, or appends to it,
        // and finds it as it was, not PyO3's "Already mutably borrowed". No
        // Python code of this thread runs while it is borrowed (other threads
        // wait for the session's lock).
        let (id, ts, mut buf) = {
            let mut t = slf.try_borrow_mut()?;
            t.refuse_if_broken()?;
            let t = &mut *t;
            let now = Instant::now();
            let id = match id {
                Some(id) => id,
                None => t
                    .core
                    .fresh_id(&mut t.ids, now.millis())
                    .as_str()
                    .to_owned(),
            };
            (id, t.stamps.text(now), std::mem::take(&mut t.buf))
        };
        let ts = std::str::from_utf8(&ts).unwrap_or_default();
        buf.clear();
        buf.push(b'\n'); // written only if the file's last line lacks its own
        let written = write(&mut buf, &id, ts);
        let mut t = slf.try_borrow_mut()?;
        let body = buf.get(1..buf.len().saturating_sub(1)).unwrap_or_default();
        let result = written
            .and_then(|()| t.refuse_if_broken())
            .and_then(|()| t.check_line(body))
            .and_then(|env| t.write_lines(py, &buf).map(|()| (env, body.len())));
        let total = buf.len() as u64 - 1;
        // Keep the buffer for the next append, unless one huge line grew it.
        if buf.capacity() <= 1 << 20 {
            t.buf = buf;
        }
        let written = result?;
        t.after_write(total, [written])?;
        Ok(id)
    }

    // The envelope of the message line in `body` (which `read` describes),
    // for appending: accepted from what the writer knows when it can tell
    // what the reader would read, else by reading the line back.
    fn accept_message_line(
        &self,
        fresh: &core::FreshId,
        read: Option<&MessageRead<'_>>,
        body: &[u8],
    ) -> PyResult<core::Accepted> {
        if let Some(read) = read {
            if let (Some(role), Ok(call)) = (read.role(), read.tool_call_id()) {
                core::check_line_length(body.len() as u64).map_err(|e| {
                    PyValueError::new_err(format!("the envelope cannot be written: {e}"))
                })?;
                return self
                    .core
                    .accept_message(fresh, role, read.sticky, call)
                    .map_err(replay_error);
            }
        }
        self.check_line(body)
    }
}

#[pymethods]
impl Transcript {
    /// `Transcript.load(fd, fsync, missing_newline, /)`: index and replay an
    /// open file that load's repair has already checked; `missing_newline` is
    /// what that tail check found, so the tail is not read twice.
    #[staticmethod]
    #[pyo3(signature = (fd, fsync, missing_newline, /))]
    fn load(py: Python<'_>, fd: RawFd, fsync: bool, missing_newline: bool) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        Self::replay(py, file, size, fsync, missing_newline, None, false)
    }

    /// `Transcript.read_only(fd, size, /)`: what load would make of the first
    /// `size` bytes of an open file (its good prefix), without writing, locking
    /// or repairing; appends are refused. It keeps the replay's history (see
    /// `later`, `compaction_effect`, `elision_effect`). For `check`, `stats`
    /// and `show`.
    #[staticmethod]
    #[pyo3(signature = (fd, size, /))]
    fn read_only(py: Python<'_>, fd: RawFd, size: u64) -> PyResult<Self> {
        let file = dup(fd)?;
        let refused = Some("opened read-only".to_string());
        Self::replay(py, file, size, false, false, refused, true)
    }
    /// `Transcript.new(fd, fsync, /)`: a transcript for an empty file; the first
    /// append must be the session-meta.
    #[staticmethod]
    #[pyo3(signature = (fd, fsync, /))]
    fn new(fd: RawFd, fsync: bool) -> PyResult<Self> {
        let file = dup(fd)?;
        let good_len = file_size(&file)?;
        let missing_newline = good_len > 0;
        Ok(Transcript {
            core: core::Transcript::default(),
            file,
            good_len,
            missing_newline,
            fsync,
            broken: None,
            ids: IdGen::new(),
            stamps: Stamper::default(),
            buf: Vec::new(),
            opened_in: fork::generation(),
        })
    }

    /// `new_id()`: a fresh envelope id, for a payload that must name its own line.
    fn new_id(&mut self) -> String {
        let ms = Instant::now().millis();
        self.core.fresh_id(&mut self.ids, ms).as_str().to_owned()
    }

    /// `append(type, payload, id, /)`: stamp, serialise, check, write and replay
    /// one envelope; returns its id (`id`, or a new one when None). Nothing is
    /// written unless replay accepts it.
    #[pyo3(signature = (r#type, payload, id, /))]
    fn append(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        r#type: &str,
        payload: &Bound<'_, PyAny>,
        id: Option<String>,
    ) -> PyResult<String> {
        Self::append_with(slf, py, id, |buf, id, ts| {
            crate::canonical::write_envelope(py, buf, id, payload, ts, r#type)
        })
    }

    /// `append_message(role, content, name, tool_calls, tool_call_id, sticky,
    /// sysprompt, depth, /)`: `append("message", message.to_dict(), None)` for
    /// a `Message` (not a subclass: the caller checks) with these fields, its
    /// payload written from them without building that dict, and its envelope
    /// indexed from what was written without reading the line back.
    #[pyo3(signature = (role, content, name, tool_calls, tool_call_id, sticky, sysprompt, depth, /))]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_message<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        role: &Bound<'py, PyAny>,
        content: &Bound<'py, PyAny>,
        name: &Bound<'py, PyAny>,
        tool_calls: &Bound<'py, PyAny>,
        tool_call_id: &Bound<'py, PyAny>,
        sticky: &Bound<'py, PyAny>,
        sysprompt: &Bound<'py, PyAny>,
        depth: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyString>> {
        let fields = [
            role,
            content,
            name,
            tool_calls,
            tool_call_id,
            sticky,
            sysprompt,
            depth,
        ];
        // As in `append`: no borrow is held while the message is walked.
        let (fresh, ts, mut buf) = {
            let mut t = slf.try_borrow_mut()?;
            t.refuse_if_broken()?;
            let t = &mut *t;
            let now = Instant::now();
            let fresh = t.core.fresh_id(&mut t.ids, now.millis());
            (fresh, t.stamps.text(now), std::mem::take(&mut t.buf))
        };
        buf.clear();
        buf.push(b'\n'); // written only if the file's last line lacks its own
        let read = write_message_envelope(py, &mut buf, fresh.digits(), fields, &ts);
        let mut t = slf.try_borrow_mut()?;
        let body = buf.get(1..buf.len().saturating_sub(1)).unwrap_or_default();
        let result = read.and_then(|read| {
            t.refuse_if_broken()?;
            let accepted = t.accept_message_line(&fresh, Some(&read), body)?;
            t.write_lines(py, &buf)?;
            Ok((accepted, body.len()))
        });
        let total = buf.len() as u64 - 1;
        if buf.capacity() <= 1 << 20 {
            t.buf = buf;
        }
        let written = result?;
        t.after_write(total, [written])?;
        Ok(PyString::new(py, fresh.as_str()))
    }

    /// `append_message_payload(payload, role, tool_call_id, sticky, /)`:
    /// `append("message", payload, None)` for the payload of a `Message` (not
    /// a subclass) and its extras, whose `role`, `tool_call_id` and
    /// `is_sticky` are given: the envelope is indexed from them, without
    /// reading the line back.
    #[pyo3(signature = (payload, role, tool_call_id, sticky, /))]
    fn append_message_payload(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        payload: &Bound<'_, PyAny>,
        role: &Bound<'_, PyAny>,
        tool_call_id: &Bound<'_, PyAny>,
        sticky: bool,
    ) -> PyResult<String> {
        let (fresh, ts, mut buf) = {
            let mut t = slf.try_borrow_mut()?;
            t.refuse_if_broken()?;
            let t = &mut *t;
            let now = Instant::now();
            let fresh = t.core.fresh_id(&mut t.ids, now.millis());
            (fresh, t.stamps.text(now), std::mem::take(&mut t.buf))
        };
        buf.clear();
        buf.push(b'\n'); // written only if the file's last line lacks its own
        let ts_text = std::str::from_utf8(&ts).unwrap_or_default();
        let written = crate::canonical::write_envelope(
            py,
            &mut buf,
            fresh.as_str(),
            payload,
            ts_text,
            "message",
        );
        let read = MessageRead::new(role.clone(), tool_call_id.clone(), sticky);
        let mut t = slf.try_borrow_mut()?;
        let body = buf.get(1..buf.len().saturating_sub(1)).unwrap_or_default();
        let result = written.and_then(|()| {
            t.refuse_if_broken()?;
            let accepted = t.accept_message_line(&fresh, Some(&read), body)?;
            t.write_lines(py, &buf)?;
            Ok((accepted, body.len()))
        });
        let total = buf.len() as u64 - 1;
        if buf.capacity() <= 1 << 20 {
            t.buf = buf;
        }
        let written = result?;
        t.after_write(total, [written])?;
        Ok(fresh.as_str().to_owned())
    }

    /// `append_messages(rows, /)`: one envelope per row of `rows`, all
    /// written with one write(2), then replayed; returns their ids. A row is a
    /// tuple of a `Message`'s eight fields (as `append_message` takes them),
    /// written from them, a 1-tuple of a message payload, or a `(type,
    /// payload)` pair for an envelope of another type (the settle lines that
    /// go with the tool messages answering a call). Nothing is written unless
    /// every payload is written and replay accepts every envelope; each is
    /// checked against what was there before the call, so rows must not
    /// depend on one another (two settles of one operation).
    #[pyo3(signature = (rows, /))]
    fn append_messages<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        rows: &Bound<'py, PyList>,
    ) -> PyResult<Bound<'py, PyList>> {
        // Strong references: a walk may run code that changes the list.
        let rows: Vec<Bound<'py, PyTuple>> = rows
            .iter()
            .map(|row| row.cast_into_exact::<PyTuple>().map_err(PyErr::from))
            .collect::<PyResult<_>>()?;
        if rows.is_empty() {
            slf.try_borrow()?.refuse_if_broken()?;
            return Ok(PyList::empty(py));
        }
        // As in `append`: no borrow is held while the rows are walked.
        let (ids, ts, mut buf) = {
            let mut t = slf.try_borrow_mut()?;
            t.refuse_if_broken()?;
            let t = &mut *t;
            let now = Instant::now();
            let ms = now.millis();
            let ids: Vec<core::FreshId> = rows
                .iter()
                .map(|_| t.core.fresh_id(&mut t.ids, ms))
                .collect();
            (ids, t.stamps.text(now), std::mem::take(&mut t.buf))
        };
        buf.clear();
        buf.push(b'\n'); // written only if the file's last line lacks its own
        let mut lines = Vec::with_capacity(rows.len());
        let ts_text = std::str::from_utf8(&ts).unwrap_or_default();
        let written = ids.iter().zip(&rows).try_for_each(|(fresh, row)| {
            let read = if row.len() == 8 {
                let f = |i| row.get_borrowed_item(i);
                let f = [f(0)?, f(1)?, f(2)?, f(3)?, f(4)?, f(5)?, f(6)?, f(7)?];
                let fields = [
                    &*f[0], &*f[1], &*f[2], &*f[3], &*f[4], &*f[5], &*f[6], &*f[7],
                ];
                Some(write_message_envelope(
                    py,
                    &mut buf,
                    fresh.digits(),
                    fields,
                    &ts,
                )?)
            } else {
                let (kind, payload) = if row.len() == 2 {
                    (row.get_item(0)?.extract::<String>()?, row.get_item(1)?)
                } else {
                    ("message".to_owned(), row.get_item(0)?)
                };
                crate::canonical::write_envelope(
                    py,
                    &mut buf,
                    fresh.as_str(),
                    &payload,
                    ts_text,
                    &kind,
                )?;
                None
            };
            lines.push((read, buf.len()));
            Ok::<(), PyErr>(())
        });
        let mut t = slf.try_borrow_mut()?;
        let result = written.and_then(|()| t.refuse_if_broken()).and_then(|()| {
            let mut envs = Vec::with_capacity(lines.len());
            let mut start = 1;
            for ((read, end), fresh) in lines.iter().zip(&ids) {
                let body = buf.get(start..end - 1).unwrap_or_default();
                envs.push((
                    t.accept_message_line(fresh, read.as_ref(), body)?,
                    body.len(),
                ));
                start = *end;
            }
            // Each envelope was checked without the others: their ids must
            // differ among themselves too (a generator's ids strictly increase).
            if ids.windows(2).any(|w| w[0].digits() >= w[1].digits()) {
                return Err(PyValueError::new_err(
                    "two envelopes of one call share an id",
                ));
            }
            t.write_lines(py, &buf)?;
            Ok(envs)
        });
        let total = buf.len() as u64 - 1;
        if buf.capacity() <= 1 << 20 {
            t.buf = buf;
        }
        t.after_write(total, result?)?;
        drop(t);
        PyList::new(py, ids.iter().map(core::FreshId::as_str))
    }

    /// The number of envelopes.
    fn __len__(&self) -> usize {
        self.core.index.len()
    }

    /// `event(i, /)`: envelope `i` as `(id, type, ts, v, payload, line)`.
    #[pyo3(signature = (index, /))]
    fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        event_tuple(py, &self.file, &self.rec(index)?)
    }

    /// `shown(i, indent, avail, max_lines, /)`: envelope `i` as `show` reads it,
    /// `(id, type, ts, v, payload, line, as_is, excerpt)` (see `shown_tuple`).
    #[pyo3(signature = (index, indent, avail, max_lines, /))]
    fn shown<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        indent: &str,
        avail: usize,
        max_lines: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shown_tuple(
            py,
            &self.file,
            &self.rec(index)?,
            (indent, avail, max_lines),
        )
    }

    /// `payload(i, /)`: envelope `i`'s payload.
    #[pyo3(signature = (index, /))]
    fn payload<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        payload_of(py, &self.file, &self.core.index, index)
    }

    /// `envelope_id(i, /)`: envelope `i`'s id (its payload is not decoded).
    #[pyo3(signature = (index, /))]
    fn envelope_id<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        id_of(py, &self.file, &self.core.index, index)
    }

    /// `payload_fields(indices, keys, /)`: for each envelope in `indices`, the
    /// members `keys` of its payload that it has, as a dict; nothing else is
    /// decoded.
    #[pyo3(signature = (indices, keys, /))]
    fn payload_fields<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u32>,
        keys: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        fields_of(py, &self.file, &self.core.index, indices, keys)
    }

    /// `index_of(id, /)`: the envelope index of `id`, or None.
    #[pyo3(signature = (id, /))]
    fn index_of(&self, id: &Bound<'_, PyString>) -> PyResult<Option<u32>> {
        Ok(self.core.line_of(id_key(id)?))
    }

    /// `resolve(id, /)`: what `id` names, as `(envelope index, replacement
    /// position or None)` (a replacement message's id is
    /// `"<compaction id>:<k>"`), or None.
    #[pyo3(signature = (id, /))]
    fn resolve(&self, id: &Bound<'_, PyString>) -> PyResult<Option<Place>> {
        Ok(self.core.resolve(id_key(id)?).map(place))
    }

    /// `is_live(id, /)`: whether `id` is a live message.
    #[pyo3(signature = (id, /))]
    fn is_live(&self, id: &Bound<'_, PyString>) -> PyResult<bool> {
        Ok(self.core.is_live(id_key(id)?))
    }

    /// The live messages' ids (`"<compaction id>:<k>"` for a replacement's).
    fn live_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut lines = Lines::new(&self.file, &self.core.index);
        for m in &self.core.live {
            list.append(message_id(py, &mut lines, m.source())?)?;
        }
        Ok(list)
    }

    /// The live messages as payload dicts: stubs in place of elided content,
    /// `{"role": "user", "content": summary}` for a compaction's summary.
    fn live_payloads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut lines = Lines::new(&self.file, &self.core.index);
        let mut stubs = Lines::new(&self.file, &self.core.index);
        for m in &self.core.live {
            let d = message_dict(py, &self.core, &mut lines, &mut stubs, m.source(), m.stub())?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// The live messages as `(id, payload dict, line number, elided)`, the
    /// payloads as `live_payloads` has them: one read of each line for both.
    fn live_entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        let mut lines = Lines::new(&self.file, &self.core.index);
        let mut stubs = Lines::new(&self.file, &self.core.index);
        for m in &self.core.live {
            let at = m.source();
            let (rec, bytes) = lines.get(at.line)?;
            let (id, d) = if at.part == WHOLE && rec.kind == EnvelopeType::Message {
                // A message line: its id and payload found in one pass.
                let spans = member_spans(bytes, &["id", "payload"]).map_err(corrupt_at(&rec))?;
                let decode = |span: Option<Span>| match span {
                    Some(at) => decode_bytes(py, bytes, at),
                    None => Ok(py.None().into_bound(py)),
                };
                let id = decode(spans[0])?;
                let d = decode(spans[1])?.cast_into::<PyDict>()?;
                if let Some((line, span)) = m.stub() {
                    let (_, bytes) = stubs.get(line)?;
                    d.set_item("content", decode_bytes(py, bytes, span)?)?;
                }
                (id, d)
            } else {
                let id = message_id(py, &mut lines, at)?;
                (
                    id,
                    message_dict(py, &self.core, &mut lines, &mut stubs, at, m.stub())?,
                )
            };
            list.append((id, d, rec.number, m.stub().is_some()))?;
        }
        Ok(list)
    }

    /// The live list without reading a line: `(envelope index, index of the
    /// elision whose stub it carries or None, role, replacement position or
    /// None)` per message, in order (a compaction's summary is the
    /// compaction's index, role `"user"`; a replacement message, the
    /// compaction's index, its own role and its position).
    fn live(&self) -> Vec<(u32, Option<u32>, String, Option<u32>)> {
        self.core
            .live
            .iter()
            .map(|m| {
                let role = if m.part != WHOLE {
                    self.core.part(m.line, m.part).map_or("", |p| &*p.role)
                } else {
                    match self.core.index.get(m.line as usize).map(|r| r.kind) {
                        Some(EnvelopeType::Compaction) => "user",
                        _ => self.core.index.role(m.line as usize).unwrap_or(""),
                    }
                };
                let (_, part) = place(m.source());
                (m.line, m.stub().map(|(l, _)| l), role.to_owned(), part)
            })
            .collect()
    }

    /// `live_message(k, /)`: the `k`-th live message as a payload dict (as
    /// `live_payloads` has it).
    #[pyo3(signature = (k, /))]
    fn live_message<'py>(&self, py: Python<'py>, k: usize) -> PyResult<Bound<'py, PyDict>> {
        let m = self
            .core
            .live
            .get(k)
            .ok_or_else(|| PyIndexError::new_err("live message index out of range"))?;
        let mut lines = Lines::new(&self.file, &self.core.index);
        let mut stubs = Lines::new(&self.file, &self.core.index);
        message_dict(py, &self.core, &mut lines, &mut stubs, m.source(), m.stub())
    }

    /// `later(i, part, /)`: what later lines did to envelope `i` (with `part`,
    /// to that message of compaction `i`'s replacement), as line indices:
    /// `(the settle that settled this dispatch, the first elision that stubbed
    /// this message, the compaction that took it out of the live list, the
    /// rewind that dropped it)`, each or None. Read-only transcripts only.
    #[pyo3(signature = (index, part, /))]
    fn later(&self, index: u32, part: Option<u32>) -> PyResult<Later> {
        let h = self.history()?;
        let at = Source {
            line: index,
            part: part.unwrap_or(WHOLE),
        };
        Ok((
            if part.is_none() {
                h.settled_by.get(&index).copied()
            } else {
                None
            },
            h.elided_by.get(&at).copied(),
            h.compacted_by.get(&at).copied(),
            h.rewound_by.get(&at).copied(),
        ))
    }

    /// `compaction_effect(i, /)`: what compaction `i` did to the live list:
    /// `(replaced, kept, replacement)`, the first two as `(envelope index,
    /// replacement position or None)` in live order, the last the number of
    /// messages its replacement put in, or None when it has none (its summary
    /// went in). Read-only transcripts only.
    #[pyo3(signature = (index, /))]
    fn compaction_effect(&self, index: u32) -> PyResult<(Vec<Place>, Vec<Place>, Option<usize>)> {
        let done = self
            .history()?
            .compactions
            .get(&index)
            .ok_or_else(|| PyValueError::new_err("not a compaction of this transcript"))?;
        let put = self.core.parts_of(index).map(<[_]>::len);
        Ok((places(&done.replaced), places(&done.kept), put))
    }

    /// `rewind_effect(i, /)`: the live messages rewind `i` dropped, as
    /// `(envelope index, replacement position or None)` in live order.
    /// Read-only transcripts only.
    #[pyo3(signature = (index, /))]
    fn rewind_effect(&self, index: u32) -> PyResult<Vec<Place>> {
        let dropped = self
            .history()?
            .rewinds
            .get(&index)
            .ok_or_else(|| PyValueError::new_err("not a rewind of this transcript"))?;
        Ok(places(dropped))
    }

    /// `elision_effect(i, /)`: the messages elision `i` stubbed, in item order,
    /// as `(envelope index, the message as it was just before)`. Read-only
    /// transcripts only.
    #[pyo3(signature = (index, /))]
    fn elision_effect<'py>(&self, py: Python<'py>, index: u32) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .history()?
            .elisions
            .get(&index)
            .ok_or_else(|| PyValueError::new_err("not an elision of this transcript"))?;
        let list = PyList::empty(py);
        let mut lines = Lines::new(&self.file, &self.core.index);
        let mut stubs = Lines::new(&self.file, &self.core.index);
        for e in items {
            let before = message_dict(
                py,
                &self.core,
                &mut lines,
                &mut stubs,
                e.source(),
                e.stub_before,
            )?;
            list.append((e.line, before))?;
        }
        Ok(list)
    }

    /// `elision_rows(index, /)`: what `show` says of each message elision
    /// `index` stubbed, without decoding its content: `(line, role,
    /// tool_call_id, size)`, the message's line index, its role and call id
    /// (None where absent) and the UTF-8 size of the content it had just
    /// before (as `elided_sizes` measures it; None for a content that is
    /// neither a string nor null, which `elision_effect` then gives).
    #[pyo3(signature = (index, /))]
    fn elision_rows<'py>(&self, py: Python<'py>, index: u32) -> PyResult<Vec<ElisionRow<'py>>> {
        let items = self
            .history()?
            .elisions
            .get(&index)
            .ok_or_else(|| PyValueError::new_err("not an elision of this transcript"))?;
        let (core, file) = (&self.core, &self.file);
        let sizes = py
            .detach(|| core.elided_sizes(file, &[index]))
            .map_err(load_error)?
            .pop()
            .unwrap_or_default();
        let mut lines = Lines::new(&self.file, &self.core.index);
        let mut rows = Vec::with_capacity(items.len());
        for (e, size) in items.iter().zip(sizes) {
            let (rec, bytes) = lines.get(e.line)?;
            let (role, call) = if e.part != WHOLE {
                let span = self
                    .core
                    .part(e.line, e.part)
                    .map(|p| p.span)
                    .ok_or_else(|| PyValueError::new_err("no such replacement message"))?;
                let part = bytes
                    .get(span.start as usize..span.end as usize)
                    .unwrap_or_default();
                (
                    decode_at(py, &rec, part, &["role"])?,
                    decode_at(py, &rec, part, &["tool_call_id"])?,
                )
            } else if rec.kind == EnvelopeType::Compaction {
                (
                    "user".into_pyobject(py)?.into_any(),
                    py.None().into_bound(py),
                )
            } else {
                (
                    decode_at(py, &rec, bytes, &["payload", "role"])?,
                    decode_at(py, &rec, bytes, &["payload", "tool_call_id"])?,
                )
            };
            rows.push((e.line, role, call, size));
        }
        Ok(rows)
    }

    /// `elided_sizes(indices, /)`: for each elision in `indices`, the UTF-8
    /// size of the content each message it stubbed had just before (as
    /// `elision_effect` has it), in item order, measured in the core on every
    /// core without decoding it; None for a content that is neither a string
    /// nor null. Read-only transcripts only.
    #[pyo3(signature = (indices, /))]
    fn elided_sizes(&self, py: Python<'_>, indices: Vec<u32>) -> PyResult<Vec<Vec<Option<u64>>>> {
        self.history()?;
        for &i in &indices {
            if self.rec(i as usize)?.kind != EnvelopeType::Elision {
                return Err(PyValueError::new_err("not an elision of this transcript"));
            }
        }
        let (core, file) = (&self.core, &self.file);
        py.detach(|| core.elided_sizes(file, &indices))
            .map_err(load_error)
    }

    /// `type_name(i, /)`: envelope `i`'s type, read from the index.
    #[pyo3(signature = (index, /))]
    fn type_name(&self, index: usize) -> PyResult<String> {
        self.core
            .index
            .type_name(index)
            .map(str::to_owned)
            .ok_or_else(out_of_range)
    }

    /// `role(i, /)`: envelope `i`'s role if it is a message, else None.
    #[pyo3(signature = (index, /))]
    fn role(&self, index: usize) -> PyResult<Option<String>> {
        self.rec(index)?;
        Ok(self.core.index.role(index).map(str::to_owned))
    }

    /// `indices_of_type(type, /)`: the indices of the envelopes of that type.
    #[pyo3(signature = (r#type, /))]
    fn indices_of_type(&self, r#type: &str) -> Vec<u32> {
        self.core.index.indices_of_type(r#type)
    }

    /// `(type, count, bytes)` per type (a line's `\n` counted), in the order
    /// the types first appear.
    fn type_totals(&self) -> Vec<(String, u64, u64)> {
        type_totals(&self.core.index, self.good_len)
    }

    /// `(role, count)` of the message lines, in the order the roles first appear.
    fn role_counts(&self) -> Vec<(String, u64)> {
        role_counts(&self.core.index)
    }

    /// Lines read, blank ones included.
    fn line_count(&self) -> u64 {
        self.core.line_count
    }

    /// The live message count.
    fn live_len(&self) -> usize {
        self.core.live.len()
    }

    /// The last grants line's index, or None.
    fn grants_index(&self) -> Option<u32> {
        self.core.grants
    }

    /// Pending operations as `(dispatch index, result index or None)`, in dispatch order.
    fn pending(&self) -> Vec<(u32, Option<u32>)> {
        self.core
            .pending
            .iter()
            .map(|(l, op)| (*l, op.result))
            .collect()
    }

    /// `section_index(digest, /)`: the run-context line carrying that section's text.
    #[pyo3(signature = (digest, /))]
    fn section_index(&self, digest: &str) -> Option<u32> {
        self.core.sections.get(digest).copied()
    }

    /// `line_number(i, /)`: envelope `i`'s 1-based line number.
    #[pyo3(signature = (index, /))]
    fn line_number(&self, index: usize) -> PyResult<u64> {
        Ok(self.rec(index)?.number)
    }

    /// The file's length up to the last good line.
    fn size(&self) -> u64 {
        self.good_len
    }

    /// `close_writer(fd, /)`: refuse appends from now on and let go of the
    /// descriptor that holds the lock; reads go on through `fd` (a read-only
    /// descriptor of the same file), or fail if it is None.
    #[pyo3(signature = (fd, /))]
    fn close_writer(&mut self, fd: Option<RawFd>) -> PyResult<()> {
        self.file = match fd {
            Some(fd) => dup(fd)?,
            None => File::open("/dev/null").map_err(|e| os_error(&e))?,
        };
        self.broken = Some("the session is closed".into());
        Ok(())
    }

    /// The descriptor the transcript reads and writes through (its own
    /// duplicate): a forked child puts an unlocked one in its place.
    fn fileno(&self) -> RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.file)
    }

    /// Why the session refuses appends, or None.
    fn broken(&self) -> Option<String> {
        self.broken.clone()
    }
}

/// A read-only index of a file as peek sees it.
#[pyclass(module = "agent_transcript._core")]
pub struct Peeked {
    file: File,
    index: Index,
    skipped: Vec<(u64, String)>,
    skipped_more: u64,
    line_count: u64,
    size: u64,
}

#[pymethods]
impl Peeked {
    /// `Peeked.open(fd, /)`: index every line of an open file, skipping the bad ones.
    #[staticmethod]
    #[pyo3(signature = (fd, /))]
    fn open(py: Python<'_>, fd: RawFd) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        let signals = Signals::new(py);
        let stop = || signals.check();
        let p = py
            .detach(|| core::peek_or_stop(&file, size, &stop))
            .map_err(|e| signals.raised(&e, os_error))?;
        Ok(Peeked {
            file,
            index: p.index,
            skipped: p.skipped,
            skipped_more: p.skipped_more,
            line_count: p.line_count,
            size,
        })
    }

    fn __len__(&self) -> usize {
        self.index.len()
    }

    /// Lines read, blank and skipped ones included.
    fn line_count(&self) -> u64 {
        self.line_count
    }

    /// `line_number(i, /)`: envelope `i`'s 1-based line number.
    #[pyo3(signature = (index, /))]
    fn line_number(&self, index: usize) -> PyResult<u64> {
        Ok(rec_at(&self.index, index)?.number)
    }

    /// `type_name(i, /)`: envelope `i`'s type, read from the index.
    #[pyo3(signature = (index, /))]
    fn type_name(&self, index: usize) -> PyResult<String> {
        self.index
            .type_name(index)
            .map(str::to_owned)
            .ok_or_else(out_of_range)
    }

    /// `role(i, /)`: envelope `i`'s role if it is a message, else None.
    #[pyo3(signature = (index, /))]
    fn role(&self, index: usize) -> PyResult<Option<String>> {
        rec_at(&self.index, index)?;
        Ok(self.index.role(index).map(str::to_owned))
    }

    /// `indices_of_type(type, /)`: the indices of the envelopes of that type.
    #[pyo3(signature = (r#type, /))]
    fn indices_of_type(&self, r#type: &str) -> Vec<u32> {
        self.index.indices_of_type(r#type)
    }

    /// `(type, count, bytes)` per type (a line's `\n` counted), in the order
    /// the types first appear.
    fn type_totals(&self) -> Vec<(String, u64, u64)> {
        type_totals(&self.index, self.size)
    }

    /// `(role, count)` of the message lines, in the order the roles first appear.
    fn role_counts(&self) -> Vec<(String, u64)> {
        role_counts(&self.index)
    }

    /// The size read.
    fn size(&self) -> u64 {
        self.size
    }

    /// `(line number, why)` for the first lines skipped (at most 100).
    fn skipped(&self) -> Vec<(u64, String)> {
        self.skipped.clone()
    }

    /// How many more lines were skipped than `skipped()` lists.
    fn skipped_more(&self) -> u64 {
        self.skipped_more
    }

    /// `kind(i, /)`: whether envelope `i` is a message (1), a session-meta (2) or other (0).
    #[pyo3(signature = (index, /))]
    fn kind(&self, index: usize) -> PyResult<u8> {
        let rec = rec_at(&self.index, index)?;
        Ok(match rec.kind {
            EnvelopeType::Message => 1,
            EnvelopeType::SessionMeta => 2,
            _ => 0,
        })
    }

    /// Indices of the message envelopes.
    fn message_indices(&self) -> Vec<usize> {
        (0..self.index.len())
            .filter(|&i| self.index.kind(i) == Some(EnvelopeType::Message))
            .collect()
    }

    /// `event(i, /)`: envelope `i` as `(id, type, ts, v, payload, line)`.
    #[pyo3(signature = (index, /))]
    fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        event_tuple(py, &self.file, &rec_at(&self.index, index)?)
    }

    /// `shown(i, indent, avail, max_lines, /)`: envelope `i` as `show` reads it,
    /// `(id, type, ts, v, payload, line, as_is, excerpt)` (see `shown_tuple`).
    #[pyo3(signature = (index, indent, avail, max_lines, /))]
    fn shown<'py>(
        &self,
        py: Python<'py>,
        index: usize,
        indent: &str,
        avail: usize,
        max_lines: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        shown_tuple(
            py,
            &self.file,
            &rec_at(&self.index, index)?,
            (indent, avail, max_lines),
        )
    }

    /// `payload(i, /)`: envelope `i`'s payload.
    #[pyo3(signature = (index, /))]
    fn payload<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        payload_of(py, &self.file, &self.index, index)
    }

    /// `envelope_id(i, /)`: envelope `i`'s id (its payload is not decoded).
    #[pyo3(signature = (index, /))]
    fn envelope_id<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        id_of(py, &self.file, &self.index, index)
    }

    /// `payload_fields(indices, keys, /)`: for each envelope in `indices`, the
    /// members `keys` of its payload that it has, as a dict; nothing else is
    /// decoded.
    #[pyo3(signature = (indices, keys, /))]
    fn payload_fields<'py>(
        &self,
        py: Python<'py>,
        indices: Vec<u32>,
        keys: Vec<String>,
    ) -> PyResult<Bound<'py, PyList>> {
        fields_of(py, &self.file, &self.index, indices, keys)
    }
}

/// `parse_envelope(line, /)`: one line's envelope as `(id, type, ts, v, payload)`,
/// checked as load checks it; `CorruptTranscript` or `UnsupportedVersion` if not.
#[pyfunction]
#[pyo3(signature = (line, /))]
pub fn parse_envelope<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyBytes>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = line.as_bytes();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    parse_line(body).map_err(|e| line_error(&e, 0))?;
    let d = loads(py, body)
        .map_err(crate::decode::DecodeError::into_pyerr)?
        .cast_into::<PyDict>()?;
    let [id, kind, ts, v, payload] = envelope_fields(py, &d)?;
    Ok((id, kind, ts, v, payload).into_pyobject(py)?.into_any())
}

// What the export's columns (`crate::columns`) read: the index, the file, the
// bytes read and the replay.
impl Transcript {
    pub(crate) fn export_input(&self) -> (&core::Transcript, &File, u64) {
        (&self.core, &self.file, self.good_len)
    }
}

impl Peeked {
    pub(crate) fn export_input(&self) -> (&Index, &File, u64) {
        (&self.index, &self.file, self.size)
    }
}
