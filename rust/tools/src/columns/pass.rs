//! One file's pass: [`FileState`] (what the pass has seen), [`Input`] (where
//! its rows come from), the envelopes read a window at a time and each turned
//! into its rows; the message, summary and last rows are written in `rows`.

use rustc_hash::FxHashMap as HashMap;

use transcript_core::envelope::EnvelopeType;
use transcript_core::json::{Kind, Reader};
use transcript_core::scan::ReadAt;
use transcript_core::transcript::{Index, LineRec, LoadError, Source, Transcript, WHOLE};

use super::payload::{
    float_of, int_of, is_null, items_of, malformed, members, owned_string, read_string, slice,
    span_of, utf8, walk_message,
};
use super::{parse_ts, Batch};

/// A dispatched operation (or an unmatched settle) waiting for the end of its
/// file to be written as a `tool_operations` row.
#[derive(Debug, Default, Clone)]
pub(super) struct Op {
    pub(super) op_id: Option<Vec<u8>>,
    pub(super) call_id: Option<Vec<u8>>,
    pub(super) tool: Option<Vec<u8>>,
    pub(super) arguments_digest: Option<Vec<u8>>,
    pub(super) idempotency: Option<Vec<u8>>,
    pub(super) run_id: Option<Vec<u8>>,
    pub(super) round: Option<i64>,
    pub(super) dispatch: Option<u32>,
    pub(super) dispatched_ts: Option<i64>,
    pub(super) settle: Option<u32>,
    pub(super) settled_ts: Option<i64>,
    pub(super) outcome: Option<Vec<u8>>,
    pub(super) reason: Option<Vec<u8>>,
    pub(super) duration: Option<f64>,
}

/// What the file's last row needs: counts and the first and last envelopes.
#[derive(Debug, Default, Clone)]
pub(super) struct Totals {
    pub(super) envelopes: i64,
    pub(super) messages: i64,
    pub(super) compactions: i64,
    pub(super) elisions: i64,
    pub(super) rewinds: i64,
    pub(super) dispatches: i64,
    pub(super) first_ts: Option<i64>,
    pub(super) last_ts: Option<i64>,
    pub(super) last_type: Option<String>,
}

/// One file's export in progress: where the pass is, and what it has seen.
#[derive(Debug)]
pub struct FileState {
    pub(super) session: Vec<u8>,
    next: usize,
    // Replayed files only: the live position of each whole line, and of each
    // replacement message.
    pub(super) live_pos: Vec<u32>,
    pub(super) part_pos: HashMap<Source, u32>,
    pub(super) ops: Vec<Op>,
    // Dispatch line -> its row in `ops` (replayed), or dispatch id -> row (lenient).
    op_by_line: HashMap<u32, usize>,
    // Operation ids come from the file: a seeded hash (SipHash), not Fx.
    op_by_id: std::collections::HashMap<Vec<u8>, usize>,
    // The ids of the lines holding the result of a pending operation.
    pub(super) result_ids: HashMap<u32, Vec<u8>>,
    pub(super) totals: Totals,
    pub(super) meta: Option<Vec<u8>>,
    pub(super) session_id: Option<Vec<u8>>,
    pub(super) agent: Option<Vec<u8>>,
    pub(super) model: Option<Vec<u8>>,
    started: Option<i64>,
    pub(super) text: Vec<u8>,
    pub(super) scratch: Vec<u8>,
}

pub(super) const NOT_LIVE: u32 = u32::MAX;

/// Where the rows of one file come from: the envelope list, the file, and
/// the replay when load accepts the file.
pub struct Input<'a, R: ReadAt + ?Sized> {
    /// Every envelope of the file (load's index, or peek's lenient one).
    pub index: &'a Index,
    /// The file.
    pub src: &'a R,
    /// The core's replay (with its history), or None when load refuses the file.
    pub replay: Option<&'a Transcript>,
    /// The bytes of the file read (a last line without its `\n` is one byte shorter).
    pub end: u64,
}

impl<R: ReadAt + ?Sized> Clone for Input<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: ReadAt + ?Sized> Copy for Input<'_, R> {}

