//! A listing's row of a transcript, from its first and last lines only.
//!
//! `agent-transcript ls` shows, for each file of a folder, what its first lines
//! say (the session-meta, the first user message) and what its last line says
//! (the last envelope's type and time, whether it is cut short). This reads
//! exactly that: a block at the file's start and a block at its end, grown only
//! as far as a long line needs, with [`transcript_core::json::Reader`] for the few lines
//! that are parsed. [`read_rows`] does a batch of files on a few threads.
//!
//! Every path gets a row: one that cannot be read says why (its errno, a
//! dangling link, not a regular file), one that is not a transcript says why,
//! and an archive (`.zst`) is read as the transcript it holds (`archive`).
//! Lines are read by the strict reader load uses, so a line load refuses is
//! damaged here too; only a canonical end (`lines`) is trusted unparsed. A
//! file that shrinks while it is read is read again from a fresh `fstat`.
//!
//! The parts: `blocks` reads the blocks at the file's start and end (the end
//! grown backwards to its last lines); `lines` reads what a first or last line
//! says (the session-meta, an envelope's `ts` and `type`, a canonical line's
//! end read without parsing, whether it makes a tool call); `title` finds the
//! first user message and makes its text a title (`title::clip`).

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use transcript_core::scan::ReadAt;

mod archive;
mod blocks;
mod lines;
#[cfg(test)]
mod tests;
mod title;

use blocks::{is_blank_byte, Back, Head};
use lines::session_meta;
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

/// What a row says of a file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Status {
    /// A session-meta first, the last line a whole envelope.
    #[default]
    Clean,
    /// Clean, but the last line is a tool call nothing can answer yet: a
    /// dispatch never settled (`dispatched`), or an assistant message's
    /// `tool_calls` no tool message answers. The run stopped mid-call, or a
    /// tool is running now.
    Pending {
        /// The last line is a `tool-dispatched`.
        dispatched: bool,
    },
    /// The last line is cut short (a crash mid-write); the one before is whole.
    TornTail,
    /// The last two lines are both damaged.
    Corrupt,
    /// The last line is damaged and does not begin with `{`: no write of this
    /// library leaves that (it never writes a leading blank), so load refuses
    /// it as damage rather than removing it as a torn tail.
    DamagedEnd,
    /// The session-meta's `v` is an int other than 1, as written.
    UnsupportedVersion(String),
    /// Not a transcript of this library's, and why (another tool's file, maybe).
    NotATranscript(&'static str),
    /// The file cannot be read.
    Unreadable(Unreadable),
}

impl Status {
    /// The status as a listing names it.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Pending { .. } => "pending",
            Status::TornTail => "torn tail",
            Status::Corrupt | Status::DamagedEnd => "corrupt",
            Status::UnsupportedVersion(_) => "unsupported version",
            Status::NotATranscript(_) => "not a transcript",
            Status::Unreadable(_) => "unreadable",
        }
    }

    /// Why the status is not clean, for a person (None for clean, and for an
    /// errno, which the caller words as it words every `OSError`).
    pub fn reason(&self) -> Option<&str> {
        Some(match self {
            Status::Clean | Status::Unreadable(Unreadable::Errno(_)) => return None,
            Status::Pending { dispatched: true } => {
                "the last line is a tool call dispatched and never settled"
            }
            Status::Pending { dispatched: false } => {
                "the last line is a tool call no tool message answers"
            }
            Status::TornTail => "the last line is cut short",
            Status::Corrupt => "the last two lines are both damaged",
            Status::DamagedEnd => "the last line is damaged and does not begin with '{'",
            Status::UnsupportedVersion(v) => v,
            Status::NotATranscript(why) => why,
            Status::Unreadable(Unreadable::Dangling) => "a dangling symlink",
            Status::Unreadable(Unreadable::NotRegular) => "not a regular file",
            Status::Unreadable(Unreadable::Changing) => "it changed size each time it was read",
            Status::Unreadable(Unreadable::Archive) => "not a whole zstd archive",
        })
    }
}

/// Why a file cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// `stat`, `open` or a read failed with this errno.
    Errno(i32),
    /// A symlink to nothing.
    Dangling,
    /// A folder, a FIFO, a device…: nothing a listing opens.
    NotRegular,
    /// It kept changing size while it was read.
    Changing,
    /// An archive that is not one whole zstd stream.
    Archive,
}

