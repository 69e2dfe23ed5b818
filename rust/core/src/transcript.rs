//! The envelope index and replay: what load builds from a file and what every
//! append extends, through the same code, so that the state after a load is the
//! state the writer had.
//!
//! The index keeps a few words per line (where it is, its number, type and, for
//! a message, role) and an id table; payloads stay in the file. Replay keeps the
//! live message list as references to lines (or to one message of a
//! compaction's replacement), plus what an elision put in place of a message's
//! content: enough to build `messages` and `entries` without a second pass. A
//! reader that shows a transcript can also ask replay to keep its [`History`]:
//! what each compaction, elision, rewind and settle did.
//!
//! Messages, compactions (with or without a replacement), elisions and rewinds
//! compose in file order, each applied to the live list the lines before it left.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

// Keyed by line numbers and places in the file, which no writer chooses; what
// is keyed by a file's bytes (ids, digests, type names) gets a seeded hash.
use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::io;

use crate::envelope::{
    id_text, member_span_at, member_spans, string_size_at, Detail, Envelope, EnvelopeType, Id,
    LineError, Part, Role, Span,
};
use crate::json::string_size;
use crate::scan::{is_blank, ReadAt};
use crate::stamp::IdGen;
use crate::threads::spawn_or_run;

/// Where one envelope is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRec {
    /// Offset of its first byte.
    pub offset: u64,
    /// Its length, without the `\n`.
    pub len: u32,
    /// 1-based line number, blank lines counted.
    pub number: u64,
    /// Its type.
    pub kind: EnvelopeType,
    /// A message's role; None for every other type.
    pub role: Option<Role>,
}

impl LineRec {
    /// The record of `env`, read from `len` bytes at `offset` on line `number`.
    pub fn new(env: &Envelope, offset: u64, len: usize, number: u64) -> Self {
        LineRec {
            offset,
            len: u32::try_from(len).unwrap_or(u32::MAX),
            number,
            kind: env.kind,
            role: match &env.detail {
                Detail::Message { role, .. } => Some(Role::from_wire(role)),
                _ => None,
            },
        }
    }
}

/// How many envelopes of one type a file has, and their bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeTotal<'a> {
    /// The wire type.
    pub name: &'a str,
    /// Envelopes of that type.
    pub count: u64,
    /// Their bytes, each line's `\n` included.
    pub bytes: u64,
}

/// One envelope's line, and where some members of its payload are in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Members {
    /// The line, without its `\n`.
    pub line: Vec<u8>,
    /// Each member asked for, in the order asked, or None.
    pub spans: Vec<Option<Span>>,
}

/// `each` of `items`, in order, split over every core (up to 8) when there are
/// enough of them to be worth a thread.
fn on_every_core<T, F>(items: &[u32], each: F) -> Result<Vec<T>, LoadError>
where
    T: Send,
    F: Fn(u32) -> Result<T, LoadError> + Sync,
{
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let per = items.len().div_ceil(cores).max(256);
    if items.len() <= per {
        return items.iter().map(|&i| each(i)).collect();
    }
    let each = &each;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per)
            .map(|part| {
                spawn_or_run(scope, move || {
                    part.iter().map(|&i| each(i)).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for h in handles {
            let part = h
                .join()
                .map_err(|()| LoadError::Io(io::Error::other("a reader thread failed")))?;
            for item in part {
                out.push(item?);
            }
        }
        Ok(out)
    })
}

/// Every envelope's place in the file, and the names its records cannot hold:
/// the wire type of an unknown type, the role of a message whose role is not
/// one of the four. Enough to count, size and pick envelopes by type or role
/// without reading a payload.
///
/// Kept as columns, 9 bytes a line: the offset's low half, the length, the
/// type and role in one byte. Offsets only grow (envelopes are added in file
/// order), so their high halves are kept as the indices where they step up;
/// line numbers are kept only where they stop following the envelope's index
/// (after a blank or skipped line), so a file without blank lines keeps none.
#[derive(Debug, Default)]
pub struct Index {
    // Each offset's low 32 bits.
    offsets: Vec<u32>,
    // highs[k]: the first index whose offset is at least (k + 1) << 32.
    highs: Vec<u32>,
    lens: Vec<u32>,
    // The type's code in the low four bits, the role's (0 for none) above.
    tags: Vec<u8>,
    // (first index, number - index - 1) from each index where that difference
    // changes; none while it is 0.
    bumps: Vec<(u32, u64)>,
    // Line index -> name, for EnvelopeType::Other and Role::Other only.
    other_types: HashMap<u32, Box<str>>,
    other_roles: HashMap<u32, Box<str>>,
}

const KINDS: [EnvelopeType; 10] = [
    EnvelopeType::SessionMeta,
    EnvelopeType::Message,
    EnvelopeType::Grants,
    EnvelopeType::Compaction,
    EnvelopeType::Elision,
    EnvelopeType::ToolDispatched,
    EnvelopeType::ToolSettled,
    EnvelopeType::RunContext,
    EnvelopeType::Rewind,
    EnvelopeType::Other,
];
const ROLES: [Role; 5] = [
    Role::System,
    Role::User,
    Role::Assistant,
    Role::Tool,
    Role::Other,
];

fn tag_of(kind: EnvelopeType, role: Option<Role>) -> u8 {
    let k = KINDS.iter().position(|&x| x == kind).unwrap_or(9) as u8;
    let r = role.map_or(0, |r| {
        ROLES.iter().position(|&x| x == r).unwrap_or(4) as u8 + 1
    });
    k | r << 4
}

fn kind_of_tag(tag: u8) -> EnvelopeType {
    KINDS
        .get(usize::from(tag & 0x0F))
        .copied()
        .unwrap_or(EnvelopeType::Other)
}

fn role_of_tag(tag: u8) -> Option<Role> {
    match tag >> 4 {
        0 => None,
        r => ROLES.get(usize::from(r) - 1).copied(),
    }
}

pub use crate::scan::MAX_LINE;

impl Index {
    /// Adds `env`, read at `rec`.
    pub fn push(&mut self, rec: LineRec, env: &Envelope) {
        let at = u32::try_from(self.len()).unwrap_or(u32::MAX);
        if let Some(name) = &env.other_type {
            self.other_types.insert(at, name.clone());
        }
        if let (Some(Role::Other), Detail::Message { role, .. }) = (rec.role, &env.detail) {
            self.other_roles.insert(at, role.as_str().into());
        }
        self.push_rec(rec);
    }

    // Adds a record whose names (if Other) are already kept.
    fn push_rec(&mut self, rec: LineRec) {
        let i = self.len() as u64;
        let bump = rec.number.saturating_sub(i + 1);
        if bump != self.bumps.last().map_or(0, |b| b.1) {
            self.bumps
                .push((u32::try_from(i).unwrap_or(u32::MAX), bump));
        }
        let high = rec.offset >> 32;
        while (self.highs.len() as u64) < high {
            self.highs.push(u32::try_from(i).unwrap_or(u32::MAX));
        }
        self.offsets.push(rec.offset as u32);
        self.lens.push(rec.len);
        self.tags.push(tag_of(rec.kind, rec.role));
    }

    /// Room for `more` envelopes, without the doubling a growing list does.
    pub fn reserve(&mut self, more: usize) {
        // A guess: if the memory is not there, the lists grow as they go.
        let _ = self.offsets.try_reserve_exact(more);
        let _ = self.lens.try_reserve_exact(more);
        let _ = self.tags.try_reserve_exact(more);
    }

    /// The number of envelopes.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether there is no envelope.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// Envelope `i`'s record.
    pub fn get(&self, i: usize) -> Option<LineRec> {
        let tag = *self.tags.get(i)?;
        let at = self.bumps.partition_point(|b| (b.0 as usize) <= i);
        let bump = if at == 0 { 0 } else { self.bumps[at - 1].1 };
        Some(LineRec {
            offset: self.offset(i)?,
            len: *self.lens.get(i)?,
            number: i as u64 + 1 + bump,
            kind: kind_of_tag(tag),
            role: role_of_tag(tag),
        })
    }

    // Envelope `i`'s offset.
    fn offset(&self, i: usize) -> Option<u64> {
        let low = u64::from(*self.offsets.get(i)?);
        let high = self.highs.partition_point(|&h| (h as usize) <= i) as u64;
        Some(high << 32 | low)
    }

    /// Every envelope's record, in file order.
    pub fn records(&self) -> Vec<LineRec> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Envelope `i`'s type.
    pub fn kind(&self, i: usize) -> Option<EnvelopeType> {
        self.tags.get(i).map(|&t| kind_of_tag(t))
    }

    /// Envelope `i`'s 1-based line number.
    pub fn number(&self, i: usize) -> Option<u64> {
        self.get(i).map(|r| r.number)
    }

    /// Envelope `i`'s wire type.
    pub fn type_name(&self, i: usize) -> Option<&str> {
        let kind = self.kind(i)?;
        match kind.wire_name() {
            Some(name) => Some(name),
            None => self.other_types.get(&u32::try_from(i).ok()?).map(|n| &**n),
        }
    }

    /// Envelope `i`'s role, if it is a message.
    pub fn role(&self, i: usize) -> Option<&str> {
        let role = role_of_tag(*self.tags.get(i)?)?;
        match role.wire_name() {
            Some(name) => Some(name),
            None => self.other_roles.get(&u32::try_from(i).ok()?).map(|n| &**n),
        }
    }

    /// Envelope `i`'s bytes, its `\n` included, in a file whose first `end`
    /// bytes were read (a last line without its `\n` is one byte shorter).
    pub fn size_of(&self, i: usize, end: u64) -> Option<u64> {
        let len = u64::from(*self.lens.get(i)?);
        let stop = self.offset(i)? + len;
        Some(len + u64::from(stop < end))
    }

    /// Count and bytes per type, in the order each type first appears.
    pub fn type_totals(&self, end: u64) -> Vec<TypeTotal<'_>> {
        let mut totals: Vec<TypeTotal<'_>> = Vec::new();
        // Type names come from the file: a seeded hash (see `id_seed`).
        let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for i in 0..self.len() {
            let name = self.type_name(i).unwrap_or("");
            let k = *at.entry(name).or_insert_with(|| {
                totals.push(TypeTotal {
                    name,
                    count: 0,
                    bytes: 0,
                });
                totals.len() - 1
            });
            totals[k].count += 1;
            totals[k].bytes += self.size_of(i, end).unwrap_or(0);
        }
        totals
    }

    /// The indices of the envelopes of wire type `name`, in file order.
    pub fn indices_of_type(&self, name: &str) -> Vec<u32> {
        let kind = EnvelopeType::from_wire(name.as_bytes());
        (0..self.len())
            .filter(|&i| {
                self.kind(i) == Some(kind)
                    && (kind != EnvelopeType::Other || self.type_name(i) == Some(name))
            })
            .filter_map(|i| u32::try_from(i).ok())
            .collect()
    }

    /// The bytes of envelope `i` (its `\n` left out), read from `src` into `buf`.
    pub fn read_line<'b, R: ReadAt + ?Sized>(
        &self,
        src: &R,
        i: u32,
        buf: &'b mut Vec<u8>,
    ) -> io::Result<&'b [u8]> {
        let rec = self
            .get(i as usize)
            .ok_or_else(|| io::Error::other("no such envelope"))?;
        buf.resize(rec.len as usize, 0);
        let mut filled = 0;
        while filled < buf.len() {
            let n = src.read_at(&mut buf[filled..], rec.offset + filled as u64)?;
            if n == 0 {
                let shrank = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was read",
                );
                return Err(shrank);
            }
            filled += n;
        }
        Ok(buf)
    }

    /// For each envelope in `indices` (in that order), its line and where the
    /// members `keys` of its payload are in it (see [`member_spans`]; all None
    /// when the payload is not an object): what a reader needs to decode those
    /// members and nothing else. Lines are read on every core.
    pub fn payload_members<R: ReadAt + Sync + ?Sized>(
        &self,
        src: &R,
        indices: &[u32],
        keys: &[&str],
    ) -> Result<Vec<Members>, LoadError> {
        on_every_core(indices, |i| {
            let mut line = Vec::new();
            self.read_line(src, i, &mut line)?;
            let number = self.number(i as usize).unwrap_or(0);
            let malformed = |error| LoadError::Line {
                line: number,
                error: LineError::Malformed(error),
            };
            let mut spans = vec![None; keys.len()];
            if let Some(p) = member_span_at(&line, &["payload"]).map_err(malformed)? {
                let payload = &line[p.start as usize..p.end as usize];
                let inner = member_spans(payload, keys).map_err(malformed)?;
                for (out, at) in spans.iter_mut().zip(inner) {
                    *out = at.map(|m| Span {
                        start: p.start + m.start,
                        end: p.start + m.end,
                    });
                }
            }
            Ok(Members { line, spans })
        })
    }

    /// Message count per role, in the order each role first appears.
    pub fn role_counts(&self) -> Vec<(&str, u64)> {
        let mut counts: Vec<(&str, u64)> = Vec::new();
        // Roles come from the file: a seeded hash (see `id_seed`).
        let mut at: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for i in 0..self.len() {
            let Some(role) = self.role(i) else { continue };
            let k = *at.entry(role).or_insert_with(|| {
                counts.push((role, 0));
                counts.len() - 1
            });
            counts[k].1 += 1;
        }
        counts
    }
}

/// [`Source::part`] of a message that is a whole line: a message line, or a
/// compaction's summary.
pub const WHOLE: u32 = u32::MAX;

/// Where a message comes from: a message line, a compaction line (its summary),
/// or the `part`-th message of a compaction's replacement (whose id is
/// `"<compaction id>:<part>"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source {
    /// Index into [`Index::lines`].
    pub line: u32,
    /// [`WHOLE`], or the replacement message's position in its compaction.
    pub part: u32,
}

impl Source {
    /// A whole line.
    pub fn whole(line: u32) -> Self {
        Source { line, part: WHOLE }
    }
}

/// One message of the live list: where it comes from and, if an elision
/// stubbed it, where the stub is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveMessage {
    /// Index into [`Index::lines`]: the message line, or the compaction line
    /// of a summary or a replacement message.
    pub line: u32,
    /// [`WHOLE`], or the replacement message's position in compaction `line`.
    pub part: u32,
    // The elision line (never line 0, the session-meta: so the Option costs
    // nothing) and the stub's span in it.
    stub_at: Option<(NonZeroU32, Span)>,
    /// Kept by compaction.
    pub sticky: bool,
}

impl LiveMessage {
    fn new(line: u32, part: u32, sticky: bool) -> Self {
        LiveMessage {
            line,
            part,
            stub_at: None,
            sticky,
        }
    }

