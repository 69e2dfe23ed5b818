//! Knowing that a session's file still has its name without a system call per
//! append, where the platform allows.
//!
//! After each write the writer must know that its file was not deleted, nor
//! replaced by a rename over its name (the line would be in a file no one can
//! open), and that its length is the one it wrote. The length costs an
//! `lseek(SEEK_END)`, 0.17 µs here; the name costs a `statx` for the link
//! count, 0.43 µs, half of the `write(2)` itself (C loop of 303-byte appends,
//! ext4, kernel 6.18).
//!
//! Linux reports an unlink, or a rename over a name, to an inotify watch on the
//! file (`IN_ATTRIB`: the link count changed) from within the unlinking call,
//! before it returns, whichever process makes it. But it reports it through a
//! descriptor that must be read, a system call again (0.35 µs here). An
//! io_uring poll request on that descriptor turns the report into a word of
//! shared memory. In a ring set up with `DEFER_TASKRUN` and `TASKRUN_FLAG`, the
//! inotify descriptor's wake-up queues the poll's completion as the ring's own
//! deferred work and sets `IORING_SQ_TASKRUN` in the ring's flags, still within
//! the unlinking call. Only the ring's creator, entering it, runs that work, and
//! no one ever enters it after the poll is submitted, so the flag stays set: a
//! doorbell. An append loads that word. Clear, and nothing that could take a
//! watched file's name has happened since the last look. Set, and the ring is
//! replaced by a fresh one, the count of rings goes up, and each watched
//! session asks its file with `statx` once before trusting the bell again.
//! Each new notifier first proves that this kernel rings as described: a chmod
//! of a memfd of its own, watched as a session's file is, must ring it. A new
//! ring costs about 0.1 ms, so a bell that rings again within 64 looks of the
//! last (a file chmodded in a loop) rests, for twice as many looks each time,
//! up to 65,536, and looks ask `statx` meanwhile.
//!
//! Every other case falls back on the `statx` per append: another platform, a
//! kernel before 6.1 (no `DEFER_TASKRUN`), a sandbox that refuses io_uring
//! (Docker's default seccomp profile does) or inotify (its per-user limit of
//! instances, 128 by default: a process has one, shared by its sessions), a
//! file system whose other clients inotify does not hear (NFS, FUSE, 9p: only
//! local ones are watched), a child after a `fork` (the parent's ring is not
//! its own) until it makes its own, or `AGENT_TRANSCRIPT_FILE_WATCH=0` in the
//! environment. A look that finds another thread looking asks `statx` rather
//! than wait. The inotify instance and the ring are made with the process's
//! first watch and kept until it exits: a closed inotify instance goes back
//! to the user's count only once the closed ring that polled it is torn down,
//! on a kernel worker, later, so a notifier made and dropped per session ran a
//! busy process (or its user's other processes) out of instances (`EMFILE`
//! after about a hundred in a row here).

use std::fs::File;

/// One session's watch on its file (see the module's documentation).
#[derive(Debug)]
pub struct FileWatch {
    #[cfg(all(target_os = "linux", target_endian = "little"))]
    wd: i32,
    /// Which notifier holds the watch: one replaced since (after a fork, or
    /// given up) answers no look.
    #[cfg(all(target_os = "linux", target_endian = "little"))]
    notifier: u64,
    /// The count of rings when a `statx` last found the file named and as long
    /// as the session left it; None before the first.
    #[cfg_attr(
        not(all(target_os = "linux", target_endian = "little")),
        allow(dead_code)
    )]
    confirmed_at: Option<u64>,
}

/// What [`FileWatch::look`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Nothing has rung since the last [`FileWatch::confirm`]: the file still
    /// has the name it had then.
    Named,
    /// The bell rang, or cannot be heard: ask the file itself, and if it is as
    /// the session left it, [`FileWatch::confirm`] with this count.
    Ask(Option<u64>),
}

impl FileWatch {
    /// A watch on `file`, None where the file cannot be watched (see the
    /// module's documentation). Its first look always says ask.
    #[must_use]
    pub fn new(file: &File) -> Option<FileWatch> {
        #[cfg(all(target_os = "linux", target_endian = "little"))]
        {
            linux::watch(file)
        }
        #[cfg(not(all(target_os = "linux", target_endian = "little")))]
        {
            let _ = file;
            None
        }
    }

