//! The envelope index and replay: what load builds from a file and what every
//! append extends, through the same code, so that the state after a load is the
//! state the writer had.
//!
//! The index keeps a few words per line (where it is, its number and type) and
//! an id table; payloads stay in the file. Replay keeps the live message list as
//! references to lines, plus what an elision put in place of a message's content.

use std::collections::BTreeMap;

// Ids are ours or another writer's random hex: no need for SipHash's DoS
// resistance on the hot path of every append and every load.
use rustc_hash::FxHashMap as HashMap;
use std::fmt;
use std::io;

use crate::envelope::{parse_line, Detail, Envelope, EnvelopeType, LineError, Span};
use crate::scan::{is_blank, ReadAt};

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
}

/// One message of the live list: the line it comes from (a message line, or a
/// compaction line for a summary) and, if an elision stubbed it, where the stub is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveMessage {
    /// Index into [`Transcript::lines`].
    pub line: u32,
    /// The elision line and the stub's span in it.
    pub stub: Option<(u32, Span)>,
    /// Kept by compaction.
    pub sticky: bool,
}

/// A dispatched tool operation with no settle line yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingOp {
    /// The model's call id.
    pub call_id: Option<String>,
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
    /// A compaction or elision naming an id that is not a live message.
    UnknownId {
        /// The id named.
        id: String,
        /// `"compaction"` or `"elision"`.
        by: &'static str,
    },
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

/// A transcript's index and replayed state.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Every envelope, in file order.
    pub lines: Vec<LineRec>,
    ids: HashMap<Box<str>, u32>,
    /// The live messages, compaction and elision applied.
    pub live: Vec<LiveMessage>,
    // Line index -> position in `live`, or NOT_LIVE.
    live_pos: Vec<u32>,
    /// Dispatched, unsettled operations by dispatch line, in dispatch order.
    pub pending: BTreeMap<u32, PendingOp>,
    /// The last grants line.
    pub grants: Option<u32>,
    /// Section digest -> the run-context line carrying its text.
    pub sections: HashMap<Box<str>, u32>,
    /// Lines in the file, blank ones included: the next line's number less one.
    pub line_count: u64,
}

const NOT_LIVE: u32 = u32::MAX;

impl Transcript {
    fn live_position(&self, line: u32) -> Option<u32> {
        self.live_pos
            .get(line as usize)
            .copied()
            .filter(|&p| p != NOT_LIVE)
    }

    /// The line index of envelope `id`.
    pub fn line_of(&self, id: &str) -> Option<u32> {
        self.ids.get(id).copied()
    }

    /// Whether `id` names a live message.
    pub fn is_live(&self, id: &str) -> bool {
        self.line_of(id)
            .and_then(|l| self.live_position(l))
            .is_some()
    }

    /// Checks that `env` can follow what is there; `strict` also refuses settles
    /// of unknown or settled operations (an append does; a load tolerates them).
    pub fn check(&self, env: &Envelope, strict: bool) -> Result<(), ReplayError> {
        if self.lines.is_empty() {
            if env.kind != EnvelopeType::SessionMeta {
                return Err(ReplayError::NoMeta);
            }
        } else if env.kind == EnvelopeType::SessionMeta {
            return Err(ReplayError::MetaNotFirst);
        }
        if self.ids.contains_key(env.id.as_str()) {
            return Err(ReplayError::DuplicateId(env.id.clone()));
        }
        match &env.detail {
            Detail::Compaction { through } if !self.is_live(through) => {
                Err(ReplayError::UnknownId {
                    id: through.clone(),
                    by: "compaction",
                })
            }
            Detail::Elision { items } => match items.iter().find(|(id, _)| !self.is_live(id)) {
                Some((id, _)) => Err(ReplayError::UnknownId {
                    id: id.clone(),
                    by: "elision",
                }),
                None => Ok(()),
            },
            Detail::ToolSettled { op_id } if strict => match self.line_of(op_id) {
                Some(l) if self.pending.contains_key(&l) => Ok(()),
                Some(l) if self.lines[l as usize].kind == EnvelopeType::ToolDispatched => {
                    Err(ReplayError::AlreadySettled(op_id.clone()))
                }
                _ => Err(ReplayError::UnknownOperation(op_id.clone())),
            },
            _ => Ok(()),
        }
    }

