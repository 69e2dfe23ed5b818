//! Writing behind: a writer whose full buffers another thread writes, so the
//! kernel's copy of them into the page cache (on this kind of VM as dear as
//! the conversion that made them: a new page of a file is a page the host
//! must first give) runs on the other core while this one makes the next.
//!
//! The bytes reach the file in the order written, as through a `BufWriter`.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::sync::mpsc;

/// The buffers there are: one being written, one waiting, one being filled.
/// The same few go round: a new one is new pages, which cost more here than
/// the copy into them.
const BUFFERS: usize = 3;

/// What [`write_behind`]'s body writes to.
pub struct Behind {
    buf: Vec<u8>,
    capacity: usize,
    made: usize,
    to_writer: mpsc::SyncSender<Vec<u8>>,
    returned: mpsc::Receiver<Vec<u8>>,
}

impl Behind {
    /// Hands the buffer to the writing thread (when it holds anything), and
    /// takes the next: a new one while there are fewer than [`BUFFERS`], else
    /// the first the writer gives back.
    fn pass(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = if self.made < BUFFERS {
            self.made += 1;
            Vec::with_capacity(self.capacity)
        } else {
            let mut back = self.returned.recv().map_err(|_| stopped())?;
            back.clear();
            // One write bigger than a buffer grew it: not kept that big.
            back.shrink_to(self.capacity);
            back
        };
        let full = std::mem::replace(&mut self.buf, next);
        self.to_writer.send(full).map_err(|_| stopped())
    }
}

/// What a write answers once the writing thread has stopped; [`write_behind`]
/// then answers the thread's own error instead.
fn stopped() -> io::Error {
    io::Error::other("the writing thread stopped")
}

impl Write for Behind {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.buf.len() + bytes.len() > self.capacity {
            self.pass()?;
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// Hands over what is buffered; it is written by the time [`write_behind`]
    /// returns, not when this does.
    fn flush(&mut self) -> io::Result<()> {
        self.pass()
    }
}

/// Whether the file is to be made durable soon after what is written here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durable {
    /// It will be fsynced: what is written is sent to the disk as it goes,
    /// so the fsync finds most of it there already (the disk works while
    /// the converter does, not after it).
    Soon,
    /// A scratch file, cut back before it would ever be written out.
    Never,
}

/// How far the file's pages have been sent to the disk.
struct WriteBack {
    sent: u64,
    written: u64,
}

/// How much written makes it worth sending another stretch to the disk.
const WRITE_BACK_STRETCH: u64 = 8 << 20;

impl WriteBack {
    /// What the file holds before the body writes is sent at once.
    fn from_start(file: &File) -> io::Result<Self> {
        let mut at = file;
        let start = at.stream_position()?;
        let mut w = WriteBack {
            sent: 0,
            written: start,
        };
        w.send(file);
        Ok(w)
    }

    fn wrote(&mut self, file: &File, n: u64) {
        self.written += n;
        if self.written - self.sent >= WRITE_BACK_STRETCH {
            self.send(file);
        }
    }

    /// Starts the write-out of the stretch not yet sent, without waiting for
    /// it. Only a hint: where it fails (no such call, a file system without
    /// it) the fsync does all the work, as it would have.
    fn send(&mut self, file: &File) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.sent, self.written - self.sent);
            if len > 0 {
                // SAFETY: a plain system call on a descriptor this borrow keeps open.
                unsafe {
                    libc::sync_file_range(
                        file.as_raw_fd(),
                        from as libc::off64_t,
                        len as libc::off64_t,
                        libc::SYNC_FILE_RANGE_WRITE,
                    );
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = file;
        self.sent = self.written;
    }
}

