//! `lines_holding(fd, anchors, words, block)`: the lines of a file that hold one of a
//! few words (see `transcript_tools::holding`), found without the GIL.

use std::os::fd::RawFd;

use pyo3::prelude::*;
use transcript_tools::holding::{lines_holding as find, Held};

use crate::errors::os_error;
use crate::fds::dup;

/// `(number, offset, length)` of each line of the file `fd` holding one of
/// `words`, searched for by their `anchors`.
#[pyfunction]
#[pyo3(signature = (fd, anchors, words, block, /))]
pub fn lines_holding(
    py: Python<'_>,
    fd: RawFd,
    anchors: Vec<String>,
    words: Vec<String>,
    block: usize,
) -> PyResult<Vec<Held>> {
    let file = dup(fd)?;
    py.detach(|| find(&file, &anchors, &words, block)).map_err(|e| os_error(&e))
}