impl FileState {
    /// Starts the export of one file: `session` is the key its rows carry (its
    /// path). Reads the first envelope, for [`FileState::started`].
    pub fn new<R: ReadAt + ?Sized>(session: &[u8], from: Input<'_, R>) -> Result<Self, LoadError> {
        let mut s = FileState {
            session: session.to_vec(),
            next: 0,
            live_pos: Vec::new(),
            part_pos: HashMap::default(),
            ops: Vec::new(),
            op_by_line: HashMap::default(),
            op_by_id: std::collections::HashMap::new(),
            result_ids: HashMap::default(),
            totals: Totals::default(),
            meta: None,
            session_id: None,
            agent: None,
            model: None,
            started: None,
            text: Vec::new(),
            scratch: Vec::new(),
        };
        if let Some(t) = from.replay {
            s.live_pos = vec![NOT_LIVE; from.index.len()];
            for (k, m) in t.live.iter().enumerate() {
                let k = u32::try_from(k).unwrap_or(NOT_LIVE);
                if m.part == WHOLE {
                    if let Some(p) = s.live_pos.get_mut(m.line as usize) {
                        *p = k;
                    }
                } else {
                    s.part_pos.insert(m.source(), k);
                }
            }
            for op in t.pending.values() {
                if let Some(r) = op.result {
                    s.result_ids.insert(r, Vec::new());
                }
            }
        }
        if let Some(rec) = &from.index.get(0) {
            if rec.kind == EnvelopeType::SessionMeta {
                let mut buf = Vec::new();
                let line = utf8(from.index.read_line(from.src, 0, &mut buf)?, rec)?;
                let spans = members(line, &["id", "payload", "ts"]).map_err(malformed(rec))?;
                s.session_id =
                    owned_string(spans[0].map(|at| slice(line, at))).map_err(malformed(rec))?;
                if let Some(at) = spans[1] {
                    let payload = slice(line, at);
                    s.meta = Some(payload.as_bytes().to_vec());
                    let m = members(payload, &["agent", "model"]).map_err(malformed(rec))?;
                    s.agent =
                        owned_string(m[0].map(|at| slice(payload, at))).map_err(malformed(rec))?;
                    s.model =
                        owned_string(m[1].map(|at| slice(payload, at))).map_err(malformed(rec))?;
                }
                let ts =
                    owned_string(spans[2].map(|at| slice(line, at))).map_err(malformed(rec))?;
                s.started = ts.as_deref().and_then(parse_ts);
            }
        }
        Ok(s)
    }

    /// The session-meta's timestamp, in microseconds since the epoch, when it
    /// has one that parses: the day the export files the session under.
    pub fn started(&self) -> Option<i64> {
        self.started
    }

