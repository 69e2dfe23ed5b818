//! Descriptors Python lends to a call: each is duplicated into one the call
//! owns, so that Python closing its own meanwhile cannot pull the file away.

use std::fs::File;
use std::os::fd::{BorrowedFd, RawFd};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::errors::os_error;

/// A `File` of its own for the descriptor `fd`, which the caller keeps open
/// for the call.
pub fn dup(fd: RawFd) -> PyResult<File> {
    if fd < 0 {
        return Err(PyValueError::new_err("invalid file descriptor"));
    }
    // SAFETY: the caller passes a descriptor it keeps open for this call; it is
    // only borrowed long enough to duplicate it into one this call owns.
    let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
    borrowed.try_clone_to_owned().map(File::from).map_err(|e| os_error(&e))
}
