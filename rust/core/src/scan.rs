//! Blank lines, positional reads, and the tail check that load runs before anything else.
//!
//! A line ends at `\n`. A blank line holds only spaces, tabs and `\r`, and is
//! ignored everywhere. The tail check reads the file backwards from its end, so
//! its cost depends on the last two lines, never on the file's size.

use std::borrow::Cow;
use std::io;

use crate::json::is_one_value;

/// The longest line a transcript may have, 4 GiB - 1 bytes: the index keeps a
/// line's length in 32 bits. A longer line is damage (this library never
/// writes one): load refuses it, peek skips it, append refuses to write it,
/// and the tail check reads none into memory.
pub const MAX_LINE: u64 = u32::MAX as u64;

/// True when `line` holds only spaces, tabs and `\r` (or nothing).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r')
}

/// Positional reads, so the tail check can run on a file or, in tests, on
/// anything that counts what was read.
pub trait ReadAt {
    /// Reads into `buf` from `offset`; fewer bytes only at the end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(self.len());
        let n = buf.len().min(self.len() - start);
        buf[..n].copy_from_slice(&self[start..start + n]);
        Ok(n)
    }
}

/// What the tail check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// No non-blank line at all.
    Empty,
    /// The last non-blank line is one whole JSON value.
    Whole {
        /// True when the file's last byte is not `\n`: the next append writes one first.
        missing_newline: bool,
    },
    /// The last non-blank line is torn: keep the first `keep` bytes (up to and
    /// including the `\n` before the torn line), dropping line `line`.
    Torn {
        /// Length of the good prefix.
        keep: u64,
        /// 1-based number of the torn line.
        line: u64,
        /// Bytes that go.
        removed: u64,
    },
    /// The last two non-blank lines are both malformed: damage, not a crash.
    Corrupt {
        /// 1-based number of the earlier malformed line.
        line: u64,
    },
    /// The last non-blank line is malformed and does not begin with `{` at its
    /// first byte: no write of this library leaves that (it never writes a
    /// leading blank), so it is damage, not a crash.
    Damaged {
        /// 1-based number of that line.
        line: u64,
    },
}

// How much is read per step while walking backwards.
const STEP: usize = 64 * 1024;

/// Reads backwards from a file's end to find line boundaries. It keeps only the
/// last chunk it read: a line's start is found by walking back chunk by chunk,
/// and a line's bytes are read in one piece once both its ends are known, so a
/// long last line costs its own length in memory and is scanned in linear time.
struct Backwards<'r, R: ReadAt + ?Sized> {
    src: &'r R,
    // The last chunk read: the file's bytes from `chunk_at`.
    chunk: Vec<u8>,
    chunk_at: u64,
    bytes_read: u64,
}

impl<R: ReadAt + ?Sized> Backwards<'_, R> {
    fn read_exact(&mut self, buf: &mut [u8], at: u64) -> io::Result<()> {
        let mut filled = 0;
        while filled < buf.len() {
            let n = self.src.read_at(&mut buf[filled..], at + filled as u64)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was read",
                ));
            }
            filled += n;
        }
        self.bytes_read += buf.len() as u64;
        Ok(())
    }

    // Whether the last chunk read holds the bytes from `start` to `end`.
    fn cached(&self, start: u64, end: u64) -> bool {
        self.chunk_at <= start && end <= self.chunk_at + self.chunk.len() as u64
    }

    // The start (absolute offset) of the line that ends at `end` (the offset of
    // its `\n`, or the file's size), and whether that line is blank.
    // A line longer than MAX_LINE is not walked to its start: the answer is
    // then where the walk stopped, inside that line (no `\n` before it is
    // missed, so line numbers still count right), and not blank.
    fn line_start(&mut self, end: u64) -> io::Result<(u64, bool)> {
        let mut hi = end;
        let mut blank = true;
        while hi > 0 {
            if end - hi > MAX_LINE {
                return Ok((hi, false));
            }
            if !(self.chunk_at < hi && self.cached(hi, hi)) {
                let lo = hi.saturating_sub(STEP as u64);
                let mut chunk = std::mem::take(&mut self.chunk);
                chunk.resize(usize::try_from(hi - lo).unwrap_or(STEP), 0);
                self.read_exact(&mut chunk, lo)?;
                self.chunk = chunk;
                self.chunk_at = lo;
            }
            let rel = usize::try_from(hi - self.chunk_at).unwrap_or(0);
            let part = &self.chunk[..rel];
            if let Some(i) = memchr::memrchr(b'\n', part) {
                blank = blank && is_blank(&part[i + 1..]);
                return Ok((self.chunk_at + i as u64 + 1, blank));
            }
            blank = blank && is_blank(part);
            hi = self.chunk_at;
        }
        Ok((0, blank))
    }

    // The file's bytes from `start` to `end`.
    fn bytes(&mut self, start: u64, end: u64) -> io::Result<Cow<'_, [u8]>> {
        if self.cached(start, end) {
            let s = usize::try_from(start - self.chunk_at).unwrap_or(0);
            let e = usize::try_from(end - self.chunk_at).unwrap_or(0);
            return Ok(Cow::Borrowed(&self.chunk[s..e]));
        }
        let mut buf = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        self.read_exact(&mut buf, start)?;
        Ok(Cow::Owned(buf))
    }

    // The last non-blank line ending at or before `end`: (start, end), or None.
    fn last_nonblank(&mut self, mut end: u64) -> io::Result<Option<(u64, u64)>> {
        loop {
            let (start, blank) = self.line_start(end)?;
            if !blank {
                return Ok(Some((start, end)));
            }
            if start == 0 {
                return Ok(None);
            }
            end = start - 1;
        }
    }
}

