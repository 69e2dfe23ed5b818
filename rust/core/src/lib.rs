//! The byte-level core of agent-transcript.
//!
//! Everything here works on bytes and knows nothing of Python: the binding crate
//! (`rust/py`) extracts arguments, releases the GIL, calls in here and converts back.
//! No function here panics on any input; every failure is a `Result`.

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
