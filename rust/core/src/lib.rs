//! The file format of agent-transcript, read and written.
//!
//! Everything here works on bytes and knows nothing of Python: the binding crate
//! (`rust/py`) extracts arguments, releases the GIL, calls in here and converts back;
//! the front ends' passes over many lines or files are in `rust/tools`, on this
//! crate's public items. No function here panics on any input; every failure is a
//! `Result`.
//!
//! * [`json`], [`canonical`]: one line's JSON, read strictly and written canonically.
//! * [`scan`], [`envelope`]: a file's lines and the tail check; one line as an envelope.
//! * [`transcript`]: the envelope index, the id table, replay, load, inspect and peek.
//! * [`writer`]: the durable append, checked after each write; [`file_state`] what it checks.
//! * [`stamp`], [`digest`], [`archive`], [`fork`], [`threads`], [`park`], [`stop`]: ids and
//!   timestamps, SHA-256, zstd, the fork generation, threads that may not start, waits.

pub mod archive;
pub mod canonical;
pub mod digest;
pub mod envelope;
pub mod file_state;
pub mod fork;
pub mod json;
pub mod park;
pub mod scan;
pub mod stamp;
pub mod stop;
pub mod threads;
pub mod transcript;
pub mod writer;