    /// Whether the file still has its name for certain, without a system call
    /// unless the bell rang.
    #[must_use]
    pub fn look(&self) -> Look {
        #[cfg(all(target_os = "linux", target_endian = "little"))]
        {
            match linux::rings(self.notifier) {
                Some(count) if Some(count) == self.confirmed_at => Look::Named,
                count => Look::Ask(count),
            }
        }
        #[cfg(not(all(target_os = "linux", target_endian = "little")))]
        {
            Look::Ask(None)
        }
    }

    /// Records that the file, asked after a look that returned `Look::Ask(count)`,
    /// was found named and as the session left it.
    pub fn confirm(&mut self, count: Option<u64>) {
        self.confirmed_at = count;
    }
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        #[cfg(all(target_os = "linux", target_endian = "little"))]
        linux::unwatch(self.wd, self.notifier);
    }
}

/// Whether this process can hear the bell (for tests and the bench's notes):
/// false where every append asks `statx`.
#[must_use]
pub fn available() -> bool {
    #[cfg(all(target_os = "linux", target_endian = "little"))]
    {
        linux::available()
    }
    #[cfg(not(all(target_os = "linux", target_endian = "little")))]
    {
        false
    }
}

/// Turns the bell off (`false`) or back on for watches made from now on; for
/// tests, which check both paths.
pub fn set_enabled(enabled: bool) {
    #[cfg(all(target_os = "linux", target_endian = "little"))]
    linux::set_enabled(enabled);
    #[cfg(not(all(target_os = "linux", target_endian = "little")))]
    let _ = enabled;
}

#[cfg(all(target_os = "linux", target_endian = "little"))]
mod linux {
    use super::FileWatch;
    use std::cell::UnsafeCell;
    use std::collections::HashMap;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
    use std::sync::Once;

    /// What a change to the file's names rings: the link count changed
    /// (unlink, a rename over it, a new hard link), or the inode is gone.
    /// A chmod or a touch rings it too, and costs one `statx`.
    const WATCHED: u32 = libc::IN_ATTRIB | libc::IN_DELETE_SELF;

