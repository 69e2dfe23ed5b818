//! An archive's row: its ends are the ends of the transcript it holds, which
//! are not at the ends of the file on disk. The stream is decompressed once,
//! keeping its first [`HEAD_MAX`] bytes and a window at its end long enough
//! for the last two lines the row reads; the same reader then reads those.

use std::fs::File;
use std::io::{self, Write};

use transcript_core::archive::decompress;
use transcript_core::scan::ReadAt;
use transcript_core::stop::go_on;

use super::{read_ends, Ends, Status, Stop, Unreadable, HEAD_MAX, TAIL, TAIL_MAX};

// The end kept: a last line as long as the reader looks back for, and the
// one before it.
const KEEP: usize = 2 * (TAIL_MAX + TAIL);

/// The decompressed stream's first bytes and its last [`KEEP`] (or more).
#[derive(Default)]
struct Kept {
    head: Vec<u8>,
    tail: Vec<u8>,
    tail_at: u64,
    len: u64,
}

impl Write for Kept {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = HEAD_MAX.saturating_sub(self.head.len()).min(buf.len());
        self.head.extend_from_slice(buf.get(..room).unwrap_or(&[]));
        self.tail.extend_from_slice(buf);
        self.len += buf.len() as u64;
        if self.tail.len() > 2 * KEEP {
            let drop = self.tail.len() - KEEP;
            self.tail.drain(..drop);
            self.tail_at += drop as u64;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ReadAt for Kept {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let (part, from) = if offset >= self.tail_at {
            (&self.tail, offset - self.tail_at)
        } else if offset + buf.len() as u64 <= self.head.len() as u64 {
            (&self.head, offset)
        } else {
            // Between the two: a line longer than the reader ever reads.
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not kept"));
        };
        part.as_slice().read_at(buf, from)
    }
}

/// What the transcript in the archive `file` says at its ends.
pub(super) fn archive_ends(file: &File) -> Result<Ends, Stop> {
    let mut kept = Kept::default();
    if let Err(e) = decompress(file, &mut kept, &go_on) {
        return Err(match e.kind() {
            io::ErrorKind::InvalidData => Stop::Not(Status::Unreadable(Unreadable::Archive)),
            _ => Stop::Io(e),
        });
    }
    read_ends(&kept, kept.len)
}