/// Runs `body` with a [`Behind`] writing to `file` (at its offset, which only
/// the writing thread moves meanwhile) in buffers of about `capacity` bytes,
/// and returns once all it wrote is written (and, where `durable` is
/// [`Durable::Soon`], on its way to the disk).
///
/// # Errors
///
/// The writing thread's error (a full disk, say) wins over the body's, which
/// is then most likely only that its writes stopped; else the body's.
pub fn write_behind<R>(
    file: &File,
    capacity: usize,
    durable: Durable,
    body: impl FnOnce(&mut Behind) -> io::Result<R>,
) -> io::Result<R> {
    let (to_writer, written) = mpsc::sync_channel::<Vec<u8>>(BUFFERS);
    let (give_back, returned) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> io::Result<()> {
            let mut out = file;
            let mut write_back = match durable {
                Durable::Soon => Some(WriteBack::from_start(file)?),
                Durable::Never => None,
            };
            for buf in written {
                out.write_all(&buf)?;
                if let Some(w) = write_back.as_mut() {
                    w.wrote(file, buf.len() as u64);
                }
                // The body may be gone (it failed): the buffer is then dropped.
                let _ = give_back.send(buf);
            }
            Ok(())
        });
        let mut behind = Behind {
            buf: Vec::with_capacity(capacity),
            capacity,
            made: 1,
            to_writer,
            returned,
        };
        let answer = body(&mut behind).and_then(|r| behind.pass().map(|()| r));
        // Dropping the sender ends the writer's loop, whatever the body did.
        drop(behind);
        let wrote = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writing thread failed")));
        wrote.and(answer)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    fn temp() -> File {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "write-behind-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path);
        let _ = std::fs::remove_file(&path);
        match file {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    #[allow(clippy::panic)]
    fn the_bytes_arrive_in_order_whatever_the_write_sizes() {
        let file = temp();
        let mut expected = Vec::new();
        let r = write_behind(&file, 64, Durable::Soon, |w| {
            for i in 0..2000u32 {
                let piece = vec![(i % 251) as u8; (i % 150) as usize];
                expected.extend_from_slice(&piece);
                w.write_all(&piece)?;
                if i % 97 == 0 {
                    w.flush()?;
                }
            }
            Ok(7)
        });
        assert_eq!(r.ok(), Some(7));
        let mut got = Vec::new();
        let mut f = &file;
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.read_to_end(&mut got);
        assert_eq!(got, expected);
    }

    #[test]
    #[allow(clippy::panic)]
    fn a_write_bigger_than_a_buffer_goes_whole_and_no_buffer_stays_that_big() {
        let file = temp();
        let big = vec![7u8; 1000];
        // The buffer in hand after each write: the big one comes round again.
        let mut held = Vec::new();
        let r = write_behind(&file, 16, Durable::Never, |w| {
            w.write_all(b"head")?;
            w.write_all(&big)?;
            for _ in 0..10 {
                w.write_all(b"0123456789abc")?;
                held.push(w.buf.capacity());
            }
            Ok(())
        });
        assert!(r.is_ok(), "{r:?}");
        assert!(held.iter().all(|&c| c < big.len()), "{held:?}");
        let mut got = Vec::new();
        let mut f = &file;
        let _ = f.seek(SeekFrom::Start(0));
        let _ = f.read_to_end(&mut got);
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&big);
        for _ in 0..10 {
            expected.extend_from_slice(b"0123456789abc");
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn the_bodys_error_comes_out() {
        let file = temp();
        let r: io::Result<()> = write_behind(&file, 4, Durable::Never, |w| {
            w.write_all(b"abcdefgh")?;
            w.write_all(b"ijkl")?;
            Err(io::Error::other("the body's"))
        });
        assert_eq!(
            r.err().map(|e| e.to_string()),
            Some("the body's".to_owned())
        );
    }

    #[test]
    #[allow(clippy::panic)]
    fn the_writers_error_wins() {
        let read_only = match File::open("/dev/null") {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        let r: io::Result<()> = write_behind(&read_only, 4, Durable::Never, |w| {
            for _ in 0..100 {
                w.write_all(b"abcdefgh")?;
            }
            Ok(())
        });
        let e = r.err();
        assert!(e.is_some());
        assert_ne!(e.map(|e| e.to_string()), Some(stopped().to_string()));
    }
}
