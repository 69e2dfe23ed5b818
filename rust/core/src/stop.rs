//! How a long native pass hears that it should stop: it asks a [`Stop`]
//! between stretches of its work (a block read, a few thousand records, a
//! MiB compressed). The binding crate's answers Python's signal handlers, so a
//! Ctrl-C during an import or an archive of a GiB ends it at once instead of
//! when the pass would have ended (seconds, or a minute for an archive).

use std::io;

/// Asked between stretches of a long pass whether to go on: an error stops the
/// pass, and is returned as it is.
pub type Stop<'s> = &'s (dyn Fn() -> io::Result<()> + Sync + 's);

/// The [`Stop`] that never stops.
///
/// # Errors
///
/// None.
pub fn go_on() -> io::Result<()> {
    Ok(())
}
