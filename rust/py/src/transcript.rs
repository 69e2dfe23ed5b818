//! `Transcript` and `Peeked`: the native halves of `Session` and `Session.peek`.
//!
//! Python opens, locks and repairs the file and hands over its descriptor; this
//! side indexes the file, replays it, writes each new line with one `write(2)`,
//! and decodes lines into Python objects only when they are asked for.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{BorrowedFd, RawFd};

use pyo3::exceptions::{PyIndexError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use transcript_core::envelope::{parse_line, EnvelopeType, LineError};
use transcript_core::scan::{tail_scan, ReadAt, Tail};
use transcript_core::stamp::{utc_timestamp, IdGen};
use transcript_core::transcript::{self as core, LineRec, LoadError, ReplayError};

use crate::decode::loads;
use crate::errors::{
    CorruptTranscript, SessionBroken, ToolOperationError, UnknownId, UnsupportedVersion,
};

/// An `OSError` that keeps errno, so Python picks the right subclass.
pub fn os_error(e: &io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(code) => PyOSError::new_err((code, e.to_string())),
        None => PyOSError::new_err(e.to_string()),
    }
}

fn dup(fd: RawFd) -> PyResult<File> {
    if fd < 0 {
        return Err(PyValueError::new_err("invalid file descriptor"));
    }
    // SAFETY: the caller passes a descriptor it keeps open for this call; we
    // only borrow it long enough to duplicate it into one we own.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    borrowed
        .try_clone_to_owned()
        .map(File::from)
        .map_err(|e| os_error(&e))
}

fn file_size(file: &File) -> PyResult<u64> {
    file.metadata().map(|m| m.len()).map_err(|e| os_error(&e))
}

fn read_line(file: &File, rec: &LineRec) -> PyResult<Vec<u8>> {
    let mut buf = vec![0u8; rec.len as usize];
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
    Ok(buf)
}

fn line_error(error: &LineError, line: u64) -> PyErr {
    match error {
        LineError::Version(_) => UnsupportedVersion::new_err((error.to_string(), line)),
        _ => CorruptTranscript::new_err((error.to_string(), line)),
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

fn decode_span<'py>(
    py: Python<'py>,
    file: &File,
    rec: &LineRec,
    start: u32,
    end: u32,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = read_line(file, rec)?;
    let part = bytes.get(start as usize..end as usize).unwrap_or_default();
    loads(py, part).map_err(crate::decode::DecodeError::into_pyerr)
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

fn event_tuple<'py>(py: Python<'py>, file: &File, rec: &LineRec) -> PyResult<Bound<'py, PyAny>> {
    let [id, kind, ts, v, payload] = envelope_fields(py, &decode_line(py, file, rec)?)?;
    Ok((id, kind, ts, v, payload, rec.number)
        .into_pyobject(py)?
        .into_any())
}

/// `tail_check(fd, /)`: the tail check of an open file, as
/// `(kind, keep, line, removed, missing_newline, bytes_read)` with kind one of
/// `"empty"`, `"whole"`, `"torn"`, `"corrupt"`.
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
    buf: Vec<u8>,
}

impl Transcript {
    fn rec(&self, index: usize) -> PyResult<&LineRec> {
        self.core
            .lines
            .get(index)
            .ok_or_else(|| PyIndexError::new_err("envelope index out of range"))
    }

    // Indexes and replays the first `size` bytes of `file`.
    fn replay(
        py: Python<'_>,
        file: File,
        size: u64,
        fsync: bool,
        missing_newline: bool,
        broken: Option<String>,
    ) -> PyResult<Self> {
        let core = py.detach(|| core::load(&file, size)).map_err(|e| match e {
            LoadError::Io(e) => os_error(&e),
            LoadError::Line { line, error } => line_error(&error, line),
            LoadError::Replay { line, error } => {
                CorruptTranscript::new_err((error.to_string(), line))
            }
            LoadError::Empty => CorruptTranscript::new_err(("the transcript is empty",)),
        })?;
        Ok(Transcript {
            core,
            file,
            good_len: size,
            missing_newline,
            fsync,
            broken,
            ids: IdGen::new(),
            buf: Vec::new(),
        })
    }

