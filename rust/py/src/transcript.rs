//! `Transcript`, the native half of `Session`: Python opens, locks and
//! repairs the file and hands over its descriptor; this side loads it into the
//! core's [`Writer`], serialises each append's payloads into the writer's
//! buffer, lets the writer check, write and replay them without the GIL, and
//! reads lines back into Python objects only when they are asked for.

use std::fs::{File, OpenOptions};
use std::os::fd::RawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use transcript_core::envelope::EnvelopeType;
use transcript_core::stamp::Instant;
use transcript_core::stop::Stop;
use transcript_core::transcript::{self as core, FreshId, Index, LiveMessage, Source, WHOLE};
use transcript_core::writer::{Made, Writer};

use crate::canonical::{write_envelope, write_message_envelope, MessageFields};
use crate::errors::{load_error, os_error, write_error, SessionClosed};
use crate::fds::dup;
use crate::history::{
    decode_at, elided, history, live_list, not_a, part_span, place, places, ElisionRow, Kept,
    Messages, Place,
};
use crate::lines::{file_size, id_key, reader_methods, rec_at, Indexed, Reader};
use crate::signals::Signals;

/// One transcript open for appending (or read-only): the core's writer.
#[pyclass(module = "agent_transcript._core")]
pub struct Transcript {
    // No file once the session is closed: it keeps no descriptor until it is
    // collected; a read then opens the file again for as long as it takes.
    writer: Writer<Option<File>>,
    closed: Option<Closed>,
}

/// Where a closed session's file was: reads open it again by its path, if
/// the path still names that file (the same device and inode).
struct Closed {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

/// What the reader reads back of a message line the writer wrote from its
/// fields: its `role` and `tool_call_id` objects, and whether it is sticky
/// (`sticky`, `sysprompt` or a `depth`).
type MessageRead<'a, 'py> = (&'a Bound<'py, PyAny>, &'a Bound<'py, PyAny>, bool);

// A message line `made` with `fresh`: from what the writer knows of it when
// it can tell what the reader would read (a str role, a `tool_call_id` that
// is a str or is kept as none, neither with lone surrogates), else read back.
fn message_made<'a>(fresh: &'a FreshId, read: Option<MessageRead<'a, '_>>) -> Made<'a> {
    let text = |v: &'a Bound<'_, PyAny>| v.cast::<PyString>().ok().map(|s| s.to_str());
    if let Some((role, call, sticky)) = read {
        let call = text(call).transpose().map(|c| c.map(str::as_bytes));
        if let (Some(Ok(role)), Ok(tool_call_id)) = (text(role), call) {
            return Made::Message { id: fresh, role, sticky, tool_call_id };
        }
    }
    Made::Line { id: Some(fresh) }
}

