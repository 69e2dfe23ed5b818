//! The pages of `html`'s folder: where each page of records starts and stops,
//! and the writing of its files.
//!
//! A big transcript becomes pages of records, cut at a turn or a compaction.
//! [`Walk`] finds the pages from the envelope index alone (each envelope's
//! offset, length, type and role), reading only the first bytes of each record
//! (its head: enough for its id) and the bytes between two envelopes when
//! there are any (blank lines; in a file load refuses, damaged ones). The
//! page's bytes are not read here: [`Writer`] copies them, on a thread of its
//! own, from the transcript into the page's chunk file, made safe for a
//! JavaScript `String.raw` template ([`escape_chunk`]). Memory holds one page's
//! heads and a few pages waiting to be written, never the file.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use transcript_core::envelope::{EnvelopeType, Role};
use transcript_core::scan::{is_blank, ReadAt};
use transcript_core::transcript::{read_exact_at, Index};

/// When a page is cut: past `soft` records or bytes at the next turn (a user
/// message) or compaction; past `hard` ones at the next record whatever it is.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Records after which a page ends at the next turn or compaction.
    pub soft_records: usize,
    /// Records after which a page ends at the next record.
    pub hard_records: usize,
    /// Bytes after which a page ends at the next turn or compaction.
    pub soft_bytes: u64,
    /// Bytes after which a page ends at the next record.
    pub hard_bytes: u64,
    /// A line longer than this is not put in the page as it is (an odd line).
    pub big_line: u64,
    /// How much of each record's start is read (its head).
    pub head: usize,
}

/// What the page cannot carry as it is: a record longer than
/// [`Limits::big_line`] (`index` is its envelope), or a run of lines that are
/// no envelope (`index` None): one non-blank line, or several with only blank
/// lines between them, together at most `big_line` bytes. One entry stands for
/// the whole run, so a file of junk lines costs a page a few entries, not one
/// per line; its line numbers are the file's (the run's lines follow `line`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Odd {
    /// Its (first line's) 1-based line number.
    pub line: u64,
    /// Its envelope, if it is one.
    pub index: Option<u32>,
    /// Offset of its first byte.
    pub start: u64,
    /// Offset of its end (its last line's `\n`, or the end of the file).
    pub end: u64,
}

/// One page: bytes `start..stop` of the file, from line `first_line`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    /// Offset of its first byte.
    pub start: u64,
    /// Offset after its last byte (a page but the last stops before the `\n`
    /// that ends its last line).
    pub stop: u64,
    /// Line number of its first line.
    pub first_line: u64,
    /// Its records: envelope index and line number.
    pub items: Vec<(u32, u64)>,
    /// The heads of its records, one after the other.
    pub heads: Vec<u8>,
    /// Where each record's head ends in `heads`.
    pub head_ends: Vec<usize>,
    /// Its odd lines, in file order.
    pub odd: Vec<Odd>,
    /// Its bytes (`start..stop` of the file) but for its odd lines, which the
    /// chunk carries in another form (see [`Job`]).
    pub data: Vec<u8>,
    // Each record's offset and length (without its `\n`).
    spans: Vec<(u64, u64)>,
}

impl Page {
    fn new(start: u64, first_line: u64) -> Self {
        Page { start, first_line, ..Page::default() }
    }

    // Reads the page's bytes but for its odd lines, in one read or a few, and
    // takes each record's head from them (an odd record's is read apart).
    fn fill<R: ReadAt + ?Sized>(&mut self, src: &R, head: usize) -> io::Result<()> {
        self.data = spare_buffer();
        let mut at = self.start;
        for o in &self.odd {
            if o.start > at {
                append(src, at, o.start.min(self.stop), &mut self.data)?;
            }
            at = at.max(o.end);
        }
        if self.stop > at {
            append(src, at, self.stop, &mut self.data)?;
        }
        // A record's place in `data`: its offset less the odd bytes before it.
        let mut odd = self.odd.iter().peekable();
        let mut skipped = 0;
        for &(a, len) in &self.spans {
            while let Some(o) = odd.next_if(|o| o.end <= a) {
                skipped += o.end - o.start;
            }
            let take = usize::try_from(len).unwrap_or(usize::MAX).min(head);
            if odd.peek().is_some_and(|o| o.start == a) {
                let mut buf = vec![0; take];
                read_exact_at(src, &mut buf, a)?;
                self.heads.extend_from_slice(&buf);
            } else {
                let from = usize::try_from(a - self.start - skipped).unwrap_or(usize::MAX);
                let got = self.data.get(from..).unwrap_or(&[]);
                self.heads.extend_from_slice(got.get(..take).unwrap_or(got));
            }
            self.head_ends.push(self.heads.len());
        }
        self.spans = Vec::new();
        Ok(())
    }

