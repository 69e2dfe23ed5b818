//! Waiting for a 32-bit word to move, and waking a waiter: what a lock built
//! on atomics needs to sleep without a lock of its own (a futex on Linux), so
//! that a fork never copies a half-taken one.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps until `word` is no longer `seen` (or a wake comes), for `slice` at
/// most; returns at once if it is not `seen` now.
#[cfg(target_os = "linux")]
pub fn wait_on(word: &AtomicU32, seen: u32, slice: Duration) {
    let timeout = libc::timespec {
        tv_sec: libc::time_t::try_from(slice.as_secs()).unwrap_or(0),
        // Under 1e9: fits a c_long of any width.
        tv_nsec: slice.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a private futex wait on a live, aligned 32-bit word, with a
    // valid relative timeout; the kernel compares the word with `seen` first.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            seen,
            &timeout as *const libc::timespec,
        );
    }
}

/// Wakes one thread waiting on `word`.
#[cfg(target_os = "linux")]
pub fn wake_one(word: &AtomicU32) {
    // SAFETY: a private futex wake on a live, aligned 32-bit word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

/// Where there is no futex: looks at the word every millisecond.
#[cfg(not(target_os = "linux"))]
pub fn wait_on(word: &AtomicU32, seen: u32, slice: Duration) {
    let started = std::time::Instant::now();
    while word.load(std::sync::atomic::Ordering::SeqCst) == seen && started.elapsed() < slice {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Where there is no futex, waiters look for themselves.
#[cfg(not(target_os = "linux"))]
pub fn wake_one(_word: &AtomicU32) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_wait_returns_at_once_when_the_word_moved() {
        let word = AtomicU32::new(1);
        let started = Instant::now();
        wait_on(&word, 0, Duration::from_secs(5));
        assert!(started.elapsed() < Duration::from_secs(4));
    }

    #[test]
    fn a_waiter_wakes_when_the_word_moves() {
        let word = Arc::new(AtomicU32::new(0));
        let waiter = {
            let word = Arc::clone(&word);
            std::thread::Builder::new()
                .spawn(move || {
                    let started = Instant::now();
                    while word.load(Ordering::SeqCst) == 0 {
                        wait_on(&word, 0, Duration::from_secs(5));
                    }
                    started.elapsed()
                })
                .unwrap()
        };
        std::thread::sleep(Duration::from_millis(50));
        word.fetch_add(1, Ordering::SeqCst);
        wake_one(&word);
        let waited = waiter.join().unwrap_or(Duration::MAX);
        assert!(waited < Duration::from_secs(4), "{waited:?}");
    }
}
