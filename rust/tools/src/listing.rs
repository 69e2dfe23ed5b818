//! A listing's row of a transcript, from its first and last lines only.
//!
//! `agent-transcript ls` shows, for each file of a folder, what its first lines
//! say (the session-meta, the first user message) and what its last line says
//! (the last envelope's type and time, whether it is cut short). This reads
//! exactly that: a block at the file's start and a block at its end, grown only
//! as far as a long line needs, with [`transcript_core::json::Reader`] for the few lines
//! that are parsed. [`read_rows`] does a batch of files on a few threads.
//!
//! The Python reader (`agent_transcript.fleet.listing.read_row`) is the
//! reference: for every file this answers, it answers what that reader does.
//! Where a file is out of the ordinary (it cannot be read, it is not a
//! transcript of version 1, a line is one that Python's `json` might read and
//! this reader refuses, a string holds a lone surrogate, …) the answer is
//! [`Row`]'s absence, and the caller reads that file its own way. A file that
//! shrinks while it is read is read again once from a fresh `fstat`.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use transcript_core::json::{JStr, JsonError, Kind, Number, Reader};
use transcript_core::scan::ReadAt;

/// How much of a file's start is searched for the first user message (the
/// title); more when the first line is longer than this.
pub const HEAD: usize = 64 * 1024;
/// The longest first line read; a longer one is not a transcript's.
pub const HEAD_MAX: usize = 1 << 20;
/// A last line that starts within this many bytes of its end is parsed whole;
/// a longer one is recognised by its canonical end, found in its last `TAIL`
/// bytes.
pub const TAIL: usize = 16 * 1024;
/// The furthest back the start of a long last line is searched for.
pub const TAIL_MAX: usize = 4 << 20;
/// A title's length, in characters, once clipped.
pub const TITLE_CHARS: usize = 80;

// The first reads, enough for the first lines and the last line of most files.
const HEAD_FIRST: usize = 4 * 1024;
const TAIL_FIRST: usize = 4 * 1024;

/// What the first and last lines say of a transcript that a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// A session-meta first, the last line a whole envelope.
    Clean,
    /// The last line is cut short (a crash mid-write); the one before is whole.
    TornTail,
    /// The last two lines are both damaged.
    Corrupt,
    /// The last line is damaged and does not begin with `{`: no write of this
    /// library leaves that (it never writes a leading blank), so load refuses
    /// it as damage rather than removing it as a torn tail.
    DamagedEnd,
}

/// What a row shows from a transcript's first and last lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ends {
    /// Clean, torn tail or corrupt.
    pub status: Status,
    /// The first user message's text, whitespace runs made one space, clipped
    /// to [`TITLE_CHARS`] characters (the last one `…`).
    pub title: Option<String>,
    /// The session-meta payload's `agent`, when a string.
    pub agent: Option<String>,
    /// The session-meta payload's `model`, when a string.
    pub model: Option<String>,
    /// The session-meta's `ts`, when a string.
    pub started: Option<String>,
    /// The last whole envelope's `ts`.
    pub last_activity: Option<String>,
    /// The last whole envelope's `type`.
    pub last_type: Option<String>,
}

/// One file's row: its `stat` and what its ends say.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bytes, from `stat`.
    pub size: u64,
    /// The last modification in seconds since the epoch, computed as Python's
    /// `os.stat_result.st_mtime` is.
    pub mtime: f64,
    /// The device, for the writer-lock table.
    pub dev: u64,
    /// The inode, for the writer-lock table.
    pub ino: u64,
    /// What the first and last lines say.
    pub ends: Ends,
}

/// Why a read stopped before an answer.
#[derive(Debug)]
enum Stop {
    /// The file is out of the ordinary: the reference reader decides.
    Defer,
    /// The file is shorter than its `stat` said: read it again.
    Changed,
    /// A read failed (the reference reader says how).
    Io,
}

impl From<io::Error> for Stop {
    fn from(_: io::Error) -> Self {
        Stop::Io
    }
}

/// Why a line did not give its fields.
enum Bad {
    /// It is not one JSON value.
    Invalid,
    /// It holds what this reader leaves to the reference one.
    Defer,
}

impl From<JsonError> for Bad {
    fn from(_: JsonError) -> Self {
        Bad::Invalid
    }
}

/// The rows of `paths`, in order, on up to `threads` threads; `None` where
/// the file is for the caller's own reader (see the module's notes).
pub fn read_rows(paths: &[PathBuf], threads: usize) -> Vec<Option<Row>> {
    let threads = threads.clamp(1, 16).min(paths.len().div_ceil(8)).max(1);
    if threads == 1 {
        return paths.iter().map(|p| read_row(p)).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = paths.get(i) else {
                return done;
            };
            done.push((i, read_row(path)));
        }
    };
    let mut out: Vec<Option<Row>> = vec![None; paths.len()];
    let mut place = |done: Vec<(usize, Option<Row>)>| {
        for (i, row) in done {
            if let Some(slot) = out.get_mut(i) {
                *slot = row;
            }
        }
    };
    std::thread::scope(|s| {
        // A helper that cannot start has already done its share here.
        let helpers: Vec<_> = (1..threads)
            .map(|_| transcript_core::threads::spawn_or_run(s, work))
            .collect();
        place(work());
        for h in helpers {
            // A helper that failed to finish leaves its rows to the caller's reader.
            if let Ok(done) = h.join() {
                place(done);
            }
        }
    });
    out
}