    /// Where it comes from.
    pub fn source(&self) -> Source {
        Source {
            line: self.line,
            part: self.part,
        }
    }

    /// The elision line whose stub replaced its content, and the stub's span
    /// in that line; None when no elision stubbed it.
    pub fn stub(&self) -> Option<(u32, Span)> {
        self.stub_at.map(|(line, span)| (line.get(), span))
    }
}

/// A dispatched tool operation with no settle line yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingOp {
    /// The model's call id.
    pub call_id: Option<Id>,
    /// The line of the tool message answering it, written after the dispatch.
    pub result: Option<u32>,
}

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
        /// The id named.
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
    /// Reading failed.
    Io(io::Error),
    /// Line `line` is not a usable envelope.
    Line {
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        error: LineError,
    },
    /// Line `line` cannot be replayed.
    Replay {
        /// 1-based line number.
        line: u64,
        /// Why.
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

/// What one compaction did to the live list, in live order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compacted {
    /// The messages it replaced (summaries and replacements of earlier
    /// compactions included).
    pub replaced: Vec<Source>,
    /// The sticky messages it kept.
    pub kept: Vec<Source>,
}

/// One message an elision stubbed, and the stub it carried before (an earlier
/// elision's line and the stub's span), if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elided {
    /// Index of the message's line (a compaction line for a summary or a
    /// replacement message).
    pub line: u32,
    /// [`WHOLE`], or the replacement message's position in its compaction.
    pub part: u32,
    /// The stub it had before this elision.
    pub stub_before: Option<(u32, Span)>,
}

impl Elided {
    /// The message it stubbed.
    pub fn source(&self) -> Source {
        Source {
            line: self.line,
            part: self.part,
        }
    }
}

/// What replay did, kept for a reader that shows a transcript (never by a
/// writing session, which has no use for it). Lines are line indices.
#[derive(Debug, Default)]
pub struct History {
    /// Compaction line -> what it replaced and kept.
    pub compactions: HashMap<u32, Compacted>,
    /// Elision line -> the messages it stubbed, in item order.
    pub elisions: HashMap<u32, Vec<Elided>>,
    /// Rewind line -> the live messages it dropped, in live order.
    pub rewinds: HashMap<u32, Vec<Source>>,
    /// Dispatch line -> the settle line that settled it.
    pub settled_by: HashMap<u32, u32>,
    /// Message -> the first elision line that stubbed it.
    pub elided_by: HashMap<Source, u32>,
    /// Message -> the compaction line that took it out of the live list.
    pub compacted_by: HashMap<Source, u32>,
    /// Message -> the rewind line that dropped it from the live list.
    pub rewound_by: HashMap<Source, u32>,
}

/// Envelope id -> line index, for every line. The ids of the usual forms (32
/// lowercase hex digits, like this library's, or a lowercase UUID with its
/// dashes) are kept packed in 16 bytes, the others whole on the side; an open
/// addressing table of line indices finds them. About 30 bytes a line, where a
/// map of boxed ids takes about 90: on a file of small lines the id table is
/// most of a session's memory.
#[derive(Debug, Default)]
struct IdTable {
    // Line i's id packed (see `pack`), or zeros when its form is OTHER.
    packed: Vec<[u8; 16]>,
    // Line i's form: HEX32, UUID or OTHER.
    form: Vec<u8>,
    // The OTHER ids, by line.
    others: HashMap<u32, Box<[u8]>>,
    // `hash >> 32 << 32 | line index`, or EMPTY; of any length (or empty),
    // under 3/4 full (a load sizes it two thirds full). The hash's high half
    // picks the home slot and is compared before the id is: a probe rarely
    // reads an id that is not the one looked for.
    slots: Vec<u64>,
}

const EMPTY: u64 = u64::MAX;
const HEX32: u8 = 0;
const UUID: u8 = 1;
const OTHER: u8 = 2;

// Each byte's value as a lowercase hex digit, or 0xFF.
#[cfg(not(target_arch = "x86_64"))]
const HEX: [u8; 256] = {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

// 16 bytes from 32 lowercase hex digits, or None.
fn unhex(digits: &[u8]) -> Option<[u8; 16]> {
    if digits.len() != 32 {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut out = [0u8; 16];
        let (a, b) = digits.split_at(16);
        let (lo, hi) = out.split_at_mut(8);
        (unhex16(a, lo) && unhex16(b, hi)).then_some(out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut out = [0u8; 16];
        let mut bad = 0u8;
        for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            let (hi, lo) = (HEX[pair[0] as usize], HEX[pair[1] as usize]);
            bad |= hi | lo;
            *o = hi << 4 | (lo & 0x0F);
        }
        // A valid digit is < 16: any 0xFF leaves high bits set.
        (bad < 16).then_some(out)
    }
}

// The 8 bytes of the 16 lowercase hex digits `digits`, into `out`; false
// (and `out` unspecified) when one is not a lowercase hex digit. A vector
// does the 16 at once: the id of every line of a load goes through here.
#[cfg(target_arch = "x86_64")]
fn unhex16(digits: &[u8], out: &mut [u8]) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_and_si128, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_packus_epi16, _mm_set1_epi16, _mm_set1_epi8, _mm_setzero_si128,
        _mm_slli_epi16, _mm_srli_epi16, _mm_storel_epi64,
    };
    if digits.len() != 16 || out.len() != 8 {
        return false;
    }
    // SAFETY: SSE2 is part of the x86_64 baseline; the load reads exactly the
    // 16 bytes of `digits` and the store writes exactly the 8 bytes of `out`
    // (both lengths checked above); unaligned loads and stores need no
    // alignment.
    unsafe {
        let x = _mm_loadu_si128(digits.as_ptr().cast::<__m128i>());
        // Signed compares: a byte >= 0x80 is negative and in neither range.
        let digit = _mm_and_si128(
            _mm_cmpgt_epi8(x, _mm_set1_epi8(b'0' as i8 - 1)),
            _mm_cmpgt_epi8(_mm_set1_epi8(b'9' as i8 + 1), x),
        );
        let letter = _mm_and_si128(
            _mm_cmpgt_epi8(x, _mm_set1_epi8(b'a' as i8 - 1)),
            _mm_cmpgt_epi8(_mm_set1_epi8(b'f' as i8 + 1), x),
        );
        if _mm_movemask_epi8(_mm_or_si128(digit, letter)) != 0xFFFF {
            return false;
        }
        // '0'..'9' and 'a'..'f' hold their value (less 9 for a letter) in
        // their low four bits.
        let nibbles = _mm_add_epi8(
            _mm_and_si128(x, _mm_set1_epi8(0x0F)),
            _mm_and_si128(letter, _mm_set1_epi8(9)),
        );
        // Each 16-bit lane holds a digit pair, the first in its low byte:
        // first << 4 | second, in the lane's low byte.
        let pairs = _mm_and_si128(
            _mm_or_si128(_mm_slli_epi16(nibbles, 4), _mm_srli_epi16(nibbles, 8)),
            _mm_set1_epi16(0x00FF),
        );
        let packed = _mm_packus_epi16(pairs, _mm_setzero_si128());
        _mm_storel_epi64(out.as_mut_ptr().cast::<__m128i>(), packed);
    }
    true
}

// `id` in 16 bytes with its form, when it is 32 lowercase hex digits or a
// lowercase UUID (8-4-4-4-12 with dashes); an uppercase digit is another id.
fn pack(id: &[u8]) -> Option<(u8, [u8; 16])> {
    match id.len() {
        32 => Some((HEX32, unhex(id)?)),
        36 => {
            if id[8] != b'-' || id[13] != b'-' || id[18] != b'-' || id[23] != b'-' {
                return None;
            }
            let mut digits = [0u8; 32];
            digits[..8].copy_from_slice(&id[..8]);
            digits[8..12].copy_from_slice(&id[9..13]);
            digits[12..16].copy_from_slice(&id[14..18]);
            digits[16..20].copy_from_slice(&id[19..23]);
            digits[20..].copy_from_slice(&id[24..]);
            Some((UUID, unhex(&digits)?))
        }
        _ => None,
    }
}

// A 64-bit finaliser (splitmix64's): every input bit reaches the high bits
// the table indexes by. Ids share their leading (time) bytes; this spreads them.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// The high half of a 128-bit product folded onto its low half (wyhash's and
// foldhash's step): with secret operands, an output nobody can aim at.
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p >> 64) as u64 ^ p as u64
}

/// The id hash's secret: drawn once per process from the system's randomness
/// (std's `RandomState`). Ids come from files anyone may write; an unseeded
/// hash lets them be chosen so that all probe one slot, and a load of 160,000
/// such lines goes quadratic (30 s instead of half a second).
fn id_seed() -> &'static (std::collections::hash_map::RandomState, [u64; 3]) {
    static SEED: std::sync::OnceLock<(std::collections::hash_map::RandomState, [u64; 3])> =
        std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let keys = [
            state.hash_one(0u8),
            state.hash_one(1u8),
            state.hash_one(2u8),
        ];
        (state, keys)
    })
}

fn hash_packed(form: u8, packed: &[u8; 16]) -> u64 {
    let (a, b) = packed.split_at(8);
    let a = u64::from_le_bytes(a.try_into().unwrap_or_default());
    let b = u64::from_le_bytes(b.try_into().unwrap_or_default());
    let [k0, k1, k2] = id_seed().1;
    mix(fold(a ^ k0, b ^ k1 ^ u64::from(form)) ^ k2)
}

fn hash_other(id: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    // SipHash, keyed: the rare id that is not 32 hex digits or a UUID.
    id_seed().0.hash_one(id)
}

/// An id as the id table keeps it, with its hash: worked out where the line
/// is read (on a parser thread during a load), so that replay only probes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Keyed {
    form: u8,
    packed: [u8; 16],
    // The id itself, for the OTHER form only.
    other: Option<Box<[u8]>>,
    hash: u64,
}

impl Keyed {
    /// The key of `id`.
    pub(crate) fn of(id: &[u8]) -> Self {
        match pack(id) {
            Some((form, packed)) => Keyed {
                form,
                packed,
                other: None,
                hash: hash_packed(form, &packed),
            },
            None => Keyed {
                form: OTHER,
                packed: [0; 16],
                other: Some(id.into()),
                hash: hash_other(id),
            },
        }
    }

    /// The key of the id whose 32 lowercase hex digits are those of `bits`:
    /// [`Keyed::of`] of those digits, without reading them.
    pub(crate) fn of_hex32_bits(bits: [u8; 16]) -> Self {
        Keyed {
            form: HEX32,
            packed: bits,
            other: None,
            hash: hash_packed(HEX32, &bits),
        }
    }

    // The id's bytes again (for a message about it).
    fn id_bytes(&self) -> Vec<u8> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        if let Some(id) = &self.other {
            return id.to_vec();
        }
        let mut out = Vec::with_capacity(36);
        for (i, b) in self.packed.iter().enumerate() {
            if self.form == UUID && matches!(i, 4 | 6 | 8 | 10) {
                out.push(b'-');
            }
            out.push(DIGITS[usize::from(b >> 4)]);
            out.push(DIGITS[usize::from(b & 0x0F)]);
        }
        out
    }

    // The id's bytes, when it is not packed (a packed id has no `:`, so it
    // never names a replacement message).
    fn other_id(&self) -> Option<&[u8]> {
        self.other.as_deref()
    }
}

impl IdTable {
    // The first slot to probe for `hash`: its high half (the tag every slot
    // keeps) scaled to the table's length, which need not be a power of two,
    // so the table is sized to what it holds, not to the next doubling.
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash >> 32) * self.slots.len() as u128) >> 32) as usize
    }

    /// The line of `id`, if an envelope has it.
    fn get(&self, id: &[u8]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(&Keyed::of(id))
    }

    /// Asks the processor for the slot `hash` is looked up in, ahead of the
    /// lookup: replay does it a few lines ahead, so that its probe of a table
    /// bigger than the cache does not wait on memory.
    #[inline]
    fn prefetch(&self, hash: u64) {
        if let Some(slot) = self.slots.get(self.home(hash)) {
            prefetch(slot);
        }
    }

    /// The line of the id `key`, if an envelope has it.
    fn find(&self, key: &Keyed) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = key.hash;
        let len = self.slots.len();
        let mut at = self.home(hash);
        loop {
            let slot = *self.slots.get(at)?;
            if slot == EMPTY {
                return None;
            }
            at += 1;
            if at == len {
                at = 0;
            }
            if slot >> 32 != hash >> 32 {
                continue;
            }
            let line = slot as u32;
            let i = line as usize;
            let same = match (key.form, self.form.get(i)) {
                (OTHER, Some(&OTHER)) => match (&key.other, self.others.get(&line)) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                },
                (form, Some(&f)) => f == form && self.packed.get(i) == Some(&key.packed),
                _ => false,
            };
            if same {
                return Some(line);
            }
        }
    }

    // Puts `line` in the first free slot of its probe run (the table has room).
    fn place(&mut self, line: u32, hash: u64) {
        let len = self.slots.len();
        let mut at = self.home(hash);
        while let Some(slot) = self.slots.get_mut(at) {
            if *slot == EMPTY {
                *slot = hash >> 32 << 32 | u64::from(line);
                return;
            }
            at += 1;
            if at == len {
                at = 0;
            }
        }
    }

    /// Room for `more` ids, without the doubling a growing list does, and
    /// slots enough for them at two thirds full (a table grown later holds
    /// its old slots and its new ones at once: one and a half times its size).
    fn reserve(&mut self, more: usize) {
        let _ = self.packed.try_reserve_exact(more);
        let _ = self.form.try_reserve_exact(more);
        let want = (self.form.len() + more).saturating_mul(3) / 2 + 1;
        if want > self.slots.len() {
            self.grow_to(want.max(64));
        }
    }

    // Moves every slot to a new table of `size` slots. Each slot's tag is its
    // hash's high half, which is all `home` reads: no id is hashed again.
    fn grow_to(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            self.place(slot as u32, slot);
        }
    }

    /// Adds the id of the next line, `line` (lines are added in order, each
    /// id once: replay has checked it is new).
    fn push(&mut self, key: Keyed, line: u32) {
        if (self.form.len() + 1) * 4 > self.slots.len() * 3 {
            // Under 3/4 full, always: a probe run then ends at an empty slot.
            self.grow_to((self.slots.len() * 2).max(64));
        }
        self.form.push(key.form);
        self.packed.push(key.packed);
        if let Some(id) = key.other {
            self.others.insert(line, id);
        }
        self.place(line, key.hash);
    }
}