/// Text as the file has it: WTF-8, a lone surrogate kept as its three bytes
/// (the binding makes it a Python `str` with the surrogate).
pub type Text = Vec<u8>;

/// What a row shows from a transcript's first and last lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ends {
    /// What the file is.
    pub status: Status,
    /// The first user message's text, whitespace runs made one space, clipped
    /// to [`TITLE_CHARS`] characters (the last one `…`).
    pub title: Option<Text>,
    /// The session-meta payload's `agent`, when a string.
    pub agent: Option<Text>,
    /// The session-meta payload's `model`, when a string.
    pub model: Option<Text>,
    /// The session-meta's `ts`, when a string.
    pub started: Option<Text>,
    /// The last whole envelope's `ts`.
    pub last_activity: Option<Text>,
    /// The last whole envelope's `type`.
    pub last_type: Option<Text>,
}

impl Ends {
    fn only(status: Status) -> Self {
        Ends { status, ..Ends::default() }
    }
}

/// One file's row: its `stat` and what its ends say.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Bytes, from `stat` (0 when it failed).
    pub size: u64,
    /// The last modification in seconds since the epoch, computed as Python's
    /// `os.stat_result.st_mtime` is (0 when `stat` failed).
    pub mtime: f64,
    /// The device and inode, for the writer-lock table (None when `stat` failed).
    pub file_id: Option<(u64, u64)>,
    /// What the first and last lines say.
    pub ends: Ends,
}

/// Why a read stopped before a transcript's ends.
#[derive(Debug)]
enum Stop {
    /// The file is not a transcript this library reads: its status.
    Not(Status),
    /// The file is shorter than its `stat` said: read it again.
    Changed,
    /// A read failed.
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// Why a file whose first line is no session-meta is not a transcript.
const NOT_META: &str = "the first line is not a session-meta";

fn not_a_transcript<T>(why: &'static str) -> Result<T, Stop> {
    Err(Stop::Not(Status::NotATranscript(why)))
}

/// An envelope's `ts` and `type`, each when a string.
#[derive(Debug, Clone)]
struct Fields {
    ts: Option<Text>,
    type_: Option<Text>,
}

/// A last line: its fields, or None when it is damaged.
type LastLine = Option<Fields>;

/// What a row takes from the session-meta line.
struct Meta {
    /// `Err` with the int it is when `v` is not 1.
    version: Result<(), String>,
    ts: Option<Text>,
    agent: Option<Text>,
    model: Option<Text>,
}

/// The rows of `paths`, in order, on up to `threads` threads.
pub fn read_rows(paths: &[PathBuf], threads: usize) -> Vec<Row> {
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
    let mut place = |done: Vec<(usize, Row)>| {
        for (i, row) in done {
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(row);
            }
        }
    };
    std::thread::scope(|s| {
        // A helper that cannot start has already done its share here.
        let helpers: Vec<_> =
            (1..threads).map(|_| transcript_core::threads::spawn_or_run(s, work)).collect();
        place(work());
        for h in helpers {
            // A helper that failed to finish leaves its rows to be read here.
            if let Ok(done) = h.join() {
                place(done);
            }
        }
    });
    out.into_iter().zip(paths).map(|(row, path)| row.unwrap_or_else(|| read_row(path))).collect()
}

fn errno(e: &io::Error) -> Status {
    Status::Unreadable(Unreadable::Errno(e.raw_os_error().unwrap_or(libc::EIO)))
}

