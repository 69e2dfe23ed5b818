//! Why an envelope cannot join a transcript, and why a file cannot be loaded.

use super::*;

/// Why an envelope cannot join the transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// The first envelope is not a session-meta.
    NoMeta,
    /// A session-meta that is not the first envelope.
    MetaNotFirst,
    /// An id that an earlier envelope already has.
    DuplicateId(String),
    /// A compaction, elision or rewind naming an id that is not a live message.
    UnknownId {
        id: String,
        /// `"compaction"`, `"elision"` or `"rewind"`.
        by: &'static str,
    },
    /// An id that is both an envelope's and a replacement message's
    /// (`"<compaction id>:<k>"`), whichever came first.
    IdClash(String),
    /// A settle naming an operation this transcript does not have.
    UnknownOperation(String),
    /// A settle naming an operation already settled.
    AlreadySettled(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::NoMeta => write!(f, "the first line is not a session-meta"),
            ReplayError::MetaNotFirst => write!(f, "a session-meta that is not the first line"),
            ReplayError::DuplicateId(id) => write!(f, "duplicate envelope id {id:?}"),
            ReplayError::IdClash(id) => write!(
                f,
                "{id:?} is the id of an envelope and of a compaction's replacement message"
            ),
            ReplayError::UnknownId { id, by } => {
                write!(f, "{by} names {id:?}, which is not a live message")
            }
            ReplayError::UnknownOperation(id) => {
                write!(f, "no tool operation {id:?} in this transcript")
            }
            ReplayError::AlreadySettled(id) => {
                write!(f, "tool operation {id:?} is already settled")
            }
        }
    }
}

/// Why a file could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    Io(io::Error),
    /// Line `line` is not a usable envelope.
    Line {
        /// 1-based line number.
        line: u64,
        error: LineError,
    },
    /// Line `line` cannot be replayed.
    Replay {
        /// 1-based line number.
        line: u64,
        error: ReplayError,
    },
    /// No envelope at all.
    Empty,
}

impl From<io::Error> for LoadError {
    fn from(e: io::Error) -> Self {
        LoadError::Io(e)
    }
}