/// Asks the processor to bring the cache lines of `item` in (one hint per 64
/// bytes), ahead of its use: nothing is read, nothing can fault.
#[inline]
fn prefetch<T>(item: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = (item as *const T).cast::<i8>();
        let mut at = 0;
        while at < std::mem::size_of::<T>().max(1) {
            // SAFETY: a prefetch only hints the cache; it reads nothing and
            // cannot fault; the address is inside `item` (`at` < its size).
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.add(at),
                );
            }
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// An envelope [`Transcript::accept`] found may follow a transcript's lines,
/// or a message line the writer made itself, which
/// [`Transcript::accept_message`] accepted from what it knows of it.
#[derive(Debug)]
pub struct Accepted(AcceptedKind);

#[derive(Debug)]
enum AcceptedKind {
    // Boxed: an Accepted passes through a few calls between its check and
    // its push, and a message's is small enough to move without a memcpy.
    Line(Box<(Envelope, Keyed)>),
    // What replay keeps of a message, without the envelope a parse would
    // build (its id and role copied into allocations of their own): an
    // append is a few hundred nanoseconds, and those were a fifth of them.
    Message {
        key: Keyed,
        role: Role,
        // The role's name, for a role that is not one of the four.
        other_role: Option<Box<str>>,
        sticky: bool,
        // A tool message's call id.
        tool_call_id: Option<Box<[u8]>>,
    },
}

impl Accepted {
    /// The record of its line: `len` bytes at `offset`, line `number`.
    pub fn line_rec(&self, offset: u64, len: usize, number: u64) -> LineRec {
        match &self.0 {
            AcceptedKind::Line(line) => LineRec::new(&line.0, offset, len, number),
            AcceptedKind::Message { role, .. } => LineRec {
                offset,
                len: u32::try_from(len).unwrap_or(u32::MAX),
                number,
                kind: EnvelopeType::Message,
                role: Some(*role),
            },
        }
    }
}

/// A new envelope id (32 lowercase hex digits) that no line of a transcript
/// had when [`Transcript::fresh_id`] drew it, and its id-table key.
#[derive(Debug, Clone)]
pub struct FreshId {
    id: [u8; 32],
    key: Keyed,
    // How many lines the transcript had then: while it has no more, the id
    // is still fresh without looking again.
    drawn_at: usize,
}

impl FreshId {
    /// The id's digits.
    pub fn digits(&self) -> &[u8; 32] {
        &self.id
    }

    /// The id, as text.
    pub fn as_str(&self) -> &str {
        // The digits are ASCII.
        std::str::from_utf8(&self.id).unwrap_or_default()
    }
}

/// A transcript's index and replayed state.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Every envelope, in file order, with its type and role.
    pub index: Index,
    // Ids as their lines have them, decoded (WTF-8: see [`Id`]).
    ids: IdTable,
    /// The live messages, compactions, elisions and rewinds applied.
    pub live: Vec<LiveMessage>,
    // Line index -> position in `live`, or NOT_LIVE.
    live_pos: Vec<u32>,
    // Compaction line -> its replacement's messages, for the compactions that
    // carry one (a transcript without any pays nothing).
    parts: HashMap<u32, Box<[Part]>>,
    // Replacement message -> its position in `live`, while it is live.
    part_pos: HashMap<Source, u32>,
    /// Dispatched, unsettled operations by dispatch line, in dispatch order.
    pub pending: BTreeMap<u32, PendingOp>,
    // Call id -> the pending operations dispatched for it that no tool message
    // has answered yet, so a tool message finds its own without a scan of them
    // all (a writer that never settles would make that quadratic). Keyed by
    // what the file says, hence the std map's seeded hash.
    awaiting: std::collections::HashMap<Id, Vec<u32>>,
    /// The last grants line.
    pub grants: Option<u32>,
    /// Section digest -> the run-context line carrying its text.
    pub sections: std::collections::HashMap<Box<str>, u32>,
    /// Lines in the file, blank ones included: the next line's number less one.
    pub line_count: u64,
    /// What replay did, when asked to keep it (see [`inspect`]).
    pub history: Option<History>,
}

const NOT_LIVE: u32 = u32::MAX;

// `k` as `f"{k}"` writes it (no sign, no leading zero), or None.
fn canonical_index(digits: &[u8]) -> Option<u32> {
    let first = *digits.first()?;
    if !digits.iter().all(u8::is_ascii_digit) || (first == b'0' && digits.len() > 1) {
        return None;
    }
    std::str::from_utf8(digits)
        .ok()?
        .parse()
        .ok()
        .filter(|&k| k != WHOLE)
}

impl Transcript {
    fn live_position(&self, at: Source) -> Option<u32> {
        if at.part == WHOLE {
            self.live_pos
                .get(at.line as usize)
                .copied()
                .filter(|&p| p != NOT_LIVE)
        } else {
            self.part_pos.get(&at).copied()
        }
    }

    fn set_position(&mut self, at: Source, position: u32) {
        if at.part == WHOLE {
            if let Some(p) = self.live_pos.get_mut(at.line as usize) {
                *p = position;
            }
        } else if position == NOT_LIVE {
            self.part_pos.remove(&at);
        } else {
            self.part_pos.insert(at, position);
        }
    }

    /// The line index of envelope `id` (its decoded bytes: see [`Id`]).
    pub fn line_of(&self, id: impl AsRef<[u8]>) -> Option<u32> {
        self.ids.get(id.as_ref())
    }

    /// What `id` names: an envelope's line, or a message of a compaction's
    /// replacement (`"<compaction id>:<k>"`).
    pub fn resolve(&self, id: impl AsRef<[u8]>) -> Option<Source> {
        let id = id.as_ref();
        match self.ids.get(id) {
            Some(line) => Some(Source::whole(line)),
            None => self.part_named(id),
        }
    }

    // The replacement message whose id is `id`, if there is one.
    fn part_named(&self, id: &[u8]) -> Option<Source> {
        if self.parts.is_empty() {
            return None;
        }
        let colon = memchr::memrchr(b':', id)?;
        let part = canonical_index(&id[colon + 1..])?;
        let line = self.ids.get(&id[..colon])?;
        ((part as usize) < self.parts.get(&line)?.len()).then_some(Source { line, part })
    }

    /// The replacement messages of compaction line `line`, if it carries a
    /// replacement.
    pub fn parts_of(&self, line: u32) -> Option<&[Part]> {
        self.parts.get(&line).map(|p| &**p)
    }

    /// Replacement message `part` of compaction line `line`.
    pub fn part(&self, line: u32, part: u32) -> Option<&Part> {
        self.parts_of(line)?.get(part as usize)
    }

    /// The position in [`Transcript::live`] of the message `id` names, if it is live.
    pub fn position(&self, id: impl AsRef<[u8]>) -> Option<u32> {
        self.resolve(id).and_then(|at| self.live_position(at))
    }

    /// Whether `id` names a live message.
    pub fn is_live(&self, id: impl AsRef<[u8]>) -> bool {
        self.position(id).is_some()
    }

    /// Whether a new envelope may not take `id`: an envelope or a replacement
    /// message has it.
    pub fn is_taken(&self, id: impl AsRef<[u8]>) -> bool {
        self.resolve(id).is_some()
    }

    /// Checks that `env` can follow what is there; `strict` also refuses settles
    /// of unknown or settled operations (an append does; a load tolerates them).
    pub fn check(&self, env: &Envelope, strict: bool) -> Result<(), ReplayError> {
        self.check_keyed(env, &Keyed::of(&env.id), strict)
    }

    // What every envelope must pass: the session-meta first and only there,
    // an id no envelope or replacement message has.
    fn check_head(
        &self,
        kind: EnvelopeType,
        key: &Keyed,
        id: impl Fn() -> Vec<u8>,
    ) -> Result<(), ReplayError> {
        if self.index.is_empty() {
            if kind != EnvelopeType::SessionMeta {
                return Err(ReplayError::NoMeta);
            }
        } else if kind == EnvelopeType::SessionMeta {
            return Err(ReplayError::MetaNotFirst);
        }
        if self.ids.find(key).is_some() {
            return Err(ReplayError::DuplicateId(id_text(&id())));
        }
        if let Some(other) = key.other_id() {
            if self.part_named(other).is_some() {
                return Err(ReplayError::IdClash(id_text(other)));
            }
        }
        Ok(())
    }

    fn check_keyed(&self, env: &Envelope, key: &Keyed, strict: bool) -> Result<(), ReplayError> {
        self.check_head(env.kind, key, || env.id.clone())?;
        match &env.detail {
            Detail::Compaction { through, .. } if !self.is_live(through) => {
                Err(ReplayError::UnknownId {
                    id: id_text(through),
                    by: "compaction",
                })
            }
            Detail::Compaction {
                replacement: Some(parts),
                ..
            } => {
                let mut id = Vec::with_capacity(env.id.len() + 4);
                for k in 0..parts.len() {
                    id.clear();
                    id.extend_from_slice(&env.id);
                    id.push(b':');
                    id.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
                    if self.ids.get(id.as_slice()).is_some() {
                        return Err(ReplayError::IdClash(id_text(&id)));
                    }
                }
                Ok(())
            }
            Detail::Rewind { through: Some(id) } if !self.is_live(id) => {
                Err(ReplayError::UnknownId {
                    id: id_text(id),
                    by: "rewind",
                })
            }
            Detail::Elision { items } => match items.iter().find(|(id, _)| !self.is_live(id)) {
                Some((id, _)) => Err(ReplayError::UnknownId {
                    id: id_text(id),
                    by: "elision",
                }),
                None => Ok(()),
            },
            Detail::ToolSettled { op_id } if strict => match self.line_of(op_id) {
                Some(l) if self.pending.contains_key(&l) => Ok(()),
                Some(l)
                    if self.index.get(l as usize).map(|r| r.kind)
                        == Some(EnvelopeType::ToolDispatched) =>
                {
                    Err(ReplayError::AlreadySettled(id_text(op_id)))
                }
                _ => Err(ReplayError::UnknownOperation(id_text(op_id))),
            },
            _ => Ok(()),
        }
    }

    /// Checks `env` (see [`Transcript::check`]) and, if it may, adds it at `rec`.
    pub fn push(&mut self, env: Envelope, rec: LineRec, strict: bool) -> Result<(), ReplayError> {
        let key = Keyed::of(&env.id);
        self.check_keyed(&env, &key, strict)?;
        self.push_checked(env, key, rec);
        Ok(())
    }

    /// Checks `env` as [`Transcript::check`] does and, if it may follow what is
    /// there, keeps it with its id's key for [`Transcript::push_accepted`]: an
    /// append checks before it writes and adds after, without checking twice.
    pub fn accept(&self, env: Envelope, strict: bool) -> Result<Accepted, ReplayError> {
        let key = Keyed::of(&env.id);
        self.check_keyed(&env, &key, strict)?;
        Ok(Accepted(AcceptedKind::Line(Box::new((env, key)))))
    }

    /// A new envelope id no envelope or replacement message of this
    /// transcript has, drawn from `ids` for Unix millisecond `ms`, with the
    /// key the id table finds it by (worked out once, for
    /// [`Transcript::accept_message`]).
    pub fn fresh_id(&self, ids: &mut IdGen, ms: u64) -> FreshId {
        loop {
            let bits = ids.next_bits_at(ms);
            let id = crate::stamp::hex_digits(&bits);
            let key = Keyed::of_hex32_bits(bits);
            debug_assert_eq!(key, Keyed::of(&id));
            // 32 hex digits hold no `:`: such an id never names a replacement
            // message, so the id table alone says whether it is taken.
            if self.ids.find(&key).is_none() {
                return FreshId {
                    id,
                    key,
                    drawn_at: self.index.len(),
                };
            }
        }
    }

    /// Accepts a message envelope with the fresh id `id` whose payload the
    /// writer made itself, from what it knows of it (`role`, whether it is
    /// `sticky` — sticky, sysprompt or a depth —, its `tool_call_id` when that
    /// is a string), without reading the line back: exactly the envelope
    /// [`Transcript::accept`] gets from parsing that line, checked as it
    /// checks it.
    pub fn accept_message(
        &self,
        id: &FreshId,
        role: &str,
        sticky: bool,
        tool_call_id: Option<&[u8]>,
    ) -> Result<Accepted, ReplayError> {
        // A message envelope's only checks are the head's: a session-meta
        // first, and an id no line has. A fresh id drawn since the last line
        // was added is known to be none's.
        if self.index.is_empty() {
            return Err(ReplayError::NoMeta);
        }
        if self.index.len() != id.drawn_at && self.ids.find(&id.key).is_some() {
            return Err(ReplayError::DuplicateId(id_text(&id.id)));
        }
        let role_is = Role::from_wire(role);
        Ok(Accepted(AcceptedKind::Message {
            key: id.key.clone(),
            role: role_is,
            other_role: (role_is == Role::Other).then(|| role.into()),
            sticky,
            tool_call_id: if role == "tool" {
                tool_call_id.map(Into::into)
            } else {
                None
            },
        }))
    }

    /// Adds an envelope [`Transcript::accept`] accepted, at `rec`. Nothing may
    /// have been added since, but envelopes accepted with it, in order, whose
    /// checks do not depend on one another (messages with distinct ids).
    pub fn push_accepted(&mut self, accepted: Accepted, rec: LineRec) {
        match accepted.0 {
            AcceptedKind::Line(line) => {
                let (env, key) = *line;
                self.push_checked(env, key, rec);
            }
            AcceptedKind::Message {
                key,
                other_role,
                sticky,
                tool_call_id,
                ..
            } => {
                // As push_checked adds a message envelope.
                if let Some(name) = other_role {
                    let at = u32::try_from(self.index.len()).unwrap_or(u32::MAX);
                    self.index.other_roles.insert(at, name);
                }
                let index = self.add_line(rec, key);
                self.add_message(index, sticky, tool_call_id.as_deref());
            }
        }
    }

    // Room for about `more` envelopes more (a load's guess from the file's size).
    fn reserve(&mut self, more: usize) {
        self.index.reserve(more);
        self.ids.reserve(more);
        let _ = self.live_pos.try_reserve_exact(more);
    }

    // The record, id and live position of the next line; its index.
    fn add_line(&mut self, rec: LineRec, key: Keyed) -> u32 {
        let index = u32::try_from(self.index.len()).unwrap_or(u32::MAX);
        self.line_count = self.line_count.max(rec.number);
        self.index.push_rec(rec);
        self.live_pos.push(NOT_LIVE);
        self.ids.push(key, index);
        index
    }

