//! The process's fork generation: how many `fork()`s separate this process
//! from the one that first asked, whoever called `fork()` (Python's
//! `os.fork`, `multiprocessing`, or C code that never runs Python's at-fork
//! hooks). Whatever is per process (the id generators' randomness, a lock a
//! thread of the parent held, the thread signal handlers run in) compares a
//! generation it noted with [`generation`] instead of keeping a detector of
//! its own.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

// Forks since the handler was registered, counted in each child.
static GENERATION: AtomicU64 = AtomicU64::new(0);
// The thread that made the last fork: the one thread the child starts with.
static FORKER: AtomicU64 = AtomicU64::new(0);
// The same thread's [`thread_token`].
static FORKER_TOKEN: AtomicU32 = AtomicU32::new(0);
static REGISTER: Once = Once::new();
// The next thread token to hand out; 0 is none.
static NEXT_TOKEN: AtomicU32 = AtomicU32::new(1);

thread_local! {
    // This thread's token, 0 until asked.
    static TOKEN: Cell<u32> = const { Cell::new(0) };
}

#[cfg(unix)]
extern "C" fn in_child() {
    // Only atomics here: the child of a threaded process may call nothing
    // that takes a lock until it has exec'd or set itself up.
    GENERATION.fetch_add(1, Ordering::SeqCst);
    FORKER.store(this_thread(), Ordering::SeqCst);
    FORKER_TOKEN.store(thread_token(), Ordering::SeqCst);
}

/// This process's fork generation: 0 until a fork, then one more in each
/// child than in its parent. The first call registers the counting handler
/// (`pthread_atfork`), so call it before any fork whose child must see a new
/// generation; every later call is an atomic load.
pub fn generation() -> u64 {
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: registers a handler that only touches atomics; the call has
        // no other precondition. It fails only for want of memory, and then
        // the generation stays 0 (as where there is no fork).
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
    GENERATION.load(Ordering::SeqCst)
}

/// The thread that made this process's last fork (its `pthread_self`, as
/// [`this_thread`] gives it), or None before any fork.
pub fn forker() -> Option<u64> {
    (generation() != 0).then(|| FORKER.load(Ordering::SeqCst))
}

/// The [`thread_token`] of the thread that made this process's last fork, or
/// None before any fork.
pub fn forker_token() -> Option<u32> {
    (generation() != 0).then(|| FORKER_TOKEN.load(Ordering::SeqCst))
}

/// A number for this thread that no other thread of this process has had,
/// never 0. A thread keeps its token across a fork it makes; threads started
/// in the child get numbers none of the parent's threads had, so a token
/// noted before a fork names, in the child, either the thread that forked or
/// a thread the child does not have (a `pthread_t` may be reused by the
/// child's threads).
pub fn thread_token() -> u32 {
    TOKEN.with(|token| {
        let mut mine = token.get();
        if mine == 0 {
            mine = NEXT_TOKEN.fetch_add(1, Ordering::SeqCst);
            token.set(mine);
        }
        mine
    })
}

/// This thread's `pthread_self`, which is also Python's thread identifier
/// (`threading.get_ident()`); never 0.
#[cfg(unix)]
pub fn this_thread() -> u64 {
    // SAFETY: a plain query with no precondition.
    let me = unsafe { libc::pthread_self() };
    // pthread_t is an integer or a pointer, 64 bits or fewer.
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    let me = me as u64;
    me
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_is_one_generation_on_and_knows_its_forker() {
        let before = generation();
        // SAFETY: the child only reads atomics, writes one byte and _exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = generation() == before + 1
                && forker() == Some(this_thread())
                && forker_token() == Some(thread_token());
            // SAFETY: plain system calls in the child.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(waited, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(generation(), before, "the parent's generation moved");
    }

    #[test]
    fn threads_have_tokens_of_their_own() {
        let mine = thread_token();
        assert_ne!(mine, 0);
        assert_eq!(thread_token(), mine);
        let theirs =
            std::thread::Builder::new().spawn(thread_token).unwrap().join().unwrap_or(mine);
        assert_ne!(theirs, mine);
    }
}
