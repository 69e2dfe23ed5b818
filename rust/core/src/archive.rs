//! `.jsonl.zst` archives: a transcript compressed as one zstd frame, streaming
//! both ways, so that neither side ever holds the whole file in memory.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;

use crate::stop::Stop;

/// The zstd level `archive` writes (zstd's own default). On the yardstick
/// transcript (200 MiB) it compresses 4.4× at 180 MB/s on one core here;
/// level 9 made it 4.8× at 22 MB/s, so that an archive of 1.7 GiB took a
/// minute, holding the writer's lock, to save a tenth of the file.
pub const LEVEL: i32 = 3;

/// How much is read or written at a time.
const CHUNK: usize = 1 << 20;

/// Reads a file from an offset with `pread`, leaving the descriptor's own offset
/// (shared with whoever else holds it) alone.
struct At<'a> {
    file: &'a File,
    offset: u64,
    end: Option<u64>,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = match self.end {
            Some(end) => buf
                .len()
                .min(usize::try_from(end.saturating_sub(self.offset)).unwrap_or(usize::MAX)),
            None => buf.len(),
        };
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// Compresses the first `len` bytes of `src` into `dst` (appended at its
/// offset) as one zstd frame with the content size in its header; returns the
/// bytes written. Errors if `src` is shorter than `len`. `stop` is asked
/// before each chunk.
pub fn compress(
    src: &File,
    len: u64,
    dst: &mut File,
    level: i32,
    stop: Stop<'_>,
) -> io::Result<u64> {
    let mut reader = At { file: src, offset: 0, end: Some(len) };
    let counter = Counting { inner: dst, written: 0 };
    let mut encoder = zstd::stream::write::Encoder::new(counter, level)?;
    encoder.set_pledged_src_size(Some(len))?;
    encoder.include_contentsize(true)?;
    encoder.include_checksum(true)?;
    let mut buf = vec![0u8; CHUNK];
    let mut done = 0u64;
    loop {
        stop()?;
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        encoder.write_all(&buf[..n])?;
        done += n as u64;
    }
    if done != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the transcript shrank while it was archived",
        ));
    }
    let counter = encoder.finish()?;
    Ok(counter.written)
}

/// Decompresses the zstd stream that is all of `src` into `dst` (appended at
/// its offset); returns the decompressed length. A damaged or truncated
/// archive is an `InvalidData` error. `stop` is asked before each chunk.
pub fn decompress(src: &File, dst: &mut impl Write, stop: Stop<'_>) -> io::Result<u64> {
    let reader = At { file: src, offset: 0, end: None };
    let mut decoder = zstd::stream::read::Decoder::new(reader).map_err(invalid)?;
    let mut buf = vec![0u8; CHUNK];
    let mut done = 0u64;
    loop {
        stop()?;
        let n = match decoder.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(invalid(e)),
        };
        if n == 0 {
            break;
        }
        dst.write_all(&buf[..n])?;
        done += n as u64;
    }
    Ok(done)
}

