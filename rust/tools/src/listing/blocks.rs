//! The blocks read from a file: [`Head`], its first bytes, read on demand;
//! [`Back`], its last bytes, grown backwards to find its last lines.

use std::io;

use transcript_core::scan::ReadAt;

use super::lines::{canonical_end, last_line, makes_calls, parsed};
use super::{LastLine, Stop, TAIL, TAIL_FIRST, TAIL_MAX};

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
pub(super) struct Head<'f, R: ?Sized> {
    pub(super) file: &'f R,
    pub(super) data: Vec<u8>,
    // The end of the file has been reached: `data` is all of it.
    pub(super) eof: bool,
}

impl<R: ReadAt + ?Sized> Head<'_, R> {
    /// Makes `data` the first `n` bytes (all of them, if fewer).
    pub(super) fn want(&mut self, n: usize) -> Result<(), Stop> {
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

    pub(super) fn newline_from(&self, start: usize) -> Option<usize> {
        let rest = self.data.get(start..)?;
        memchr::memchr(b'\n', rest).map(|i| start + i)
    }
}

/// The bytes `[start, end)` of the file, grown backwards on demand, never
/// below `floor` (the end of the first line).
pub(super) struct Back<'f, R: ?Sized> {
    file: &'f R,
    floor: u64,
    end: u64,
    start: u64,
    data: Vec<u8>,
}

pub(super) fn is_blank_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'f, R: ReadAt + ?Sized> Back<'f, R> {
    /// The file's last bytes down to `floor`, the first ones read (or taken
    /// from `head`, the file's first bytes, when it holds them).
    pub(super) fn new(file: &'f R, floor: u64, size: u64, head: &[u8]) -> Result<Self, Stop> {
        let mut back = Back { file, floor, end: size, start: size, data: Vec::new() };
        if floor >= size {
            return Ok(back);
        }
        if head.len() as u64 >= size {
            let from = floor.max(size.saturating_sub(TAIL as u64));
            let lo = usize::try_from(from).map_err(|_| Stop::Changed)?;
            let hi = usize::try_from(size).map_err(|_| Stop::Changed)?;
            back.data = head.get(lo..hi).ok_or(Stop::Changed)?.to_vec();
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
        let n = usize::try_from(self.start - from).map_err(|_| Stop::Changed)?;
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
            return Err(Stop::Changed);
        }
        let a = usize::try_from(lo - base).map_err(|_| Stop::Changed)?;
        let b = usize::try_from(hi - base).map_err(|_| Stop::Changed)?;
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
            match self.slice(start, end)?.iter().rposition(|&b| !is_blank_byte(b)) {
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
    /// (each None when there is no such line after the first line), whether
    /// the last line begins with `{` (as a torn write of this library's does;
    /// true when its start was not found), and where the last line lies.
    #[allow(clippy::type_complexity)]
    pub(super) fn last_lines(
        &mut self,
    ) -> Result<(Option<LastLine>, Option<LastLine>, bool, Option<(u64, u64)>), Stop> {
        let mut end = self.end;
        let mut out: Vec<LastLine> = Vec::with_capacity(2);
        let mut brace = true;
        let mut span = None;
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
                    span = Some((start, end));
                }
                out.push(last_line(raw));
                end = start;
                continue;
            }
            // A line longer than TAIL: its end is enough for a canonical one.
            let least = self.floor.max(end.saturating_sub(TAIL_MAX as u64));
            let start = self.rfind_newline(least, end)?.map_or(least, |i| i + 1);
            let fields = match canonical_end(self.slice(block_lo, end)?) {
                Some(f) => Some(f),
                None if end - start <= TAIL_MAX as u64 => {
                    self.grow_toward(start)?;
                    parsed(self.slice(start, end)?)
                }
                None => None,
            };
            let first = out.is_empty();
            if first {
                span = Some((start, end));
            }
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
        Ok((it.next(), it.next(), brace, span))
    }

    /// Whether the line `[lo, hi)` (read whole when at most [`TAIL_MAX`]
    /// long) makes a tool call; parsed only when it names `tool_calls`.
    pub(super) fn makes_calls(&mut self, lo: u64, hi: u64) -> Result<bool, Stop> {
        if hi - lo > TAIL_MAX as u64 {
            return Ok(false);
        }
        self.grow_toward(lo)?;
        let raw = self.slice(lo, hi)?;
        Ok(memchr::memmem::find(raw, br#""tool_calls""#).is_some()
            && makes_calls(raw).unwrap_or(false))
    }
}