    // Serialises the envelope after `buf[..lead]`, checks that replay accepts
    // it, and writes it all; returns the envelope and the line's length.
    #[allow(clippy::too_many_arguments)]
    fn check_and_write(
        &mut self,
        py: Python<'_>,
        buf: &mut Vec<u8>,
        lead: usize,
        id: &str,
        payload: &Bound<'_, PyAny>,
        ts: &str,
        r#type: &str,
    ) -> PyResult<(transcript_core::envelope::Envelope, usize)> {
        crate::canonical::write_envelope(py, buf, id, payload, ts, r#type)?;
        let body = &buf[lead..buf.len() - 1];
        let env = parse_line(body)
            .map_err(|e| PyValueError::new_err(format!("the envelope does not read back: {e}")))?;
        self.core.check(&env, true).map_err(|e| match e {
            ReplayError::UnknownId { .. } => UnknownId::new_err(e.to_string()),
            ReplayError::UnknownOperation(_) | ReplayError::AlreadySettled(_) => {
                ToolOperationError::new_err(e.to_string())
            }
            _ => PyValueError::new_err(e.to_string()),
        })?;
        let len = body.len();
        if self.fsync {
            py.detach(|| self.write_line(buf))
        } else {
            self.write_line(buf)
        }
        .map_err(|e| os_error(&e))?;
        Ok((env, len))
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

#[pymethods]
impl Transcript {
    /// `Transcript.load(fd, fsync, /)`: index and replay an open, repaired file.
    #[staticmethod]
    #[pyo3(signature = (fd, fsync, /))]
    fn load(py: Python<'_>, fd: RawFd, fsync: bool) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        let (tail, _) = py
            .detach(|| tail_scan(&file, size))
            .map_err(|e| os_error(&e))?;
        let missing_newline = matches!(
            tail,
            Tail::Whole {
                missing_newline: true
            }
        );
        Self::replay(py, file, size, fsync, missing_newline, None)
    }

    /// `Transcript.read_only(fd, size, /)`: what load would make of the first
    /// `size` bytes of an open file (its good prefix), without writing, locking
    /// or repairing; appends are refused. For `check`, `stats` and `show`.
    #[staticmethod]
    #[pyo3(signature = (fd, size, /))]
    fn read_only(py: Python<'_>, fd: RawFd, size: u64) -> PyResult<Self> {
        let file = dup(fd)?;
        let refused = Some("opened read-only".to_string());
        Self::replay(py, file, size, false, false, refused)
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
            buf: Vec::new(),
        })
    }

    /// `new_id()`: a fresh envelope id, for a payload that must name its own line.
    fn new_id(&mut self) -> String {
        let mut id = self.ids.next_id();
        while self.core.line_of(&id).is_some() {
            id = self.ids.next_id();
        }
        id
    }

    /// `append(type, payload, id, /)`: stamp, serialise, check, write and replay
    /// one envelope; returns its id (`id`, or a new one when None). Nothing is
    /// written unless replay accepts it.
    #[pyo3(signature = (r#type, payload, id, /))]
    fn append(
        &mut self,
        py: Python<'_>,
        r#type: &str,
        payload: &Bound<'_, PyAny>,
        id: Option<String>,
    ) -> PyResult<String> {
        if let Some(why) = &self.broken {
            return Err(SessionBroken::new_err(why.clone()));
        }
        let id = match id {
            Some(id) => id,
            None => self.new_id(),
        };
        let ts = utc_timestamp();
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        if self.missing_newline {
            buf.push(b'\n');
        }
        let lead = buf.len();
        let result = self.check_and_write(py, &mut buf, lead, &id, payload, &ts, r#type);
        // Keep the buffer for the next append, unless one huge line grew it.
        self.buf = if buf.capacity() > 1 << 20 {
            Vec::new()
        } else {
            buf
        };
        let (env, len) = result?;
        // A transcript deleted, or replaced by a rename, has no name left: the
        // line just written can never be read again, so refuse it (and every
        // later one) rather than return its id. Checked after the write, so no
        // deletion slips in between. (Renamed away, it keeps a name: appends go on.)
        let meta = self.file.metadata().map_err(|e| os_error(&e))?;
        if std::os::unix::fs::MetadataExt::nlink(&meta) == 0 {
            let why = "the transcript was deleted or replaced under the session".to_string();
            self.broken = Some(why.clone());
            return Err(SessionBroken::new_err(why));
        }
        let offset = self.good_len - len as u64 - 1;
        self.missing_newline = false;
        let number = self.core.line_count + 1;
        let rec = LineRec {
            offset,
            len: u32::try_from(len).unwrap_or(u32::MAX),
            number,
            kind: env.kind,
        };
        // Checked above, so this cannot be refused.
        self.core
            .push(env, rec, true)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(id)
    }

    /// The number of envelopes.
    fn __len__(&self) -> usize {
        self.core.lines.len()
    }

    /// `event(i, /)`: envelope `i` as `(id, type, ts, v, payload, line)`.
    #[pyo3(signature = (index, /))]
    fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        event_tuple(py, &self.file, self.rec(index)?)
    }

    /// `payload(i, /)`: envelope `i`'s payload.
    #[pyo3(signature = (index, /))]
    fn payload<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        let d = decode_line(py, &self.file, self.rec(index)?)?;
        Ok(d.get_item("payload")?
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// `envelope_id(i, /)`.
    #[pyo3(signature = (index, /))]
    fn envelope_id<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        let d = decode_line(py, &self.file, self.rec(index)?)?;
        Ok(d.get_item("id")?
            .unwrap_or_else(|| py.None().into_bound(py)))
    }

    /// `index_of(id, /)`: the envelope index of `id`, or None.
    #[pyo3(signature = (id, /))]
    fn index_of(&self, id: &str) -> Option<u32> {
        self.core.line_of(id)
    }

    /// `is_live(id, /)`: whether `id` is a live message.
    #[pyo3(signature = (id, /))]
    fn is_live(&self, id: &str) -> bool {
        self.core.is_live(id)
    }

    /// The live messages' ids.
    fn live_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for m in &self.core.live {
            list.append(self.envelope_id(py, m.line as usize)?)?;
        }
        Ok(list)
    }