    /// Record `k`'s head.
    pub fn head(&self, k: usize) -> &[u8] {
        let from = if k == 0 { 0 } else { self.head_ends.get(k - 1).copied().unwrap_or(0) };
        let to = self.head_ends.get(k).copied().unwrap_or(from);
        self.heads.get(from..to).unwrap_or(&[])
    }
}

/// The walk over a file's records a page at a time (see the module's text).
#[derive(Debug)]
pub struct Walk {
    limits: Limits,
    // The end of what the pages show.
    end: u64,
    // The next envelope.
    next: usize,
    // Where the next unwalked line starts, and its number.
    pos: u64,
    line: u64,
    // Where the first page starts, and its first line's number.
    origin: (u64, u64),
    open: Option<Page>,
    done: bool,
}

/// How much of the bytes between two envelopes is read at once.
const GAP_BLOCK: usize = 1 << 20;

impl Walk {
    /// A walk that starts at offset `start`, the start of line `line`, where
    /// envelope `next` (by its index) is the next one: `(start, line, next)`.
    pub fn from(limits: Limits, (start, line, next): (u64, u64, usize), end: u64) -> Self {
        Walk { limits, end, next, pos: start, line, origin: (start, line), open: None, done: false }
    }

    fn page(&mut self) -> &mut Page {
        let (start, line) = self.origin;
        self.open.get_or_insert_with(|| Page::new(start, line))
    }

    /// The next page, or None after the last.
    pub fn next_page<R: ReadAt + ?Sized>(
        &mut self,
        index: &Index,
        src: &R,
    ) -> io::Result<Option<Page>> {
        let lim = self.limits;
        while !self.done {
            let rec = index.get(self.next).filter(|r| r.offset < self.end);
            let gap_end = rec.map_or(self.end, |r| r.offset.max(self.pos));
            if gap_end > self.pos {
                if let Some(mut page) = self.gap(src, gap_end)? {
                    page.fill(src, lim.head)?;
                    return Ok(Some(page));
                }
            }
            let Some(rec) = rec else {
                self.done = true;
                let Some(mut page) = self.open.take() else {
                    return Ok(None);
                };
                page.stop = self.end;
                page.fill(src, lim.head)?;
                return Ok(Some(page));
            };
            let a = rec.offset.max(self.pos);
            let mut cut = None;
            if let Some(p) = &self.open {
                let count = p.items.len();
                let written = a.saturating_sub(p.start);
                let turn = rec.kind == EnvelopeType::Compaction
                    || (rec.kind == EnvelopeType::Message && rec.role == Some(Role::User));
                if count > 0
                    && (count >= lim.hard_records
                        || written >= lim.hard_bytes
                        || ((count >= lim.soft_records || written >= lim.soft_bytes) && turn))
                {
                    cut = self.open.take().map(|mut p| {
                        p.stop = a.saturating_sub(1);
                        p
                    });
                    self.open = Some(Page::new(a, rec.number));
                }
            }
            let len = u64::from(rec.len);
            let end = (a + len).min(self.end);
            let i = u32::try_from(self.next).unwrap_or(u32::MAX);
            let page = self.page();
            page.items.push((i, rec.number));
            page.spans.push((a, end - a));
            if len > lim.big_line {
                page.odd.push(Odd { line: rec.number, index: Some(i), start: a, end });
            }
            self.next += 1;
            self.pos = (end + 1).min(self.end.max(end));
            self.line = rec.number + 1;
            if let Some(mut page) = cut {
                page.fill(src, lim.head)?;
                return Ok(Some(page));
            }
        }
        Ok(None)
    }