    /// File systems whose every change passes through this kernel, so that
    /// inotify hears another process's unlink (`f_type` of `fstatfs`).
    /// Not overlayfs: a change made to its upper layer directly (from the
    /// host of a container) reaches the layer's inode, which `statx` asks
    /// through the overlay, but not the overlay's inode, which inotify watches.
    const LOCAL_FILE_SYSTEMS: [i64; 7] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
    ];

    /// A ring within this many looks of the last is the bell ringing over
    /// and over: it rests (see `rings`), from this many looks up to `MAX_REST`.
    const RESTLESS: u64 = 64;
    pub(super) const MAX_REST: u64 = 1 << 16;

    static ENABLED: AtomicBool = AtomicBool::new(true);
    /// Set when a notifier's proof found this kernel silent.
    static UNHEARD: AtomicBool = AtomicBool::new(false);
    /// Forks so far, counted in each child (a notifier made before one is the
    /// parent's, not this process's).
    static FORKS: AtomicU64 = AtomicU64::new(0);
    /// Tells notifiers apart, so a watch of one given up is not looked up in the next.
    static NEXT_NOTIFIER: AtomicU64 = AtomicU64::new(1);
    static AT_FORK: Once = Once::new();
    static NOTIFIER: Guarded = Guarded {
        held: AtomicBool::new(false),
        notifier: UnsafeCell::new(None),
    };

    /// The count of rings, without looking (for tests).
    #[cfg(test)]
    pub(super) fn ring_count() -> Option<u64> {
        NOTIFIER
            .with(Wait::Yes, Make::No, |slot| slot.as_ref().map(|n| n.rings))
            .flatten()
    }

    /// The ring's descriptor number (for tests).
    #[cfg(test)]
    pub(super) fn ring_descriptor() -> Option<RawFd> {
        NOTIFIER
            .with(Wait::Yes, Make::No, |slot| {
                slot.as_ref()?.ring.as_ref().map(|r| r.fd.as_raw_fd())
            })
            .flatten()
    }

    /// Whether the process holds a notifier now (for tests).
    #[cfg(test)]
    pub(super) fn held() -> Option<bool> {
        NOTIFIER.with(Wait::Yes, Make::No, |slot| slot.is_some())
    }

    pub(super) fn set_enabled(on: bool) {
        let _ = enabled(); // the environment's word first, so this one is the last
        ENABLED.store(on, Ordering::SeqCst);
    }

    pub(super) fn available() -> bool {
        enabled()
            && NOTIFIER
                .with(Wait::Yes, Make::Yes, |slot| slot.is_some())
                .unwrap_or(false)
    }

    /// Whether watches may be made: `set_enabled`'s last word, else the
    /// environment's (`AGENT_TRANSCRIPT_FILE_WATCH=0` turns it off, for a
    /// host whose users run near inotify's per-user limit of instances).
    fn enabled() -> bool {
        static FROM_ENVIRONMENT: Once = Once::new();
        FROM_ENVIRONMENT.call_once(|| {
            if std::env::var_os("AGENT_TRANSCRIPT_FILE_WATCH").is_some_and(|v| v == "0") {
                ENABLED.store(false, Ordering::SeqCst);
            }
        });
        ENABLED.load(Ordering::SeqCst) && !UNHEARD.load(Ordering::SeqCst)
    }

    pub(super) fn watch(file: &File) -> Option<FileWatch> {
        if !enabled() || !local(file) {
            return None;
        }
        NOTIFIER
            .with(Wait::Yes, Make::Yes, |slot| {
                let n = slot.as_mut()?;
                // The descriptor's own inode, whatever name it has by now.
                let path = format!("/proc/self/fd/{}\0", file.as_raw_fd());
                // SAFETY: the inotify descriptor is open (the notifier owns
                // it) and `path` is NUL-terminated.
                let wd = unsafe {
                    libc::inotify_add_watch(n.inotify.as_raw_fd(), path.as_ptr().cast(), WATCHED)
                };
                if wd < 0 {
                    return None;
                }
                *n.watches.entry(wd).or_insert(0) += 1;
                Some(FileWatch {
                    wd,
                    notifier: n.id,
                    confirmed_at: None,
                })
            })
            .flatten()
    }

    pub(super) fn unwatch(wd: i32, notifier: u64) {
        NOTIFIER.with(Wait::Yes, Make::No, |slot| {
            if slot.as_ref().is_some_and(|n| n.id == notifier) {
                forget(slot, wd);
            }
        });
    }

    /// Takes one watch of `wd` off the notifier in `slot`; the last one
    /// removes the inotify watch.
    fn forget(slot: &mut Option<Notifier>, wd: i32) {
        let Some(n) = slot.as_mut() else {
            return;
        };
        let Some(count) = n.watches.get_mut(&wd) else {
            return;
        };
        *count -= 1;
        if *count > 0 {
            return;
        }
        n.watches.remove(&wd);
        // SAFETY: plain system call on the notifier's own descriptor.
        // The removal rings the bell (IN_IGNORED): the next look asks.
        unsafe { libc::inotify_rm_watch(n.inotify.as_raw_fd(), wd) };
    }

    /// The count of rings of notifier `id`, after answering a ring, or None
    /// when it cannot say (another notifier now, none, or busy).
    pub(super) fn rings(id: u64) -> Option<u64> {
        NOTIFIER
            .with(Wait::No, Make::No, |slot| {
                let n = slot.as_mut().filter(|n| n.id == id)?;
                n.looks += 1;
                let rang = match n.resume_at {
                    Some(at) if n.looks < at => return None, // resting: ask
                    Some(_) => true, // rested: listen again, and every watch asks once
                    None => n.ring.as_ref().is_none_or(Ring::rang),
                };
                if !rang {
                    return Some(n.rings);
                }
                n.rings += 1;
                let since = n.looks - n.answered_at;
                n.answered_at = n.looks;
                // A bell rung over and over (a file chmodded in a loop,
                // sessions closed one after another) would cost a new ring,
                // about 0.1 ms, nearly every append: rest instead, each time
                // twice as long, and ask statx meanwhile. (The end of a rest
                // counts as a ring: the next one soon after rests longer.)
                if n.resume_at.take().is_none() {
                    n.rest = if since < RESTLESS {
                        (n.rest * 2).clamp(RESTLESS, MAX_REST)
                    } else {
                        0
                    };
                    if n.rest > 0 {
                        // The rung ring stays until the rest ends (its
                        // descriptor keeps its number: see `answer`).
                        n.resume_at = Some(n.looks + n.rest);
                        return None;
                    }
                }
                if n.answer().is_err() {
                    // No ring to listen with: every watch asks from now on.
                    *slot = None;
                    return None;
                }
                Some(n.rings)
            })
            .flatten()
    }

    /// Whether `file`'s file system is one whose changes this kernel sees.
    fn local(file: &File) -> bool {
        // SAFETY: a zeroed statfs is a valid value of the plain C struct,
        // which the kernel fills in; the descriptor is open.
        let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) };
        // The magic numbers are 32 bits; where `f_type` is a signed 32-bit
        // field, the high ones would widen negative.
        #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
        let kind = i64::from(fs.f_type as i64) & 0xFFFF_FFFF;
        rc == 0 && LOCAL_FILE_SYSTEMS.contains(&kind)
    }

    /// The process's notifier behind a lock that never blocks a look: a look
    /// that finds it held asks `statx` instead. A fork frees it in the child.
    struct Guarded {
        held: AtomicBool,
        notifier: UnsafeCell<Option<Notifier>>,
    }

    // SAFETY: `notifier` is only reached through `with`, by the one thread
    // holding `held`.
    unsafe impl Sync for Guarded {}

    impl Guarded {
        /// Runs `f` on the notifier, holding the lock; None when another
        /// thread holds it and `wait` says no. A notifier made before a fork
        /// is put aside first, and with `make`, one is made where there is none.
        fn with<R>(
            &self,
            wait: Wait,
            make: Make,
            f: impl FnOnce(&mut Option<Notifier>) -> R,
        ) -> Option<R> {
            while self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                if wait == Wait::No {
                    return None;
                }
                std::thread::yield_now();
            }
            // SAFETY: this thread holds `held` until the end of this call.
            let slot = unsafe { &mut *self.notifier.get() };
            let forks = FORKS.load(Ordering::SeqCst);
            if slot.as_ref().is_some_and(|n| n.forks != forks) {
                // The parent's: its ring is not ours to use, and its inotify
                // descriptor is shared with the parent (reading it would take
                // the parent's events). Its descriptors are left open, not
                // closed: a fork while another thread was replacing the ring
                // may have left a number in it that this process has since
                // reused. (Both close on exec.)
                std::mem::forget(slot.take());
            }
            if slot.is_none() && make == Make::Yes && enabled() {
                *slot = Notifier::new(forks).ok();
            }
            let out = f(slot);
            self.held.store(false, Ordering::Release);
            Some(out)
        }
    }

    #[derive(PartialEq, Eq)]
    enum Wait {
        Yes,
        No,
    }

    #[derive(PartialEq, Eq)]
    enum Make {
        Yes,
        No,
    }

    extern "C" fn after_fork_in_child() {
        // The child has one thread: a lock another thread of the parent held
        // has no holder here.
        FORKS.fetch_add(1, Ordering::SeqCst);
        NOTIFIER.held.store(false, Ordering::SeqCst);
    }

    struct Notifier {
        id: u64,
        /// `FORKS` when it was made.
        forks: u64,
        inotify: OwnedFd,
        /// None while a rung one is being replaced, or while resting.
        ring: Option<Ring>,
        rings: u64,
        /// Looks so far, and the look at which the last ring was answered.
        looks: u64,
        answered_at: u64,
        /// How many looks the bell rests for after ringing again within
        /// `RESTLESS` looks (0: it did not), and the look at which the rest ends.
        rest: u64,
        resume_at: Option<u64>,
        /// How many live watches share each watch descriptor (one inode
        /// watched twice has one).
        watches: HashMap<i32, usize>,
    }

    impl Notifier {
        fn new(forks: u64) -> io::Result<Notifier> {
            AT_FORK.call_once(|| {
                // SAFETY: registers a handler that only stores to atomics.
                unsafe { libc::pthread_atfork(None, None, Some(after_fork_in_child)) };
            });
            // SAFETY: plain system call; the descriptor is checked.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a new descriptor, ours alone.
            let inotify = unsafe { OwnedFd::from_raw_fd(fd) };
            let ring = Ring::listening_to(inotify.as_raw_fd())?;
            let mut n = Notifier {
                id: NEXT_NOTIFIER.fetch_add(1, Ordering::SeqCst),
                forks,
                inotify,
                ring: Some(ring),
                rings: 0,
                looks: 0,
                answered_at: 0,
                rest: 0,
                resume_at: None,
                watches: HashMap::new(),
            };
            if !n.prove()? {
                // This kernel does not ring as the module says: no watch in
                // this process from now on.
                UNHEARD.store(true, Ordering::SeqCst);
                return Err(io::Error::other("the file watch's bell did not ring"));
            }
            Ok(n)
        }

        /// Whether the bell rings on this kernel: a chmod of a file of our
        /// own (a memfd, watched as any session's file is) must ring it
        /// (IN_ATTRIB, as an unlink's link count change does) before the
        /// call returns. A kernel that queued the poll's completion some other
        /// way would stay silent while files are deleted. No one's file is
        /// touched. Leaves the notifier listening with a fresh ring.
        fn prove(&mut self) -> io::Result<bool> {
            // SAFETY: plain system call with a NUL-terminated name; checked.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_memfd_create,
                    c"agent-transcript-file-watch".as_ptr(),
                    libc::MFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a new descriptor, ours alone.
            let probe = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
            let path = format!("/proc/self/fd/{}\0", probe.as_raw_fd());
            // SAFETY: the inotify descriptor is open and `path` is NUL-terminated.
            let wd = unsafe {
                libc::inotify_add_watch(self.inotify.as_raw_fd(), path.as_ptr().cast(), WATCHED)
            };
            if wd < 0 {
                return Err(io::Error::last_os_error());
            }
            let quiet_before = self.ring.as_ref().is_some_and(|r| !r.rang());
            // SAFETY: plain system calls on descriptors this function owns.
            let changed = unsafe { libc::fchmod(probe.as_raw_fd(), 0o600) };
            let rang = self.ring.as_ref().is_some_and(Ring::rang);
            // SAFETY: as above; the removal rings too, and is answered below.
            unsafe { libc::inotify_rm_watch(self.inotify.as_raw_fd(), wd) };
            if changed != 0 {
                return Err(io::Error::last_os_error());
            }
            self.answer()?;
            Ok(quiet_before && rang)
        }

        /// After a ring: reads what inotify queued (so the new poll does not
        /// fire at once) and listens with a new ring, put at the number of
        /// the rung one's descriptor (`dup3` closes the rung one there): the
        /// process's descriptors are the same numbers before and after.
        fn answer(&mut self) -> io::Result<()> {
            let mut events = [0u8; 4096];
            loop {
                // SAFETY: reads into a buffer of its stated length.
                let n = unsafe {
                    libc::read(
                        self.inotify.as_raw_fd(),
                        events.as_mut_ptr().cast(),
                        events.len(),
                    )
                };
                if n <= 0 {
                    break;
                }
            }
            let mut fresh = Ring::listening_to(self.inotify.as_raw_fd())?;
            if let Some(rung) = self.ring.take() {
                let number = rung.into_fd().into_raw_fd();
                // SAFETY: `number` is the rung ring's descriptor, ours, which
                // dup3 closes as it puts the fresh ring there (close-on-exec,
                // as io_uring_setup made it); checked.
                if unsafe { libc::dup3(fresh.fd.as_raw_fd(), number, libc::O_CLOEXEC) } >= 0 {
                    // SAFETY: `number` now holds the fresh ring, ours alone.
                    fresh.fd = unsafe { OwnedFd::from_raw_fd(number) };
                } else {
                    // SAFETY: still the rung ring's: closed, as it would have been.
                    drop(unsafe { OwnedFd::from_raw_fd(number) });
                }
            }
            self.ring = Some(fresh);
            Ok(())
        }
    }

    // The kernel's ABI (include/uapi/linux/io_uring.h).
    const SETUP_SINGLE_ISSUER: u32 = 1 << 12;
    const SETUP_DEFER_TASKRUN: u32 = 1 << 13;
    const SETUP_TASKRUN_FLAG: u32 = 1 << 9;
    const FEAT_SINGLE_MMAP: u32 = 1 << 0;
    const SQ_TASKRUN: u32 = 1 << 2;
    const OP_POLL_ADD: u8 = 6;
    const OFF_SQ_RING: i64 = 0;
    const OFF_SQES: i64 = 0x1000_0000;

    #[repr(C)]
    #[derive(Default)]
    struct SqOffsets {
        head: u32,
        tail: u32,
        ring_mask: u32,
        ring_entries: u32,
        flags: u32,
        dropped: u32,
        array: u32,
        resv1: u32,
        user_addr: u64,
    }

    #[repr(C)]
    #[derive(Default)]
    struct CqOffsets {
        head: u32,
        tail: u32,
        ring_mask: u32,
        ring_entries: u32,
        overflow: u32,
        cqes: u32,
        flags: u32,
        resv1: u32,
        user_addr: u64,
    }

    #[repr(C)]
    #[derive(Default)]
    struct Params {
        sq_entries: u32,
        cq_entries: u32,
        flags: u32,
        sq_thread_cpu: u32,
        sq_thread_idle: u32,
        features: u32,
        wq_fd: u32,
        resv: [u32; 3],
        sq_off: SqOffsets,
        cq_off: CqOffsets,
    }

    #[repr(C)]
    #[derive(Default)]
    struct Sqe {
        opcode: u8,
        flags: u8,
        ioprio: u16,
        fd: i32,
        off: u64,
        addr: u64,
        len: u32,
        poll32_events: u32,
        user_data: u64,
        buf_index: u16,
        personality: u16,
        splice_fd_in: i32,
        addr3: u64,
        pad: u64,
    }

    const _: () = assert!(std::mem::size_of::<Params>() == 120);
    const _: () = assert!(std::mem::size_of::<Sqe>() == 64);

    /// A shared mapping of a ring's memory.
    struct Mapping {
        at: *mut libc::c_void,
        len: usize,
    }

    impl Mapping {
        fn of(fd: RawFd, len: usize, offset: i64) -> io::Result<Mapping> {
            // SAFETY: a new shared mapping of the ring's descriptor; checked.
            let at = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd,
                    offset,
                )
            };
            if at == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            Ok(Mapping { at, len })
        }

        /// The 32-bit word `offset` bytes in, which the kernel writes too.
        fn word(&self, offset: u32) -> *const AtomicU32 {
            // SAFETY: the kernel's offsets are within the mapping it sized.
            unsafe { self.at.cast::<u8>().add(offset as usize).cast() }
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: unmaps what `of` mapped, once.
            unsafe { libc::munmap(self.at, self.len) };
        }
    }

    /// An io_uring whose one request is a poll on the inotify descriptor, and
    /// which no one enters again: its flags word is the bell.
    struct Ring {
        /// What the pointers point into.
        mapped: Mapping,
        flags: *const AtomicU32,
        cq_head: *const AtomicU32,
        cq_tail: *const AtomicU32,
        // Dropped last: unmapped before the ring is closed.
        fd: OwnedFd,
    }

    // SAFETY: the raw pointers are into `rings`, which lives as long as the
    // ring; only atomics are read through them.
    unsafe impl Send for Ring {}

    impl Ring {
        fn listening_to(inotify: RawFd) -> io::Result<Ring> {
            let mut p = Params {
                flags: SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN | SETUP_TASKRUN_FLAG,
                ..Params::default()
            };
            // SAFETY: `p` is a valid io_uring_params for the kernel to fill.
            let fd =
                unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, &mut p as *mut Params) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a new descriptor, ours alone.
            let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
            if p.features & FEAT_SINGLE_MMAP == 0 {
                return Err(io::Error::from(io::ErrorKind::Unsupported));
            }
            let sq_len = p.sq_off.array as usize + p.sq_entries as usize * 4;
            let cq_len = p.cq_off.cqes as usize + p.cq_entries as usize * 16;
            let rings = Mapping::of(fd.as_raw_fd(), sq_len.max(cq_len), OFF_SQ_RING)?;
            let sqes = Mapping::of(
                fd.as_raw_fd(),
                p.sq_entries as usize * std::mem::size_of::<Sqe>(),
                OFF_SQES,
            )?;
            // SAFETY: the first entry of the mapped SQE array, and the SQ
            // ring's tail, mask and array, at the offsets the kernel gave; no
            // one else uses this new ring.
            unsafe {
                sqes.at.cast::<Sqe>().write(Sqe {
                    opcode: OP_POLL_ADD,
                    fd: inotify,
                    poll32_events: libc::POLLIN as u32,
                    ..Sqe::default()
                });
                let tail = &*rings.word(p.sq_off.tail);
                let mask = (*rings.word(p.sq_off.ring_mask)).load(Ordering::Relaxed);
                let at = tail.load(Ordering::Relaxed);
                let array = rings.word(p.sq_off.array).cast_mut();
                (*array.add((at & mask) as usize)).store(0, Ordering::Relaxed);
                tail.store(at.wrapping_add(1), Ordering::Release);
            }
            // SAFETY: submits the one entry; no signal mask, no argument.
            let submitted = unsafe {
                libc::syscall(
                    libc::SYS_io_uring_enter,
                    fd.as_raw_fd(),
                    1u32,
                    0u32,
                    0u32,
                    std::ptr::null::<libc::c_void>(),
                    0usize,
                )
            };
            if submitted != 1 {
                return Err(io::Error::last_os_error());
            }
            drop(sqes); // the kernel copied the entry in
            Ok(Ring {
                flags: rings.word(p.sq_off.flags),
                cq_head: rings.word(p.cq_off.head),
                cq_tail: rings.word(p.cq_off.tail),
                mapped: rings,
                fd,
            })
        }

        /// The ring's descriptor, its memory unmapped.
        fn into_fd(self) -> OwnedFd {
            let Ring { mapped, fd, .. } = self;
            drop(mapped);
            fd
        }

        /// Whether the poll has fired (its completion waits as deferred work,
        /// or was posted at once because inotify had events when it was
        /// armed), or was cancelled: in each case, listening has stopped.
        fn rang(&self) -> bool {
            // SAFETY: words of the live mapping, which the kernel writes
            // atomically.
            unsafe {
                (*self.flags).load(Ordering::Acquire) & SQ_TASKRUN != 0
                    || (*self.cq_tail).load(Ordering::Acquire)
                        != (*self.cq_head).load(Ordering::Relaxed)
            }
        }
    }
}