/// The row of one file; never fails: a file that cannot be read says why.
pub fn read_row(path: &Path) -> Row {
    let unreadable = |status| Row { size: 0, mtime: 0.0, file_id: None, ends: Ends::only(status) };
    let mut meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) => {
            return unreadable(Status::Unreadable(Unreadable::Dangling))
        }
        Err(e) => return unreadable(errno(&e)),
    };
    let row = |meta: &std::fs::Metadata, ends| Row {
        size: meta.len(),
        mtime: meta.mtime() as f64 + meta.mtime_nsec() as f64 * 1e-9,
        file_id: Some((meta.dev(), meta.ino())),
        ends,
    };
    if !meta.file_type().is_file() {
        return row(&meta, Ends::only(Status::Unreadable(Unreadable::NotRegular)));
    }
    // Non-blocking: a FIFO swapped in after the stat must not hang the listing.
    let file = match OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) {
        Ok(file) => file,
        Err(e) => return row(&meta, Ends::only(errno(&e))),
    };
    let archive = path.as_os_str().as_encoded_bytes().ends_with(b".zst");
    for _ in 0..3 {
        let read =
            if archive { archive::archive_ends(&file) } else { read_ends(&file, meta.len()) };
        let ends = match read {
            Ok(ends) => ends,
            Err(Stop::Not(status)) => Ends::only(status),
            Err(Stop::Io(e)) => Ends::only(errno(&e)),
            Err(Stop::Changed) => match file.metadata() {
                Ok(m) => {
                    meta = m;
                    continue;
                }
                Err(e) => Ends::only(errno(&e)),
            },
        };
        return row(&meta, ends);
    }
    row(&meta, Ends::only(Status::Unreadable(Unreadable::Changing)))
}

/// What the first and last lines of `file`, `size` bytes long by its `stat`,
/// say. Errors: `Not` for a file that is not a transcript, `Changed` when the
/// file is shorter than `size`, `Io` when a read fails.
fn read_ends<R: ReadAt + ?Sized>(file: &R, size: u64) -> Result<Ends, Stop> {
    let mut head = Head { file, data: Vec::new(), eof: false };
    head.want(HEAD_FIRST)?;
    let not_blank = |data: &[u8]| data.iter().position(|&b| !is_blank_byte(b));
    let mut start = not_blank(&head.data);
    if start.is_none() && !head.eof {
        head.want(HEAD)?; // blanks beyond a head block are not read
        start = not_blank(&head.data);
    }
    let Some(start) = start else {
        return not_a_transcript(if head.data.is_empty() {
            "the file is empty"
        } else {
            "the first line is blank as far as it was read"
        });
    };
    let mut first_end = head.newline_from(start);
    let mut title_limit = HEAD;
    if first_end.is_none() && !head.eof {
        head.want(HEAD)?;
        first_end = head.newline_from(start);
        if first_end.is_none() && head.data.len() == HEAD {
            head.want(HEAD_MAX)?;
            first_end = head.newline_from(start);
            if first_end.is_none() && head.data.len() == HEAD_MAX {
                return not_a_transcript("the first line is longer than 1 MiB");
            }
            title_limit = HEAD_MAX;
        }
    }
    let first_raw = head.data.get(start..first_end.unwrap_or(head.data.len())).unwrap_or(&[]);
    let meta = session_meta(first_raw).ok_or(Stop::Not(Status::NotATranscript(NOT_META)))?;
    let title = match first_end {
        None => None,
        Some(end) => loop {
            let found = find_title(&head.data, end);
            if found.is_some() || head.eof || head.data.len() >= title_limit {
                break found;
            }
            head.want(title_limit)?;
        },
    };
    if let Err(v) = meta.version {
        return Ok(Ends {
            title,
            agent: meta.agent,
            model: meta.model,
            started: meta.ts,
            ..Ends::only(Status::UnsupportedVersion(format!("version {v}")))
        });
    }
    let floor = first_end.map_or(size, |e| e as u64 + 1);
    let mut back = Back::new(file, floor, size, &head.data)?;
    let first_fields = Fields { ts: meta.ts.clone(), type_: Some(b"session-meta".to_vec()) };
    let (last, before, brace, span) = back.last_lines()?;
    let (mut status, env) = match (last, before, brace) {
        (None, _, _) => (Status::Clean, Some(first_fields)),
        (Some(Some(env)), _, _) => (Status::Clean, Some(env)),
        (Some(None), _, false) => (Status::DamagedEnd, None),
        (Some(None), None, true) => (Status::TornTail, Some(first_fields)),
        (Some(None), Some(Some(env)), true) => (Status::TornTail, Some(env)),
        (Some(None), Some(None), true) => (Status::Corrupt, None),
    };
    let (last_activity, last_type) = env.map_or((None, None), |f| (f.ts, f.type_));
    if status == Status::Clean {
        match (last_type.as_deref(), span) {
            (Some(b"tool-dispatched"), _) => status = Status::Pending { dispatched: true },
            (Some(b"message"), Some((lo, hi))) if back.makes_calls(lo, hi)? => {
                status = Status::Pending { dispatched: false }
            }
            _ => {}
        }
    }
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