    /// The live messages as payload dicts: stubs in place of elided content, and
    /// `{"role": "user", "content": summary}` for a compaction's summary.
    fn live_payloads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for m in &self.core.live {
            let rec = self.rec(m.line as usize)?;
            let payload = self.payload(py, m.line as usize)?;
            let message = if rec.kind == EnvelopeType::Compaction {
                let d = PyDict::new(py);
                d.set_item("role", "user")?;
                d.set_item("content", payload.get_item("summary").ok())?;
                d
            } else {
                payload.cast_into::<PyDict>()?
            };
            if let Some((line, span)) = m.stub {
                let stub = decode_span(
                    py,
                    &self.file,
                    self.rec(line as usize)?,
                    span.start,
                    span.end,
                )?;
                message.set_item("content", stub)?;
            }
            list.append(message)?;
        }
        Ok(list)
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

    /// Why the session refuses appends, or None.
    fn broken(&self) -> Option<String> {
        self.broken.clone()
    }
}

/// A read-only index of a file as peek sees it.
#[pyclass(module = "agent_transcript._core")]
pub struct Peeked {
    file: File,
    lines: Vec<LineRec>,
    skipped: Vec<(u64, String)>,
    skipped_more: u64,
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
        let p = py
            .detach(|| core::peek(&file, size))
            .map_err(|e| os_error(&e))?;
        Ok(Peeked {
            file,
            lines: p.lines,
            skipped: p.skipped,
            skipped_more: p.skipped_more,
            size,
        })
    }

    fn __len__(&self) -> usize {
        self.lines.len()
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
        let rec = self
            .lines
            .get(index)
            .ok_or_else(|| PyIndexError::new_err("envelope index out of range"))?;
        Ok(match rec.kind {
            EnvelopeType::Message => 1,
            EnvelopeType::SessionMeta => 2,
            _ => 0,
        })
    }

    /// Indices of the message envelopes.
    fn message_indices(&self) -> Vec<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == EnvelopeType::Message)
            .map(|(i, _)| i)
            .collect()
    }

    /// `event(i, /)`: envelope `i` as `(id, type, ts, v, payload, line)`.
    #[pyo3(signature = (index, /))]
    fn event<'py>(&self, py: Python<'py>, index: usize) -> PyResult<Bound<'py, PyAny>> {
        let rec = self
            .lines
            .get(index)
            .ok_or_else(|| PyIndexError::new_err("envelope index out of range"))?;
        event_tuple(py, &self.file, rec)
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