#[cfg(all(test, target_os = "linux", target_endian = "little"))]
mod tests {
    use super::linux::MAX_REST;
    use super::*;
    use std::io::{self, Write};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The bell is the process's: these tests ring it, so they take turns.
    static TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURNS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn failed(why: &str) -> io::Error {
        io::Error::other(why.to_string())
    }

    /// Where the tests' files go: the build's own folder, on the local file
    /// system the checkout is on (the system's temporary folder may be one
    /// the watch leaves alone).
    fn scratch(name: &str) -> io::Result<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/file-watch-tests");
        std::fs::create_dir_all(&dir)?;
        Ok(dir.join(format!("{}-{name}", std::process::id())))
    }

    /// A confirmed watch on a new file at `path`; None, said on stderr, where
    /// this kernel or sandbox cannot watch (every check is a statx there,
    /// which the session tests cover).
    fn watched(path: &Path) -> io::Result<Option<(File, FileWatch)>> {
        if !available() {
            eprintln!("skipped: no io_uring with DEFER_TASKRUN, or no inotify, here");
            return Ok(None);
        }
        let file = File::options()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        let mut w = FileWatch::new(&file).ok_or_else(|| failed("the file cannot be watched"))?;
        let Look::Ask(count) = w.look() else {
            return Err(failed("a new watch must ask first"));
        };
        w.confirm(count);
        heard(&mut w)?;
        Ok(Some((file, w)))
    }

    /// Looks (asking, and confirming, as a session would) until the bell is
    /// heard: at once, unless it rests after another test's rings.
    fn heard(w: &mut FileWatch) -> io::Result<()> {
        for _ in 0..=2 * MAX_REST {
            match w.look() {
                Look::Named => return Ok(()),
                Look::Ask(count) => w.confirm(count),
            }
        }
        Err(failed("the bell is never heard"))
    }

    #[test]
    fn writes_and_truncation_do_not_ring_but_an_unlink_does() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("unlink")?;
        let Some((mut file, w)) = watched(&path)? else {
            return Ok(());
        };
        for _ in 0..100 {
            file.write_all(b"{}\n")?;
        }
        file.set_len(0)?;
        file.sync_all()?;
        assert_eq!(w.look(), Look::Named);
        std::fs::remove_file(&path)?;
        assert!(
            matches!(w.look(), Look::Ask(_)),
            "an unlink in this thread rings before it returns"
        );
        Ok(())
    }

    #[test]
    fn another_process_renaming_over_the_name_rings_by_the_time_it_exits() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("rename-over")?;
        let other = scratch("rename-over-new")?;
        std::fs::write(&other, b"")?;
        let Some((_file, mut w)) = watched(&path)? else {
            return Ok(());
        };
        let status = Command::new("mv").arg(&other).arg(&path).status()?;
        assert!(status.success());
        let Look::Ask(count) = w.look() else {
            return Err(failed("a rename over the file must ring"));
        };
        // Asked (and found nameless: a session would stop here); the bell is
        // heard again, and a change to the file now at the name is not ours.
        w.confirm(count);
        heard(&mut w)?;
        std::fs::remove_file(&path)?;
        assert_eq!(w.look(), Look::Named);
        Ok(())
    }

    #[test]
    fn a_ring_made_by_a_thread_that_has_ended_still_rings() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("thread")?;
        let made = {
            let path = path.clone();
            std::thread::spawn(move || watched(&path))
                .join()
                .map_err(|_| failed("the thread panicked"))??
        };
        let Some((_file, mut w)) = made else {
            return Ok(());
        };
        // Whatever the thread's end did to its requests, a look afterwards
        // either still hears, or asks and listens anew.
        heard(&mut w)?;
        std::fs::remove_file(&path)?;
        assert!(matches!(w.look(), Look::Ask(_)), "the unlink was not heard");
        Ok(())
    }

    #[test]
    fn a_ring_for_one_file_makes_every_watch_ask_once() -> io::Result<()> {
        let _turn = turn();
        let (a, b) = (scratch("many-a")?, scratch("many-b")?);
        let (Some((_fa, mut wa)), Some((_fb, mut wb))) = (watched(&a)?, watched(&b)?) else {
            return Ok(());
        };
        std::fs::remove_file(&a)?;
        let Look::Ask(count) = wb.look() else {
            return Err(failed("the bell is the process's: b's watch must ask"));
        };
        wb.confirm(count);
        heard(&mut wb)?;
        let Look::Ask(count) = wa.look() else {
            return Err(failed("a's watch must ask"));
        };
        wa.confirm(count); // (its statx would have refused it)
        std::fs::remove_file(&b)?;
        assert!(matches!(wb.look(), Look::Ask(_)));
        Ok(())
    }

    #[test]
    fn the_notifier_is_made_once_and_kept() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("kept")?;
        let Some((file, w)) = watched(&path)? else {
            return Ok(());
        };
        let held =
            || linux_notifier_is_held().ok_or_else(|| failed("the notifier's lock was taken"));
        assert!(held()?);
        drop(w);
        assert!(held()?, "kept with no watch");
        // Made and dropped a hundred times over, watches never run out of
        // inotify instances, and a watch made again hears.
        for _ in 0..200 {
            drop(FileWatch::new(&file).ok_or_else(|| failed("the file cannot be watched"))?);
        }
        let mut w = FileWatch::new(&file).ok_or_else(|| failed("the file cannot be watched"))?;
        heard(&mut w)?;
        std::fs::remove_file(&path)?;
        assert!(matches!(w.look(), Look::Ask(_)));
        Ok(())
    }

    #[test]
    fn a_bell_rung_over_and_over_rests_and_then_hears_again() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("restless")?;
        let Some((file, mut w)) = watched(&path)? else {
            return Ok(());
        };
        // A chmod before every look: after a few new rings, looks ask (statx)
        // without making a ring each time.
        let before = linux::ring_count().ok_or_else(|| failed("no notifier"))?;
        let (mut asked, mut named) = (0, 0);
        for k in 0..2000u32 {
            std::fs::set_permissions(
                &path,
                std::os::unix::fs::PermissionsExt::from_mode(0o600 | ((k % 2) * 0o40)),
            )?;
            match w.look() {
                Look::Named => named += 1,
                Look::Ask(count) => {
                    asked += 1;
                    w.confirm(count);
                }
            }
        }
        assert_eq!(named, 0, "a chmod before each look: no look may say named");
        assert_eq!(asked, 2000);
        let rings = linux::ring_count().ok_or_else(|| failed("no notifier"))? - before;
        assert!(rings < 40, "{rings} rings for 2000 chmods: it did not rest");
        // Quiet again: after its rest, the bell is heard again.
        heard(&mut w)?;
        drop(file);
        std::fs::remove_file(&path)?;
        assert!(matches!(w.look(), Look::Ask(_)), "the unlink was not heard");
        Ok(())
    }

    #[test]
    fn a_new_ring_takes_the_number_of_the_rung_ones_descriptor() -> io::Result<()> {
        let _turn = turn();
        let path = scratch("number")?;
        let Some((_file, mut w)) = watched(&path)? else {
            return Ok(());
        };
        let number = linux::ring_descriptor().ok_or_else(|| failed("no ring"))?;
        // Rings answered at once, then over and over (a rest, and its end).
        for k in 0..300u32 {
            std::fs::set_permissions(
                &path,
                std::os::unix::fs::PermissionsExt::from_mode(0o600 | ((k % 2) * 0o40)),
            )?;
            if let Look::Ask(count) = w.look() {
                w.confirm(count);
            }
        }
        heard(&mut w)?;
        assert_eq!(linux::ring_descriptor(), Some(number));
        // SAFETY: asks the flags of a descriptor this process holds.
        let flags = unsafe { libc::fcntl(number, libc::F_GETFD) };
        assert!(
            flags >= 0 && flags & libc::FD_CLOEXEC != 0,
            "closed on exec"
        );
        Ok(())
    }

    fn linux_notifier_is_held() -> Option<bool> {
        linux::held()
    }
}