    // Message line `index` joins the live list; a tool message's answers the
    // operation dispatched for its call.
    fn add_message(&mut self, index: u32, sticky: bool, tool_call_id: Option<&[u8]>) {
        self.live_pos[index as usize] = self.live.len() as u32;
        self.live.push(LiveMessage::new(index, WHOLE, sticky));
        if let Some(ops) = tool_call_id.and_then(|call| self.awaiting.remove(call)) {
            for op in ops {
                if let Some(op) = self.pending.get_mut(&op) {
                    op.result = Some(index);
                }
            }
        }
    }

    // Line `index` dispatches an operation for `call_id`.
    fn dispatch(&mut self, index: u32, call_id: Option<Id>) {
        if let Some(call) = &call_id {
            self.awaiting.entry(call.clone()).or_default().push(index);
        }
        self.pending.insert(
            index,
            PendingOp {
                call_id,
                result: None,
            },
        );
    }

    // Settle line `index` settles the operation dispatched at `op`, if pending.
    fn settle(&mut self, index: u32, op: Option<u32>) {
        if let Some(l) = op {
            if let Some(op) = self.pending.remove(&l) {
                if let (Some(call), None) = (&op.call_id, op.result) {
                    if let Some(ops) = self.awaiting.get_mut(call) {
                        ops.retain(|&o| o != l);
                        if ops.is_empty() {
                            self.awaiting.remove(call);
                        }
                    }
                }
                if let Some(h) = &mut self.history {
                    h.settled_by.insert(l, index);
                }
            }
        }
    }

    // A line the fast scanner read (see `Item::Scanned`), whose segment's
    // call ids and operation keys are `calls` and `ops`: checked and added.
    fn push_scanned(
        &mut self,
        s: ScannedLine,
        rec: LineRec,
        calls: &[u8],
        ops: &[Keyed],
    ) -> Result<(), ReplayError> {
        self.check_head(s.kind, &s.key, || s.key.id_bytes())?;
        let call = s
            .call
            .and_then(|(at, len)| calls.get(at as usize..(at + len) as usize));
        let index = self.add_line(rec, s.key);
        match s.kind {
            EnvelopeType::Message => self.add_message(index, s.sticky, call),
            EnvelopeType::ToolDispatched => self.dispatch(index, call.map(<[u8]>::to_vec)),
            EnvelopeType::ToolSettled => {
                let op = ops.get(s.op as usize).and_then(|k| self.ids.find(k));
                self.settle(index, op);
            }
            EnvelopeType::Grants => self.grants = Some(index),
            _ => {}
        }
        Ok(())
    }

    fn push_checked(&mut self, env: Envelope, key: Keyed, rec: LineRec) {
        let at = u32::try_from(self.index.len()).unwrap_or(u32::MAX);
        if let Some(name) = &env.other_type {
            self.index.other_types.insert(at, name.clone());
        }
        if let (Some(Role::Other), Detail::Message { role, .. }) = (rec.role, &env.detail) {
            self.index.other_roles.insert(at, role.as_str().into());
        }
        let index = self.add_line(rec, key);
        match env.detail {
            Detail::None => {
                if env.kind == EnvelopeType::Grants {
                    self.grants = Some(index);
                }
            }
            Detail::Message {
                sticky,
                tool_call_id,
                ..
            } => self.add_message(index, sticky, tool_call_id.as_deref()),
            Detail::Compaction {
                through,
                replacement,
            } => {
                // [m for m in live[:i+1] if m.is_sticky] + (replacement or
                // [summary]) + live[i+1:]
                let cut = self.position(&through).unwrap_or(0) as usize;
                let added = replacement.as_ref().map_or(1, Vec::len);
                let mut live = Vec::with_capacity(self.live.len() - cut + added);
                live.extend(self.live[..=cut].iter().filter(|m| m.sticky).copied());
                match &replacement {
                    None => live.push(LiveMessage::new(index, WHOLE, false)),
                    Some(parts) => live.extend(parts.iter().enumerate().map(|(k, p)| {
                        let k = u32::try_from(k).unwrap_or(WHOLE - 1);
                        LiveMessage::new(index, k, p.sticky)
                    })),
                }
                live.extend_from_slice(&self.live[cut + 1..]);
                if let Some(h) = &mut self.history {
                    let mut done = Compacted::default();
                    for m in &self.live[..=cut] {
                        if m.sticky {
                            done.kept.push(m.source());
                        } else {
                            done.replaced.push(m.source());
                            h.compacted_by.insert(m.source(), index);
                        }
                    }
                    h.compactions.insert(index, done);
                }
                for m in &self.live {
                    if m.part == WHOLE {
                        self.live_pos[m.line as usize] = NOT_LIVE;
                    }
                }
                self.part_pos.clear();
                if let Some(parts) = replacement {
                    self.parts.insert(index, parts.into_boxed_slice());
                }
                for (i, m) in live.iter().enumerate() {
                    self.set_position(m.source(), i as u32);
                }
                self.live = live;
            }
            Detail::Rewind { through } => {
                // live[:i+1], or [] for null
                let keep = match &through {
                    None => 0,
                    Some(id) => self
                        .position(id)
                        .map_or(self.live.len(), |p| p as usize + 1),
                };
                if let Some(h) = &mut self.history {
                    let dropped: Vec<Source> =
                        self.live[keep..].iter().map(LiveMessage::source).collect();
                    for at in &dropped {
                        h.rewound_by.insert(*at, index);
                    }
                    h.rewinds.insert(index, dropped);
                }
                for k in keep..self.live.len() {
                    let at = self.live[k].source();
                    self.set_position(at, NOT_LIVE);
                }
                self.live.truncate(keep);
            }
            Detail::Elision { items } => {
                let mut elided = Vec::with_capacity(items.len());
                let stub_line = NonZeroU32::new(index);
                for (id, span) in items {
                    if let Some(pos) = self.position(&id) {
                        let m = &mut self.live[pos as usize];
                        elided.push(Elided {
                            line: m.line,
                            part: m.part,
                            stub_before: m.stub(),
                        });
                        m.stub_at = stub_line.map(|line| (line, span));
                    }
                }
                if let Some(h) = &mut self.history {
                    for e in &elided {
                        h.elided_by.entry(e.source()).or_insert(index);
                    }
                    h.elisions.insert(index, elided);
                }
            }
            Detail::ToolDispatched { call_id } => self.dispatch(index, call_id),
            Detail::ToolSettled { op_id } => {
                let op = self.line_of(&op_id);
                self.settle(index, op);
            }
            Detail::RunContext { carried } => {
                for digest in carried {
                    self.sections
                        .entry(digest.into_boxed_str())
                        .or_insert(index);
                }
            }
        }
    }
}

impl Transcript {
    /// For each elision line in `elisions` (in that order), the decoded UTF-8
    /// size of the content each message it stubbed had just before (its
    /// earlier stub, a summary, or its own content), in item order: what a
    /// reader reports as the bytes an elision took out of the conversation.
    /// `Some(0)` for a null or missing content, None for one that is neither a
    /// string nor null. Lines are read on every core; nothing is built. Empty
    /// for a line that is not an elision, or without the [`History`].
    pub fn elided_sizes<R: ReadAt + Sync + ?Sized>(
        &self,
        src: &R,
        elisions: &[u32],
    ) -> Result<Vec<Vec<Option<u64>>>, LoadError> {
        on_every_core(elisions, |e| self.sizes_of(src, e))
    }

    fn sizes_of<R: ReadAt + ?Sized>(
        &self,
        src: &R,
        elision: u32,
    ) -> Result<Vec<Option<u64>>, LoadError> {
        let Some(items) = self.history.as_ref().and_then(|h| h.elisions.get(&elision)) else {
            return Ok(Vec::new());
        };
        let mut buf = Vec::new();
        let mut sizes = Vec::with_capacity(items.len());
        for e in items {
            let (line, found) = match e.stub_before {
                Some((line, at)) => {
                    let bytes = self.index.read_line(src, line, &mut buf)?;
                    let stub = bytes
                        .get(at.start as usize..at.end as usize)
                        .unwrap_or_default();
                    (line, string_size(stub).map(Some))
                }
                None if e.part != WHOLE => {
                    let bytes = self.index.read_line(src, e.line, &mut buf)?;
                    let at = self
                        .part(e.line, e.part)
                        .map(|p| p.span)
                        .unwrap_or_default();
                    let payload = bytes
                        .get(at.start as usize..at.end as usize)
                        .unwrap_or_default();
                    (e.line, string_size_at(payload, &["content"]))
                }
                None => {
                    let kind = self.index.get(e.line as usize).map(|r| r.kind);
                    let key = if kind == Some(EnvelopeType::Compaction) {
                        "summary"
                    } else {
                        "content"
                    };
                    let bytes = self.index.read_line(src, e.line, &mut buf)?;
                    (e.line, string_size_at(bytes, &["payload", key]))
                }
            };
            let number = self.index.get(line as usize).map_or(0, |r| r.number);
            let size = found.map_err(|error| LoadError::Line {
                line: number,
                error: LineError::Malformed(error),
            })?;
            // Nothing there: the content is None, of size 0.
            sizes.push(size.unwrap_or(Some(0)));
        }
        Ok(sizes)
    }
}

/// Reads the non-blank lines of bytes `start..end` of `src`, in order, in
/// chunks (memory holds one chunk and the longest line, never the file), and
/// hands each to `each` with its offset and its line number counted from
/// `start` (1-based, blank lines counted). `start` must be where a line starts.
/// Returns how many lines it counted.
pub fn for_each_line<R, E, F>(src: &R, start: u64, end: u64, mut each: F) -> Result<u64, E>
where
    R: ReadAt + ?Sized,
    E: From<io::Error>,
    F: FnMut(&[u8], u64, u64) -> Result<(), E>,
{
    for_each_line_within(src, start, end, u64::MAX, &mut each, &mut |_, _, _| Ok(()))
}

/// The read size of [`for_each_line`]; a longer line grows its buffer a
/// chunk at a time, up to [`LONG_LINE`].
const CHUNK: usize = 256 << 10;

/// A line longer than this is measured before it is read: [`for_each_line`]
/// reads on to its end without keeping its bytes, then reads it whole into a
/// buffer of its own size (so a line costs its own size in memory, and one
/// too long to keep costs nothing).
const LONG_LINE: usize = 4 << 20;

// Fills `buf` from `at` in `src`: a file that ends first shrank under the reader.
fn read_exact_at<R: ReadAt + ?Sized>(src: &R, buf: &mut [u8], at: u64) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = src.read_at(&mut buf[filled..], at + filled as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            ));
        }
        filled += n;
    }
    Ok(())
}

/// [`for_each_line`], keeping no line longer than `max` bytes: each such
/// line goes to `too_long` as `(offset, length, number)`, measured without
/// being read into memory.
pub fn for_each_line_within<R, E, F, G>(
    src: &R,
    start: u64,
    end: u64,
    max: u64,
    each: &mut F,
    too_long: &mut G,
) -> Result<u64, E>
where
    R: ReadAt + ?Sized,
    E: From<io::Error>,
    F: FnMut(&[u8], u64, u64) -> Result<(), E>,
    G: FnMut(u64, u64, u64) -> Result<(), E>,
{
    let mut each = |line: &[u8], offset, number, _utf8| each(line, offset, number);
    lines_within(src, start, end, max, &mut each, too_long)
}

/// [`for_each_line_within`], telling `each` whether its line is known to be
/// UTF-8: the lines of each read are checked at once (a check of 256 KiB is
/// a fraction of 1,000 checks of 256 bytes), and when that read is not all
/// UTF-8, or for a line read on its own, `each` is told false and checks.
fn lines_within<R, E, F, G>(
    src: &R,
    start: u64,
    end: u64,
    max: u64,
    each: &mut F,
    too_long: &mut G,
) -> Result<u64, E>
where
    R: ReadAt + ?Sized,
    E: From<io::Error>,
    F: FnMut(&[u8], u64, u64, bool) -> Result<(), E>,
    G: FnMut(u64, u64, u64) -> Result<(), E>,
{
    let mut buf = vec![
        0u8;
        CHUNK
            .min(usize::try_from(end - start).unwrap_or(CHUNK))
            .max(4096)
    ];
    let mut have = 0; // buf[..have] holds the file from `buf_offset`
    let mut buf_offset = start;
    let mut read_to = start;
    let mut number = 0u64;
    let mut searched = 0usize;
    loop {
        if have == buf.len() {
            if have >= LONG_LINE || have as u64 > max {
                // One line fills the buffer, which holds no `\n`: find its end.
                let first = buf_offset;
                let mut stop = None;
                while read_to < end {
                    let want = usize::try_from(end - read_to)
                        .unwrap_or(usize::MAX)
                        .min(CHUNK);
                    read_exact_at(src, &mut buf[..want], read_to)?;
                    if let Some(i) = memchr::memchr(b'\n', &buf[..want]) {
                        stop = Some(read_to + i as u64);
                        break;
                    }
                    read_to += want as u64;
                }
                let line_end = stop.unwrap_or(end);
                let len = line_end - first;
                number += 1;
                if len > max {
                    too_long(first, len, number)?;
                } else {
                    let mut line = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
                    read_exact_at(src, &mut line, first)?;
                    if !is_blank(&line) {
                        each(&line, first, number, false)?;
                    }
                }
                if stop.is_none() {
                    return Ok(number);
                }
                buf.truncate(CHUNK.max(4096));
                buf.shrink_to_fit();
                have = 0;
                searched = 0;
                buf_offset = line_end + 1;
                read_to = buf_offset;
                continue;
            }
            // One line fills the buffer: make room for the rest of it, a chunk at a
            // time (doubling would zero, and so touch, up to twice the line's size).
            buf.resize(buf.len() + CHUNK, 0);
        }
        let want = usize::try_from(end - read_to)
            .unwrap_or(usize::MAX)
            .min(buf.len() - have);
        read_exact_at(src, &mut buf[have..have + want], read_to)?;
        have += want;
        read_to += want as u64;
        let mut at = 0;
        // What is left from the last round holds no `\n`: search only the new bytes,
        // so a line longer than the buffer is scanned once, not once per refill.
        let mut from = searched;
        // The whole lines of the buffer are UTF-8 (each line then is: a line
        // ends at a `\n`, which no character's encoding holds), or unknown.
        let whole = memchr::memrchr(b'\n', &buf[from..have]).map_or(0, |i| from + i);
        let utf8 = whole > 0 && simdutf8::basic::from_utf8(&buf[..whole]).is_ok();
        while let Some(i) = memchr::memchr(b'\n', &buf[from..have]) {
            number += 1;
            let nl = from + i;
            let line = &buf[at..nl];
            let line_at = buf_offset + at as u64;
            if line.len() as u64 > max {
                too_long(line_at, line.len() as u64, number)?;
            } else if !is_blank(line) {
                each(line, line_at, number, utf8)?;
            }
            at = nl + 1;
            from = at;
        }
        if want == 0 {
            // The end: a last line without its newline.
            if at < have {
                number += 1;
                let line = &buf[at..have];
                let line_at = buf_offset + at as u64;
                if line.len() as u64 > max {
                    too_long(line_at, line.len() as u64, number)?;
                } else if !is_blank(line) {
                    each(line, line_at, number, false)?;
                }
            }
            return Ok(number);
        }
        buf.copy_within(at..have, 0);
        have -= at;
        buf_offset += at as u64;
        searched = have;
    }
}

