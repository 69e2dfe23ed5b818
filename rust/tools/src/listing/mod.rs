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
//!
//! The parts: `blocks` reads the blocks at the file's start and end (the end
//! grown backwards to its last lines); `lines` reads what a first or last line
//! says (the session-meta, an envelope's `ts` and `type`, a canonical line's
//! end read without parsing); `title` finds the first user message and makes
//! its text a title ([`clip`]).

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use transcript_core::json::JsonError;
use transcript_core::scan::ReadAt;

mod blocks;
mod lines;
#[cfg(test)]
mod tests;
mod title;

use blocks::{Back, Head};
use lines::session_meta;
pub use title::clip;
use title::find_title;

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

/// An envelope's `ts` and `type`, each when a string.
#[derive(Debug, Clone)]
struct Fields {
    ts: Option<String>,
    type_: Option<String>,
}

/// A last line: its fields, or None when it is damaged.
type LastLine = Option<Fields>;

/// What a row takes from the session-meta line.
struct Meta {
    ts: Option<String>,
    agent: Option<String>,
    model: Option<String>,
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
