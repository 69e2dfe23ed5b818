//! The front ends' passes over many lines or files, built on the public API of
//! `transcript_core` alone (the file format, read and written): what `ls`,
//! `export`, `html`, `show` and `grep` read. No Python here; the binding crate
//! (`rust/py`) calls in and converts back.

pub mod columns;
pub mod excerpt;
pub mod holding;
pub mod listing;
pub mod page;
pub mod search;