/// The row of one file, or `None` when the caller's reader is to read it: it
/// cannot be read, is not a regular file, is an archive (`.zst`), or is out of
/// the ordinary.
pub fn read_row(path: &Path) -> Option<Row> {
    if path.as_os_str().as_encoded_bytes().ends_with(b".zst") {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    // Non-blocking, as the reference reader opens: a FIFO swapped in after the
    // stat must not hang the listing.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut meta = meta;
    for _ in 0..2 {
        match read_ends(&file, meta.len()) {
            Ok(ends) => {
                return Some(Row {
                    size: meta.len(),
                    mtime: meta.mtime() as f64 + meta.mtime_nsec() as f64 * 1e-9,
                    dev: meta.dev(),
                    ino: meta.ino(),
                    ends,
                })
            }
            Err(Stop::Changed) => meta = file.metadata().ok()?,
            Err(Stop::Defer | Stop::Io) => return None,
        }
    }
    None
}

/// What the first and last lines of `file`, `size` bytes long by its `stat`,
/// say. Errors: `Defer` for the reference reader, `Changed` when the file is
/// shorter than `size`, `Io` when a read fails.
fn read_ends<R: ReadAt + ?Sized>(file: &R, size: u64) -> Result<Ends, Stop> {
    let mut head = Head {
        file,
        data: Vec::new(),
        eof: false,
    };
    head.want(HEAD_FIRST)?;
    let start = head
        .data
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .ok_or(Stop::Defer)?; // empty, or blank as far as read
    let mut first_end = head.newline_from(start);
    let mut title_limit = HEAD;
    if first_end.is_none() && !head.eof {
        head.want(HEAD)?;
        first_end = head.newline_from(start);
        if first_end.is_none() && head.data.len() == HEAD {
            head.want(HEAD_MAX)?;
            first_end = head.newline_from(start);
            if first_end.is_none() && head.data.len() == HEAD_MAX {
                return Err(Stop::Defer); // a first line longer than 1 MiB
            }
            title_limit = HEAD_MAX;
        }
    }
    let first_raw = head
        .data
        .get(start..first_end.unwrap_or(head.data.len()))
        .ok_or(Stop::Defer)?;
    let meta = session_meta(first_raw).map_err(|_| Stop::Defer)?;
    let title = match first_end {
        None => None,
        Some(end) => loop {
            let found = find_title(&head.data, end)?;
            if found.is_some() || head.eof || head.data.len() >= title_limit {
                break found;
            }
            head.want(title_limit)?;
        },
    };
    let floor = first_end.map_or(size, |e| e as u64 + 1);
    let mut back = Back::new(file, floor, size, &head.data)?;
    let first_fields = Fields {
        ts: meta.ts.clone(),
        type_: Some("session-meta".to_owned()),
    };
    let (status, env) = match back.last_lines()? {
        (None, _, _) => (Status::Clean, Some(first_fields)),
        (Some(Some(env)), _, _) => (Status::Clean, Some(env)),
        (Some(None), _, false) => (Status::DamagedEnd, None),
        (Some(None), None, true) => (Status::TornTail, Some(first_fields)),
        (Some(None), Some(Some(env)), true) => (Status::TornTail, Some(env)),
        (Some(None), Some(None), true) => (Status::Corrupt, None),
    };
    let (last_activity, last_type) = env.map_or((None, None), |f| (f.ts, f.type_));
    Ok(Ends {
        status,
        title,
        agent: meta.agent,
        model: meta.model,
        started: meta.ts,
        last_activity,
        last_type,
    })
}

/// Reads `buf.len()` bytes at `offset`, fewer only at the end of the file.
fn read_full_at<R: ReadAt + ?Sized>(file: &R, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let Some(rest) = buf.get_mut(done..) else {
            break;
        };
        match file.read_at(rest, offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The file's first bytes, read on demand.
struct Head<'f, R: ?Sized> {
    file: &'f R,
    data: Vec<u8>,
    // The end of the file has been reached: `data` is all of it.
    eof: bool,
}

impl<R: ReadAt + ?Sized> Head<'_, R> {
    /// Makes `data` the first `n` bytes (all of them, if fewer).
    fn want(&mut self, n: usize) -> Result<(), Stop> {
        let have = self.data.len();
        if self.eof || have >= n {
            return Ok(());
        }
        self.data.resize(n, 0);
        let got = match self.data.get_mut(have..) {
            Some(rest) => read_full_at(self.file, rest, have as u64)?,
            None => 0,
        };
        self.data.truncate(have + got);
        self.eof = have + got < n;
        Ok(())
    }

    fn newline_from(&self, start: usize) -> Option<usize> {
        let rest = self.data.get(start..)?;
        memchr::memchr(b'\n', rest).map(|i| start + i)
    }
}

/// The bytes `[start, end)` of the file, grown backwards on demand, never
/// below `floor` (the end of the first line).
struct Back<'f, R: ?Sized> {
    file: &'f R,
    floor: u64,
    end: u64,
    start: u64,
    data: Vec<u8>,
}