    // The lines from `pos` to `to` (no envelope among them): blank ones are
    // skipped, the others are odd lines. The page is cut after a line that
    // brings it past `hard_bytes`: then the walk stops there (`pos` is the next
    // line's start) and the page cut is returned.
    fn gap<R: ReadAt + ?Sized>(&mut self, src: &R, to: u64) -> io::Result<Option<Page>> {
        let mut buf = vec![0; GAP_BLOCK.min(usize::try_from(to - self.pos).unwrap_or(GAP_BLOCK))];
        let mut at = self.pos;
        let mut line_start = self.pos;
        let mut blank = true;
        while at < to {
            let want = buf.len().min(usize::try_from(to - at).unwrap_or(usize::MAX));
            let got = &mut buf[..want];
            read_exact_at(src, got, at)?;
            let mut from = 0;
            while from < want {
                match memchr::memchr(b'\n', &got[from..]) {
                    Some(k) => {
                        blank = blank && is_blank(&got[from..from + k]);
                        let nl = at + (from + k) as u64;
                        self.end_line(line_start, nl, blank);
                        line_start = nl + 1;
                        blank = true;
                        from += k + 1;
                        if let Some(page) = self.cut_after(nl) {
                            return Ok(Some(page));
                        }
                    }
                    None => {
                        blank = blank && is_blank(&got[from..]);
                        from = want;
                    }
                }
            }
            at += want as u64;
        }
        if line_start < to {
            // Only at the end of the file: a last line without its `\n`.
            self.end_line(line_start, to, blank);
        }
        self.pos = to;
        Ok(None)
    }

    // A line of a gap ends at `end`: a non-blank one joins the run of odd
    // lines before it when only blank lines are between (no envelope: the
    // run's end is past the last record) and the run stays within `big_line`.
    fn end_line(&mut self, start: u64, end: u64, blank: bool) {
        if !blank {
            let (line, big) = (self.line, self.limits.big_line);
            let floor = self.pos;
            let page = self.page();
            match page.odd.last_mut() {
                Some(run)
                    if run.index.is_none()
                        && run.end >= floor
                        && end - start <= big
                        && end - run.start <= big =>
                {
                    run.end = end;
                }
                _ => page.odd.push(Odd { line, index: None, start, end }),
            }
        }
        self.line += 1;
    }

    // After a gap's line that ends at `nl` (its `\n`): the page, cut there,
    // when it holds something and has reached `hard_bytes` (junk lines count
    // as much as records: a page's bytes are bounded whatever its lines are);
    // the next page opens with the next line that is not blank. Blank lines
    // alone are never a page: past `hard_bytes` of them, they are let go.
    fn cut_after(&mut self, nl: u64) -> Option<Page> {
        let (hard, next) = (self.limits.hard_bytes, (nl + 1, self.line));
        let Some(p) = self.open.as_mut() else {
            if nl + 1 - self.origin.0 >= hard {
                self.origin = next;
            }
            return None;
        };
        if nl + 1 - p.start < hard {
            return None;
        }
        if p.items.is_empty() && p.odd.is_empty() {
            (p.start, p.first_line) = next;
            return None;
        }
        let mut page = self.open.take()?;
        page.stop = nl;
        self.origin = next;
        self.pos = nl + 1;
        Some(page)
    }
}

// Appends bytes `from..to` of `src` to `out`.
fn append<R: ReadAt + ?Sized>(src: &R, from: u64, to: u64, out: &mut Vec<u8>) -> io::Result<()> {
    let have = out.len();
    let more = usize::try_from(to.saturating_sub(from))
        .map_err(|_| io::Error::other("a page too big for memory"))?;
    out.resize(have + more, 0);
    read_exact_at(src, &mut out[have..], from)
}

/// The page buffers the writer is done with, for the walk to fill again: a
/// fresh buffer of a few megabytes a page would cost the kernel a page fault
/// every 4 KiB of it.
static SPARE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
/// How many spare buffers are kept.
const SPARE_KEPT: usize = 16;

fn spare_buffer() -> Vec<u8> {
    let mut buf = SPARE.lock().ok().and_then(|mut s| s.pop()).unwrap_or_default();
    buf.clear();
    buf
}

