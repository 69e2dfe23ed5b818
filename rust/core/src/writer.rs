//! The durable append: each call's lines go to the file with one `write(2)`,
//! are made durable (`fsync`, when asked), are cut back out of the file if
//! that fails, and are checked after the write against the file still being
//! the one this writer writes; only then does replay add them.
//!
//! A writer that cannot vouch for its file any more (a failed cut-back, a file
//! deleted, truncated or written by someone else, a fork) is broken: it refuses
//! every later append with [`WriteError::Broken`].

use std::fs::File;
use std::io::{self, Write};

use crate::envelope::parse_line;
use crate::file_state::{links_and_length, LinksAndLength};
use crate::fork;
use crate::stamp::{IdGen, Instant, Stamper};
use crate::transcript::{check_line_length, Accepted, FreshId, ReplayError, Transcript};

/// What a writer asks of its file: the few system calls of an append. A
/// [`File`] in use; a test double elsewhere, to fail where a disk would.
pub trait Sink {
    /// One `write(2)` of `buf`: how much of it was written.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// `fdatasync(2)`.
    fn sync_data(&self) -> io::Result<()>;
    /// `ftruncate(2)` to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// The file's link count and length (see [`crate::file_state`]).
    fn links_and_length(&self) -> io::Result<LinksAndLength>;
}

impl Sink for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Write::write(self, buf)
    }
    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
    fn links_and_length(&self) -> io::Result<LinksAndLength> {
        links_and_length(self)
    }
}

/// No file: a closed session's, which holds no descriptor. Every call fails
/// with `EBADF`, as it would on a closed descriptor.
impl<F: Sink> Sink for Option<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.as_mut().ok_or_else(closed)?.write(buf)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.as_ref().ok_or_else(closed)?.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.as_ref().ok_or_else(closed)?.set_len(len)
    }
    fn links_and_length(&self) -> io::Result<LinksAndLength> {
        self.as_ref().ok_or_else(closed)?.links_and_length()
    }
}

fn closed() -> io::Error {
    io::Error::from_raw_os_error(libc::EBADF)
}

/// Why an append was refused or failed.
#[derive(Debug)]
pub enum WriteError {
    /// The writer refuses appends, and says why (the session is broken,
    /// closed, read-only or in a forked child).
    Broken(String),
    /// The envelope cannot be a line of a transcript (too long, does not
    /// read back, an id given twice in one call).
    Invalid(String),
    /// Replay refuses the envelope after what the transcript holds.
    Refused(ReplayError),
    /// The system refused the write, the fsync or the check after it.
    Io(io::Error),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::Broken(why) | WriteError::Invalid(why) => f.write_str(why),
            WriteError::Refused(e) => e.fmt(f),
            WriteError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<ReplayError> for WriteError {
    fn from(e: ReplayError) -> Self {
        WriteError::Refused(e)
    }
}

/// One line of an append, as its caller made it.
#[derive(Debug, Clone, Copy)]
pub enum Made<'a> {
    /// A line to read back and check as load would; `id`: the fresh id it
    /// was written with, if it was drawn for it.
    Line { id: Option<&'a FreshId> },
    /// A message line with a fresh id whose role, stickiness and tool call id
    /// the caller wrote itself: accepted from them, without reading it back.
    Message {
        id: &'a FreshId,
        role: &'a str,
        /// Sticky, sysprompt or a depth.
        sticky: bool,
        /// Its `tool_call_id`, when that is a string.
        tool_call_id: Option<&'a [u8]>,
    },
}

/// One transcript open for appending: its replayed state and its file.
pub struct Writer<F: Sink = File> {
    transcript: Transcript,
    file: F,
    // The file's length after the last good line: a failed write is cut back to it.
    good_len: u64,
    missing_newline: bool,
    fsync: bool,
    broken: Option<String>,
    ids: IdGen,
    // The timestamp text of the last second an append was stamped in.
    stamps: Stamper,
    buf: Vec<u8>,
    // The lines of an append being checked, kept between appends: an append
    // allocates nothing of its own.
    accepted: Vec<(Accepted, usize)>,
    // The fork generation the writer was made in: a forked child never
    // writes through its parent's writer, even where no at-fork hook ran.
    opened_in: u64,
}

impl<F: Sink> Writer<F> {
    /// A writer appending to `file`, whose first `good_len` bytes `transcript`
    /// replayed; `missing_newline`: the last of them is not a `\n`. With
    /// `fsync`, every append is made durable before it returns. `broken`: why
    /// it refuses appends from the start (a reader), or None.
    pub fn new(
        transcript: Transcript,
        file: F,
        good_len: u64,
        missing_newline: bool,
        fsync: bool,
        broken: Option<String>,
    ) -> Self {
        Writer {
            transcript,
            file,
            good_len,
            missing_newline,
            fsync,
            broken,
            ids: IdGen::new(),
            stamps: Stamper::default(),
            buf: Vec::new(),
            accepted: Vec::new(),
            opened_in: fork::generation(),
        }
    }

