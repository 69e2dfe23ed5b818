//! `SessionBase`, the native base of `agent_transcript.Session`, and its lock.
//!
//! `Session` is written in Python; this base gives it two things that cost too
//! much there. Its lock, `SessionLock`, is reentrant like `threading.RLock`, at
//! a few nanoseconds uncontended instead of the few hundred an RLock's `with`
//! costs. And `_append_fields` appends a plain `Message`'s fields under that
//! lock in one call, which is all `Session.append_message` does in the usual
//! case: an append is then a `write(2)`, an `lseek(2)` (or a `statx(2)` where
//! the file watch cannot vouch for the file's name: `transcript_core::file_watch`)
//! and well under a microsecond of everything else.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::signals::this_thread;
use crate::transcript::Transcript;

/// How long a thread waiting for the lock sleeps between two looks at
/// Python's signal handlers: a Ctrl-C interrupts the wait, as it does
/// `threading.RLock.acquire`.
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// A reentrant lock, as `threading.RLock` is: the thread that holds it may take
/// it again, and must let go of it as many times. `with lock:` takes it; a
/// thread that must wait does so without the GIL.
#[pyclass(module = "agent_transcript._core", frozen)]
pub struct SessionLock {
    /// The holding thread (Python's identifier of it: its `pthread_t`, never
    /// 0, shared by no other living thread), 0 when free.
    owner: AtomicU64,
    /// How many times the owner holds it; touched by the owner only.
    depth: AtomicUsize,
    /// Threads waiting for it: the one letting go wakes them only then.
    waiting: AtomicUsize,
    parked: Mutex<()>,
    freed: Condvar,
}

impl SessionLock {
    fn new() -> Self {
        SessionLock {
            owner: AtomicU64::new(0),
            depth: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            parked: Mutex::new(()),
            freed: Condvar::new(),
        }
    }

    fn try_take(&self, me: u64) -> bool {
        self.owner
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Takes the lock for this thread, waiting (the GIL let go) while another
    /// holds it. A signal handler's exception ends the wait.
    pub fn take(&self, py: Python<'_>) -> PyResult<()> {
        let me = this_thread();
        if self.owner.load(Ordering::SeqCst) == me {
            // Only the owner touches the depth: no read-modify-write needed.
            let depth = self.depth.load(Ordering::Relaxed);
            self.depth.store(depth + 1, Ordering::Relaxed);
            return Ok(());
        }
        if !self.try_take(me) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            let waited = self.wait_for(py, me);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            waited?;
        }
        self.depth.store(1, Ordering::Relaxed);
        Ok(())
    }

    fn wait_for(&self, py: Python<'_>, me: u64) -> PyResult<()> {
        loop {
            let taken = py.detach(|| {
                // Looked at under `parked`, which the one letting go takes
                // before it wakes anyone: no wake-up falls between the look
                // and the wait.
                let parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
                if self.try_take(me) {
                    return true;
                }
                let _unparked = self
                    .freed
                    .wait_timeout(parked, WAIT_SLICE)
                    .unwrap_or_else(|e| e.into_inner());
                self.try_take(me)
            });
            if taken {
                return Ok(());
            }
            py.check_signals()?;
        }
    }

    /// Lets go of the lock once; RuntimeError when this thread does not hold it.
    pub fn give_back(&self) -> PyResult<()> {
        if self.owner.load(Ordering::SeqCst) != this_thread() {
            return Err(PyRuntimeError::new_err(
                "cannot release a session lock this thread does not hold",
            ));
        }
        let depth = self.depth.load(Ordering::Relaxed);
        if depth > 1 {
            self.depth.store(depth - 1, Ordering::Relaxed);
            return Ok(());
        }
        self.depth.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            drop(self.parked.lock().unwrap_or_else(|e| e.into_inner()));
            self.freed.notify_one();
        }
        Ok(())
    }
}

#[pymethods]
impl SessionLock {
    #[new]
    fn py_new() -> Self {
        SessionLock::new()
    }

    /// `acquire()`: take the lock, waiting while another thread holds it.
    fn acquire(&self, py: Python<'_>) -> PyResult<bool> {
        self.take(py)?;
        Ok(true)
    }

    /// `release()`: let go of it once.
    fn release(&self) -> PyResult<()> {
        self.give_back()
    }

