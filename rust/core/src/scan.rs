//! Splitting bytes into lines, and the tail check that load runs before anything else.
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

/// One line of a buffer: where it starts and ends (the `\n` excluded), and its
/// 1-based number counting every line, blank ones too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// Offset of its first byte.
    pub start: usize,
    /// Offset just past its last byte, before the `\n` if it has one.
    pub end: usize,
    /// 1-based line number.
    pub number: usize,
}

/// True when `line` holds only spaces, tabs and `\r` (or nothing).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r')
}

/// The non-blank lines of `buf`, in order; a last line without `\n` is included.
pub fn lines(buf: &[u8]) -> impl Iterator<Item = Line> + '_ {
    let mut start = 0;
    let mut number = 0;
    std::iter::from_fn(move || loop {
        if start >= buf.len() {
            return None;
        }
        number += 1;
        let end = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        let line = Line { start, end, number };
        start = end + 1;
        if !is_blank(&buf[line.start..line.end]) {
            return Some(line);
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn scan(bytes: &[u8]) -> Tail {
        match tail_scan(bytes, bytes.len() as u64) {
            Ok((tail, _)) => tail,
            Err(e) => Tail::Corrupt { line: e.raw_os_error().unwrap_or(0) as u64 + 1_000_000 },
        }
    }

    #[test]
    fn lines_skip_blank_ones_and_count_them() {
        let buf = b"a\n \t\r\n\nb\nc";
        let got: Vec<_> = lines(buf).map(|l| (&buf[l.start..l.end], l.number)).collect();
        assert_eq!(got, vec![(&b"a"[..], 1), (&b"b"[..], 4), (&b"c"[..], 5)]);
    }

    #[test]
    fn a_torn_first_line() {
        assert_eq!(scan(b"{\"a\""), Tail::Torn { keep: 0, line: 1, removed: 4 });
    }

    #[test]
    fn a_malformed_last_line_not_beginning_with_a_brace_is_damage() {
        // Found by the fuzzer: each was cut as if torn, leaving an empty file.
        assert_eq!(scan(b" {"), Tail::Damaged { line: 1 });
        assert_eq!(scan(b"\r{"), Tail::Damaged { line: 1 });
        assert_eq!(scan(b"\t{\"id"), Tail::Damaged { line: 1 });
        assert_eq!(scan(b"{}\n\n garbage\n"), Tail::Damaged { line: 3 });
        assert_eq!(scan(b"{}\n\"a"), Tail::Damaged { line: 2 });
        // Before a malformed line that is not a write of ours, the line is named.
        assert_eq!(scan(b"{\n x"), Tail::Damaged { line: 2 });
        // A blank line is not a line: the torn one after it still begins with `{`.
        assert_eq!(scan(b"{}\n \n{\"a"), Tail::Torn { keep: 5, line: 3, removed: 3 });
    }

    #[test]
    fn a_torn_last_line_many_steps_long_is_read_in_linear_time() {
        let mut file = b"{}\n".to_vec();
        file.extend_from_slice(&b" \n".repeat(STEP));
        let keep = file.len() as u64;
        let torn_len = 40 * STEP;
        file.extend_from_slice(b"{\"");
        file.extend_from_slice(&"\u{1F680}".repeat(torn_len / 4).as_bytes()[..torn_len - 3]);
        let (tail, read) = tail_scan(&file[..], file.len() as u64).unwrap_or((Tail::Empty, 0));
        assert_eq!(
            tail,
            Tail::Torn { keep, line: STEP as u64 + 2, removed: file.len() as u64 - keep }
        );
        // Walked back once, the line read once, the lines before it counted once.
        assert!(read <= 3 * file.len() as u64, "read {read} of {}", file.len());
    }

    struct Counting<'a> {
        bytes: &'a [u8],
        read: Cell<u64>,
        lowest: Cell<u64>,
    }

    impl ReadAt for Counting<'_> {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            self.lowest.set(self.lowest.get().min(offset));
            let n = self.bytes.read_at(buf, offset)?;
            self.read.set(self.read.get() + n as u64);
            Ok(n)
        }
    }

    #[test]
    fn a_big_clean_file_is_read_only_at_its_tail() {
        let line = b"{\"id\":\"x\",\"payload\":{},\"ts\":\"t\",\"type\":\"message\",\"v\":1}\n";
        let mut big = Vec::with_capacity(100 << 20);
        while big.len() < 100 << 20 {
            big.extend_from_slice(line);
        }
        let src = Counting { bytes: &big, read: Cell::new(0), lowest: Cell::new(u64::MAX) };
        let (tail, read) = tail_scan(&src, big.len() as u64).unwrap_or((Tail::Empty, 0));
        assert_eq!(tail, Tail::Whole { missing_newline: false });
        assert!(read <= STEP as u64, "read {read} bytes");
        assert_eq!(src.read.get(), read);
        assert!(src.lowest.get() >= big.len() as u64 - STEP as u64);
    }
}