impl Transcript {
    /// The replay of the lines written.
    pub(crate) fn core(&self) -> &core::Transcript {
        self.writer.transcript()
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
        let load = |stop: Stop<'_>| match history {
            true => core::inspect_or_stop(&file, size, stop),
            false => core::load_or_stop(&file, size, stop),
        };
        let core = Signals::run(py, load, load_error)?;
        let writer = Writer::new(core, Some(file), size, missing_newline, fsync, broken);
        Ok(Transcript { writer, closed: None })
    }

    // Draws the fresh ids `draw` asks for (by the writer and the millisecond
    // of now) and the timestamp of now, and takes the buffer. One id is drawn
    // into no collection: an append allocates nothing of its own.
    fn begin<T>(
        slf: &Bound<'_, Self>,
        draw: impl FnOnce(&mut Writer<Option<File>>, u64) -> T,
    ) -> PyResult<(T, [u8; 27], Vec<u8>)> {
        let mut t = slf.try_borrow_mut()?;
        t.writer.refuse_if_broken().map_err(write_error)?;
        let now = Instant::now();
        let ids = draw(&mut t.writer, now.millis());
        let ts = t.writer.stamp(now);
        Ok((ids, ts, t.writer.take_buffer()))
    }

    /// Appends the message whose fields are `fields`, its payload written
    /// from them without building its dict, and its envelope indexed from
    /// what was written without reading the line back.
    pub(crate) fn append_fields<'py>(
        slf: &Bound<'py, Self>,
        fields: MessageFields<'_, 'py>,
    ) -> PyResult<Bound<'py, PyString>> {
        let py = slf.py();
        // As in `append`: no borrow is held while the message is walked.
        let (fresh, ts, mut buf) = Self::begin(slf, |w, ms| w.fresh_id(ms))?;
        let written = write_message_envelope(py, &mut buf, fresh.digits(), fields, &ts);
        let end = buf.len();
        let read = written.as_ref().ok().map(|&sticky| (fields[0], fields[4], sticky));
        let made = message_made(&fresh, read);
        Self::commit(slf, py, buf, written.map(drop), &[(made, end)])?;
        Ok(PyString::new(py, fresh.as_str()))
    }

    // Appends the lines serialised in `buf` (see `Writer::append`) once
    // `serialised` says their serialisation went well; the buffer goes back
    // to the writer either way. An fsync'd append lets other threads run.
    fn commit(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        buf: Vec<u8>,
        serialised: PyResult<()>,
        lines: &[(Made<'_>, usize)],
    ) -> PyResult<()> {
        let mut t = slf.try_borrow_mut()?;
        let w = &mut t.writer;
        if let Err(e) = serialised {
            w.keep_buffer(buf);
            return Err(e);
        }
        if w.fsyncs() { py.detach(|| w.append(buf, lines)) } else { w.append(buf, lines) }
            .map_err(write_error)
    }
}

impl Indexed for Transcript {
    fn index(&self) -> &Index {
        &self.core().index
    }

    fn file(&self) -> PyResult<Reader<'_>> {
        if let Some(file) = self.writer.file() {
            return Ok(Reader::Open(file));
        }
        let Some(closed) = &self.closed else {
            return Err(SessionClosed::new_err("the session is closed"));
        };
        let gone = || {
            SessionClosed::new_err(format!(
                "{}: the session is closed, and its file was moved, replaced or deleted since",
                closed.path.display()
            ))
        };
        // Never blocking: the path may name a FIFO now.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&closed.path)
            .map_err(|_| gone())?;
        let meta = file.metadata().map_err(|e| os_error(&e))?;
        if !meta.is_file() || meta.dev() != closed.dev || meta.ino() != closed.ino {
            return Err(gone());
        }
        Ok(Reader::Again(file))
    }

    fn end(&self) -> u64 {
        self.writer.len()
    }

    fn lines_read(&self) -> u64 {
        self.core().line_count
    }
}