fn recycle(buf: Vec<u8>) {
    if buf.capacity() == 0 {
        return;
    }
    if let Ok(mut s) = SPARE.lock() {
        if s.len() < SPARE_KEPT {
            s.push(buf);
        }
    }
}

/// Lets the spare buffers go (after the last page).
pub fn drop_spare_buffers() {
    if let Ok(mut s) = SPARE.lock() {
        *s = Vec::new();
    }
}

/// Appends `data` to `out` as the body of a JavaScript `String.raw` template:
/// every backquote and `$` (in a JSON line, only ever inside a string) as a
/// `\u` escape, a raw CR as a space; every other byte, backslashes included,
/// as it is.
pub fn escape_chunk(data: &[u8], out: &mut Vec<u8>) {
    let mut at = 0;
    for k in memchr::memchr3_iter(b'`', b'$', b'\r', data) {
        out.extend_from_slice(&data[at..k]);
        out.extend_from_slice(match data[k] {
            b'`' => b"\\u0060",
            b'$' => b"\\u0024",
            _ => b" ",
        });
        at = k + 1;
    }
    out.extend_from_slice(&data[at..]);
}

/// A file of the folder: `prefix`, then `data` (a page's bytes, see
/// [`Page::data`]: the file's bytes from offset `start` but for its odd lines)
/// with each `(from, to, bytes)` of `subs` put where the odd line `from..to`
/// was, all escaped by [`escape_chunk`] when `escape`, then `suffix`. Written
/// to `<path>.tmp`, then renamed to `path`.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// Where it goes.
    pub path: PathBuf,
    /// What comes first, as it is.
    pub prefix: Vec<u8>,
    /// The page's bytes.
    pub data: Vec<u8>,
    /// The file offset of the page's first byte.
    pub start: u64,
    /// The odd lines' replacements, in file order.
    pub subs: Vec<(u64, u64, Vec<u8>)>,
    /// Whether `data` and `subs` are escaped for a template.
    pub escape: bool,
    /// What comes last, as it is.
    pub suffix: Vec<u8>,
}

/// How much is escaped before it is written.
const COPY_BLOCK: usize = 1 << 20;