/// Whether the zstd stream that is all of `archive` decompresses to exactly the
/// first `len` bytes of `original`, compared a chunk at a time as it is
/// decompressed (nothing is written anywhere). `stop` is asked before each chunk.
pub fn matches(archive: &File, original: &File, len: u64, stop: Stop<'_>) -> io::Result<bool> {
    let mut sink = Compare { original, offset: 0, len, differs: false, buf: Vec::new() };
    match decompress(archive, &mut sink, stop) {
        Ok(n) => Ok(!sink.differs && n == len),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(false),
        Err(e) if sink.differs => {
            let _ = e;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// A `Write` that compares what it is given with a file, from its start.
struct Compare<'a> {
    original: &'a File,
    offset: u64,
    len: u64,
    differs: bool,
    buf: Vec<u8>,
}

impl Write for Compare<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.differs || self.offset + data.len() as u64 > self.len {
            self.differs = true;
            return Err(io::Error::other("the archive differs from the original"));
        }
        self.buf.resize(data.len(), 0);
        self.original.read_exact_at(&mut self.buf, self.offset)?;
        if self.buf != data {
            self.differs = true;
            return Err(io::Error::other("the archive differs from the original"));
        }
        self.offset += data.len() as u64;
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An error of the decoder (not of reading or writing a file) as `InvalidData`.
fn invalid(e: io::Error) -> io::Error {
    if e.raw_os_error().is_some() {
        e
    } else {
        io::Error::new(io::ErrorKind::InvalidData, format!("not a whole zstd archive: {e}"))
    }
}

struct Counting<'a> {
    inner: &'a mut File,
    written: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The first `limit` bytes (fewer if it is shorter) of the zstd stream that is
/// `file` from its start, decompressed: to tell a compressed source's format
/// without decompressing all of it.
///
/// # Errors
///
/// An I/O error, or `InvalidData` when the file does not start a zstd stream.
pub fn zstd_head(file: &File, limit: usize) -> io::Result<Vec<u8>> {
    use std::io::{BufReader, Seek, SeekFrom};
    let mut reader = BufReader::new(file);
    reader.seek(SeekFrom::Start(0))?;
    let decoder = zstd::stream::read::Decoder::with_buffer(reader)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    match decoder.take(limit as u64).read_to_end(&mut out) {
        Ok(_) => Ok(out),
        // A stream cut short still tells its format by what it has.
        Err(_) if !out.is_empty() => Ok(out),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stop::go_on;
    use std::io::{Seek, SeekFrom};

    fn temp(name: &str, data: &[u8]) -> io::Result<File> {
        let path = std::env::temp_dir().join(format!("at-archive-{}-{name}", std::process::id()));
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        f.write_all(data)?;
        f.seek(SeekFrom::Start(0))?;
        Ok(f)
    }

    #[test]
    fn round_trip() -> io::Result<()> {
        let data: Vec<u8> =
            (0..300_000u32).flat_map(|i| format!("{{\"n\":{i}}}\n").into_bytes()).collect();
        let src = temp("src", &data)?;
        let mut packed = temp("packed", b"")?;
        let n = compress(&src, data.len() as u64, &mut packed, LEVEL, &go_on)?;
        assert!(n > 0 && n < data.len() as u64 / 5);
        let mut out = Vec::new();
        assert_eq!(decompress(&packed, &mut out, &go_on)?, data.len() as u64);
        assert_eq!(out, data);
        assert!(matches(&packed, &src, data.len() as u64, &go_on)?);
        assert!(!matches(&packed, &src, data.len() as u64 - 1, &go_on)?);
        let other = temp("other", &data[..data.len() - 1])?;
        assert!(!matches(&packed, &other, data.len() as u64 - 1, &go_on)?);
        Ok(())
    }

    #[test]
    fn a_cut_archive_is_invalid_data() -> io::Result<()> {
        let data = b"{\"a\":1}\n".repeat(10_000);
        let src = temp("src2", &data)?;
        let mut packed = temp("packed2", b"")?;
        let n = compress(&src, data.len() as u64, &mut packed, LEVEL, &go_on)?;
        packed.set_len(n / 2)?;
        let mut out = Vec::new();
        let err = decompress(&packed, &mut out, &go_on).err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::InvalidData));
        assert!(!matches(&packed, &src, data.len() as u64, &go_on)?);
        let garbage = temp("garbage", b"not zstd at all")?;
        let err = decompress(&garbage, &mut Vec::new(), &go_on).err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::InvalidData));
        Ok(())
    }

    #[test]
    fn a_short_source_is_refused() -> io::Result<()> {
        let src = temp("short", b"abc")?;
        let mut packed = temp("packed3", b"")?;
        assert!(compress(&src, 10, &mut packed, LEVEL, &go_on).is_err());
        Ok(())
    }

    #[test]
    fn a_stop_ends_each_pass_within_a_chunk() -> io::Result<()> {
        let data: Vec<u8> = (0..600_000u32)
            .flat_map(|i| format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", i % 977).into_bytes())
            .collect();
        assert!(data.len() > 4 * CHUNK);
        let src = temp("stop-src", &data)?;
        let asked = std::sync::atomic::AtomicUsize::new(0);
        // Stops at the third question: two chunks done, no more.
        let third = || {
            if asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 2 {
                return Err(io::Error::other("stopped"));
            }
            Ok(())
        };
        let mut packed = temp("stop-packed", b"")?;
        let err = compress(&src, data.len() as u64, &mut packed, LEVEL, &third);
        assert_eq!(err.map_err(|e| e.to_string()), Err("stopped".into()));
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 3);
        let mut whole = temp("stop-whole", b"")?;
        compress(&src, data.len() as u64, &mut whole, LEVEL, &go_on)?;
        asked.store(0, std::sync::atomic::Ordering::SeqCst);
        let mut out = Vec::new();
        let err = decompress(&whole, &mut out, &third);
        assert_eq!(err.map_err(|e| e.to_string()), Err("stopped".into()));
        assert!(out.len() <= 2 * CHUNK, "went on after the stop");
        asked.store(0, std::sync::atomic::Ordering::SeqCst);
        let err = matches(&whole, &src, data.len() as u64, &third);
        assert_eq!(err.map_err(|e| e.to_string()), Err("stopped".into()));
        Ok(())
    }
}