    /// Adds the rows of the next envelopes to `batch` until every envelope is
    /// read (returns true) or `batch` holds `budget` bytes (returns false:
    /// call again after taking the batch's rows).
    pub fn fill<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: Input<'_, R>,
        budget: usize,
    ) -> Result<bool, LoadError> {
        const WINDOW: usize = 4 << 20;
        let mut window = Window::default();
        // Room for what this call adds, reserved once (growing by doubling
        // would copy the payloads again and again).
        if let Some(rec) = from.index.get(self.next) {
            let rest = usize::try_from(from.end.saturating_sub(rec.offset)).unwrap_or(usize::MAX);
            let room = rest.min(budget.saturating_sub(batch.bytes()));
            batch.envelopes.payload.data.reserve(room);
            batch.messages.text.data.reserve(room / 2);
        }
        while let Some(rec) = &from.index.get(self.next) {
            let i = self.next;
            // A window no bigger than what is left of the file: a small file's is small.
            let left = usize::try_from(from.end.saturating_sub(rec.offset)).unwrap_or(WINDOW);
            window.read(from.src, rec, WINDOW.min(left))?;
            self.envelope(batch, &from, i, rec, window.line(rec))?;
            self.next += 1;
            if batch.bytes() >= budget && self.next < from.index.len() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn envelope<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        i: usize,
        rec: &LineRec,
        bytes: &[u8],
    ) -> Result<(), LoadError> {
        let bytes = utf8(bytes, rec)?;
        let bad = malformed(rec);
        let line_no = i64::try_from(rec.number).unwrap_or(i64::MAX);
        // One pass over the line: the id, the ts, where the payload is and, for
        // a message, its members (decoded as they are met, never scanned twice).
        let mut r = Reader::new(bytes);
        let (mut id, mut ts_text, mut at, mut fields) = (None, None, None, None);
        if r.peek().map_err(&bad)? == Kind::Object {
            r.begin_object().map_err(&bad)?;
            let mut key_buf = Vec::new();
            loop {
                let key = match r.next_key(&mut key_buf).map_err(&bad)? {
                    None => break,
                    Some(k) => k.as_bytes().to_owned(),
                };
                match &key[..] {
                    b"id" => id = read_string(&mut r, &mut self.scratch).map_err(&bad)?,
                    b"ts" => ts_text = read_string(&mut r, &mut self.scratch).map_err(&bad)?,
                    b"payload" => {
                        r.peek().map_err(&bad)?;
                        let start = r.offset();
                        if rec.kind == EnvelopeType::Message {
                            let text = &mut batch.messages.text;
                            text.data.truncate(text.row_start());
                            let f = walk_message(&mut r, bytes, &mut text.data, &mut self.scratch);
                            fields = Some(f.map_err(&bad)?);
                        } else {
                            r.skip_value().map_err(&bad)?;
                        }
                        at = Some(span_of(start, r.offset()));
                    }
                    _ => r.skip_value().map_err(&bad)?,
                }
            }
        }
        let ts = ts_text.as_deref().and_then(parse_ts);
        let payload = at.map_or("null", |at| slice(bytes, at));
        let kind = from.index.type_name(i).unwrap_or("");
        let i32_ = u32::try_from(i).unwrap_or(u32::MAX);

        let e = &mut batch.envelopes;
        e.session.push_wtf8(&self.session);
        e.line.push_i64(Some(line_no));
        e.id.push_opt(id.as_deref());
        e.r#type.push_str(kind);
        e.ts.push_i64(ts);
        let size = from.index.size_of(i, from.end).unwrap_or(0);
        e.bytes.push_i64(i64::try_from(size).ok());
        // The payload as written: the line is valid UTF-8 (the reader checked it).
        e.payload.push_str(payload);

        let t = &mut self.totals;
        t.envelopes += 1;
        if t.envelopes == 1 {
            t.first_ts = ts;
        }
        t.last_ts = ts;
        t.last_type = Some(kind.to_owned());
        if let Some(slot) = self.result_ids.get_mut(&i32_) {
            *slot = id.clone().unwrap_or_default();
        }

        match rec.kind {
            EnvelopeType::Message => {
                self.totals.messages += 1;
                let at = Source::whole(i32_);
                let fields = fields.unwrap_or_default();
                self.message(batch, from, at, line_no, id.as_deref(), ts, "message", bytes, fields)
                    .map_err(&bad)?;
            }
            EnvelopeType::Compaction => {
                self.totals.compactions += 1;
                let p = members(payload, &["summary", "replacement"]).map_err(&bad)?;
                match p[1] {
                    Some(r) if !is_null(slice(payload, r)) => {
                        let list = slice(payload, r);
                        for (k, item) in items_of(list).map_err(&bad)?.into_iter().enumerate() {
                            let k = u32::try_from(k).unwrap_or(WHOLE - 1);
                            let mut part_id = id.clone().unwrap_or_default();
                            part_id.push(b':');
                            part_id.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
                            let at = Source { line: i32_, part: k };
                            let item = slice(list, item);
                            let mut r = Reader::new(item);
                            let fields = walk_message(
                                &mut r,
                                item,
                                &mut batch.messages.text.data,
                                &mut self.scratch,
                            )
                            .map_err(&bad)?;
                            self.message(
                                batch,
                                from,
                                at,
                                line_no,
                                Some(&part_id),
                                ts,
                                "replacement",
                                item,
                                fields,
                            )
                            .map_err(&bad)?;
                        }
                    }
                    _ => {
                        // The summary, as replay splices it: {"role": "user", "content": summary}.
                        let at = Source::whole(i32_);
                        self.summary(
                            batch,
                            from,
                            at,
                            line_no,
                            id.as_deref(),
                            ts,
                            p[0].map(|s| slice(payload, s)),
                        )
                        .map_err(&bad)?;
                    }
                }
            }
            EnvelopeType::Elision => self.totals.elisions += 1,
            EnvelopeType::Rewind => self.totals.rewinds += 1,
            EnvelopeType::ToolDispatched => {
                self.totals.dispatches += 1;
                let keys =
                    ["call-id", "tool", "arguments-digest", "idempotency", "run-id", "round"];
                let p = members(payload, &keys).map_err(&bad)?;
                let get = |k: usize| p[k].map(|at| slice(payload, at));
                let op = Op {
                    op_id: id.clone(),
                    call_id: owned_string(get(0)).map_err(&bad)?,
                    tool: owned_string(get(1)).map_err(&bad)?,
                    arguments_digest: owned_string(get(2)).map_err(&bad)?,
                    idempotency: owned_string(get(3)).map_err(&bad)?,
                    run_id: owned_string(get(4)).map_err(&bad)?,
                    round: match get(5) {
                        Some(v) => int_of(v).map_err(&bad)?,
                        None => None,
                    },
                    dispatch: Some(i32_),
                    dispatched_ts: ts,
                    ..Op::default()
                };
                let row = self.ops.len();
                if from.replay.is_some() {
                    self.op_by_line.insert(i32_, row);
                } else if let Some(id) = &id {
                    self.op_by_id.insert(id.clone(), row);
                }
                self.ops.push(op);
            }
            EnvelopeType::ToolSettled => {
                let p =
                    members(payload, &["op-id", "outcome", "reason", "duration"]).map_err(&bad)?;
                let get = |k: usize| p[k].map(|at| slice(payload, at));
                let op_id = owned_string(get(0)).map_err(&bad)?;
                let outcome = owned_string(get(1)).map_err(&bad)?;
                let reason = match get(2) {
                    Some(v) if !is_null(v) => match owned_string(Some(v)).map_err(&bad)? {
                        Some(s) => Some(s),
                        None => Some(v.as_bytes().to_vec()),
                    },
                    _ => None,
                };
                let duration = match get(3) {
                    Some(v) => float_of(v).map_err(&bad)?,
                    None => None,
                };
                // The dispatch this settle settles, as replay decided (or by id, leniently).
                let named = op_id.as_deref().and_then(|op| match from.replay {
                    Some(t) => t.line_of(op).and_then(|d| self.op_by_line.get(&d).copied()),
                    None => self.op_by_id.get(op).copied(),
                });
                let settles = named.filter(|&row| match from.replay {
                    Some(t) => {
                        self.ops[row]
                            .dispatch
                            .and_then(|d| t.history.as_ref()?.settled_by.get(&d).copied())
                            == Some(i32_)
                    }
                    None => self.ops[row].settle.is_none(),
                });
                let row = match settles {
                    Some(row) => row,
                    None => {
                        let tool = named.and_then(|r| self.ops[r].tool.clone());
                        self.ops.push(Op { op_id: op_id.clone(), tool, ..Op::default() });
                        self.ops.len() - 1
                    }
                };
                let op = &mut self.ops[row];
                op.settle = Some(i32_);
                op.settled_ts = ts;
                op.outcome = outcome;
                op.reason = reason;
                op.duration = duration;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A window of the file, read a few MiB at a time, that the envelopes are
/// sliced from in file order.
#[derive(Default)]
struct Window {
    buf: Vec<u8>,
    // The bytes of `buf` read (from `start`).
    len: usize,
    start: u64,
}

impl Window {
    fn read<R: ReadAt + ?Sized>(
        &mut self,
        src: &R,
        rec: &LineRec,
        size: usize,
    ) -> Result<(), LoadError> {
        let end = rec.offset + u64::from(rec.len);
        if rec.offset >= self.start && end <= self.start + self.len as u64 {
            return Ok(());
        }
        let want = size.max(rec.len as usize);
        // Grown (and zeroed) once, not again on every read.
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let mut filled = 0;
        while filled < want {
            let n = src.read_at(&mut self.buf[filled..want], rec.offset + filled as u64)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        self.len = filled;
        self.start = rec.offset;
        if filled < rec.len as usize {
            return Err(LoadError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            )));
        }
        Ok(())
    }

    fn line(&self, rec: &LineRec) -> &[u8] {
        let at = usize::try_from(rec.offset - self.start).unwrap_or(usize::MAX);
        self.buf[..self.len].get(at..at + rec.len as usize).unwrap_or_default()
    }
}