/// A line the fast scanner read: what replay needs of it, the id's key
/// worked out, nothing else kept (see [`crate::envelope::parse_line`]).
#[derive(Debug)]
struct ScannedLine {
    key: Keyed,
    kind: EnvelopeType,
    sticky: bool,
    // A tool message's call id, a dispatch's: where it is in the segment's
    // `calls` (no allocation a line).
    call: Option<(u32, u32)>,
    // A settle's operation id: its key's index in the segment's `ops`, or
    // NO_OP.
    op: u32,
}

// ScannedLine::op of a line that is not a settle (or whose op-id is not kept).
const NO_OP: u32 = u32::MAX;

/// One envelope of a segment: scanned, or read by the strict reader.
#[derive(Debug)]
enum Item {
    Scanned(ScannedLine),
    Full(Box<Envelope>),
}

/// One envelope read from a segment, and where it is.
#[derive(Debug)]
struct Row {
    item: Item,
    rec: LineRec,
}

/// One stretch of a file, parsed line by line.
struct Segment {
    /// Each envelope read, with line numbers counted from the segment's start.
    items: Vec<Row>,
    /// The call ids of its scanned lines, one after the other.
    calls: Vec<u8>,
    /// The operation keys of its scanned settles.
    ops: Vec<Keyed>,
    /// With `lenient`, `(line, why)` for each line skipped; otherwise the first
    /// bad line, where reading stopped.
    bad: Vec<(u64, LineError)>,
    /// Bad lines past the first [`SKIPPED_KEPT`], counted, not kept.
    bad_more: u64,
    /// Lines counted, blank ones included.
    lines: u64,
}

/// How many skipped lines peek describes one by one; the rest are counted, so a
/// file of a million malformed lines costs a number, not a million messages.
pub const SKIPPED_KEPT: usize = 100;

// Why a strict read of a segment stopped early.
enum Stop {
    Io(io::Error),
    BadLine,
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// What load and peek say of a line longer than [`MAX_LINE`].
pub fn too_long_error(len: u64) -> LineError {
    LineError::Invalid(format!(
        "a line of {len} bytes: longer than {MAX_LINE} bytes (4 GiB - 1), the longest an envelope may be"
    ))
}

/// Whether a line of `len` bytes (its `\n` left out) may be an envelope: at
/// most [`MAX_LINE`] bytes. Append asks before it writes; load and peek refuse
/// (or skip) a longer line with [`too_long_error`].
pub fn check_line_length(len: u64) -> Result<(), LineError> {
    if len > MAX_LINE {
        Err(too_long_error(len))
    } else {
        Ok(())
    }
}

// The row of `line` at `offset`, line `number`, added to `seg`: scanned when
// it can be (for replay, with `keyed`; for peek only its type and role are
// kept), else read by the strict reader. `utf8`: the line is known to be UTF-8.
fn read_row(
    seg: &mut Segment,
    line: &[u8],
    offset: u64,
    number: u64,
    keyed: bool,
    utf8: bool,
) -> Result<(), LineError> {
    let len = u32::try_from(line.len()).unwrap_or(u32::MAX);
    let scanned = if utf8 {
        crate::envelope::scan_utf8_line(line)
    } else {
        crate::envelope::scan_line(line)
    };
    if let Ok(s) = scanned {
        let rec = LineRec {
            offset,
            len,
            number,
            kind: s.kind,
            role: s.role,
        };
        let (mut call, mut op) = (None, NO_OP);
        if let (true, Some(id)) = (keyed, s.call) {
            if s.kind == EnvelopeType::ToolSettled {
                op = u32::try_from(seg.ops.len()).unwrap_or(NO_OP);
                seg.ops.push(Keyed::of(id));
            } else {
                // A segment's lines are under 4 GiB together, bar one line.
                let at = u32::try_from(seg.calls.len()).unwrap_or(u32::MAX);
                seg.calls.extend_from_slice(id);
                call = Some((at, u32::try_from(id.len()).unwrap_or(0)));
            }
        }
        let key = if keyed {
            Keyed::of(s.id)
        } else {
            Keyed::default()
        };
        let item = Item::Scanned(ScannedLine {
            key,
            kind: s.kind,
            sticky: s.sticky,
            call,
            op,
        });
        seg.items.push(Row { item, rec });
        return Ok(());
    }
    let env = crate::envelope::parse_line_strict(line)?;
    let rec = LineRec::new(&env, offset, line.len(), number);
    seg.items.push(Row {
        item: Item::Full(Box::new(env)),
        rec,
    });
    Ok(())
}

// A bad line of a segment: kept (the first SKIPPED_KEPT) or counted; a strict
// read stops there.
fn bad_line(seg: &mut Segment, number: u64, e: LineError, lenient: bool) -> Result<(), Stop> {
    if seg.bad.len() >= SKIPPED_KEPT {
        seg.bad_more += 1;
        return Ok(());
    }
    seg.bad.push((number, e));
    if lenient {
        Ok(())
    } else {
        // Load stops at the first bad line: parsing on is wasted work.
        Err(Stop::BadLine)
    }
}

fn parse_segment<R: ReadAt + ?Sized>(
    src: &R,
    start: u64,
    end: u64,
    lenient: bool,
    keyed: bool,
) -> io::Result<Segment> {
    // Sized for lines of 200 bytes or more: a stretch of small lines is not
    // copied from one doubling to the next.
    let rows = usize::try_from((end - start) / 200).unwrap_or(0) + 16;
    let seg = std::cell::RefCell::new(Segment {
        items: Vec::with_capacity(rows),
        calls: Vec::new(),
        ops: Vec::new(),
        bad: Vec::new(),
        bad_more: 0,
        lines: 0,
    });
    let counted = lines_within(
        src,
        start,
        end,
        MAX_LINE,
        &mut |line: &[u8], offset, number, utf8| {
            let mut seg = seg.borrow_mut();
            match read_row(&mut seg, line, offset, number, keyed, utf8) {
                Ok(()) => Ok(()),
                Err(e) => bad_line(&mut seg, number, e, lenient),
            }
        },
        &mut |_, len, number| bad_line(&mut seg.borrow_mut(), number, too_long_error(len), lenient),
    );
    let mut seg = seg.into_inner();
    match counted {
        Ok(lines) => seg.lines = lines,
        Err(Stop::BadLine) => {}
        Err(Stop::Io(e)) => return Err(e),
    }
    Ok(seg)
}

// Where to cut `0..size` into about `parts` stretches, each starting at a line.
fn cut_points<R: ReadAt + ?Sized>(src: &R, size: u64, parts: u64) -> io::Result<Vec<u64>> {
    let mut cuts = vec![0];
    // On the heap: a thread with a small stack (threading.stack_size) may load.
    let mut probe = vec![0u8; 64 * 1024];
    for k in 1..parts {
        let mut at = (size * k / parts).max(*cuts.last().unwrap_or(&0));
        loop {
            let n = src.read_at(&mut probe, at)?;
            if n == 0 {
                at = size;
                break;
            }
            if let Some(i) = memchr::memchr(b'\n', &probe[..n]) {
                at += i as u64 + 1;
                break;
            }
            at += n as u64;
        }
        if at < size && at > *cuts.last().unwrap_or(&0) {
            cuts.push(at);
        }
    }
    cuts.push(size);
    Ok(cuts)
}

/// The bytes of one stretch parsed by one thread: small enough that the
/// envelopes of the stretches in flight are a few hundred KiB whatever the
/// file's size (memory follows the index, not the file), big enough that
/// handing one over is nothing beside its work.
const STRETCH: u64 = 1 << 20;

// Parses `0..size` in stretches of about STRETCH bytes, on every core (up to
// 8): each parser thread takes every `cores`-th stretch and hands each one
// over as soon as this thread asks for it, so that this thread gets them in
// file order and hands each to `take` while the parsers read the next ones;
// no more than a stretch a parser, and the one being taken, are ever held.
// `take` returns false to stop (the parsers then stop after the stretch they
// are in), and `stop` is asked before each stretch (its error ends it all the
// same way: a Ctrl-C). A parser thread that cannot be started leaves its
// stretches to this thread.
fn each_segment<R, E, F>(
    src: &R,
    size: u64,
    lenient: bool,
    keyed: bool,
    stop: crate::stop::Stop<'_>,
    mut take: F,
) -> Result<(), E>
where
    R: ReadAt + Sync + ?Sized,
    E: From<io::Error>,
    F: FnMut(Segment) -> Result<bool, E>,
{
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let cuts = cut_points(src, size, (size / STRETCH).max(1))?;
    if cuts.len() == 2 {
        take(parse_segment(src, 0, size, lenient, keyed)?)?;
        return Ok(());
    }
    let stretches: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let parsers = cores.min(stretches.len());
    std::thread::scope(|scope| {
        let mut from = Vec::with_capacity(parsers);
        let mut threads = Vec::with_capacity(parsers);
        for first in 0..parsers {
            // A rendezvous: a parsed stretch waits in its parser until asked for.
            let (give, get) = std::sync::mpsc::sync_channel::<io::Result<Segment>>(0);
            let mine = stretches.iter().skip(first).step_by(parsers).copied();
            let parser = move || {
                for (start, end) in mine {
                    let seg = parse_segment(src, start, end, lenient, keyed);
                    let failed = seg.is_err();
                    if give.send(seg).is_err() || failed {
                        return;
                    }
                }
            };
            match crate::threads::thread_builder().spawn_scoped(scope, parser) {
                Ok(h) => {
                    from.push(Some(get));
                    threads.push(h);
                }
                Err(_) => from.push(None),
            }
        }
        let result = (|| -> Result<(), E> {
            for (k, &(start, end)) in stretches.iter().enumerate() {
                stop()?;
                let seg = match from.get(k % parsers) {
                    Some(Some(get)) => get
                        .recv()
                        .unwrap_or_else(|_| Err(io::Error::other("a parser thread failed")))?,
                    _ => parse_segment(src, start, end, lenient, keyed)?,
                };
                if !take(seg)? {
                    break;
                }
            }
            Ok(())
        })();
        // The parsers still running find nobody to hand to, and stop.
        drop(from);
        for h in threads {
            // A parser that panicked has already said so through its channel.
            let _ = h.join();
        }
        result
    })
}

/// Loads the first `size` bytes of `src`: every line must be an envelope and
/// replay must accept it. The tail must already have been repaired. Lines are
/// parsed on every core; replay then runs over them in file order.
pub fn load<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Transcript, LoadError> {
    load_or_stop(src, size, &crate::stop::go_on)
}

/// [`load`], asking `stop` before each stretch of about a MiB (an error it
/// answers ends the load as [`LoadError::Io`]).
pub fn load_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    load_into(Transcript::default(), src, size, stop)
}

/// [`load`], keeping the [`History`] of what replay did: for a reader that shows
/// a transcript (what each compaction replaced, which settle settled a dispatch).
pub fn inspect<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Transcript, LoadError> {
    inspect_or_stop(src, size, &crate::stop::go_on)
}

/// [`inspect`], asking `stop` as [`load_or_stop`] does.
pub fn inspect_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    let t = Transcript {
        history: Some(History::default()),
        ..Transcript::default()
    };
    load_into(t, src, size, stop)
}

/// How many lines ahead replay asks for the id table's slots of a line: about
/// as many as it replays while memory answers.
const AHEAD: usize = 8;

fn load_into<R: ReadAt + Sync + ?Sized>(
    mut t: Transcript,
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    let mut before = 0; // lines in the segments already replayed
    each_segment(src, size, false, true, stop, |seg: Segment| {
        if before == 0 {
            t.reserve(estimated_lines(&seg, size));
        }
        let mut rows = seg.items.into_iter();
        while let Some(Row { item, mut rec }) = rows.next() {
            // The rows a parser thread wrote are in its core's cache, not this one's.
            if let Some(row) = rows.as_slice().get(2 * AHEAD) {
                prefetch(row);
            }
            if let Some(Row {
                item: Item::Scanned(s),
                ..
            }) = rows.as_slice().get(AHEAD)
            {
                t.ids.prefetch(s.key.hash);
                if let Some(op) = seg.ops.get(s.op as usize) {
                    t.ids.prefetch(op.hash);
                }
            }
            rec.number += before;
            let line = rec.number;
            match item {
                Item::Scanned(s) => t.push_scanned(s, rec, &seg.calls, &seg.ops),
                Item::Full(env) => t.push(*env, rec, false),
            }
            .map_err(|error| LoadError::Replay { line, error })?;
        }
        if let Some((line, error)) = seg.bad.into_iter().next() {
            return Err(LoadError::Line {
                line: before + line,
                error,
            });
        }
        before += seg.lines;
        Ok(true)
    })?;
    if t.index.is_empty() {
        return Err(LoadError::Empty);
    }
    t.line_count = before;
    Ok(t)
}

// How many envelopes a file of `size` bytes holds, guessed from its first
// segment (a little over, so that the index is not grown again by doubling);
// 0 when that segment is too short to tell (one long line, a bad line).
fn estimated_lines(first: &Segment, size: u64) -> usize {
    let Some(last) = first.items.last() else {
        return 0;
    };
    let read = last.rec.offset + u64::from(last.rec.len) + 1;
    if read < STRETCH / 2 {
        return 0;
    }
    let n = first.items.len() as u64;
    usize::try_from(size.saturating_mul(n) / read + n / 16 + 16).unwrap_or(0)
}

/// What peek makes of a file: the lines that parsed, and one warning per line
/// that did not.
#[derive(Debug, Default)]
pub struct Peeked {
    /// The envelopes that parsed, in file order.
    pub index: Index,
    /// `(line number, why)` for the first [`SKIPPED_KEPT`] lines skipped.
    pub skipped: Vec<(u64, String)>,
    /// How many more lines were skipped.
    pub skipped_more: u64,
    /// Lines in the bytes read, blank and skipped ones included.
    pub line_count: u64,
}

/// Reads the first `size` bytes of `src` as peek does: no replay, and a line
/// that is not an envelope is skipped and reported.
pub fn peek<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Peeked, io::Error> {
    peek_or_stop(src, size, &crate::stop::go_on)
}

