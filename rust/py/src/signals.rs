//! Python's signal handlers, heard from inside a native pass (the core's `Stop`).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use transcript_core::fork;
use transcript_core::stop::Stop;

/// How often at most a pass takes the GIL to run the handlers: often enough
/// that a Ctrl-C is heard at once, seldom enough that a pass never waits for
/// the GIL long (another thread running Python holds it up to its switch
/// interval, 5 ms).
const EVERY: Duration = Duration::from_millis(10);

/// The Python signal handlers, run from inside a native pass: a `Ctrl-C` (or
/// any handler's exception) is kept, and stops the pass; [`Signals::run`]
/// then raises it, as if Python had been running all along.
pub struct Signals {
    raised: Mutex<Option<PyErr>>,
    /// When the handlers last ran; None on a thread that never runs them
    /// (Python runs signal handlers in the main thread only).
    last: Option<Mutex<Instant>>,
}

/// The thread Python runs signal handlers in (its `threading.main_thread`'s
/// identifier), learned once, when the module is imported, with the fork
/// generation it was learned in: in a forked child, the thread that forked
/// is the main one (`transcript_core::fork::forker`). A pass then tells
/// without running Python code, where a pending handler would run (and its
/// exception, a Ctrl-C's, could be lost).
static MAIN_THREAD: AtomicU64 = AtomicU64::new(0);
static LEARNED_IN: AtomicU64 = AtomicU64::new(0);

/// Learns the main thread; at the module's import.
pub fn learn_main_thread(py: Python<'_>) -> PyResult<()> {
    let ident: u64 =
        py.import("threading")?.call_method0("main_thread")?.getattr("ident")?.extract()?;
    MAIN_THREAD.store(ident, Ordering::SeqCst);
    LEARNED_IN.store(fork::generation(), Ordering::SeqCst);
    Ok(())
}

/// Python's main thread in this process.
fn main_thread() -> u64 {
    if fork::generation() == LEARNED_IN.load(Ordering::SeqCst) {
        return MAIN_THREAD.load(Ordering::SeqCst);
    }
    fork::forker().unwrap_or(0)
}

/// This thread, as Python identifies it (`threading.get_ident()`).
fn this_thread() -> u64 {
    // SAFETY: a plain query with no precondition.
    let ident = unsafe { pyo3::ffi::PyThread_get_thread_ident() };
    // A c_ulong: 64 bits here, 32 where a long is.
    #[allow(clippy::useless_conversion)]
    u64::from(ident)
}

impl Signals {
    /// For the core's `Stop`: runs the handlers (with the GIL, a moment), at
    /// most every few milliseconds, and only on the thread they run in.
    fn check(&self) -> io::Result<()> {
        let Some(last) = &self.last else {
            return Ok(());
        };
        if let Ok(mut last) = last.lock() {
            let now = Instant::now();
            if now.duration_since(*last) < EVERY {
                return Ok(());
            }
            *last = now;
        }
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => Ok(()),
            Err(e) => {
                if let Ok(mut slot) = self.raised.lock() {
                    *slot = Some(e);
                }
                Err(io::Error::other("interrupted by a signal"))
            }
        }
    }

    /// Runs `pass` without the GIL, the handlers heard from inside it; its
    /// error as `convert` makes it, or the handler's exception.
    pub fn run<T: Send, E: Send>(
        py: Python<'_>,
        pass: impl FnOnce(Stop<'_>) -> Result<T, E> + Send,
        convert: impl FnOnce(E) -> PyErr,
    ) -> PyResult<T> {
        let main = main_thread() == this_thread();
        let long_ago = Instant::now().checked_sub(EVERY).unwrap_or_else(Instant::now);
        let signals =
            Signals { raised: Mutex::new(None), last: main.then(|| Mutex::new(long_ago)) };
        let stop = || signals.check();
        py.detach(|| pass(&stop)).map_err(|e| {
            let raised = signals.raised.lock().ok().and_then(|mut slot| slot.take());
            raised.unwrap_or_else(|| convert(e))
        })
    }
}