    fn __enter__(&self, py: Python<'_>) -> PyResult<bool> {
        self.take(py)?;
        Ok(true)
    }

    /// Lets go; None, so an exception in the block goes on.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.give_back()
    }

    /// `reset_after_fork()`: in a forked child, free the lock whoever held it
    /// (a thread of the parent that is not in the child). `parked` is held
    /// only for a look at the owner and the start of a wait, never across one.
    fn reset_after_fork(&self) {
        self.owner.store(0, Ordering::SeqCst);
        self.depth.store(0, Ordering::SeqCst);
        self.waiting.store(0, Ordering::SeqCst);
    }
}

/// The native base of `Session` (see the module's documentation).
#[pyclass(module = "agent_transcript._core", subclass, frozen)]
pub struct SessionBase {
    lock: Py<SessionLock>,
    /// The writer, once the Python constructor binds it.
    bound: OnceLock<Py<Transcript>>,
    /// Whether `_append_fields` may append: false until bound, and once the
    /// session is closed or forked away (`Session.append_message`'s general
    /// path then raises what it must).
    appendable: AtomicBool,
}

#[pymethods]
impl SessionBase {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(
        py: Python<'_>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(SessionBase {
            lock: Py::new(py, SessionLock::new())?,
            bound: OnceLock::new(),
            appendable: AtomicBool::new(false),
        })
    }

    /// The session's lock: every method holds it while it uses the writer.
    #[getter]
    fn _lock(&self, py: Python<'_>) -> Py<SessionLock> {
        self.lock.clone_ref(py)
    }

    /// `_bind(transcript, /)`: the writer `_append_fields` appends through; once.
    #[pyo3(signature = (transcript, /))]
    fn _bind(&self, transcript: Py<Transcript>) -> PyResult<()> {
        self.bound
            .set(transcript)
            .map_err(|_| PyRuntimeError::new_err("the session is bound already"))?;
        self.appendable.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// `_stop_native_appends()`: from now on `_append_fields` appends nothing
    /// (the session is closing, or forked away).
    fn _stop_native_appends(&self) {
        self.appendable.store(false, Ordering::SeqCst);
    }

    /// `_append_fields(role, content, name, tool_calls, tool_call_id, sticky,
    /// sysprompt, depth, /)`: the fields of a plain `Message`, appended under
    /// the lock; None when the session no longer appends natively.
    #[pyo3(signature = (role, content, name, tool_calls, tool_call_id, sticky, sysprompt, depth, /))]
    #[allow(clippy::too_many_arguments)]
    fn _append_fields<'py>(
        slf: &Bound<'py, Self>,
        role: &Bound<'py, PyAny>,
        content: &Bound<'py, PyAny>,
        name: &Bound<'py, PyAny>,
        tool_calls: &Bound<'py, PyAny>,
        tool_call_id: &Bound<'py, PyAny>,
        sticky: &Bound<'py, PyAny>,
        sysprompt: &Bound<'py, PyAny>,
        depth: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = slf.py();
        let base = slf.get();
        let Some(transcript) = base.bound.get() else {
            return Ok(None);
        };
        let lock = base.lock.get();
        lock.take(py)?;
        let appended = base.appendable.load(Ordering::SeqCst).then(|| {
            Transcript::append_message(
                transcript.bind(py),
                py,
                role,
                content,
                name,
                tool_calls,
                tool_call_id,
                sticky,
                sysprompt,
                depth,
            )
        });
        lock.give_back()?;
        match appended {
            Some(Ok(id)) => Ok(Some(id.into_any())),
            Some(Err(e)) => Err(named(slf, e)),
            None => Ok(None),
        }
    }
}

/// `e` with the session's path as its file name when it is an `OSError`
/// without one (the writer has a descriptor, not a name), as every other
/// append of `Session` names it.
fn named(session: &Bound<'_, SessionBase>, e: PyErr) -> PyErr {
    let py = session.py();
    if !e.is_instance_of::<PyOSError>(py) {
        return e;
    }
    let value = e.value(py);
    let unnamed = value
        .getattr(intern!(py, "filename"))
        .map(|f| f.is_none())
        .unwrap_or(false);
    if unnamed {
        if let Ok(path) = session.getattr(intern!(py, "_path")).and_then(|p| p.str()) {
            // Best effort: the error is raised either way.
            let _named = value.setattr(intern!(py, "filename"), path);
        }
    }
    e
}