/// An envelope's `ts` and `type`, each when a string.
#[derive(Debug, Clone)]
struct Fields {
    ts: Option<String>,
    type_: Option<String>,
}

/// A last line: its fields, or None when it is damaged.
type LastLine = Option<Fields>;

fn is_blank_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'f, R: ReadAt + ?Sized> Back<'f, R> {
    /// The file's last bytes down to `floor`, the first ones read (or taken
    /// from `head`, the file's first bytes, when it holds them).
    fn new(file: &'f R, floor: u64, size: u64, head: &[u8]) -> Result<Self, Stop> {
        let mut back = Back {
            file,
            floor,
            end: size,
            start: size,
            data: Vec::new(),
        };
        if floor >= size {
            return Ok(back);
        }
        if head.len() as u64 >= size {
            let from = floor.max(size.saturating_sub(TAIL as u64));
            let lo = usize::try_from(from).map_err(|_| Stop::Defer)?;
            let hi = usize::try_from(size).map_err(|_| Stop::Defer)?;
            back.data = head.get(lo..hi).ok_or(Stop::Defer)?.to_vec();
            back.start = from;
        } else {
            back.grow_toward(floor.max(size.saturating_sub(TAIL_FIRST as u64)))?;
        }
        Ok(back)
    }

    /// Reads more bytes before `start`: as many again as are held (at least
    /// [`TAIL_FIRST`]), but none before `lo` (nor `floor`).
    fn grow_toward(&mut self, lo: u64) -> Result<(), Stop> {
        let lo = lo.max(self.floor);
        if lo >= self.start {
            return Ok(());
        }
        let step = (self.data.len() as u64).max(TAIL_FIRST as u64);
        let from = lo.max(self.start.saturating_sub(step));
        let n = usize::try_from(self.start - from).map_err(|_| Stop::Defer)?;
        let mut fresh = vec![0u8; n + self.data.len()];
        let got = match fresh.get_mut(..n) {
            Some(part) => read_full_at(self.file, part, from)?,
            None => 0,
        };
        if got < n {
            return Err(Stop::Changed);
        }
        if let Some(rest) = fresh.get_mut(n..) {
            rest.copy_from_slice(&self.data);
        }
        self.data = fresh;
        self.start = from;
        Ok(())
    }

    fn slice(&self, lo: u64, hi: u64) -> Result<&[u8], Stop> {
        let base = self.start;
        if lo < base || hi < lo {
            return Err(Stop::Defer);
        }
        let a = usize::try_from(lo - base).map_err(|_| Stop::Defer)?;
        let b = usize::try_from(hi - base).map_err(|_| Stop::Defer)?;
        self.data.get(a..b).ok_or(Stop::Changed)
    }

    /// `end` moved back over blanks and newlines, no further than `floor`.
    fn skip_blank_back(&mut self, mut end: u64) -> Result<u64, Stop> {
        loop {
            if end <= self.floor {
                return Ok(end);
            }
            if end <= self.start {
                self.grow_toward(self.floor)?;
            }
            let start = self.start;
            match self
                .slice(start, end)?
                .iter()
                .rposition(|&b| !is_blank_byte(b))
            {
                Some(i) => return Ok(start + i as u64 + 1),
                None => end = start,
            }
        }
    }

    /// The offset of the last `\n` in `[lo, hi)`, if any.
    fn rfind_newline(&mut self, lo: u64, hi: u64) -> Result<Option<u64>, Stop> {
        let lo = lo.max(self.floor);
        let mut scanned = hi; // [scanned, hi) holds no newline
        loop {
            let from = lo.max(self.start);
            if from < scanned {
                if let Some(i) = memchr::memrchr(b'\n', self.slice(from, scanned)?) {
                    return Ok(Some(from + i as u64));
                }
                scanned = from;
            }
            if scanned <= lo {
                return Ok(None);
            }
            self.grow_toward(lo)?;
        }
    }

    /// The last line, and the one before it when the last is damaged
    /// (each None when there is no such line after the first line), and
    /// whether the last line begins with `{` (as a torn write of this
    /// library's does; true when its start was not found).
    fn last_lines(&mut self) -> Result<(Option<LastLine>, Option<LastLine>, bool), Stop> {
        let mut end = self.end;
        let mut out: Vec<LastLine> = Vec::with_capacity(2);
        let mut brace = true;
        while out.len() < 2 && !matches!(out.first(), Some(Some(_))) {
            end = self.skip_blank_back(end)?;
            if end <= self.floor {
                break;
            }
            let block_lo = self.floor.max(end.saturating_sub(TAIL as u64));
            let nl = self.rfind_newline(block_lo, end)?;
            if nl.is_some() || block_lo == self.floor {
                let start = nl.map_or(self.floor, |i| i + 1);
                let raw = self.slice(start, end)?;
                if out.is_empty() {
                    brace = raw.first() == Some(&b'{');
                }
                out.push(last_line(raw)?);
                end = start;
                continue;
            }
            // A line longer than TAIL: its end is enough for a canonical one.
            let least = self.floor.max(end.saturating_sub(TAIL_MAX as u64));
            let start = self.rfind_newline(least, end)?.map_or(least, |i| i + 1);
            let fields = match canonical_end(self.slice(block_lo, end)?)? {
                Some(f) => Some(f),
                None if end - start <= TAIL_MAX as u64 => {
                    self.grow_toward(start)?;
                    parsed_or_defer(self.slice(start, end)?)?
                }
                None => None,
            };
            let first = out.is_empty();
            out.push(fields);
            if start > self.floor {
                self.grow_toward(start - 1)?;
                if self.slice(start - 1, start)? != b"\n" {
                    break; // the search stopped short of the line's start
                }
            }
            if first {
                self.grow_toward(start)?;
                brace = self.slice(start, start + 1)? == b"{";
            }
            end = start;
        }
        let mut it = out.into_iter();
        Ok((it.next(), it.next(), brace))
    }
}