reader_methods!(Transcript {
    /// An open file that load's repair has checked; `missing_newline` is what
    /// that tail check found, so the tail is not read twice.
    #[staticmethod]
    #[pyo3(signature = (fd, fsync, missing_newline, /))]
    fn load(py: Python<'_>, fd: RawFd, fsync: bool, missing_newline: bool) -> PyResult<Self> {
        let file = dup(fd)?;
        let size = file_size(&file)?;
        Self::replay(py, file, size, fsync, missing_newline, None, false)
    }

    /// What load would make of the first `size` bytes (the good prefix),
    /// without writing, locking or repairing, keeping the replay's history:
    /// for `check`, `stats` and `show`.
    #[staticmethod]
    #[pyo3(signature = (fd, size, /))]
    fn read_only(py: Python<'_>, fd: RawFd, size: u64) -> PyResult<Self> {
        let file = dup(fd)?;
        let refused = Some("opened read-only".to_string());
        Self::replay(py, file, size, false, false, refused, true)
    }

    /// For an empty file; the first append must be the session-meta.
    #[staticmethod]
    #[pyo3(signature = (fd, fsync, /))]
    fn new(fd: RawFd, fsync: bool) -> PyResult<Self> {
        let file = dup(fd)?;
        let len = file_size(&file)?;
        let writer =
            Writer::new(core::Transcript::default(), Some(file), len, len > 0, fsync, None);
        Ok(Transcript { writer, closed: None })
    }

    /// For a payload that must name its own line.
    fn new_id(&mut self) -> String {
        let ms = Instant::now().millis();
        self.writer.fresh_id(ms).as_str().to_owned()
    }

    /// Stamps, serialises, checks, writes and replays one envelope; nothing is
    /// written unless replay accepts it. `message`: the `(role, tool_call_id,
    /// is_sticky)` of the `Message` (not a subclass) whose payload this is,
    /// which the envelope is indexed from without reading the line back.
    #[pyo3(signature = (r#type, payload, id, message = None, /))]
    fn append(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        r#type: &str,
        payload: &Bound<'_, PyAny>,
        id: Option<String>,
        message: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>, bool)>,
    ) -> PyResult<String> {
        // The payload is serialised with no borrow of this object held: the
        // walk may run Python code (a list subclass's `__iter__`, a dict
        // subclass's `items()`) that reads this transcript, or appends to it,
        // and finds it as it was, not PyO3's "Already mutably borrowed". No
        // Python code of this thread runs while it is borrowed (other threads
        // wait for the session's lock).
        let (fresh, ts, mut buf) = Self::begin(slf, |w, ms| id.is_none().then(|| w.fresh_id(ms)))?;
        let id = id.or_else(|| fresh.as_ref().map(|f| f.as_str().to_owned())).unwrap_or_default();
        let ts = std::str::from_utf8(&ts).unwrap_or_default();
        let written = write_envelope(py, &mut buf, &id, payload, ts, r#type);
        let end = buf.len();
        let made = match (&fresh, &message) {
            (Some(fresh), Some((role, call, sticky))) => {
                message_made(fresh, Some((role, call, *sticky)))
            }
            _ => Made::Line { id: fresh.as_ref() },
        };
        Self::commit(slf, py, buf, written, &[(made, end)])?;
        Ok(id)
    }

    /// One envelope per row, all written with one write(2). A row is a
    /// `Message`'s eight fields (as `SessionBase._append_fields` takes them)
    /// or a `(type, payload)` pair. All or nothing; each is checked against
    /// what was there before the call, so rows must not depend on one
    /// another (two settles of one operation).
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
            slf.try_borrow()?.writer.refuse_if_broken().map_err(write_error)?;
            return Ok(PyList::empty(py));
        }
        // As in `append`: no borrow is held while the rows are walked.
        let (ids, ts, mut buf) =
            Self::begin(slf, |w, ms| (0..rows.len()).map(|_| w.fresh_id(ms)).collect::<Vec<_>>())?;
        let mut lines = Vec::with_capacity(rows.len());
        let written = ids.iter().zip(&rows).try_for_each(|(fresh, row)| {
            let read = if row.len() == 8 {
                let f = |i| row.get_borrowed_item(i);
                let f = [f(0)?, f(1)?, f(2)?, f(3)?, f(4)?, f(5)?, f(6)?, f(7)?];
                let fields = f.each_ref().map(|item| &**item);
                let sticky = write_message_envelope(py, &mut buf, fresh.digits(), fields, &ts)?;
                Some((f[0], f[4], sticky))
            } else {
                let (kind, payload) = row.extract::<(String, Bound<'py, PyAny>)>()?;
                let ts = std::str::from_utf8(&ts).unwrap_or_default();
                write_envelope(py, &mut buf, fresh.as_str(), &payload, ts, &kind)?;
                None
            };
            lines.push((read, buf.len()));
            Ok::<(), PyErr>(())
        });
        let made: Vec<(Made<'_>, usize)> = lines
            .iter()
            .zip(&ids)
            .map(|((read, end), fresh)| {
                (message_made(fresh, read.as_ref().map(|(r, c, s)| (&**r, &**c, *s))), *end)
            })
            .collect();
        Self::commit(slf, py, buf, written, &made)?;
        PyList::new(py, ids.iter().map(FreshId::as_str))
    }

    #[pyo3(signature = (id, /))]
    fn index_of(&self, id: &Bound<'_, PyString>) -> PyResult<Option<u32>> {
        Ok(self.core().line_of(id_key(id)?))
    }

    /// What `id` names (a replacement message's id is `"<compaction id>:<k>"`).
    #[pyo3(signature = (id, /))]
    fn resolve(&self, id: &Bound<'_, PyString>) -> PyResult<Option<Place>> {
        Ok(self.core().resolve(id_key(id)?).map(place))
    }

    fn live_len(&self) -> usize {
        self.core().live.len()
    }

    fn grants_index(&self) -> Option<u32> {
        self.core().grants
    }

    /// Pending operations as `(dispatch index, result index or None)`, in dispatch order.
    fn pending(&self) -> Vec<(u32, Option<u32>)> {
        self.core().pending.iter().map(|(l, op)| (*l, op.result)).collect()
    }

    /// The run-context line carrying that section's text.
    #[pyo3(signature = (digest, /))]
    fn section_index(&self, digest: &str) -> Option<u32> {
        self.core().sections.get(digest).copied()
    }

    /// Refuses appends from now on and lets go of the file (and so of the
    /// lock). A later read opens `path` again while it names the same file,
    /// and raises SessionClosed once it does not.
    #[pyo3(signature = (path, /))]
    fn close_writer(&mut self, path: PathBuf) -> PyResult<()> {
        if let Some(file) = self.writer.file() {
            let meta = file.metadata().map_err(|e| os_error(&e))?;
            self.closed = Some(Closed { path, dev: meta.dev(), ino: meta.ino() });
        }
        self.writer.close(None);
        Ok(())
    }

    /// Its own duplicate: a forked child puts an unlocked one in its place.
    fn fileno(&self) -> RawFd {
        self.writer.file().as_ref().map_or(-1, std::os::fd::AsRawFd::as_raw_fd)
    }

    // What the live list holds and what replay did to it (`crate::history`):
    // read-only transcripts keep the history `later`, the `*_effect` and
    // `elision*` read.

    /// The live messages' ids (`"<compaction id>:<k>"` for a replacement's).
    fn live_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        live_list(py, self.core(), &*self.file()?, |r, m| r.id(py, m.source()))
    }

    /// The live messages as payload dicts: stubs in place of elided content,
    /// `{"role": "user", "content": summary}` for a compaction's summary.
    fn live_payloads<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        live_list(py, self.core(), &*self.file()?, |r, m| r.dict(py, m.source(), m.stub()))
    }

    /// The live messages as `(id, payload dict, line number, elided)`, the
    /// payloads as `live_payloads` has them: one read of each line for both.
    fn live_entries<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        live_list(py, self.core(), &*self.file()?, |r, m| r.entry(py, m))
    }

    /// The live list without reading a line: `(envelope index, index of the
    /// elision whose stub it carries or None, role, replacement position or
    /// None)` per message, in order (a compaction's summary is the
    /// compaction's index, role `"user"`; a replacement message, the
    /// compaction's index, its own role and its position).
    fn live(&self) -> Vec<(u32, Option<u32>, String, Option<u32>)> {
        let t = self.core();
        let role = |m: &LiveMessage| match t.index.get(m.line as usize).map(|r| r.kind) {
            _ if m.part != WHOLE => t.part(m.line, m.part).map_or("", |p| &*p.role),
            Some(EnvelopeType::Compaction) => "user",
            _ => t.index.role(m.line as usize).unwrap_or(""),
        };
        let row = |m: &LiveMessage| {
            (m.line, m.stub().map(|(l, _)| l), role(m).to_owned(), place(m.source()).1)
        };
        t.live.iter().map(row).collect()
    }

    /// The `k`-th live message as a payload dict (as `live_payloads` has it).
    #[pyo3(signature = (k, /))]
    fn live_message<'py>(&self, py: Python<'py>, k: usize) -> PyResult<Bound<'py, PyDict>> {
        let m = self.core().live.get(k);
        let m = m.ok_or_else(|| PyIndexError::new_err("live message index out of range"))?;
        Messages::new(self.core(), &*self.file()?).dict(py, m.source(), m.stub())
    }

    /// What later lines did to envelope `index` (with `part`, to that message
    /// of compaction `index`'s replacement), as line indices: `(the settle
    /// that settled this dispatch, the first elision that stubbed this
    /// message, the compaction that took it out of the live list, the rewind
    /// that dropped it)`, each or None.
    #[pyo3(signature = (index, part, /))]
    #[allow(clippy::type_complexity)]
    fn later(
        &self,
        index: u32,
        part: Option<u32>,
    ) -> PyResult<(Option<u32>, Option<u32>, Option<u32>, Option<u32>)> {
        let h = history(self.core())?;
        let at = Source { line: index, part: part.unwrap_or(WHOLE) };
        let settled = h.settled_by.get(&index).filter(|_| part.is_none());
        Ok((
            settled.copied(),
            h.elided_by.get(&at).copied(),
            h.compacted_by.get(&at).copied(),
            h.rewound_by.get(&at).copied(),
        ))
    }

    /// What compaction `index` did to the live list: `(replaced, kept,
    /// replacement)`, the first two as places in live order, the last the
    /// number of messages its replacement put in, or None when it has none
    /// (its summary went in).
    #[pyo3(signature = (index, /))]
    fn compaction_effect(&self, index: u32) -> PyResult<(Vec<Place>, Vec<Place>, Option<usize>)> {
        let done = history(self.core())?.compactions.get(&index);
        let done = done.ok_or_else(|| not_a("a compaction"))?;
        let put = self.core().parts_of(index).map(<[_]>::len);
        Ok((places(&done.replaced), places(&done.kept), put))
    }

    /// The live messages rewind `index` dropped, as places in live order.
    #[pyo3(signature = (index, /))]
    fn rewind_effect(&self, index: u32) -> PyResult<Vec<Place>> {
        let dropped = history(self.core())?.rewinds.get(&index);
        Ok(places(dropped.ok_or_else(|| not_a("a rewind"))?))
    }

    /// The messages elision `index` stubbed, in item order, as `(envelope
    /// index, the message as it was just before)`.
    #[pyo3(signature = (index, /))]
    fn elision_effect<'py>(&self, py: Python<'py>, index: u32) -> PyResult<Bound<'py, PyList>> {
        let (t, file) = (self.core(), self.file()?);
        let list = PyList::empty(py);
        let mut messages = Messages::new(t, &file);
        for e in elided(t, index)? {
            list.append((e.line, messages.dict(py, e.source(), e.stub_before)?))?;
        }
        Ok(list)
    }

    /// What `show` says of each message elision `index` stubbed, without
    /// decoding its content: `(line, role, tool_call_id, size)`, the size as
    /// `elided_sizes` measures it.
    #[pyo3(signature = (index, /))]
    fn elision_rows<'py>(&self, py: Python<'py>, index: u32) -> PyResult<Vec<ElisionRow<'py>>> {
        let (t, file) = (self.core(), self.file()?);
        let items = elided(t, index)?;
        let sizes = py.detach(|| t.elided_sizes(&*file, &[index])).map_err(load_error)?;
        let mut kept = Kept::default();
        let mut rows = Vec::with_capacity(items.len());
        for (e, size) in items.iter().zip(sizes.into_iter().next().unwrap_or_default()) {
            let (rec, bytes) = kept.get(&file, &t.index, e.line)?;
            let (role, call) = if e.part != WHOLE {
                let span = part_span(t, e.source())?;
                let part = bytes.get(span.start as usize..span.end as usize).unwrap_or_default();
                let role = decode_at(py, &rec, part, &["role"])?;
                (role, decode_at(py, &rec, part, &["tool_call_id"])?)
            } else if rec.kind == EnvelopeType::Compaction {
                ("user".into_pyobject(py)?.into_any(), py.None().into_bound(py))
            } else {
                let role = decode_at(py, &rec, bytes, &["payload", "role"])?;
                (role, decode_at(py, &rec, bytes, &["payload", "tool_call_id"])?)
            };
            rows.push((e.line, role, call, size));
        }
        Ok(rows)
    }

    /// For each elision in `indices`, the UTF-8 size of the content each
    /// message it stubbed had just before (as `elision_effect` has it), in
    /// item order, measured in the core on every core without decoding it;
    /// None for a content that is neither a string nor null.
    #[pyo3(signature = (indices, /))]
    fn elided_sizes(&self, py: Python<'_>, indices: Vec<u32>) -> PyResult<Vec<Vec<Option<u64>>>> {
        let t = self.core();
        history(t)?;
        for &i in &indices {
            if rec_at(&t.index, i as usize)?.kind != EnvelopeType::Elision {
                return Err(not_a("an elision"));
            }
        }
        let file = self.file()?;
        py.detach(|| t.elided_sizes(&*file, &indices)).map_err(load_error)
    }
});
