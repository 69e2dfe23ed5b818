//! The `.jsonl.zst` archive calls: compress and decompress between descriptors,
//! the GIL released for the byte work.

use std::io;
use std::os::fd::RawFd;

use pyo3::prelude::*;
use transcript_core::archive;
use transcript_core::stop::Stop;

use crate::errors::pass_error;
use crate::fds::dup;
use crate::signals::Signals;

/// `zstd_compress(src_fd, length, dst_fd, level, /)`: the first `length` bytes
/// of `src_fd`'s file (read with pread) as one zstd frame appended to
/// `dst_fd`'s; returns the bytes written.
#[pyfunction]
#[pyo3(signature = (src_fd, length, dst_fd, level, /))]
pub fn zstd_compress(
    py: Python<'_>,
    src_fd: RawFd,
    length: u64,
    dst_fd: RawFd,
    level: i32,
) -> PyResult<u64> {
    let (src, mut dst) = (dup(src_fd)?, dup(dst_fd)?);
    let pass = |stop: Stop<'_>| archive::compress(&src, length, &mut dst, level, stop);
    Signals::run(py, pass, |e| pass_error(&e))
}

/// `zstd_decompress(src_fd, dst_fd, /)`: the zstd stream that is all of
/// `src_fd`'s file, decompressed and appended to `dst_fd`'s; returns its length.
/// ValueError when it is not a whole zstd stream.
#[pyfunction]
#[pyo3(signature = (src_fd, dst_fd, /))]
pub fn zstd_decompress(py: Python<'_>, src_fd: RawFd, dst_fd: RawFd) -> PyResult<u64> {
    let src = dup(src_fd)?;
    let mut dst = io::BufWriter::with_capacity(1 << 20, dup(dst_fd)?);
    let pass = |stop: Stop<'_>| {
        let n = archive::decompress(&src, &mut dst, stop)?;
        io::Write::flush(&mut dst).map(|()| n)
    };
    Signals::run(py, pass, |e| pass_error(&e))
}

/// `zstd_matches(archive_fd, original_fd, length, /)`: whether the archive
/// decompresses to exactly the first `length` bytes of the original.
#[pyfunction]
#[pyo3(signature = (archive_fd, original_fd, length, /))]
pub fn zstd_matches(
    py: Python<'_>,
    archive_fd: RawFd,
    original_fd: RawFd,
    length: u64,
) -> PyResult<bool> {
    let (packed, original) = (dup(archive_fd)?, dup(original_fd)?);
    let pass = |stop: Stop<'_>| archive::matches(&packed, &original, length, stop);
    Signals::run(py, pass, |e| pass_error(&e))
}

/// `zstd_head(src_fd, limit, /)`: the first `limit` bytes of the zstd stream
/// that is `src_fd`'s file, decompressed. ValueError when it does not start one.
#[pyfunction]
#[pyo3(signature = (src_fd, limit, /))]
pub fn zstd_head(py: Python<'_>, src_fd: RawFd, limit: usize) -> PyResult<Py<PyAny>> {
    let src = dup(src_fd)?;
    let head = py.detach(|| archive::zstd_head(&src, limit)).map_err(|e| pass_error(&e))?;
    Ok(pyo3::types::PyBytes::new(py, &head).into_any().unbind())
}