    /// The replayed state of every line written so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn file(&self) -> &F {
        &self.file
    }

    /// The file's length up to the last good line.
    pub fn len(&self) -> u64 {
        self.good_len
    }

    /// Whether no byte is written yet.
    pub fn is_empty(&self) -> bool {
        self.good_len == 0
    }

    /// Whether each append is made durable before it returns.
    pub fn fsyncs(&self) -> bool {
        self.fsync
    }

    /// Why the writer refuses appends, or None.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Refuses appends from now on, and reads go on through `file`.
    pub fn close(&mut self, file: F) {
        self.file = file;
        self.broken = Some("the session is closed".into());
    }

    /// Err([`WriteError::Broken`]) when the writer refuses appends.
    ///
    /// # Errors
    ///
    /// The writer is broken, closed, or was made before a fork.
    pub fn refuse_if_broken(&self) -> Result<(), WriteError> {
        match &self.broken {
            Some(why) => Err(WriteError::Broken(why.clone())),
            None if self.opened_in != fork::generation() => Err(WriteError::Broken(
                "this session was opened before a fork(), by the parent process; it cannot \
                 append in the child (open the transcript there instead, once the parent has \
                 closed it)"
                    .into(),
            )),
            None => Ok(()),
        }
    }

    /// A new envelope id no line has, drawn for Unix millisecond `ms`.
    pub fn fresh_id(&mut self, ms: u64) -> FreshId {
        self.transcript.fresh_id(&mut self.ids, ms)
    }

    /// The timestamp text of `at`.
    pub fn stamp(&mut self, at: Instant) -> [u8; 27] {
        self.stamps.text(at)
    }