/// [`peek`], asking `stop` as [`load_or_stop`] does.
pub fn peek_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Peeked, io::Error> {
    let mut p = Peeked::default();
    let mut before = 0;
    each_segment(
        src,
        size,
        true,
        false,
        stop,
        |seg: Segment| -> io::Result<bool> {
            if before == 0 {
                p.index.reserve(estimated_lines(&seg, size));
            }
            for Row { item, mut rec } in seg.items {
                rec.number += before;
                match item {
                    Item::Scanned(_) => p.index.push_rec(rec),
                    Item::Full(env) => p.index.push(rec, &env),
                }
            }
            for (n, e) in seg.bad {
                if p.skipped.len() < SKIPPED_KEPT {
                    p.skipped.push((before + n, e.to_string()));
                } else {
                    p.skipped_more += 1;
                }
            }
            p.skipped_more += seg.bad_more;
            before += seg.lines;
            Ok(true)
        },
    )?;
    p.line_count = before;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    // splitmix64's finaliser undone: what a hostile writer computes to aim ids
    // at one slot of an unseeded table.
    fn unmix(mut z: u64) -> u64 {
        const INV2: u64 = 0x319642B2D24D8EC3; // 0x94D049BB133111EB^-1 mod 2^64
        const INV1: u64 = 0x96DE1B173F119089; // 0xBF58476D1CE4E5B9^-1 mod 2^64
        z ^= (z >> 31) ^ (z >> 62);
        z = z.wrapping_mul(INV2);
        z ^= (z >> 27) ^ (z >> 54);
        z = z.wrapping_mul(INV1);
        z ^ (z >> 30) ^ (z >> 60)
    }

    #[test]
    fn ids_aimed_at_one_slot_of_an_unseeded_hash_spread() {
        let n = 20_000u64;
        let inner = mix(0);
        let mut table = IdTable::default();
        let mut homes = HashMap::default();
        for i in 0..n {
            let a = unmix(0x5EED << 32 | (i + 1)) ^ inner;
            // The premise: unseeded, every one of them has one high half.
            assert_eq!(mix(a ^ inner) >> 32, 0x5EED);
            let mut id = format!("{:016x}", a.swap_bytes()).into_bytes();
            id.extend_from_slice(b"0000000000000000");
            let key = Keyed::of(&id);
            assert_eq!(key.form, HEX32);
            table.push(key, i as u32);
        }
        for i in 0..n {
            let a = unmix(0x5EED << 32 | (i + 1)) ^ inner;
            let mut id = format!("{:016x}", a.swap_bytes()).into_bytes();
            id.extend_from_slice(b"0000000000000000");
            let key = Keyed::of(&id);
            assert_eq!(table.find(&key), Some(i as u32));
            *homes.entry(table.home(key.hash)).or_insert(0u32) += 1;
        }
        // Seeded, they share slots as random ids do: a few at most.
        let most = homes.values().copied().max().unwrap_or(0);
        assert!(most < 12, "{most} ids share one slot");
    }
    use crate::envelope::parse_line;

    fn line(id: &str, kind: &str, payload: &str) -> String {
        format!(
            r#"{{"id":"{id}","payload":{payload},"ts":"2026-01-01T00:00:00.000000Z","type":"{kind}","v":1}}"#
        )
    }

    fn msg(id: &str, role: &str, extra: &str) -> String {
        line(
            id,
            "message",
            &format!(r#"{{"content":"{id}","role":"{role}"{extra}}}"#),
        )
    }

    fn load_str(lines: &[String]) -> Result<Transcript, LoadError> {
        let text = lines.join("\n") + "\n";
        load(text.as_bytes(), text.len() as u64)
    }

    #[test]
    fn a_message_accepted_from_what_its_writer_knows_is_the_one_its_line_reads_as() {
        // Two transcripts fed the same lines: one accepts each message from
        // what its writer knows, the other from the line read back. They must
        // end up the same, line records, roles, live list and the pending
        // operation the tool message answers included.
        let head = [
            line("meta", "session-meta", "{}"),
            line("op1", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
        ];
        let mut t = load_str(&head).unwrap();
        let mut twin = load_str(&head).unwrap();
        let mut ids = IdGen::new();
        let ms = crate::stamp::Instant::now().millis();
        let cases: [(&str, &str, bool, Option<&[u8]>); 7] = [
            ("user", "", false, None),
            ("assistant", r#","sticky":true"#, true, None),
            ("system", r#","sysprompt":true"#, true, None),
            ("user", r#","depth":0"#, true, None),
            // Only a tool message answers a call.
            ("assistant", r#","tool_call_id":"c1""#, false, Some(b"c1")),
            ("tool", r#","tool_call_id":"c1""#, false, Some(b"c1")),
            ("developer", "", false, None),
        ];
        for (role, extra, sticky, call) in cases {
            let fresh = t.fresh_id(&mut ids, ms);
            assert_eq!(fresh.key, Keyed::of(fresh.digits()));
            assert!(!t.is_taken(fresh.as_str()));
            let text = msg(fresh.as_str(), role, extra);
            let known = t.accept_message(&fresh, role, sticky, call).unwrap();
            let parsed = twin
                .accept(parse_line(text.as_bytes()).unwrap(), true)
                .unwrap();
            let number = t.line_count + 1;
            let rec = known.line_rec(0, text.len(), number);
            assert_eq!(rec, parsed.line_rec(0, text.len(), number), "{text}");
            t.push_accepted(known, rec);
            twin.push_accepted(parsed, rec);
            assert!(t.is_live(fresh.as_str()));
        }
        assert_eq!(t.live.len(), cases.len());
        assert_eq!(t.live, twin.live);
        assert_eq!(t.pending, twin.pending);
        assert_eq!(t.awaiting, twin.awaiting);
        assert!(t.pending.values().all(|op| op.result.is_some()));
        for i in 0..t.index.len() {
            assert_eq!(t.index.get(i), twin.index.get(i));
            assert_eq!(t.index.role(i), twin.index.role(i));
        }
        // A fresh id is never one the transcript has: not once it is added,
        // whether or not other lines came after it was drawn.
        for lines_between in [0, 1] {
            let taken = t.fresh_id(&mut ids, ms);
            let again = t.fresh_id(&mut ids, ms);
            let again = FreshId {
                id: taken.id,
                key: taken.key.clone(),
                drawn_at: again.drawn_at,
            };
            let first = t.accept_message(&taken, "user", false, None).unwrap();
            let rec = first.line_rec(0, 1, t.line_count + 1);
            t.push_accepted(first, rec);
            for _ in 0..lines_between {
                let other = t.fresh_id(&mut ids, ms);
                let accepted = t.accept_message(&other, "user", false, None).unwrap();
                let rec = accepted.line_rec(0, 1, t.line_count + 1);
                t.push_accepted(accepted, rec);
            }
            assert!(matches!(
                t.accept_message(&again, "user", false, None),
                Err(ReplayError::DuplicateId(_))
            ));
            assert_ne!(t.fresh_id(&mut ids, ms).id, taken.id);
        }
    }

    fn live_ids(t: &Transcript, lines: &[String]) -> Vec<String> {
        t.live
            .iter()
            .map(|m| {
                let id = lines[m.line as usize]
                    .split('"')
                    .nth(3)
                    .unwrap_or("")
                    .to_string();
                let id = if m.part == WHOLE {
                    id
                } else {
                    format!("{id}:{}", m.part)
                };
                if m.stub().is_some() {
                    format!("{id}*")
                } else {
                    id
                }
            })
            .collect()
    }

    #[test]
    fn compaction_keeps_sticky_messages_and_splices_the_summary() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            msg("s", "system", r#","sysprompt":true"#),
            msg("u1", "user", ""),
            msg("a1", "assistant", ""),
            msg("p", "user", r#","depth":2"#),
            msg("u2", "user", ""),
            line(
                "c1",
                "compaction",
                r#"{"replaces-through-id":"p","summary":"S"}"#,
            ),
            msg("u3", "user", ""),
            line(
                "c2",
                "compaction",
                r#"{"replaces-through-id":"c1","summary":"S2"}"#,
            ),
        ];
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["s", "p", "c2", "u2", "u3"]);
    }

    #[test]
    fn elision_then_compaction_and_compaction_then_elision() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            msg("u1", "user", ""),
            msg("t1", "tool", r#","tool_call_id":"x""#),
            line(
                "e1",
                "elision",
                r#"{"items":[{"id":"t1","stub":"[gone]"}]}"#,
            ),
            msg("u2", "user", ""),
            line(
                "c1",
                "compaction",
                r#"{"replaces-through-id":"u1","summary":"S"}"#,
            ),
            line("e2", "elision", r#"{"items":[{"id":"c1","stub":"[s]"}]}"#),
        ];
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["c1*", "t1*", "u2"]);
    }

    fn rewind(id: &str, through: Option<&str>) -> String {
        let through = through.map_or("null".to_string(), |t| format!("{t:?}"));
        line(id, "rewind", &format!(r#"{{"through-id":{through}}}"#))
    }

    fn replacing(id: &str, through: &str, parts: &str) -> String {
        line(
            id,
            "compaction",
            &format!(
                r#"{{"replacement":[{parts}],"replaces-through-id":"{through}","summary":"S"}}"#
            ),
        )
    }

    fn refused_at(lines: &[String]) -> (u64, ReplayError) {
        match load_str(lines) {
            Err(LoadError::Replay { line, error }) => (line, error),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_rewind_keeps_the_live_list_through_its_id_and_null_empties_it() {
        let mut lines = vec![
            line("meta", "session-meta", "{}"),
            msg("s", "system", r#","sysprompt":true"#),
            msg("u1", "user", ""),
            msg("u2", "user", ""),
            rewind("r1", Some("u1")),
        ];
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["s", "u1"]);
        assert!(!t.is_live("u2") && t.is_live("u1"));
        lines.push(msg("u3", "user", ""));
        lines.push(rewind("r2", Some("u3")));
        assert_eq!(
            live_ids(&load_str(&lines).unwrap(), &lines),
            ["s", "u1", "u3"],
            "through the last one: nothing dropped"
        );
        lines.push(rewind("r3", None));
        lines.push(msg("u4", "user", ""));
        assert_eq!(live_ids(&load_str(&lines).unwrap(), &lines), ["u4"]);
        lines.push(rewind("r4", Some("u2")));
        let (at, error) = refused_at(&lines);
        assert_eq!(
            (at, error),
            (
                10,
                ReplayError::UnknownId {
                    id: "u2".into(),
                    by: "rewind"
                }
            )
        );
    }

    #[test]
    fn a_replacement_goes_where_the_summary_would_and_its_messages_can_be_named() {
        let mut lines = vec![
            line("meta", "session-meta", "{}"),
            msg("s", "system", r#","sysprompt":true"#),
            msg("u1", "user", ""),
            msg("a1", "assistant", ""),
            msg("u2", "user", ""),
            replacing(
                "c1",
                "a1",
                r#"{"content":"x","role":"user"},{"content":"y","role":"assistant","sticky":true}"#,
            ),
        ];
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["s", "c1:0", "c1:1", "u2"]);
        assert!(t.is_live("c1:0") && !t.is_live("c1") && !t.is_live("c1:2"));
        assert!(!t.is_live("c1:01") && !t.is_live("c1:+1") && !t.is_live("c1:"));
        assert_eq!(t.resolve("c1:1"), Some(Source { line: 5, part: 1 }));
        assert_eq!(t.parts_of(5).map(<[Part]>::len), Some(2));
        lines.push(line(
            "e1",
            "elision",
            r#"{"items":[{"id":"c1:0","stub":"[x]"}]}"#,
        ));
        lines.push(line(
            "c2",
            "compaction",
            r#"{"replaces-through-id":"c1:0","summary":"S2"}"#,
        ));
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["s", "c2", "c1:1", "u2"]);
        lines.push(replacing("c3", "c1:1", ""));
        let t = load_str(&lines).unwrap();
        assert_eq!(
            live_ids(&t, &lines),
            ["s", "c1:1", "u2"],
            "an empty replacement keeps the sticky ones, a sticky replacement message among them"
        );
        lines.push(rewind("r1", Some("c1:1")));
        let t = load_str(&lines).unwrap();
        assert_eq!(live_ids(&t, &lines), ["s", "c1:1"]);
        for (bad, by) in [
            ("c1", "compaction"),
            ("c1:0", "compaction"),
            ("c3:0", "compaction"),
        ] {
            let mut refused = lines.clone();
            refused.push(line(
                "c9",
                "compaction",
                &format!(r#"{{"replaces-through-id":"{bad}","summary":"S"}}"#),
            ));
            assert_eq!(
                refused_at(&refused),
                (11, ReplayError::UnknownId { id: bad.into(), by })
            );
        }
    }

    #[test]
    fn a_replacement_message_id_that_is_an_envelope_id_is_fatal_either_way() {
        let base = vec![
            line("meta", "session-meta", "{}"),
            msg("u1", "user", ""),
            msg("c1:1", "user", ""),
        ];
        let mut later = base.clone();
        later.push(replacing("c1", "u1", r#"{"role":"user"},{"role":"user"}"#));
        assert_eq!(refused_at(&later), (4, ReplayError::IdClash("c1:1".into())));
        let mut ok = base.clone();
        ok.push(replacing("c1", "u1", r#"{"role":"user"}"#));
        ok.push(msg("c1:01", "user", ""));
        assert!(
            load_str(&ok).is_ok(),
            "c1:1 and c1:01 are not replacement ids here"
        );
        ok.push(msg("c1:0", "user", ""));
        assert_eq!(refused_at(&ok), (6, ReplayError::IdClash("c1:0".into())));
    }

    #[test]
    fn inspect_keeps_what_rewinds_and_replacements_did() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            msg("u1", "user", ""),
            msg("u2", "user", ""),
            replacing(
                "c1",
                "u2",
                r#"{"content":"ab","role":"user"},{"content":"x","role":"user"}"#,
            ),
            line("e1", "elision", r#"{"items":[{"id":"c1:0","stub":"[x]"}]}"#),
            msg("u3", "user", ""),
            rewind("r1", Some("c1:0")),
            line(
                "c2",
                "compaction",
                r#"{"replaces-through-id":"c1:0","summary":"S"}"#,
            ),
        ];
        let text = lines.join("\n") + "\n";
        let t = inspect(text.as_bytes(), text.len() as u64).unwrap();
        let h = t.history.as_ref().unwrap();
        assert_eq!(
            h.rewinds.get(&6),
            Some(&vec![Source { line: 3, part: 1 }, Source::whole(5)])
        );
        assert_eq!(h.rewound_by.get(&Source::whole(5)), Some(&6));
        assert_eq!(
            h.compactions.get(&3).map(|c| c.replaced.clone()),
            Some(vec![Source::whole(1), Source::whole(2)])
        );
        assert_eq!(
            h.compactions.get(&7).map(|c| c.replaced.clone()),
            Some(vec![Source { line: 3, part: 0 }])
        );
        assert_eq!(h.elided_by.get(&Source { line: 3, part: 0 }), Some(&4));
        assert_eq!(
            t.elided_sizes(text.as_bytes(), &[4]).unwrap(),
            vec![vec![Some(2)]],
            "the replacement message's own content"
        );
        assert_eq!(live_ids(&t, &lines), ["c2"]);
    }

    #[test]
    fn naming_a_message_that_is_not_live_is_fatal() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            msg("u1", "user", ""),
            msg("u2", "user", ""),
            line(
                "c1",
                "compaction",
                r#"{"replaces-through-id":"u1","summary":"S"}"#,
            ),
            line("e1", "elision", r#"{"items":[{"id":"u1","stub":"x"}]}"#),
        ];
        match load_str(&lines) {
            Err(LoadError::Replay {
                line: 5,
                error: ReplayError::UnknownId { .. },
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_are_unpacked_as_a_digit_at_a_time_would() {
        // Byte by byte, as the table's reader did before the vector one.
        fn one_at_a_time(digits: &[u8]) -> Option<[u8; 16]> {
            let value = |b: u8| match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'a'..=b'f' => Some(b - b'a' + 10),
                _ => None,
            };
            if digits.len() != 32 {
                return None;
            }
            let mut out = [0u8; 16];
            for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
                *o = value(pair[0])? << 4 | value(pair[1])?;
            }
            Some(out)
        }
        let base = *b"0123456789abcdef0123456789abcdef";
        assert_eq!(unhex(&base), one_at_a_time(&base));
        assert!(unhex(&base).is_some());
        // Every byte value at every position: the digits and letters, their
        // neighbours ('/', ':', '`', 'g'), capitals, and bytes >= 0x80.
        for at in 0..32 {
            for b in 0..=255u8 {
                let mut id = base;
                id[at] = b;
                assert_eq!(unhex(&id), one_at_a_time(&id), "byte {b:#x} at {at}");
            }
        }
        let mut z = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2000 {
            let mut id = [0u8; 32];
            for d in id.iter_mut() {
                z = mix(z.wrapping_add(1));
                *d = b"0123456789abcdef"[(z % 16) as usize];
            }
            assert_eq!(unhex(&id), one_at_a_time(&id));
        }
        assert_eq!(unhex(&base[..31]), None);
    }

    #[test]
    fn the_id_table_finds_every_form_of_id_and_only_those_it_holds() {
        let mut ids: Vec<Vec<u8>> = vec![
            b"0123456789abcdef0123456789abcdef".to_vec(),
            b"0123456789ABCDEF0123456789abcdef".to_vec(), // uppercase: another id
            b"01234567-89ab-cdef-0123-456789abcdef".to_vec(),
            b"0123456789abcdef0123456789abcdeg".to_vec(), // not hex
            b"01234567x89ab-cdef-0123-456789abcdef".to_vec(),
            b"".to_vec(),
            b"m1".to_vec(),
            vec![0xed, 0xa0, 0x80], // a lone surrogate, WTF-8
        ];
        for i in 0..5000u32 {
            ids.push(format!("{:032x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15).into_bytes());
            ids.push(format!("id-{i}").into_bytes());
        }
        let mut table = IdTable::default();
        for (line, id) in ids.iter().enumerate() {
            assert_eq!(table.get(id), None);
            table.push(Keyed::of(id), line as u32);
        }
        for (line, id) in ids.iter().enumerate() {
            assert_eq!(
                table.get(id),
                Some(line as u32),
                "{:?}",
                String::from_utf8_lossy(id)
            );
        }
        for absent in [
            &b"0123456789abcdef0123456789abcdee"[..],
            b"01234567-89ab-cdef-0123-456789abcdee",
            b"0123456789abcdef0123456789abcde",
            b"m2",
            b"0123456789abcdef0123456789abcdef ",
        ] {
            assert_eq!(table.get(absent), None);
        }
        // The packed forms never meet: 32 hex digits and the UUID of the same
        // digits are two ids.
        assert_eq!(table.get(b"01234567-89ab-cdef-0123-456789abcdef"), Some(2));
    }

    #[test]
    fn duplicate_ids_and_a_missing_meta_are_fatal() {
        let dup = vec![
            line("meta", "session-meta", "{}"),
            msg("u1", "user", ""),
            msg("u1", "user", ""),
        ];
        assert!(matches!(
            load_str(&dup),
            Err(LoadError::Replay {
                line: 3,
                error: ReplayError::DuplicateId(_)
            })
        ));
        let nometa = vec![msg("u1", "user", "")];
        assert!(matches!(
            load_str(&nometa),
            Err(LoadError::Replay {
                line: 1,
                error: ReplayError::NoMeta
            })
        ));
    }

    #[test]
    fn ids_that_differ_only_in_lone_surrogates_are_different_ids() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            line(r"\ud800", "message", r#"{"content":"a","role":"user"}"#),
            line(r"\udc00", "message", r#"{"content":"b","role":"user"}"#),
            line(
                "op",
                "tool-dispatched",
                r#"{"call-id":"\ud800","tool":"t","arguments":{}}"#,
            ),
            line(
                "m",
                "message",
                r#"{"content":"x","role":"tool","tool_call_id":"\udfff"}"#,
            ),
        ];
        let t = load_str(&lines).unwrap();
        assert_eq!(t.live.len(), 3);
        assert_eq!(t.line_of(b"\xed\xa0\x80"), Some(1));
        assert_eq!(t.line_of(b"\xed\xb0\x80"), Some(2));
        assert_eq!(t.line_of("\u{fffd}"), None);
        assert_eq!(t.pending.get(&3).map(|op| op.result), Some(None));
        let mut dup = lines.clone();
        dup.push(line(r"\udc00", "grants", "{}"));
        match load_str(&dup) {
            Err(LoadError::Replay { line, error }) => {
                assert_eq!(line, 6);
                assert_eq!(error.to_string(), r#"duplicate envelope id "\\udc00""#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pending_operations_know_whether_their_result_was_persisted() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            line("op1", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
            line("op2", "tool-dispatched", r#"{"call-id":"c2","tool":"t"}"#),
            line("op3", "tool-dispatched", r#"{"call-id":"c3","tool":"t"}"#),
            msg("r1", "tool", r#","tool_call_id":"c1""#),
            msg("r3", "tool", r#","tool_call_id":"c3""#),
            line(
                "s3",
                "tool-settled",
                r#"{"op-id":"op3","outcome":"completed"}"#,
            ),
        ];
        let t = load_str(&lines).unwrap();
        let pending: Vec<_> = t.pending.iter().map(|(l, op)| (*l, op.result)).collect();
        assert_eq!(pending, vec![(1, Some(4)), (2, None)]);
        let settle_again = parse_line(
            line(
                "s4",
                "tool-settled",
                r#"{"op-id":"op3","outcome":"completed"}"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            t.check(&settle_again, true),
            Err(ReplayError::AlreadySettled("op3".into()))
        );
        let settle_unknown = parse_line(
            line(
                "s5",
                "tool-settled",
                r#"{"op-id":"zz","outcome":"completed"}"#,
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            t.check(&settle_unknown, true),
            Err(ReplayError::UnknownOperation("zz".into()))
        );
    }

    // Random runs of dispatches, tool messages (and messages of other roles
    // naming a call) and settles, a few call ids shared among them: the
    // pending operations and their results are the naive model's, whether the
    // file is loaded whole or its lines are pushed one by one.
    #[test]
    fn a_tool_message_answers_every_pending_operation_for_its_call() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..300 {
            let mut lines = vec![line("meta", "session-meta", "{}")];
            // (dispatch line, call id, result line, settled)
            let mut model: Vec<(u32, Option<u64>, Option<u32>, bool)> = Vec::new();
            for i in 0..next(40) {
                let at = lines.len() as u32;
                let call = next(4);
                match next(5) {
                    0 | 1 => {
                        let payload = if next(6) == 0 {
                            r#"{"tool":"t"}"#.to_string()
                        } else {
                            format!(r#"{{"call-id":"c{call}","tool":"t"}}"#)
                        };
                        lines.push(line(&format!("op{i}"), "tool-dispatched", &payload));
                        let call = payload.contains("call-id").then_some(call);
                        model.push((at, call, None, false));
                    }
                    2 | 3 => {
                        let role = if next(4) == 0 { "assistant" } else { "tool" };
                        let extra = format!(r#","tool_call_id":"c{call}""#);
                        lines.push(msg(&format!("m{i}"), role, &extra));
                        for op in &mut model {
                            if role == "tool" && !op.3 && op.2.is_none() && op.1 == Some(call) {
                                op.2 = Some(at);
                            }
                        }
                    }
                    _ => {
                        let open: Vec<usize> = (0..model.len()).filter(|&k| !model[k].3).collect();
                        if open.is_empty() {
                            continue;
                        }
                        let k = open[next(open.len() as u64) as usize];
                        let op = model[k].0 as usize;
                        let id = lines[op][7..].split('"').next().unwrap().to_string();
                        let payload = format!(r#"{{"op-id":"{id}","outcome":"completed"}}"#);
                        lines.push(line(&format!("s{i}"), "tool-settled", &payload));
                        model[k].3 = true;
                    }
                }
            }
            let want: Vec<(u32, Option<u32>)> = model
                .iter()
                .filter(|op| !op.3)
                .map(|op| (op.0, op.2))
                .collect();
            let results = |t: &Transcript| -> Vec<(u32, Option<u32>)> {
                t.pending.iter().map(|(l, op)| (*l, op.result)).collect()
            };
            assert_eq!(results(&load_str(&lines).unwrap()), want, "{lines:#?}");
            let mut pushed = load_str(&lines[..1]).unwrap();
            let mut offset = lines[0].len() as u64 + 1;
            for (n, text) in lines.iter().enumerate().skip(1) {
                let env = parse_line(text.as_bytes()).unwrap();
                let rec = LineRec::new(&env, offset, text.len(), n as u64 + 1);
                pushed.push(env, rec, true).unwrap();
                offset += text.len() as u64 + 1;
            }
            assert_eq!(results(&pushed), want, "{lines:#?}");
        }
    }

    #[test]
    fn the_index_knows_each_envelopes_type_role_and_size_without_its_payload() {
        let lines = [
            line("meta", "session-meta", "{}"),
            msg("s", "system", ""),
            line("z1", "later-thing", "null"),
            msg("d", "developer", ""),
            msg("u", "user", ""),
            line("z2", "other-thing", "[]"),
            line("z3", "later-thing", "1"),
            msg("u2", "user", ""),
        ];
        // Blank lines between, and a last line without its newline.
        let text = lines.join("\n \n");
        let end = text.len() as u64;
        let t = load(text.as_bytes(), end).unwrap();
        let p = peek(text.as_bytes(), end).unwrap();
        for index in [&t.index, &p.index] {
            let names: Vec<_> = (0..index.len()).map(|i| index.type_name(i)).collect();
            assert_eq!(
                names,
                [
                    "session-meta",
                    "message",
                    "later-thing",
                    "message",
                    "message",
                    "other-thing",
                    "later-thing",
                    "message"
                ]
                .map(Some)
            );
            assert_eq!(index.type_name(8), None);
            let roles: Vec<_> = (0..index.len()).map(|i| index.role(i)).collect();
            assert_eq!(
                roles,
                [
                    None,
                    Some("system"),
                    None,
                    Some("developer"),
                    Some("user"),
                    None,
                    None,
                    Some("user")
                ]
            );
            assert_eq!(
                index.role_counts(),
                [("system", 1), ("developer", 1), ("user", 2)]
            );
            assert_eq!(index.indices_of_type("later-thing"), [2, 6]);
            assert_eq!(index.indices_of_type("message"), [1, 3, 4, 7]);
            assert_eq!(index.indices_of_type("grants"), [] as [u32; 0]);
            let sizes: Vec<u64> = (0..index.len())
                .map(|i| index.size_of(i, end).unwrap())
                .collect();
            let expected: Vec<u64> = lines
                .iter()
                .enumerate()
                .map(|(i, l)| l.len() as u64 + u64::from(i + 1 < lines.len()))
                .collect();
            assert_eq!(sizes, expected);
            let totals = index.type_totals(end);
            let names: Vec<_> = totals.iter().map(|t| (t.name, t.count)).collect();
            assert_eq!(
                names,
                [
                    ("session-meta", 1),
                    ("message", 4),
                    ("later-thing", 2),
                    ("other-thing", 1)
                ]
            );
            let bytes: u64 = totals.iter().map(|t| t.bytes).sum();
            assert_eq!(bytes, end - 7 * 2, "every byte but the blank lines'");
        }
        assert_eq!((t.line_count, p.line_count), (15, 15));
        let many: Vec<u32> = (0..1000).map(|k| [1, 3, 2][k % 3]).collect();
        let members = t
            .index
            .payload_members(text.as_bytes(), &many, &["role", "nope"])
            .unwrap();
        assert_eq!(members.len(), 1000);
        for (m, &i) in members.iter().zip(&many) {
            let role = m.spans[0].map(|s| &m.line[s.start as usize..s.end as usize]);
            let expected: &[u8] = match i {
                1 => br#""system""#,
                3 => br#""developer""#,
                _ => b"",
            };
            assert_eq!(role, (i != 2).then_some(expected), "{i}");
            assert_eq!(m.spans[1], None);
        }
    }

    #[test]
    fn inspect_keeps_what_compaction_elision_and_settles_did_and_load_does_not() {
        let lines = vec![
            line("meta", "session-meta", "{}"),
            msg("s", "system", r#","sysprompt":true"#),
            msg("u1", "user", ""),
            line("op1", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
            msg("t1", "tool", r#","tool_call_id":"c1""#),
            line(
                "s1",
                "tool-settled",
                r#"{"op-id":"op1","outcome":"completed"}"#,
            ),
            line("e1", "elision", r#"{"items":[{"id":"t1","stub":"[a]"}]}"#),
            line("e2", "elision", r#"{"items":[{"id":"t1","stub":"[b]"}]}"#),
            msg("u2", "user", ""),
            line(
                "c1",
                "compaction",
                r#"{"replaces-through-id":"t1","summary":"S"}"#,
            ),
            line("op2", "tool-dispatched", r#"{"call-id":"c2","tool":"t"}"#),
        ];
        let text = lines.join("\n") + "\n";
        assert!(load(text.as_bytes(), text.len() as u64)
            .unwrap()
            .history
            .is_none());
        let t = inspect(text.as_bytes(), text.len() as u64).unwrap();
        let h = t.history.as_ref().unwrap();
        assert_eq!(
            h.compactions.get(&9),
            Some(&Compacted {
                replaced: vec![Source::whole(2), Source::whole(4)],
                kept: vec![Source::whole(1)]
            })
        );
        assert_eq!(h.compacted_by.get(&Source::whole(2)), Some(&9));
        assert_eq!(h.compacted_by.get(&Source::whole(4)), Some(&9));
        assert_eq!(h.compacted_by.get(&Source::whole(1)), None);
        let e1 = &h.elisions[&6];
        assert_eq!((e1.len(), e1[0].line, e1[0].stub_before), (1, 4, None));
        let e2 = &h.elisions[&7];
        assert_eq!(
            (e2[0].line, e2[0].stub_before.map(|(l, _)| l)),
            (4, Some(6))
        );
        assert_eq!(
            h.elided_by.get(&Source::whole(4)),
            Some(&6),
            "the first elision"
        );
        assert_eq!(h.settled_by.get(&3), Some(&5));
        assert_eq!(h.settled_by.get(&10), None);
        assert_eq!(t.pending.keys().copied().collect::<Vec<_>>(), [10]);
        // t1's content is "t1" (2 bytes); e2 stubbed the stub "[a]" (3 bytes).
        let sizes = t.elided_sizes(text.as_bytes(), &[6, 7, 9]).unwrap();
        assert_eq!(sizes, vec![vec![Some(2)], vec![Some(3)], vec![]]);
    }

    #[test]
    fn elided_sizes_are_read_on_every_core_in_order() {
        let mut lines = vec![line("meta", "session-meta", "{}")];
        for i in 0..300 {
            lines.push(msg(&format!("m{i}"), "tool", ""));
            let stub = "x".repeat(i % 7);
            lines.push(line(
                &format!("e{i}"),
                "elision",
                &format!(r#"{{"items":[{{"id":"m{i}","stub":"{stub}"}}]}}"#),
            ));
        }
        lines.push(line(
            "c",
            "compaction",
            r#"{"replaces-through-id":"m0","summary":"ü"}"#,
        ));
        lines.push(line(
            "ec",
            "elision",
            r#"{"items":[{"id":"c","stub":"s"}]}"#,
        ));
        let text = lines.join("\n") + "\n";
        let t = inspect(text.as_bytes(), text.len() as u64).unwrap();
        let elisions: Vec<u32> = (0..300).map(|i| 2 + 2 * i).chain([602]).collect();
        let sizes = t.elided_sizes(text.as_bytes(), &elisions).unwrap();
        let expected: Vec<Vec<Option<u64>>> = (0..300)
            .map(|i| vec![Some(format!("m{i}").len() as u64)])
            .chain([vec![Some(2)]])
            .collect();
        assert_eq!(sizes, expected);
    }

    #[test]
    fn lines_are_found_across_chunk_boundaries_and_blank_lines_are_counted() {
        let mut text = Vec::new();
        let mut expected = Vec::new();
        let mut number = 0;
        for i in 0..30_000u32 {
            number += 1;
            if i % 7 == 3 {
                text.extend_from_slice(b"  \r\n");
                continue;
            }
            let l = format!("{{\"k\":\"{}\"}}", "x".repeat((i % 500) as usize));
            expected.push((text.len() as u64, number));
            text.extend_from_slice(l.as_bytes());
            text.push(b'\n');
        }
        let mut got = Vec::new();
        for_each_line(text.as_slice(), 0, text.len() as u64, |_, off, n| {
            got.push((off, n));
            Ok::<(), io::Error>(())
        })
        .unwrap();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_file_parsed_in_parallel_reports_the_first_damage_by_its_true_line_number() {
        let mut lines = vec![line("meta", "session-meta", "{}")];
        let filler = "x".repeat(2000);
        for i in 0..12_000 {
            lines.push(msg(&format!("m{i}-{filler}"), "user", ""));
        }
        let mut text = lines.join("\n\n") + "\n";
        assert!(
            text.len() as u64 > 3 * (8 << 20),
            "big enough to be cut in stretches"
        );
        let t = load(text.as_bytes(), text.len() as u64).unwrap();
        assert_eq!(t.live.len(), 12_000);
        assert_eq!(t.index.number(t.index.len() - 1), Some(2 * 12_000 + 1));
        // Damage near the end, in the last stretch, and a second one after it.
        text.push_str("{oops\n");
        text.push_str(&msg("after", "user", ""));
        text.push_str("\n[1\n");
        match load(text.as_bytes(), text.len() as u64) {
            Err(LoadError::Line { line, .. }) => assert_eq!(line, 2 * 12_000 + 2),
            other => panic!("{other:?}"),
        }
        let p = peek(text.as_bytes(), text.len() as u64).unwrap();
        let skipped: Vec<u64> = p.skipped.iter().map(|(n, _)| *n).collect();
        assert_eq!(skipped, vec![2 * 12_000 + 2, 2 * 12_000 + 4]);
        assert_eq!(p.index.len(), 12_000 + 2);
        assert_eq!(p.line_count, 2 * 12_000 + 4);
    }

    #[test]
    fn a_load_a_read_and_a_peek_stop_at_the_stretch_their_stop_refuses() {
        // A Ctrl-C must end a GiB's load after the stretch being replayed, not at
        // its end: each asks its Stop before every stretch, and ends at a refusal.
        let mut lines = vec![line("meta", "session-meta", "{}")];
        let filler = "x".repeat(2000);
        for i in 0..4_000 {
            lines.push(msg(&format!("m{i}-{filler}"), "user", ""));
        }
        let text = lines.join("\n") + "\n";
        let size = text.len() as u64;
        assert!(size > 6 * STRETCH, "big enough to be cut in stretches");
        for refuse_at in [1usize, 2, 5] {
            let asked = std::sync::atomic::AtomicUsize::new(0);
            let stop = || {
                let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if n == refuse_at {
                    Err(io::Error::other("stop here"))
                } else {
                    Ok(())
                }
            };
            let refused = |e: &io::Error| e.to_string() == "stop here";
            let n = || asked.swap(0, std::sync::atomic::Ordering::SeqCst);
            assert!(
                matches!(load_or_stop(text.as_bytes(), size, &stop), Err(LoadError::Io(e)) if refused(&e))
            );
            assert_eq!(n(), refuse_at);
            assert!(
                matches!(inspect_or_stop(text.as_bytes(), size, &stop), Err(LoadError::Io(e)) if refused(&e))
            );
            assert_eq!(n(), refuse_at);
            assert!(matches!(peek_or_stop(text.as_bytes(), size, &stop), Err(e) if refused(&e)));
            assert_eq!(n(), refuse_at);
        }
        // Asked once a stretch, and never refusing, it loads what load loads.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let count = || {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        };
        let t = load_or_stop(text.as_bytes(), size, &count).unwrap();
        assert_eq!(
            t.index.records(),
            load(text.as_bytes(), size).unwrap().index.records()
        );
        let stretches = asked.load(std::sync::atomic::Ordering::SeqCst) as u64;
        assert!(
            stretches >= size / STRETCH / 2 && stretches <= size / STRETCH + 2,
            "{stretches}"
        );
    }

    #[test]
    fn work_meant_for_threads_is_done_here_when_no_thread_can_start() {
        let mut lines = vec![line("meta", "session-meta", "{}")];
        let filler = "x".repeat(2000);
        for i in 0..9_000 {
            lines.push(msg(&format!("m{i}-{filler}"), "user", ""));
        }
        let text = lines.join("\n") + "\n";
        let size = text.len() as u64;
        let every: Vec<u32> = (0..9_001).collect();
        let alone = load(text.as_bytes(), size).unwrap();
        let members = alone
            .index
            .payload_members(text.as_bytes(), &every, &["role"])
            .unwrap();
        crate::threads::fail_spawns(true);
        let loaded = load(text.as_bytes(), size);
        let peeked = peek(text.as_bytes(), size);
        let found = alone
            .index
            .payload_members(text.as_bytes(), &every, &["role"]);
        crate::threads::fail_spawns(false);
        assert_eq!(loaded.unwrap().index.records(), alone.index.records());
        assert_eq!(peeked.unwrap().index.records(), alone.index.records());
        assert_eq!(found.unwrap(), members);
    }

    #[test]
    fn peek_describes_the_first_skipped_lines_and_counts_the_rest() {
        let mut text = line("meta", "session-meta", "{}") + "\n";
        text.push_str(&"1\n".repeat(SKIPPED_KEPT + 50));
        let p = peek(text.as_bytes(), text.len() as u64).unwrap();
        assert_eq!(p.skipped.len(), SKIPPED_KEPT);
        assert_eq!(p.skipped[0].0, 2);
        assert_eq!(p.skipped_more, 50);
    }

    // A file made up as it is read: `head`, then `len` bytes of `fill`, then
    // `tail`. Nothing of it is in memory but what a read asks for.
    struct Synthetic {
        head: Vec<u8>,
        len: u64,
        fill: u8,
        tail: Vec<u8>,
    }

    impl Synthetic {
        fn size(&self) -> u64 {
            self.head.len() as u64 + self.len + self.tail.len() as u64
        }
    }

    impl ReadAt for Synthetic {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
            let head = self.head.len() as u64;
            let mut n = 0;
            for (k, out) in buf.iter_mut().enumerate() {
                let at = offset + k as u64;
                *out = if at < head {
                    self.head[at as usize]
                } else if at < head + self.len {
                    self.fill
                } else if let Some(&b) = self.tail.get((at - head - self.len) as usize) {
                    b
                } else {
                    break;
                };
                n += 1;
            }
            Ok(n)
        }
    }

    // (line, offset, number) of each line kept; (offset, length, number) of each too long.
    type Kept = Vec<(Vec<u8>, u64, u64)>;
    type TooLong = Vec<(u64, u64, u64)>;

    fn lines_within(text: &[u8], max: u64) -> (Kept, TooLong) {
        let (mut kept, mut long) = (Vec::new(), Vec::new());
        let counted = for_each_line_within(
            text,
            0,
            text.len() as u64,
            max,
            &mut |line: &[u8], at, n| -> io::Result<()> {
                kept.push((line.to_vec(), at, n));
                Ok(())
            },
            &mut |at, len, n| -> io::Result<()> {
                long.push((at, len, n));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(
            counted,
            text.split(|&b| b == b'\n').count() as u64 - u64::from(text.ends_with(b"\n"))
        );
        (kept, long)
    }

    #[test]
    fn a_line_longer_than_the_limit_is_measured_not_kept() {
        let text = b"short\nxxxxxxxxxxxxxxxxxxxx\n\nok\nyyyyyyyyyyyyyyy";
        let (kept, long) = lines_within(text, 10);
        assert_eq!(
            kept,
            vec![(b"short".to_vec(), 0, 1), (b"ok".to_vec(), 28, 4)]
        );
        assert_eq!(long, vec![(6, 20, 2), (31, 15, 5)]);
        let (kept, long) = lines_within(text, 20);
        assert_eq!((kept.len(), long), (4, vec![]), "20 bytes is not too long");
        // Lines longer than a read, and than LONG_LINE: measured first, then
        // read whole (or not at all).
        let mut text = b"a\n".to_vec();
        let big = LONG_LINE + 3 * CHUNK + 7;
        text.extend(std::iter::repeat_n(b'z', big));
        text.extend_from_slice(b"\nb\n");
        text.extend(std::iter::repeat_n(b'w', big));
        let (kept, long) = lines_within(&text, u64::MAX);
        assert_eq!(long, vec![]);
        assert_eq!(kept.len(), 4);
        assert_eq!((kept[1].0.len(), kept[1].1, kept[1].2), (big, 2, 2));
        assert_eq!((&kept[2].0[..], kept[2].2), (&b"b"[..], 3));
        assert_eq!(
            (kept[3].0.len(), kept[3].2),
            (big, 4),
            "the last line, without its newline"
        );
        let (kept, long) = lines_within(&text, big as u64 - 1);
        assert_eq!(kept.len(), 2);
        assert_eq!(
            long,
            vec![(2, big as u64, 2), (big as u64 + 5, big as u64, 4)]
        );
    }

    #[test]
    fn the_line_length_limit_is_4_gib_less_one() {
        assert_eq!(MAX_LINE, u64::from(u32::MAX));
        assert!(check_line_length(MAX_LINE).is_ok());
        let refused = check_line_length(MAX_LINE + 1).unwrap_err().to_string();
        assert!(refused.contains("4294967296 bytes"), "{refused}");
        assert!(refused.contains("4 GiB - 1"), "{refused}");
    }

    // A transcript whose second line is 4 GiB long, made up as it is read (no
    // file, no 4 GiB in memory): load refuses it as damage naming the line, peek
    // skips it with a warning, the tail check does not read it. Reads 4 GiB of
    // made-up bytes per pass: a few seconds in a release build.
    #[test]
    #[ignore = "reads 3 x 4 GiB of made-up bytes; run with --ignored"]
    fn a_line_of_4_gib_is_damage_on_load_and_peek() {
        let meta = line("m", "session-meta", "{}") + "\n";
        let after = "\n".to_string() + &msg("u1", "user", "") + "\n";
        let src = Synthetic {
            head: (meta + "{\"id\":\"x\",\"payload\":\"").into_bytes(),
            len: MAX_LINE,
            fill: b'a',
            tail: ("\"}".to_string() + &after).into_bytes(),
        };
        let size = src.size();
        match load(&src, size) {
            Err(LoadError::Line {
                line: 2,
                error: LineError::Invalid(why),
            }) => assert!(why.contains("longer than 4294967295 bytes"), "{why}"),
            other => panic!("{other:?}"),
        }
        let p = peek(&src, size).unwrap();
        assert_eq!(p.index.len(), 2);
        assert_eq!(p.index.number(1), Some(3));
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].0, 2);
        assert!(p.skipped[0].1.contains("longer than"), "{}", p.skipped[0].1);
        // The same line last, and torn: the tail check leaves it to load.
        let last = Synthetic {
            tail: Vec::new(),
            ..src
        };
        let (tail, read) = crate::scan::tail_scan(&last, last.size()).unwrap();
        assert_eq!(
            tail,
            crate::scan::Tail::Whole {
                missing_newline: true
            }
        );
        // Walked back over once, 64 KiB at a time, never held whole.
        assert!(
            read <= MAX_LINE + (1 << 20),
            "the tail check read {read} bytes"
        );
    }
}
