//! Work fanned out over threads, or done on the calling thread when no thread
//! can start: `std::thread::Scope::spawn` panics when `pthread_create` fails (a
//! process at its thread or memory limit), and a panic must never reach Python.
//! Every thread the core starts goes through [`spawn_or_run`]; clippy.toml
//! disallows the panicking spawns everywhere else.

/// A piece of work on a thread of its own, or already done: a thread that
/// cannot be started (a process at its thread or memory limit) is not an error,
/// the work is then done on the calling thread.
pub enum Worker<'scope, T> {
    /// Running on its thread.
    Thread(std::thread::ScopedJoinHandle<'scope, T>),
    /// Done on the calling thread.
    Done(T),
}

impl<T> Worker<'_, T> {
    /// The work's result; `Err` if its thread panicked.
    #[allow(clippy::result_unit_err)]
    pub fn join(self) -> Result<T, ()> {
        match self {
            Worker::Thread(h) => h.join().map_err(|_| ()),
            Worker::Done(t) => Ok(t),
        }
    }
}

/// Runs `work` on a new thread of `scope`, or here and now if none can be
/// started (`std::thread::Scope::spawn` would panic).
pub fn spawn_or_run<'scope, 'env, T, F>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    work: F,
) -> Worker<'scope, T>
where
    T: Send + 'scope,
    F: FnOnce() -> T + Send + Copy + 'scope,
{
    match thread_builder().spawn_scoped(scope, work) {
        Ok(h) => Worker::Thread(h),
        Err(_) => Worker::Done(work()),
    }
}

thread_local! {
    // Set by a test: every thread this thread starts fails to start.
    static SPAWN_FAILS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The builder of every thread the core and its front ends start: one that
/// fails to start while [`fail_spawns`] says so.
pub fn thread_builder() -> std::thread::Builder {
    let b = std::thread::Builder::new();
    if SPAWN_FAILS.with(std::cell::Cell::get) {
        // A stack no system can map: the spawn fails with an error.
        b.stack_size(1 << 60)
    } else {
        b
    }
}

/// Makes every thread this thread starts from now on fail to start (`true`),
/// or start again (`false`): for tests of the fallback, here and in the
/// crates built on this one.
pub fn fail_spawns(fail: bool) {
    SPAWN_FAILS.with(|f| f.set(fail));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_done_here_when_no_thread_can_start() {
        fail_spawns(true);
        let refused = thread_builder().spawn(|| ()).is_err();
        let here = std::thread::scope(|scope| spawn_or_run(scope, || 42).join());
        fail_spawns(false);
        assert!(refused, "the test's premise: no thread can start");
        assert_eq!(here, Ok(42));
        let there = std::thread::scope(|scope| spawn_or_run(scope, || 7).join());
        assert_eq!(there, Ok(7));
    }
}