    /// Checks `env` (see [`Transcript::check`]) and, if it may, adds it at `rec`.
    pub fn push(&mut self, env: Envelope, rec: LineRec, strict: bool) -> Result<(), ReplayError> {
        self.check(&env, strict)?;
        let index = u32::try_from(self.lines.len()).unwrap_or(u32::MAX);
        self.line_count = self.line_count.max(rec.number);
        self.lines.push(rec);
        self.live_pos.push(NOT_LIVE);
        self.ids.insert(env.id.into_boxed_str(), index);
        match env.detail {
            Detail::None => {
                if env.kind == EnvelopeType::Grants {
                    self.grants = Some(index);
                }
            }
            Detail::Message {
                sticky,
                tool_call_id,
            } => {
                self.live_pos[index as usize] = self.live.len() as u32;
                self.live.push(LiveMessage {
                    line: index,
                    stub: None,
                    sticky,
                });
                if let Some(call) = tool_call_id {
                    for op in self.pending.values_mut() {
                        if op.result.is_none() && op.call_id.as_deref() == Some(call.as_str()) {
                            op.result = Some(index);
                        }
                    }
                }
            }
            Detail::Compaction { through } => {
                let cut = self
                    .line_of(&through)
                    .and_then(|l| self.live_position(l))
                    .unwrap_or(0);
                let cut = cut as usize;
                let mut live = Vec::with_capacity(self.live.len() - cut + 1);
                live.extend(self.live[..=cut].iter().filter(|m| m.sticky).copied());
                live.push(LiveMessage {
                    line: index,
                    stub: None,
                    sticky: false,
                });
                live.extend_from_slice(&self.live[cut + 1..]);
                for m in &self.live {
                    self.live_pos[m.line as usize] = NOT_LIVE;
                }
                for (i, m) in live.iter().enumerate() {
                    self.live_pos[m.line as usize] = i as u32;
                }
                self.live = live;
            }
            Detail::Elision { items } => {
                for (id, span) in items {
                    if let Some(pos) = self.line_of(&id).and_then(|l| self.live_position(l)) {
                        self.live[pos as usize].stub = Some((index, span));
                    }
                }
            }
            Detail::ToolDispatched { call_id } => {
                self.pending.insert(
                    index,
                    PendingOp {
                        call_id,
                        result: None,
                    },
                );
            }
            Detail::ToolSettled { op_id } => {
                if let Some(l) = self.line_of(&op_id) {
                    self.pending.remove(&l);
                }
            }
            Detail::RunContext { carried } => {
                for digest in carried {
                    self.sections
                        .entry(digest.into_boxed_str())
                        .or_insert(index);
                }
            }
        }
        Ok(())
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
    const CHUNK: usize = 4 << 20;
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
            // One line fills the buffer: make room for the rest of it, a chunk at a
            // time (doubling would zero, and so touch, up to twice the line's size).
            buf.resize(buf.len() + CHUNK, 0);
        }
        let want = usize::try_from(end - read_to)
            .unwrap_or(usize::MAX)
            .min(buf.len() - have);
        let mut filled = 0;
        while filled < want {
            let n = src.read_at(
                &mut buf[have + filled..have + want],
                read_to + filled as u64,
            )?;
            if n == 0 {
                let shrank = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the file shrank while it was read",
                );
                return Err(shrank.into());
            }
            filled += n;
        }
        have += want;
        read_to += want as u64;
        let mut at = 0;
        // What is left from the last round holds no `\n`: search only the new bytes,
        // so a line longer than the buffer is scanned once, not once per refill.
        let mut from = searched;
        while let Some(i) = memchr::memchr(b'\n', &buf[from..have]) {
            number += 1;
            let nl = from + i;
            let line = &buf[at..nl];
            if !is_blank(line) {
                each(line, buf_offset + at as u64, number)?;
            }
            at = nl + 1;
            from = at;
        }
        if want == 0 {
            // The end: a last line without its newline.
            if at < have {
                number += 1;
                let line = &buf[at..have];
                if !is_blank(line) {
                    each(line, buf_offset + at as u64, number)?;
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

/// One stretch of a file, parsed line by line.
struct Segment {
    /// Each envelope read, with line numbers counted from the segment's start.
    items: Vec<(Envelope, LineRec)>,
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

fn parse_segment<R: ReadAt + ?Sized>(
    src: &R,
    start: u64,
    end: u64,
    lenient: bool,
) -> io::Result<Segment> {
    let mut seg = Segment {
        items: Vec::new(),
        bad: Vec::new(),
        bad_more: 0,
        lines: 0,
    };
    let counted = for_each_line(src, start, end, |line, offset, number| {
        match parse_line(line) {
            Ok(env) => {
                let len = u32::try_from(line.len()).unwrap_or(u32::MAX);
                let kind = env.kind;
                seg.items.push((
                    env,
                    LineRec {
                        offset,
                        len,
                        number,
                        kind,
                    },
                ));
            }
            Err(_) if seg.bad.len() >= SKIPPED_KEPT => seg.bad_more += 1,
            Err(e) => {
                seg.bad.push((number, e));
                if !lenient {
                    // Load stops at the first bad line: parsing on is wasted work.
                    return Err(Stop::BadLine);
                }
            }
        }
        Ok(())
    });
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
    let mut probe = [0u8; 64 * 1024];
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

// Parses `0..size` on every core, in stretches; the results come back in file order.
fn parse_all<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    lenient: bool,
) -> io::Result<Vec<Segment>> {
    const MIN_PER_THREAD: u64 = 8 << 20;
    let cores = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8) as u64;
    let parts = (size / MIN_PER_THREAD).clamp(1, cores);
    let cuts = cut_points(src, size, parts)?;
    if cuts.len() == 2 {
        return Ok(vec![parse_segment(src, 0, size, lenient)?]);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = cuts
            .windows(2)
            .map(|w| {
                let (start, end) = (w[0], w[1]);
                scope.spawn(move || parse_segment(src, start, end, lenient))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a parser thread failed")))
            })
            .collect()
    })
}

/// Loads the first `size` bytes of `src`: every line must be an envelope and
/// replay must accept it. The tail must already have been repaired. Lines are
/// parsed on every core; replay then runs over them in file order.
pub fn load<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Transcript, LoadError> {
    let mut t = Transcript::default();
    let mut before = 0; // lines in the segments already replayed
    for seg in parse_all(src, size, false)? {
        t.lines.reserve(seg.items.len());
        for (env, mut rec) in seg.items {
            rec.number += before;
            let line = rec.number;
            t.push(env, rec, false)
                .map_err(|error| LoadError::Replay { line, error })?;
        }
        if let Some((line, error)) = seg.bad.into_iter().next() {
            return Err(LoadError::Line {
                line: before + line,
                error,
            });
        }
        before += seg.lines;
    }
    if t.lines.is_empty() {
        return Err(LoadError::Empty);
    }
    t.line_count = before;
    Ok(t)
}

/// What peek makes of a file: the lines that parsed, and one warning per line
/// that did not.
#[derive(Debug, Default)]
pub struct Peeked {
    /// The envelopes that parsed, in file order.
    pub lines: Vec<LineRec>,
    /// `(line number, why)` for the first [`SKIPPED_KEPT`] lines skipped.
    pub skipped: Vec<(u64, String)>,
    /// How many more lines were skipped.
    pub skipped_more: u64,
}

/// Reads the first `size` bytes of `src` as peek does: no replay, and a line
/// that is not an envelope is skipped and reported.
pub fn peek<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Peeked, io::Error> {
    let mut p = Peeked::default();
    let mut before = 0;
    for seg in parse_all(src, size, true)? {
        p.lines.extend(seg.items.into_iter().map(|(_, mut rec)| {
            rec.number += before;
            rec
        }));
        for (n, e) in seg.bad {
            if p.skipped.len() < SKIPPED_KEPT {
                p.skipped.push((before + n, e.to_string()));
            } else {
                p.skipped_more += 1;
            }
        }
        p.skipped_more += seg.bad_more;
        before += seg.lines;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn live_ids(t: &Transcript, lines: &[String]) -> Vec<String> {
        t.live
            .iter()
            .map(|m| {
                let id = lines[m.line as usize]
                    .split('"')
                    .nth(3)
                    .unwrap_or("")
                    .to_string();
                if m.stub.is_some() {
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
        assert_eq!(t.lines.last().map(|r| r.number), Some(2 * 12_000 + 1));
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
        assert_eq!(p.lines.len(), 12_000 + 2);
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
}
