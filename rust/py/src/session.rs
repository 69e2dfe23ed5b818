//! `SessionBase`, the native base of `agent_transcript.Session`, and its lock.
//!
//! `Session` is written in Python; this base gives it two things that cost too
//! much there. Its lock, `SessionLock`, is reentrant like `threading.RLock`, at
//! a few nanoseconds uncontended instead of the few hundred an RLock's `with`
//! costs. And `_append_fields` appends a plain `Message`'s fields under that
//! lock in one call, which is all `Session.append_message` does in the usual
//! case: an append is then a `write(2)`, a `statx(2)` and well under a
//! microsecond of everything else.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::transcript::Transcript;
use transcript_core::fork;
use transcript_core::park::{wait_on, wake_one};

/// How long a thread waiting for the lock sleeps between two looks at
/// Python's signal handlers: a Ctrl-C interrupts the wait, as it does
/// `threading.RLock.acquire`.
const WAIT_SLICE: Duration = Duration::from_millis(20);

// A word of a fork generation (its low 32 bits) and a 32-bit number.
fn pack(generation: u64, number: u32) -> u64 {
    (generation & 0xFFFF_FFFF) << 32 | u64::from(number)
}

// Whether `word` was packed in fork generation `generation`.
fn packed_in(word: u64, generation: u64) -> bool {
    word >> 32 == generation & 0xFFFF_FFFF
}

fn number_of(word: u64) -> u32 {
    (word & 0xFFFF_FFFF) as u32
}

/// A reentrant lock, as `threading.RLock` is; a thread that must wait does so
/// without the GIL. It holds no other lock, so a fork finds nothing half-taken
/// inside it, and it notes the fork generation its holder took it in
/// (`transcript_core::fork`): in a forked child, a hold by a thread the child
/// does not have is no hold. Native callers hold it through [`Held`], which
/// lets go when dropped, on an error or a panic too.
#[pyclass(module = "agent_transcript._core", frozen)]
pub struct SessionLock {
    /// The holder: its fork generation and its `fork::thread_token`; 0 when free.
    owner: AtomicU64,
    /// Touched by the owner only.
    depth: AtomicU32,
    /// The fork generation and how many threads of it wait: the one letting
    /// go wakes them only then (a count copied by a fork is no one's).
    waiting: AtomicU64,
    /// Moved by each release that waiters may sleep through: what they wait
    /// on (a futex where the platform has one).
    released: AtomicU32,
}

/// A hold of a [`SessionLock`], let go of when dropped.
pub struct Held<'a>(&'a SessionLock);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.let_go();
    }
}

impl SessionLock {
    /// Whether `owner`, a holder noted in the lock, is no holder in this
    /// process: a thread of a parent that the fork left behind.
    fn left_behind(owner: u64, generation: u64) -> bool {
        owner != 0
            && !packed_in(owner, generation)
            && Some(number_of(owner)) != fork::forker_token()
    }