/// Writes `job`'s file (see [`Job`]): into `<path>.tmp`, then renamed over
/// `path`, unless `path` is a device, FIFO, socket or folder (not a page).
pub fn write_job(job: &Job) -> io::Result<()> {
    let mut tmp = job.path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    refuse_to_replace(&job.path)?;
    // A leftover of a killed run goes first: the new one is made with O_EXCL,
    // so never opened through a symlink left in its place.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let result = write_to(job, &tmp)
        .and_then(|()| refuse_to_replace(&job.path))
        .and_then(|()| std::fs::rename(&tmp, &job.path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

// An error unless `path` is missing, a regular file or a symlink.
fn refuse_to_replace(path: &std::path::Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() && !m.file_type().is_symlink() => {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file, not replaced"))
        }
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

// Writes `piece`, escaped if `escape` (through `out`, written when full).
fn put(f: &mut File, out: &mut Vec<u8>, piece: &[u8], escape: bool) -> io::Result<()> {
    for block in piece.chunks(COPY_BLOCK) {
        if escape && memchr::memchr3(b'`', b'$', b'\r', block).is_some() {
            escape_chunk(block, out);
        } else {
            out.extend_from_slice(block);
        }
        if out.len() >= COPY_BLOCK {
            f.write_all(out)?;
            out.clear();
        }
    }
    Ok(())
}

fn write_to(job: &Job, tmp: &std::path::Path) -> io::Result<()> {
    // A page is a copy of its transcript: never readable wider (0600), whatever the umask.
    let mut f = File::options().write(true).create_new(true).mode(0o600).open(tmp)?;
    let mut out = Vec::with_capacity(COPY_BLOCK * 2);
    out.extend_from_slice(&job.prefix);
    // `at`: the file offset `data[used..]` starts at.
    let (mut at, mut used) = (job.start, 0);
    for (from, to, sub) in &job.subs {
        let upto = usize::try_from(from.saturating_sub(at)).unwrap_or(usize::MAX);
        let piece = job.data.get(used..).unwrap_or(&[]);
        let piece = piece.get(..upto).unwrap_or(piece);
        put(&mut f, &mut out, piece, job.escape)?;
        used += piece.len();
        put(&mut f, &mut out, sub, job.escape)?;
        at = (*to).max(at);
    }
    put(&mut f, &mut out, job.data.get(used..).unwrap_or(&[]), job.escape)?;
    out.extend_from_slice(&job.suffix);
    f.write_all(&out)?;
    Ok(())
}

/// A failed job: the error and the file it was writing.
#[derive(Debug)]
pub struct WriteError {
    /// What failed.
    pub error: io::Error,
    /// The file being written.
    pub path: PathBuf,
}

/// Writes jobs on a thread of its own, in order; at most `depth` wait. When no
/// thread can start (a process at its thread limit), each job is written by
/// [`Writer::send`] itself instead. After a failure it writes nothing more, and
/// the error comes back from the next [`Writer::send`] or from [`Writer::finish`].
#[derive(Debug)]
pub struct Writer {
    tx: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<Result<(), WriteError>>>,
    /// No thread could start: `send` writes each job itself.
    inline: bool,
}

impl Writer {
    /// A writer with at most `depth` jobs waiting.
    pub fn new(depth: usize) -> io::Result<Self> {
        let (tx, rx) = sync_channel::<Job>(depth);
        let thread = transcript_core::threads::thread_builder()
            .name("html-pages".into())
            .spawn(move || run(&rx));
        Ok(match thread {
            Ok(thread) => Writer { tx: Some(tx), thread: Some(thread), inline: false },
            Err(_) => Writer { tx: None, thread: None, inline: true },
        })
    }

    /// Queues `job` (waits while `depth` jobs wait), or writes it now when the
    /// writer has no thread.
    pub fn send(&mut self, job: Job) -> Result<(), WriteError> {
        let path = job.path.clone();
        if self.inline {
            if let Err(error) = write_job(&job) {
                self.inline = false; // stopped: nothing more is written
                return Err(WriteError { error, path });
            }
            recycle(job.data);
            return Ok(());
        }
        let Some(tx) = &self.tx else {
            return Err(WriteError {
                error: io::Error::other("the page writer has stopped"),
                path,
            });
        };
        if tx.send(job).is_ok() {
            return Ok(());
        }
        // The thread stopped: it failed (or finish was called).
        self.finish()?;
        Err(WriteError { error: io::Error::other("the page writer has stopped"), path })
    }

    /// Waits for every job queued; the first failure, if any.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.tx = None;
        let Some(thread) = self.thread.take() else {
            drop_spare_buffers();
            return Ok(());
        };
        let result = thread.join();
        drop_spare_buffers();
        result.unwrap_or_else(|_| {
            Err(WriteError {
                error: io::Error::other("the page writer failed"),
                path: PathBuf::new(),
            })
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn run(rx: &Receiver<Job>) -> Result<(), WriteError> {
    for job in rx {
        write_job(&job).map_err(|error| WriteError { error, path: job.path.clone() })?;
        recycle(job.data);
    }
    Ok(())
}

// The walk and the writer are checked in Python against a line-by-line
// oracle (`tests/viewer/test_pages.py`); here, what no test through the
// binding can make: no thread to write on.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_written_here_when_no_thread_can_start() {
        let dir = std::env::temp_dir().join(format!("page-inline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        transcript_core::threads::fail_spawns(true);
        let w = Writer::new(2);
        transcript_core::threads::fail_spawns(false);
        let mut w = w.unwrap();
        assert!(w.inline, "the test's premise: no thread started");
        let job = |name: &str| Job {
            path: dir.join(name),
            data: b"abc".to_vec(),
            suffix: b";".to_vec(),
            ..Job::default()
        };
        w.send(job("a.js")).unwrap();
        assert_eq!(std::fs::read(dir.join("a.js")).unwrap(), b"abc;");
        let bad = w.send(Job {
            path: PathBuf::from("/nonexistent-dir-of-agent-transcript/x.js"),
            ..Job::default()
        });
        assert_eq!(bad.unwrap_err().error.kind(), io::ErrorKind::NotFound);
        assert!(w.send(job("b.js")).is_err(), "after a failure nothing more");
        assert!(!dir.join("b.js").exists());
        w.finish().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