    /// The buffer to serialise an append's lines into: a `\n` (written only
    /// when the file's last line lacks its own), then each line with its `\n`.
    /// Give it back with [`Writer::append`] or [`Writer::keep_buffer`].
    pub fn take_buffer(&mut self) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.push(b'\n');
        buf
    }

    /// Keeps `buf` for the next append, unless one huge line grew it.
    pub fn keep_buffer(&mut self, buf: Vec<u8>) {
        if buf.capacity() <= 1 << 20 {
            self.buf = buf;
        }
    }

    /// Appends the lines serialised in `buf` (from [`Writer::take_buffer`]),
    /// line `k` ending (its `\n` included) at `lines[k].1` and made as
    /// `lines[k].0` says: checks each against what the transcript holds,
    /// writes them all with one `write(2)`, checks the file, and adds them.
    /// Nothing is written unless every line is accepted; each is checked
    /// against what was there before the call, so lines must not depend on
    /// one another (two settles of one operation). Keeps `buf`.
    ///
    /// # Errors
    ///
    /// [`WriteError`]: nothing was written, except for a `Broken` from the
    /// check after the write (and an `Io` from that check), where the lines
    /// are in the file but not in the transcript.
    pub fn append(&mut self, buf: Vec<u8>, lines: &[(Made<'_>, usize)]) -> Result<(), WriteError> {
        let result = self.append_lines(&buf, lines);
        self.keep_buffer(buf);
        result
    }

    /// Appends one envelope line (without its `\n`), read back and checked.
    ///
    /// # Errors
    ///
    /// As [`Writer::append`].
    pub fn append_line(&mut self, line: &[u8]) -> Result<(), WriteError> {
        let mut buf = self.take_buffer();
        buf.extend_from_slice(line);
        buf.push(b'\n');
        let end = buf.len();
        self.append(buf, &[(Made::Line { id: None }, end)])
    }

    fn append_lines(&mut self, buf: &[u8], lines: &[(Made<'_>, usize)]) -> Result<(), WriteError> {
        self.refuse_if_broken()?;
        let mut accepted = std::mem::take(&mut self.accepted);
        accepted.clear();
        let mut start = 1;
        let mut last_fresh: Option<&FreshId> = None;
        for &(made, end) in lines {
            let body = buf.get(start..end.saturating_sub(1)).unwrap_or_default();
            accepted.push((self.accept(made, body)?, body.len()));
            start = end;
            // Each envelope is checked without the others: their ids must
            // differ among themselves too (a generator's ids strictly increase).
            let fresh = match made {
                Made::Message { id, .. } => Some(id),
                Made::Line { id } => id,
            };
            if let Some(id) = fresh {
                if last_fresh.is_some_and(|last| last.digits() >= id.digits()) {
                    return Err(WriteError::Invalid(
                        "two envelopes of one call share an id".into(),
                    ));
                }
                last_fresh = Some(id);
            }
        }
        let end = lines.last().map_or(1, |&(_, end)| end);
        let written = buf.get(..end).unwrap_or_default();
        let line =
            if self.missing_newline { written } else { written.get(1..).unwrap_or_default() };
        self.write_durably(line).map_err(WriteError::Io)?;
        let result = self.after_write(written.len() as u64 - 1, &mut accepted);
        self.accepted = accepted;
        result
    }

    // The envelope of one line (`body`, without its `\n`) for appending.
    fn accept(&self, made: Made<'_>, body: &[u8]) -> Result<Accepted, WriteError> {
        check_line_length(body.len() as u64)
            .map_err(|e| WriteError::Invalid(format!("the envelope cannot be written: {e}")))?;
        match made {
            Made::Message { id, role, sticky, tool_call_id } => {
                Ok(self.transcript.accept_message(id, role, sticky, tool_call_id)?)
            }
            Made::Line { .. } => {
                let env = parse_line(body).map_err(|e| {
                    WriteError::Invalid(format!("the envelope does not read back: {e}"))
                })?;
                Ok(self.transcript.accept(env, true)?)
            }
        }
    }

    // Writes `line` with one write(2) (more only after a short one); on
    // failure, cuts the file back to the last good length, or, failing that,
    // refuses every later append.
    fn write_durably(&mut self, line: &[u8]) -> io::Result<()> {
        let mut written = 0;
        let result = loop {
            match self.file.write(&line[written..]) {
                Ok(0) => {
                    break Err(io::Error::new(io::ErrorKind::WriteZero, "write(2) wrote nothing"))
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
        let result = result.and_then(|()| if self.fsync { self.file.sync_data() } else { Ok(()) });
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

    // After the lines of `written` were written (each envelope with the
    // length of its line, in file order, the last one ending at `good_len`;
    // `total` bytes in all, each line's `\n` included): checks that the file
    // is still the one this writer writes, then adds the envelopes.
    fn after_write(
        &mut self,
        total: u64,
        written: &mut Vec<(Accepted, usize)>,
    ) -> Result<(), WriteError> {
        // A transcript deleted, or replaced by a rename, has no name left: the
        // line just written can never be read again, so refuse it (and every
        // later one) rather than return its id. Checked after the write, so no
        // deletion slips in between. (Renamed away, it keeps a name: appends go on.)
        // A file whose length is not the one this writer wrote was truncated in
        // place (logrotate's copytruncate) or written by someone else: load
        // would refuse it, or the index no longer says where the lines are.
        // Whenever the check cannot vouch for the line, the writer is broken:
        // the line is in the file, so an error must not let it pass as unwritten.
        // One statx(2) per append, with no state kept about the file between
        // appends: Linux tells a process of another's unlink or rename only
        // through a descriptor it must watch, which would cost every process
        // a kernel facility (and be late: the link count drops first). It asks
        // for the link count and the length only: asking for the times too
        // would make every next write stamp and journal the inode (file_state).
        let meta = match self.file.links_and_length() {
            Ok(meta) => meta,
            Err(e) => {
                self.broken = Some(format!(
                    "the file could not be checked after a write ({e}): that line may be in it"
                ));
                return Err(WriteError::Io(e));
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
            return Err(WriteError::Broken(why));
        }
        let mut offset = self.good_len - total;
        self.missing_newline = false;
        for (accepted, len) in written.drain(..) {
            let number = self.transcript.line_count + 1;
            let rec = accepted.line_rec(offset, len, number);
            offset += len as u64 + 1;
            // Checked before the write, against this same state.
            self.transcript.push_accepted(accepted, rec);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