    /// Takes the lock if it is free (or held by no thread of this process);
    /// Some(true) when taken afresh, Some(false) when this thread held it.
    fn try_take(&self) -> Option<bool> {
        let me = fork::thread_token();
        let generation = fork::generation();
        let owner = self.owner.load(Ordering::SeqCst);
        if owner != 0 && number_of(owner) == me && !Self::left_behind(owner, generation) {
            return Some(false);
        }
        let free = if Self::left_behind(owner, generation) { owner } else { 0 };
        self.owner
            .compare_exchange(free, pack(generation, me), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            .then_some(true)
    }

    /// A signal handler's exception ends the wait.
    fn take(&self, py: Python<'_>) -> PyResult<()> {
        let fresh = match self.try_take() {
            Some(fresh) => fresh,
            None => self.wait_for(py).map(|()| true)?,
        };
        // Only the owner touches the depth: no read-modify-write needed.
        let depth = if fresh { 1 } else { self.depth.load(Ordering::Relaxed) + 1 };
        self.depth.store(depth, Ordering::Relaxed);
        Ok(())
    }

    pub fn hold(&self, py: Python<'_>) -> PyResult<Held<'_>> {
        self.take(py)?;
        Ok(Held(self))
    }

    fn count_waiting(&self, by: i64) {
        let generation = fork::generation();
        let _counted = self.waiting.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |word| {
            let count = if packed_in(word, generation) { i64::from(number_of(word)) } else { 0 };
            let count = u32::try_from((count + by).max(0)).unwrap_or(0);
            Some(pack(generation, count))
        });
    }

    fn wait_for(&self, py: Python<'_>) -> PyResult<()> {
        self.count_waiting(1);
        let waited = loop {
            let taken = py.detach(|| {
                // Read before the look: a release after the look moves it, and
                // the wait then returns at once.
                let seen = self.released.load(Ordering::SeqCst);
                if self.try_take().is_some() {
                    return true;
                }
                wait_on(&self.released, seen, WAIT_SLICE);
                self.try_take().is_some()
            });
            if taken {
                break Ok(());
            }
            if let Err(e) = py.check_signals() {
                break Err(e);
            }
        };
        self.count_waiting(-1);
        waited
    }

    // The caller holds the lock.
    fn let_go(&self) {
        let depth = self.depth.load(Ordering::Relaxed);
        if depth > 1 {
            self.depth.store(depth - 1, Ordering::Relaxed);
            return;
        }
        self.depth.store(0, Ordering::Relaxed);
        self.owner.store(0, Ordering::SeqCst);
        let waiting = self.waiting.load(Ordering::SeqCst);
        if number_of(waiting) > 0 && packed_in(waiting, fork::generation()) {
            self.released.fetch_add(1, Ordering::SeqCst);
            wake_one(&self.released);
        }
    }

    fn give_back(&self) -> PyResult<()> {
        let owner = self.owner.load(Ordering::SeqCst);
        if owner == 0
            || number_of(owner) != fork::thread_token()
            || Self::left_behind(owner, fork::generation())
        {
            return Err(PyRuntimeError::new_err(
                "cannot release a session lock this thread does not hold",
            ));
        }
        self.let_go();
        Ok(())
    }
}

#[pymethods]
impl SessionLock {
    #[new]
    fn new() -> Self {
        let (owner, waiting) = (AtomicU64::new(0), AtomicU64::new(0));
        SessionLock { owner, depth: AtomicU32::new(0), waiting, released: AtomicU32::new(0) }
    }

    fn acquire(&self, py: Python<'_>) -> PyResult<bool> {
        self.take(py).map(|()| true)
    }

    fn release(&self) -> PyResult<()> {
        self.give_back()
    }

    fn __enter__(&self, py: Python<'_>) -> PyResult<bool> {
        self.take(py).map(|()| true)
    }

    /// Lets go; None, so an exception in the block goes on.
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.give_back()
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

    /// Every method of the session holds it while it uses the writer.
    #[getter]
    fn _lock(&self, py: Python<'_>) -> Py<SessionLock> {
        self.lock.clone_ref(py)
    }

    /// The writer `_append_fields` appends through; once.
    #[pyo3(signature = (transcript, /))]
    fn _bind(&self, transcript: Py<Transcript>) -> PyResult<()> {
        self.bound
            .set(transcript)
            .map_err(|_| PyRuntimeError::new_err("the session is bound already"))?;
        self.appendable.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The session is closing, or forked away.
    fn _stop_native_appends(&self) {
        self.appendable.store(false, Ordering::SeqCst);
    }

    /// The fields of a plain `Message`, appended under the lock; None when the
    /// session no longer appends natively.
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
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let py = slf.py();
        let base = slf.get();
        let Some(transcript) = base.bound.get() else {
            return Ok(None);
        };
        let _held = base.lock.get().hold(py)?;
        let fields = [role, content, name, tool_calls, tool_call_id, sticky, sysprompt, depth];
        let appendable = base.appendable.load(Ordering::SeqCst);
        appendable.then(|| Transcript::append_fields(transcript.bind(py), fields)).transpose()
    }
}