/// The tail check of a file of `size` bytes, and how many bytes it read.
///
/// Line numbers in the answer need the count of lines before the tail; that is
/// the one thing that would mean reading the whole file, so it is computed only
/// for a torn or corrupt tail, which is when someone will want to read it.
pub fn tail_scan<R: ReadAt + ?Sized>(src: &R, size: u64) -> io::Result<(Tail, u64)> {
    let mut back = Backwards { src, chunk: Vec::new(), chunk_at: size, bytes_read: 0 };
    let Some((start, end)) = back.last_nonblank(size)? else {
        return Ok((Tail::Empty, back.bytes_read));
    };
    let last_byte_is_newline = if end == size {
        false
    } else {
        // The file goes on past the last non-blank line: only blank lines, so
        // what matters is whether its very last byte is a newline.
        *back.bytes(size - 1, size)? == *b"\n"
    };
    // A line too long for an envelope is not read: not a torn write (no
    // writer writes one), load refuses it as damage, leaving the file as it is.
    if end - start > MAX_LINE || is_one_value(&back.bytes(start, end)?) {
        let missing_newline = size > 0 && !last_byte_is_newline;
        return Ok((Tail::Whole { missing_newline }, back.bytes_read));
    }
    // A write this library started begins with `{`; anything else is damage.
    if *back.bytes(start, start + 1)? != *b"{" {
        let line = count_lines_before(src, start, &mut back.bytes_read)? + 1;
        return Ok((Tail::Damaged { line }, back.bytes_read));
    }
    // Torn. The non-blank line before it must be whole.
    let previous = if start == 0 { None } else { back.last_nonblank(start - 1)? };
    if let Some((p_start, p_end)) = previous {
        // A line too long for an envelope before a torn one: damage too.
        if p_end - p_start > MAX_LINE || !is_one_value(&back.bytes(p_start, p_end)?) {
            let line = count_lines_before(src, p_start, &mut back.bytes_read)? + 1;
            return Ok((Tail::Corrupt { line }, back.bytes_read));
        }
    }
    let line = count_lines_before(src, start, &mut back.bytes_read)? + 1;
    Ok((Tail::Torn { keep: start, line, removed: size - start }, back.bytes_read))
}

// The number of `\n` in the first `end` bytes.
fn count_lines_before<R: ReadAt + ?Sized>(
    src: &R,
    end: u64,
    bytes_read: &mut u64,
) -> io::Result<u64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0u64;
    let mut count = 0u64;
    while at < end {
        let want = buf.len().min(usize::try_from(end - at).unwrap_or(buf.len()));
        let n = src.read_at(&mut buf[..want], at)?;
        if n == 0 {
            break;
        }
        count += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        at += n as u64;
        *bytes_read += n as u64;
    }
    Ok(count)
}
