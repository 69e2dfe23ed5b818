//! What a writer asks of its file after each append: how many names it has and
//! how long it is, and nothing more.
//!
//! Asking for nothing more matters on Linux 6.13 and later. File systems with
//! multigrain timestamps (ext4, xfs, btrfs, tmpfs) keep a file's ctime and mtime
//! coarse, and a write within the same clock tick leaves the inode alone, until
//! someone reads those times: an `fstat(2)` (or a `statx` asking for them, as
//! `std::fs::File::metadata` does) marks them queried, so the next write must
//! stamp a fine-grained time and dirty the inode in the journal. An append that
//! checked its file with `fstat` after every write paid that on every write:
//! 1.33 µs for a 303-byte write and its check, against 0.90 µs when the check
//! asks only for the link count and the size (C loop, ext4, kernel 6.18).

use std::fs::File;
use std::io;

/// A file's link count and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinksAndLength {
    /// 0 once the file was deleted, or replaced by a rename over its name.
    pub links: u64,
    /// The length in bytes.
    pub len: u64,
}

/// `file`'s link count and length, asked without its timestamps where the
/// platform allows (`statx` on Linux), else through `fstat`.
///
/// # Errors
///
/// What the system call returns.
pub fn links_and_length(file: &File) -> io::Result<LinksAndLength> {
    #[cfg(target_os = "linux")]
    if let Some(state) = narrow_statx(file)? {
        return Ok(state);
    }
    let meta = file.metadata()?;
    Ok(LinksAndLength { links: std::os::unix::fs::MetadataExt::nlink(&meta), len: meta.len() })
}

/// `statx` for the link count and the size alone; None where the kernel has no
/// `statx` (before 4.11, or a sandbox that refuses it) or does not fill both.
#[cfg(target_os = "linux")]
fn narrow_statx(file: &File) -> io::Result<Option<LinksAndLength>> {
    use std::os::fd::AsRawFd;

    let wanted = libc::STATX_NLINK | libc::STATX_SIZE;
    // SAFETY: an all-zero statx is a valid value of the plain C struct, which
    // the kernel fills in.
    let mut out: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the borrow of `file`, the path is a
    // NUL-terminated empty string (AT_EMPTY_PATH: the descriptor itself), and
    // `out` is a valid, writable statx.
    let rc = unsafe {
        libc::statx(
            file.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_STATX_SYNC_AS_STAT,
            wanted,
            &mut out,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOSYS | libc::EPERM | libc::EINVAL) => Ok(None),
            _ => Err(e),
        };
    }
    if out.stx_mask & wanted != wanted {
        return Ok(None);
    }
    Ok(Some(LinksAndLength { links: u64::from(out.stx_nlink), len: out.stx_size }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("at-file-state-{}-{name}", std::process::id()))
    }

    #[test]
    fn links_and_length_agree_with_metadata_through_writes_links_and_an_unlink() -> io::Result<()> {
        let path = scratch("agree");
        let other = scratch("agree-link");
        let _ = std::fs::remove_file(&other);
        let mut file =
            File::options().create(true).truncate(true).read(true).write(true).open(&path)?;
        let fstat = |f: &File| -> io::Result<LinksAndLength> {
            let m = f.metadata()?;
            Ok(LinksAndLength { links: std::os::unix::fs::MetadataExt::nlink(&m), len: m.len() })
        };
        for n in [0usize, 1, 303, 4096, 70_000] {
            file.write_all(&vec![b'x'; n])?;
            assert_eq!(links_and_length(&file)?, fstat(&file)?);
        }
        std::fs::hard_link(&path, &other)?;
        assert_eq!(links_and_length(&file)?.links, 2);
        std::fs::remove_file(&path)?;
        std::fs::remove_file(&other)?;
        let gone = links_and_length(&file)?;
        assert_eq!(gone, fstat(&file)?);
        assert_eq!(gone.links, 0);
        file.set_len(10)?;
        assert_eq!(links_and_length(&file)?.len, 10);
        Ok(())
    }
}