/// A last line that starts within [`TAIL`] of its end: the canonical end of a
/// line this library wrote, else the line parsed.
fn last_line(raw: &[u8]) -> Result<LastLine, Stop> {
    if raw.starts_with(br#"{"id":""#) {
        if let Some(fields) = canonical_end(raw)? {
            return Ok(Some(fields));
        }
    }
    parsed_or_defer(raw)
}

/// The line's `ts` and `type` when it is a JSON object, None when it is
/// another value or no JSON; deferred when Python's `json` might read what
/// this reader refuses.
fn parsed_or_defer(raw: &[u8]) -> Result<LastLine, Stop> {
    match envelope_fields(raw) {
        Ok(fields) => Ok(fields),
        Err(Bad::Invalid) if !python_might_read(raw) => Ok(None),
        Err(_) => Err(Stop::Defer),
    }
}

/// Whether Python's `json.loads(raw)` might read a dict where this reader
/// refuses one: the value ends with `}` (and held `NaN`, a lone surrogate's
/// UTF-8, a float too big for a double, deeper nesting than ours…), or the
/// bytes start as `json.loads` takes for UTF-16, UTF-32 or a BOM.
fn python_might_read(raw: &[u8]) -> bool {
    let trimmed = raw
        .iter()
        .rposition(|&b| !is_blank_byte(b))
        .and_then(|i| raw.get(..=i))
        .unwrap_or(&[]);
    trimmed.last() == Some(&b'}')
        || raw.iter().take(4).any(|&b| b == 0)
        || matches!(raw.first(), Some(0xEF | 0xFE | 0xFF))
}

/// The `ts` and `type` of a line that ends `"ts":"…","type":"…","v":N}`, the
/// end of every line this library writes (the canonical key order puts them
/// last), read without parsing the line; None for any other ending.
fn canonical_end(raw: &[u8]) -> Result<Option<Fields>, Stop> {
    let mut end = raw.len();
    // `[ \t\r]*` after the brace.
    while end > 0 && matches!(raw.get(end - 1), Some(b' ' | b'\t' | b'\r')) {
        end -= 1;
    }
    let Some(rest) = raw.get(..end).and_then(|r| r.strip_suffix(b"}")) else {
        return Ok(None);
    };
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Ok(None);
    }
    let Some(rest) = rest
        .get(..rest.len() - digits)
        .and_then(|r| r.strip_suffix(br#"","v":"#))
    else {
        return Ok(None);
    };
    let Some((rest, type_)) = quoted_tail(rest) else {
        return Ok(None);
    };
    let Some(rest) = rest.strip_suffix(br#"","type":"#) else {
        return Ok(None);
    };
    let Some((rest, ts)) = quoted_tail(rest) else {
        return Ok(None);
    };
    if !rest.ends_with(br#""ts":"#) {
        return Ok(None);
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| Stop::Defer)
    };
    Ok(Some(Fields {
        ts: Some(text(ts)?),
        type_: Some(text(type_)?),
    }))
}

/// Splits `bytes` before its trailing run of bytes that are neither `"` nor
/// `\`: (what comes before, the run); None when a `\` ends the run.
fn quoted_tail(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = bytes
        .iter()
        .rposition(|&b| b == b'"' || b == b'\\')
        .map_or(0, |i| i + 1);
    if at > 0 && bytes.get(at - 1) == Some(&b'\\') {
        return None;
    }
    Some((bytes.get(..at)?, bytes.get(at..)?))
}

/// A string value as an owned `String`, `None` for any other value (skipped);
/// a lone surrogate defers.
fn string_or_none(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<String>, Bad> {
    if r.peek()? == Kind::String {
        match r.string(scratch)? {
            JStr::Text(s) => Ok(Some(s.to_owned())),
            JStr::Wtf8(_) => Err(Bad::Defer),
        }
    } else {
        r.skip_value()?;
        Ok(None)
    }
}

/// Whether the next value is the string `want` (any other value is skipped).
fn string_is(r: &mut Reader<'_>, scratch: &mut Vec<u8>, want: &str) -> Result<bool, Bad> {
    if r.peek()? == Kind::String {
        Ok(matches!(r.string(scratch)?, JStr::Text(s) if s == want))
    } else {
        r.skip_value()?;
        Ok(false)
    }
}

/// The `ts` and `type` of a line that is a JSON object; None when it is
/// another JSON value.
fn envelope_fields(raw: &[u8]) -> Result<LastLine, Bad> {
    let mut r = Reader::from_bytes(raw)?;
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        r.finish()?;
        return Ok(None);
    }
    let mut fields = Fields {
        ts: None,
        type_: None,
    };
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"ts" => fields.ts = string_or_none(&mut r, &mut value_scratch)?,
            b"type" => fields.type_ = string_or_none(&mut r, &mut value_scratch)?,
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    Ok(Some(fields))
}

