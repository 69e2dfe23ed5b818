//! Python's signal handlers, heard from inside a native pass (the core's `Stop`).

use std::io;

use pyo3::prelude::*;

/// The Python signal handlers, run from inside a native pass: a `Ctrl-C` (or
/// any handler's exception) is kept, and stops the pass; [`Signals::raised`]
/// then hands the exception on, as if Python had been running all along.
pub struct Signals(std::sync::Mutex<Option<PyErr>>);

impl Signals {
    pub fn new() -> Self {
        Signals(std::sync::Mutex::new(None))
    }

    /// For the core's `Stop`: runs the handlers (with the GIL, a moment).
    pub fn check(&self) -> io::Result<()> {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => Ok(()),
            Err(e) => {
                if let Ok(mut slot) = self.0.lock() {
                    *slot = Some(e);
                }
                Err(io::Error::other("interrupted by a signal"))
            }
        }
    }

    /// The error to raise for `e`: the handler's exception when there is
    /// one, else `e` as `convert` makes it.
    pub fn raised(&self, e: &io::Error, convert: impl FnOnce(&io::Error) -> PyErr) -> PyErr {
        match self.0.lock().ok().and_then(|mut slot| slot.take()) {
            Some(raised) => raised,
            None => convert(e),
        }
    }
}