/// What a row takes from the session-meta line.
struct Meta {
    ts: Option<String>,
    agent: Option<String>,
    model: Option<String>,
}

/// The first line as a version 1 session-meta (with an `id`); anything else
/// is for the reference reader.
fn session_meta(raw: &[u8]) -> Result<Meta, Bad> {
    let mut r = Reader::from_bytes(raw)?;
    let mut meta = Meta {
        ts: None,
        agent: None,
        model: None,
    };
    let (mut is_meta, mut has_id, mut v1) = (false, false, false);
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"id" => {
                has_id = true;
                r.skip_value()?;
            }
            b"type" => {
                is_meta =
                    string_or_none(&mut r, &mut value_scratch)?.as_deref() == Some("session-meta")
            }
            b"ts" => meta.ts = string_or_none(&mut r, &mut value_scratch)?,
            b"v" => {
                // Only the int 1 here: whatever else it is (1.0 and true equal
                // 1 in Python), the reference decides.
                v1 = if r.peek()? == Kind::Number {
                    r.checked_number()? == Number::Int("1")
                } else {
                    r.skip_value()?;
                    false
                };
            }
            b"payload" => {
                meta.agent = None;
                meta.model = None;
                if r.peek()? == Kind::Object {
                    r.begin_object()?;
                    let mut inner = Vec::new();
                    while let Some(k) = r.next_key(&mut inner)? {
                        match k.as_bytes() {
                            b"agent" => meta.agent = string_or_none(&mut r, &mut value_scratch)?,
                            b"model" => meta.model = string_or_none(&mut r, &mut value_scratch)?,
                            _ => r.skip_value()?,
                        }
                    }
                } else {
                    r.skip_value()?;
                }
            }
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    if is_meta && has_id && v1 {
        Ok(meta)
    } else {
        Err(Bad::Defer)
    }
}

/// The first user message's text among the whole lines of `head` after the
/// first line (which ends at `first_end`), clipped; None when none is whole
/// there. Only the lines that hold `"user"` are parsed.
fn find_title(head: &[u8], first_end: usize) -> Result<Option<String>, Stop> {
    static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(br#""user""#));
    let mut at = first_end + 1;
    loop {
        let Some(hit) = head
            .get(at..)
            .and_then(|rest| finder.find(rest))
            .map(|i| at + i)
        else {
            return Ok(None);
        };
        let before = head.get(..hit).unwrap_or(&[]);
        let start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        let Some(end) = head
            .get(hit..)
            .and_then(|r| memchr::memchr(b'\n', r))
            .map(|i| hit + i)
        else {
            return Ok(None); // the line goes on past the head: not whole here
        };
        at = end + 1;
        let line = head.get(start..end).unwrap_or(&[]);
        match user_text(line) {
            Ok(Some(text)) => return Ok(Some(clip(&text))),
            Ok(None) => {}
            Err(Bad::Invalid) if !python_might_read(line) => {}
            Err(_) => return Err(Stop::Defer),
        }
    }
}

/// A message's content as `content_text` in `agent_transcript.inspect` makes
/// it: a string as it is; a list's text parts joined with newlines, other
/// parts named `[type]`. What else it may be is for the reference reader.
enum Content {
    Missing,
    Text(String),
    Other,
}

fn content(r: &mut Reader<'_>) -> Result<Content, Bad> {
    let mut scratch = Vec::new();
    match r.peek()? {
        Kind::Null => {
            r.null()?;
            Ok(Content::Missing)
        }
        Kind::String => match r.string(&mut scratch)? {
            JStr::Text(s) => Ok(Content::Text(s.to_owned())),
            JStr::Wtf8(_) => Ok(Content::Other),
        },
        Kind::Array => {
            let mut pieces: Vec<String> = Vec::new();
            let mut plain = true;
            r.begin_array()?;
            while r.next_item()? {
                if r.peek()? != Kind::Object {
                    plain = false; // a part that is not an object is shown as JSON
                    r.skip_value()?;
                    continue;
                }
                let (mut kind, mut text) = (Some(None::<String>), None::<String>);
                r.begin_object()?;
                let mut key_scratch = Vec::new();
                while let Some(key) = r.next_key(&mut key_scratch)? {
                    match key.as_bytes() {
                        b"type" => {
                            kind = match r.peek()? {
                                Kind::Null => r.null().map(|()| Some(None))?,
                                Kind::String => match r.string(&mut scratch)? {
                                    JStr::Text(s) => Some(Some(s.to_owned())),
                                    JStr::Wtf8(_) => None,
                                },
                                _ => r.skip_value().map(|()| None)?,
                            }
                        }
                        b"text" => {
                            text = match r.peek()? {
                                Kind::String => match r.string(&mut scratch)? {
                                    JStr::Text(s) => Some(s.to_owned()),
                                    JStr::Wtf8(_) => {
                                        plain = false;
                                        None
                                    }
                                },
                                _ => r.skip_value().map(|()| None)?,
                            }
                        }
                        _ => r.skip_value()?,
                    }
                }
                match (kind, text) {
                    (Some(Some(k)), Some(t)) if k == "text" => pieces.push(t),
                    (Some(Some(k)), _) if !k.is_empty() => pieces.push(format!("[{k}]")),
                    (Some(_), _) => pieces.push("[part]".to_owned()),
                    (None, _) => plain = false, // a type that is neither a string nor null
                }
            }
            Ok(if plain {
                Content::Text(pieces.join("\n"))
            } else {
                Content::Other
            })
        }
        _ => {
            r.skip_value()?;
            Ok(Content::Other)
        }
    }
}

/// The content text of a line that is a user message, None for any other line.
fn user_text(line: &[u8]) -> Result<Option<String>, Bad> {
    let mut r = Reader::from_bytes(line)?;
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        r.finish()?;
        return Ok(None);
    }
    let mut is_message = false;
    let mut user: Option<Content> = None; // the payload's content when its role is user
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"type" => is_message = string_is(&mut r, &mut value_scratch, "message")?,
            b"payload" => {
                user = None;
                if r.peek()? == Kind::Object {
                    let (mut role_user, mut body) = (false, Content::Missing);
                    r.begin_object()?;
                    let mut inner = Vec::new();
                    while let Some(k) = r.next_key(&mut inner)? {
                        match k.as_bytes() {
                            b"role" => role_user = string_is(&mut r, &mut value_scratch, "user")?,
                            b"content" => body = content(&mut r)?,
                            _ => r.skip_value()?,
                        }
                    }
                    if role_user {
                        user = Some(body);
                    }
                } else {
                    r.skip_value()?;
                }
            }
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    match (is_message, user) {
        (true, Some(Content::Text(t))) => Ok(Some(t)),
        (true, Some(Content::Other)) => Err(Bad::Defer),
        _ => Ok(None),
    }
}

/// Python's `str.isspace()`, which `str.split()` splits on.
fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\x1c'..='\x1f'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `" ".join(text.split())`, clipped to [`TITLE_CHARS`] characters, the last
/// one `…` when it was longer.
pub fn clip(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * TITLE_CHARS + 4));
    let mut n = 0usize;
    let mut gap = false; // a space is owed before the next character
    for c in text.chars() {
        if is_python_space(c) {
            gap = n > 0;
            continue;
        }
        if gap {
            out.push(' ');
            n += 1;
            gap = false;
        }
        if n > TITLE_CHARS {
            break;
        }
        out.push(c);
        n += 1;
        if n > TITLE_CHARS {
            break;
        }
    }
    if n <= TITLE_CHARS {
        return out;
    }
    let mut clipped: String = out.chars().take(TITLE_CHARS - 1).collect();
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "2026-08-09T13:10:08.542283Z";

    fn line(id: &str, kind: &str, payload: &str, ts: &str) -> String {
        format!(r#"{{"id":"{id}","payload":{payload},"ts":"{ts}","type":"{kind}","v":1}}"#)
    }

    fn meta() -> String {
        line(
            "m",
            "session-meta",
            r#"{"agent":"coder","model":"m-1"}"#,
            TS,
        )
    }

    fn transcript(n: usize) -> String {
        let mut out = format!(
            "{}\n{}\n{}\n",
            meta(),
            line(
                "s",
                "message",
                r#"{"content":"be brief","role":"system"}"#,
                TS
            ),
            line(
                "u",
                "message",
                r#"{"content":"fix  the\nbug","role":"user"}"#,
                TS
            )
        );
        for i in 0..n {
            out.push_str(&line(
                &format!("a{i}"),
                "message",
                r#"{"content":"x","role":"assistant"}"#,
                &format!("2026-08-10T00:00:{:02}.000000Z", i % 60),
            ));
            out.push('\n');
        }
        out
    }

    fn ends(bytes: &[u8]) -> Result<Ends, Stop> {
        read_ends(bytes, bytes.len() as u64)
    }

    fn answer(bytes: &[u8]) -> Ends {
        match ends(bytes) {
            Ok(e) => e,
            Err(e) => panic!("no answer: {e:?}"),
        }
    }

    fn deferred(bytes: &[u8]) -> bool {
        matches!(ends(bytes), Err(Stop::Defer))
    }

    #[test]
    fn a_clean_transcript() {
        let e = answer(transcript(3).as_bytes());
        assert_eq!(e.status, Status::Clean);
        assert_eq!(e.title.as_deref(), Some("fix the bug"));
        assert_eq!(
            (e.agent.as_deref(), e.model.as_deref()),
            (Some("coder"), Some("m-1"))
        );
        assert_eq!(e.started.as_deref(), Some(TS));
        assert_eq!(
            e.last_activity.as_deref(),
            Some("2026-08-10T00:00:02.000000Z")
        );
        assert_eq!(e.last_type.as_deref(), Some("message"));
    }

    #[test]
    fn a_torn_tail_and_two_damaged_lines() {
        let torn = transcript(3) + r#"{"id":"cut"#;
        let e = answer(torn.as_bytes());
        assert_eq!(e.status, Status::TornTail);
        assert_eq!(
            e.last_activity.as_deref(),
            Some("2026-08-10T00:00:02.000000Z")
        );
        for end in [" {", "\r{", "\t{\"id", " garbage", "garbage"] {
            let damaged = transcript(3) + end;
            assert_eq!(
                answer(damaged.as_bytes()).status,
                Status::DamagedEnd,
                "{end:?}"
            );
        }
        let corrupt = transcript(3) + "garbage\n{more garbage";
        let e = answer(corrupt.as_bytes());
        assert_eq!((e.status, e.last_type), (Status::Corrupt, None));
        // Only the session-meta before a torn line: the meta is the last whole one.
        let e = answer(format!("{}\n{{\"id\":", meta()).as_bytes());
        assert_eq!(
            (e.status, e.last_type.as_deref()),
            (Status::TornTail, Some("session-meta"))
        );
    }

    #[test]
    fn a_last_line_torn_inside_a_utf8_character() {
        let whole = transcript(2)
            + &line("z", "message", r#"{"content":"héllo €","role":"user"}"#, TS)
            + "\n";
        let bytes = whole.as_bytes();
        let euro = whole.rfind('€').unwrap_or(0);
        for cut in euro + 1..euro + 3 {
            let e = answer(&bytes[..cut]);
            assert_eq!(e.status, Status::TornTail, "cut at {cut}");
            assert_eq!(
                e.last_activity.as_deref(),
                Some("2026-08-10T00:00:01.000000Z")
            );
        }
    }

    #[test]
    fn no_newline_at_all() {
        let e = answer(meta().as_bytes());
        assert_eq!(
            (e.status, e.last_type.as_deref(), e.title),
            (Status::Clean, Some("session-meta"), None)
        );
        // A first line without its newline that is longer than the first read.
        let big = line(
            "m",
            "session-meta",
            &format!(r#"{{"agent":"{}"}}"#, "a".repeat(20_000)),
            TS,
        );
        let e = answer(big.as_bytes());
        assert_eq!(e.agent.map(|a| a.len()), Some(20_000));
        // The last line without its newline is whole.
        let t = transcript(1);
        let e = answer(t.trim_end().as_bytes());
        assert_eq!(
            (e.status, e.last_type.as_deref()),
            (Status::Clean, Some("message"))
        );
    }

    #[test]
    fn a_first_line_longer_than_the_head() {
        let payload = format!(r#"{{"agent":"a","notes":"{}"}}"#, "n".repeat(HEAD + 10));
        let long = format!(
            "{}\n{}\n",
            line("m", "session-meta", &payload, TS),
            line(
                "u",
                "message",
                r#"{"content":"the task","role":"user"}"#,
                TS
            )
        );
        let e = answer(long.as_bytes());
        assert_eq!(
            (e.agent.as_deref(), e.title.as_deref()),
            (Some("a"), Some("the task"))
        );
        let payload = format!(r#"{{"notes":"{}"}}"#, "n".repeat(HEAD_MAX));
        assert!(deferred(
            format!("{}\n", line("m", "session-meta", &payload, TS)).as_bytes()
        ));
    }

    #[test]
    fn the_title_after_a_long_first_message() {
        let t = format!(
            "{}\n{}\n{}\n",
            meta(),
            line(
                "s",
                "message",
                &format!(
                    r#"{{"content":"{}","role":"system"}}"#,
                    "s".repeat(3 * HEAD_FIRST)
                ),
                TS
            ),
            line(
                "u",
                "message",
                r#"{"content":[{"type":"text","text":"look"},{"type":"image"},{}],"role":"user"}"#,
                TS
            )
        );
        assert_eq!(
            answer(t.as_bytes()).title.as_deref(),
            Some("look [image] [part]")
        );
        // A user message cut by the end of the head is not whole there: no title.
        let t = format!(
            "{}\n{}\n{}\n",
            meta(),
            line(
                "s",
                "message",
                &format!(
                    r#"{{"content":"{}","role":"system"}}"#,
                    "s".repeat(HEAD - 300)
                ),
                TS
            ),
            line(
                "u",
                "message",
                &format!(r#"{{"role":"user","content":"{}"}}"#, "u".repeat(1000)),
                TS
            )
        );
        assert_eq!(answer(t.as_bytes()).title, None);
    }

    #[test]
    fn a_file_shorter_than_its_stat_said() {
        let t = transcript(300);
        let bytes = t.as_bytes();
        assert!(matches!(
            read_ends(bytes, bytes.len() as u64 + 10_000),
            Err(Stop::Changed)
        ));
        // Cut to nothing: nothing to read, for the reference reader.
        assert!(matches!(
            read_ends(&bytes[..0], bytes.len() as u64),
            Err(Stop::Defer)
        ));
        // Grown since: what was there at the stat's size is read.
        let grown =
            t.clone() + &line("late", "tool-settled", "{}", "2026-12-01T00:00:00.000000Z") + "\n";
        let e = match read_ends(grown.as_bytes(), bytes.len() as u64) {
            Ok(e) => e,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(e.last_type.as_deref(), Some("message"));
    }

    #[test]
    fn crlf_lines() {
        let t = transcript(2).replace('\n', "\r\n");
        let e = answer(t.as_bytes());
        assert_eq!(e.status, Status::Clean);
        assert_eq!(e.title.as_deref(), Some("fix the bug"));
        assert_eq!(
            e.last_activity.as_deref(),
            Some("2026-08-10T00:00:01.000000Z")
        );
        let e = answer((t + "\r\n \r\n\t").as_bytes());
        assert_eq!(
            (e.status, e.last_type.as_deref()),
            (Status::Clean, Some("message"))
        );
    }

    #[test]
    fn a_long_last_line() {
        let big = line(
            "c",
            "message",
            &format!(r#"{{"content":"{}","role":"tool"}}"#, "z".repeat(200_000)),
            "2026-09-01T00:00:00.000000Z",
        );
        let t = transcript(0) + &big + "\n";
        let e = answer(t.as_bytes());
        assert_eq!(
            (e.status, e.last_activity.as_deref()),
            (Status::Clean, Some("2026-09-01T00:00:00.000000Z"))
        );
        let torn = t.clone() + &big[..1000];
        let e = answer(torn.as_bytes());
        assert_eq!(
            (e.status, e.last_activity.as_deref()),
            (Status::TornTail, Some("2026-09-01T00:00:00.000000Z"))
        );
        // Not canonical, and long: parsed whole.
        let odd = format!(
            r#"{{"v":1,"type":"grants","ts":"t","id":"g","payload":"{}"}}"#,
            "p".repeat(50_000)
        );
        let e = answer((transcript(0) + &odd + "\n\n").as_bytes());
        assert_eq!(
            (e.status, e.last_type.as_deref()),
            (Status::Clean, Some("grants"))
        );
    }

    #[test]
    fn what_python_might_read_is_deferred() {
        for last in [
            r#"{"type":"x","n":NaN}"#,
            "\u{feff}{\"type\":\"x\"}",
            r#"{"type":"x","n":1e400}"#,
        ] {
            assert!(deferred((transcript(1) + last + "\n").as_bytes()), "{last}");
        }
        // A lone surrogate in a field the row shows.
        assert!(deferred(
            (transcript(1) + r#"{"type":"\ud800"}"#).as_bytes()
        ));
        // Not a version 1 session-meta, empty, blank.
        for first in [
            line("m", "session-meta", "{}", TS).replace("\"v\":1", "\"v\":2"),
            line("m", "message", "{}", TS),
            r#"{"type":"session-meta","v":1}"#.to_owned(),
            "hello".to_owned(),
            String::new(),
            "  \n\n".to_owned(),
        ] {
            assert!(
                deferred(format!("{first}\n").as_bytes()) || first.is_empty(),
                "{first}"
            );
        }
        assert!(deferred(b""));
    }

    #[test]
    fn clip_is_pythons_split_and_join() {
        assert_eq!(clip("  a\u{2003}b\x1c\tc \u{3000}"), "a b c");
        assert_eq!(clip(""), "");
        let eighty = "é".repeat(80);
        assert_eq!(clip(&eighty), eighty);
        let clipped = clip(&"word ".repeat(40));
        assert_eq!(clipped.chars().count(), 80);
        assert!(clipped.ends_with('…'));
        assert_eq!(clip(&format!("{} b", "a".repeat(79))).chars().count(), 80);
        assert_eq!(
            clip(&format!("{} bc", "a".repeat(79))),
            format!("{}…", "a".repeat(79))
        );
    }

    #[test]
    fn every_python_space() {
        // str.isspace() over every code point (CPython 3.10-3.13, Unicode 13-15).
        let python: Vec<u32> = vec![
            0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000,
            0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028,
            0x2029, 0x202f, 0x205f, 0x3000,
        ];
        let ours: Vec<u32> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_space(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, python);
    }

    #[test]
    fn rows_of_a_batch_in_order() {
        rows_in_order("threads");
    }

    #[test]
    fn rows_of_a_batch_when_no_thread_can_start() {
        transcript_core::threads::fail_spawns(true);
        rows_in_order("no-threads");
        transcript_core::threads::fail_spawns(false);
    }

    fn rows_in_order(name: &str) {
        let dir = std::env::temp_dir().join(format!("listing-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut paths = Vec::new();
        for i in 0..40 {
            let p = dir.join(format!("r{i}.jsonl"));
            std::fs::write(&p, transcript(i)).unwrap();
            paths.push(p);
        }
        paths.push(dir.join("missing.jsonl"));
        paths.push(dir.clone());
        paths.push(dir.join("r1.jsonl.zst"));
        let rows = read_rows(&paths, 2);
        assert_eq!(rows.len(), 43);
        for (i, row) in rows.iter().take(40).enumerate() {
            let row = row.as_ref().unwrap();
            assert_eq!(row.size, transcript(i).len() as u64);
            assert_eq!(row.ends.last_type.as_deref(), Some("message"));
        }
        assert!(rows.iter().skip(40).all(Option::is_none));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
