//! The native import of one source file: the lines read once (SHA-256, size,
//! where each line is), the derived envelopes written by an [`Emitter`] that
//! mirrors replay's live list (as the Python importer's `Emitter` does), and
//! the `source-line` envelopes that keep every line byte for byte.
//!
//! The output is byte for byte the Python importer's; a source the native path
//! cannot reproduce exactly is [`Unsupported`] and the Python importer takes it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc;

use sha2::{Digest, Sha256};

use crate::canonical;
use crate::import_value::{write_canonical, Ids, Ts, Unsupported, Value, EPOCH_TS};
pub use crate::stop::{go_on, Stop};

/// What the import made of a source line (its `source-line` envelope's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No history role.
    Metadata,
    /// Only spaces, tabs, `\r`.
    Blank,
    /// It fed the replayed conversation.
    Used,
    /// A Claude Code record on a sidechain.
    Sidechain,
    /// A Claude Code record off the active branch.
    OffBranch,
    /// A Codex item a rollback removed.
    RolledBack,
}

impl Status {
    fn name(self) -> &'static [u8] {
        match self {
            Status::Metadata => b"metadata",
            Status::Blank => b"blank",
            Status::Used => b"used",
            Status::Sidechain => b"sidechain",
            Status::OffBranch => b"off-branch",
            Status::RolledBack => b"rolled-back",
        }
    }
}

/// One source line: where it is, its status, and its timestamp as a ts.
#[derive(Debug, Clone)]
pub struct SourceLine {
    /// Byte offset of the line in the source.
    pub offset: u64,
    /// Its length, without the `\n`.
    pub len: u32,
    /// What the import made of it.
    pub status: Status,
    /// Its record's `timestamp`, converted.
    pub when: Option<Ts>,
}

/// How many bytes the scan reads at a time (and hands to the hashing thread).
const SCAN_BLOCK: usize = 1 << 20;

/// How many records a conversion reads again between two questions to its [`Stop`].
const RECORDS_PER_STOP: u32 = 1 << 12;

/// A [`Stop`] asked once every [`RECORDS_PER_STOP`] records.
pub struct EveryFewRecords<'s> {
    stop: Stop<'s>,
    left: std::cell::Cell<u32>,
}

impl<'s> EveryFewRecords<'s> {
    /// Asks `stop` at the first record, then every few.
    pub fn new(stop: Stop<'s>) -> Self {
        EveryFewRecords {
            stop,
            left: std::cell::Cell::new(0),
        }
    }

    /// One more record.
    ///
    /// # Errors
    ///
    /// What the [`Stop`] answers when asked.
    pub fn record(&self) -> io::Result<()> {
        match self.left.get() {
            0 => {
                self.left.set(RECORDS_PER_STOP);
                (self.stop)()
            }
            n => {
                self.left.set(n - 1);
                Ok(())
            }
        }
    }
}

/// Every line of `file`, in order, with the SHA-256 (`"sha256:…"`) and size of
/// the whole: `each` sees the line's index, offset and bytes (without `\n`).
///
/// The file is read a block at a time; each block, once its lines are seen,
/// goes to a thread of its own that hashes it (the hash is of exactly the
/// bytes `each` saw), so hashing and the caller's work on the lines overlap.
///
/// `stop` is asked before each block.
///
/// # Errors
///
/// An I/O error reading, what `stop` answers, or what `each` refuses.
pub fn scan(
    file: &File,
    stop: Stop<'_>,
    mut each: impl FnMut(usize, u64, &[u8]) -> Result<(), Unsupported>,
) -> io::Result<Result<(String, u64, usize), Unsupported>> {
    let (to_hash, blocks) = mpsc::sync_channel::<(Vec<u8>, usize)>(2);
    let (give_back, returned) = mpsc::channel::<Vec<u8>>();
    std::thread::scope(|scope| {
        let hasher = scope.spawn(move || {
            let mut sha = Sha256::new();
            for (block, len) in blocks {
                sha.update(block.get(..len).unwrap_or_default());
                // The scan may be gone (it stopped early): the block is then dropped.
                let _ = give_back.send(block);
            }
            sha.finalize()
        });
        let scanned = scan_blocks(file, stop, &mut each, &to_hash, &returned);
        drop(to_hash);
        let digest = hasher
            .join()
            .map_err(|_| io::Error::other("the hashing thread failed"))?;
        let (size, n) = match scanned? {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        let mut text = String::from(crate::digest::PREFIX);
        for byte in digest {
            text.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
            text.push(char::from(b"0123456789abcdef"[usize::from(byte & 0x0f)]));
        }
        Ok(Ok((text, size, n)))
    })
}

/// The scan's reading: blocks of `file` split into lines for `each`, each
/// block sent to `to_hash` after (buffers come back through `returned`).
fn scan_blocks(
    file: &File,
    stop: Stop<'_>,
    each: &mut impl FnMut(usize, u64, &[u8]) -> Result<(), Unsupported>,
    to_hash: &mpsc::SyncSender<(Vec<u8>, usize)>,
    returned: &mpsc::Receiver<Vec<u8>>,
) -> io::Result<Result<(u64, usize), Unsupported>> {
    let mut offset = 0u64; // where the next line starts
    let mut read_at = 0u64; // where the next block starts
    let mut n = 0usize;
    let mut partial: Vec<u8> = Vec::new(); // a line begun in an earlier block
    let mut line = |n: &mut usize, offset: &mut u64, bytes: &[u8], newline: bool| {
        if bytes.len() > u32::MAX as usize {
            return Err(Unsupported("a line of 4 GiB or more"));
        }
        each(*n, *offset, bytes)?;
        *offset += bytes.len() as u64 + u64::from(newline);
        *n += 1;
        Ok(())
    };
    loop {
        stop()?;
        let mut block = returned
            .try_recv()
            .unwrap_or_else(|_| vec![0u8; SCAN_BLOCK]);
        let got = read_full(file, &mut block, read_at)?;
        if got == 0 {
            break;
        }
        read_at += got as u64;
        let data = block.get(..got).unwrap_or_default();
        let mut start = 0usize;
        for nl in memchr::memchr_iter(b'\n', data) {
            let piece = data.get(start..nl).unwrap_or_default();
            let done = if partial.is_empty() {
                line(&mut n, &mut offset, piece, true)
            } else {
                partial.extend_from_slice(piece);
                let r = line(&mut n, &mut offset, &partial, true);
                partial.clear();
                r
            };
            if let Err(e) = done {
                return Ok(Err(e));
            }
            start = nl + 1;
        }
        partial.extend_from_slice(data.get(start..).unwrap_or_default());
        if to_hash.send((block, got)).is_err() {
            return Err(io::Error::other("the hashing thread stopped"));
        }
    }
    if !partial.is_empty() {
        if let Err(e) = line(&mut n, &mut offset, &partial, false) {
            return Ok(Err(e));
        }
    }
    Ok(Ok((offset, n)))
}

/// Reads from `at` until `buf` is full or the file ends; answers how many bytes.
fn read_full(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut got = 0usize;
    while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
        match file.read_at(rest, at + got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// True for a line of only spaces, tabs and `\r` (or none).
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// Reads the line `line` of `file` into `buf` (as text: the scan checked it).
///
/// # Errors
///
/// An I/O error, or a line that is no longer UTF-8 (the file changed).
pub fn read_line(file: &File, line: &SourceLine, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    buf.resize(line.len as usize, 0);
    file.read_exact_at(buf, line.offset)
}

/// `buf` as text.
///
/// # Errors
///
/// `InvalidData` when it is not UTF-8 (the source changed under the import).
pub fn as_text(buf: &[u8]) -> io::Result<&str> {
    simdutf8::basic::from_utf8(buf).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the source changed during the import",
        )
    })
}

/// The derived envelopes, written in replay order, with replay's live list
/// mirrored so that rewinds and compactions name live ids.
pub struct Emitter<W: Write> {
    /// The id generator (shared with the source-line envelopes after).
    pub ids: Ids,
    out: W,
    /// The ts of the first envelope written.
    pub first_ts: Option<Ts>,
    /// How many message envelopes were written.
    pub message_count: usize,
    /// The ts of the last envelope (each envelope without a ts of its own takes it).
    pub ts: Ts,
    /// The live message ids, as replay will have them.
    pub live: Vec<String>,
    calls: Vec<(String, [u8; 32], String)>,
    call_at: HashMap<String, usize>,
    settled: HashSet<[u8; 32]>,
    grants: Option<Vec<u8>>,
    facts: Option<Vec<u8>>,
    line: Vec<u8>,
}

impl<W: Write> Emitter<W> {
    /// An emitter writing to `out`.
    pub fn new(ids: Ids, out: W) -> Self {
        Emitter {
            ids,
            out,
            first_ts: None,
            message_count: 0,
            ts: EPOCH_TS,
            live: Vec::new(),
            calls: Vec::new(),
            call_at: HashMap::new(),
            settled: HashSet::new(),
            grants: None,
            facts: None,
            line: Vec::with_capacity(1 << 16),
        }
    }

    /// The writer, flushed.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn finish(mut self) -> io::Result<(Ids, W)> {
        self.out.flush()?;
        Ok((self.ids, self.out))
    }

    /// Takes `ts` as the current ts when given; answers the current one.
    pub fn at(&mut self, ts: Option<Ts>) -> Ts {
        if let Some(ts) = ts {
            self.ts = ts;
        }
        self.ts
    }

    /// One envelope of `type_` with the canonical `payload`; answers its id.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn envelope(
        &mut self,
        type_: &str,
        payload: &[u8],
        ts: Option<Ts>,
        kind: &str,
    ) -> io::Result<[u8; 32]> {
        let id = self.ids.next(kind);
        let when = self.at(ts);
        if self.first_ts.is_none() {
            self.first_ts = Some(when);
        }
        let line = &mut self.line;
        line.clear();
        line.extend_from_slice(b"{\"id\":\"");
        line.extend_from_slice(&id);
        line.extend_from_slice(b"\",\"payload\":");
        line.extend_from_slice(payload);
        line.extend_from_slice(b",\"ts\":\"");
        line.extend_from_slice(&when);
        line.extend_from_slice(b"\",\"type\":");
        canonical::write_str(line, type_.as_bytes());
        line.extend_from_slice(b",\"v\":1}\n");
        self.out.write_all(line)?;
        Ok(id)
    }

    /// A message envelope; its id joins the live list.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn message(&mut self, payload: &Value<'_>, ts: Option<Ts>) -> io::Result<String> {
        let mut bytes = Vec::new();
        write_canonical(&mut bytes, payload);
        self.message_bytes(&bytes, ts)
    }

    /// A message envelope from its canonical payload.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn message_bytes(&mut self, payload: &[u8], ts: Option<Ts>) -> io::Result<String> {
        let id = self.envelope("message", payload, ts, "msg")?;
        let id = String::from_utf8_lossy(&id).into_owned();
        self.live.push(id.clone());
        self.message_count += 1;
        Ok(id)
    }

    /// A `tool-dispatched` for `call_id`; answers the op id.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn dispatch(
        &mut self,
        call_id: &str,
        tool: &str,
        arguments: &Value<'_>,
        run_id: Option<&str>,
        round: i64,
        ts: Option<Ts>,
    ) -> io::Result<[u8; 32]> {
        let mut args = Vec::new();
        write_canonical(&mut args, arguments);
        let digest = crate::digest::sha256_digest(&args);
        let mut p = Vec::with_capacity(args.len() + 256);
        p.extend_from_slice(b"{\"arguments\":");
        p.extend_from_slice(&args);
        p.extend_from_slice(b",\"arguments-digest\":\"");
        p.extend_from_slice(digest.as_bytes());
        p.extend_from_slice(b"\",\"call-id\":");
        canonical::write_str(&mut p, call_id.as_bytes());
        p.extend_from_slice(b",\"idempotency\":\"unknown\",\"round\":");
        canonical::write_i64(&mut p, round);
        p.extend_from_slice(b",\"run-id\":");
        match run_id {
            Some(r) => canonical::write_str(&mut p, r.as_bytes()),
            None => p.extend_from_slice(b"null"),
        }
        p.extend_from_slice(b",\"tool\":");
        canonical::write_str(&mut p, tool.as_bytes());
        p.push(b'}');
        let op = self.envelope("tool-dispatched", &p, ts, "op")?;
        let message = self.live.last().cloned().unwrap_or_default();
        match self.call_at.get(call_id) {
            Some(&i) => {
                if let Some(slot) = self.calls.get_mut(i) {
                    slot.1 = op;
                    slot.2 = message;
                }
            }
            None => {
                self.call_at.insert(call_id.to_owned(), self.calls.len());
                self.calls.push((call_id.to_owned(), op, message));
            }
        }
        Ok(op)
    }

    /// Whether `call_id` is a live call (of a live assistant message).
    pub fn is_call(&self, call_id: &str) -> bool {
        self.call_at.contains_key(call_id)
    }

    /// Whether `call_id` is a live call not settled yet.
    pub fn is_open_call(&self, call_id: &str) -> bool {
        self.op_of(call_id)
            .is_some_and(|op| !self.settled.contains(&op))
    }

    fn op_of(&self, call_id: &str) -> Option<[u8; 32]> {
        self.call_at
            .get(call_id)
            .and_then(|&i| self.calls.get(i))
            .map(|c| c.1)
    }

    /// A `tool-settled` for the live call `call_id` (`fields`: the optional
    /// members, each `(key, canonical value)`, in key order); false when
    /// there is no such call or it is settled.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn settle(
        &mut self,
        call_id: &str,
        outcome: &str,
        ts: Option<Ts>,
        fields: &[(&str, Vec<u8>)],
    ) -> io::Result<bool> {
        let Some(op) = self.op_of(call_id) else {
            return Ok(false);
        };
        if self.settled.contains(&op) {
            return Ok(false);
        }
        let mut members: Vec<(&str, Vec<u8>)> = Vec::with_capacity(fields.len() + 2);
        let mut quoted_op = Vec::new();
        canonical::write_str(&mut quoted_op, &op);
        let mut quoted_outcome = Vec::new();
        canonical::write_str(&mut quoted_outcome, outcome.as_bytes());
        members.push(("op-id", quoted_op));
        members.push(("outcome", quoted_outcome));
        for (k, v) in fields {
            members.push((k, v.clone()));
        }
        members.sort_by(|a, b| a.0.cmp(b.0));
        let mut p = vec![b'{'];
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                p.push(b',');
            }
            canonical::write_str(&mut p, k.as_bytes());
            p.push(b':');
            p.extend_from_slice(v);
        }
        p.push(b'}');
        self.envelope("tool-settled", &p, ts, "settle")?;
        self.settled.insert(op);
        Ok(true)
    }

    /// The live calls without a settle line, in dispatch order.
    pub fn pending_calls(&self) -> Vec<String> {
        self.calls
            .iter()
            .filter(|c| !self.settled.contains(&c.1))
            .map(|c| c.0.clone())
            .collect()
    }

    /// Everything live replaced by `summary`, or by `replacement` (message
    /// payloads, canonical); with nothing live, the replacement (or the summary
    /// as a user message) is written as plain messages.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn compaction(
        &mut self,
        summary: &str,
        tokens_before: &[u8],
        tokens_after: &[u8],
        fallback: bool,
        replacement: Option<&[Vec<u8>]>,
        ts: Option<Ts>,
    ) -> io::Result<()> {
        let Some(through) = self.live.last().cloned() else {
            match replacement {
                None => {
                    let mut p = Vec::new();
                    p.extend_from_slice(b"{\"content\":");
                    canonical::write_str(&mut p, summary.as_bytes());
                    p.extend_from_slice(b",\"role\":\"user\"}");
                    self.message_bytes(&p, ts)?;
                }
                Some(items) => {
                    for item in items {
                        self.message_bytes(item, ts)?;
                    }
                }
            }
            return Ok(());
        };
        let mut p = Vec::new();
        p.extend_from_slice(b"{\"fallback\":");
        p.extend_from_slice(if fallback { b"true" } else { b"false" });
        if let Some(items) = replacement {
            p.extend_from_slice(b",\"replacement\":[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    p.push(b',');
                }
                p.extend_from_slice(item);
            }
            p.push(b']');
        }
        p.extend_from_slice(b",\"replaces-through-id\":");
        canonical::write_str(&mut p, through.as_bytes());
        p.extend_from_slice(b",\"summary\":");
        canonical::write_str(&mut p, summary.as_bytes());
        p.extend_from_slice(b",\"tokens-after\":");
        p.extend_from_slice(tokens_after);
        p.extend_from_slice(b",\"tokens-before\":");
        p.extend_from_slice(tokens_before);
        p.push(b'}');
        let id = self.envelope("compaction", &p, ts, "cmp")?;
        let id = String::from_utf8_lossy(&id).into_owned();
        self.live = match replacement {
            Some(items) => (0..items.len()).map(|k| format!("{id}:{k}")).collect(),
            None => vec![id],
        };
        self.calls.clear();
        self.call_at.clear();
        Ok(())
    }

    /// Keeps the first `keep` live messages and drops the rest (nothing is
    /// written when nothing drops).
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn rewind(&mut self, keep: usize, ts: Option<Ts>) -> io::Result<()> {
        if keep >= self.live.len() {
            return Ok(());
        }
        let mut p = Vec::new();
        p.extend_from_slice(b"{\"through-id\":");
        match keep.checked_sub(1).and_then(|i| self.live.get(i)) {
            Some(id) => canonical::write_str(&mut p, id.as_bytes()),
            None => p.extend_from_slice(b"null"),
        }
        p.push(b'}');
        self.envelope("rewind", &p, ts, "rew")?;
        self.live.truncate(keep);
        let kept: HashSet<&str> = self.live.iter().map(String::as_str).collect();
        let calls = std::mem::take(&mut self.calls);
        self.calls = calls
            .into_iter()
            .filter(|c| kept.contains(c.2.as_str()))
            .collect();
        self.call_at = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| (c.0.clone(), i))
            .collect();
        Ok(())
    }

    /// A grants envelope with the canonical `snapshot`, unless it equals the last one.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn grants(&mut self, snapshot: Vec<u8>, ts: Option<Ts>) -> io::Result<()> {
        if self.grants.as_ref() == Some(&snapshot) {
            return Ok(());
        }
        let mut p = Vec::with_capacity(snapshot.len() + 12);
        p.extend_from_slice(b"{\"grants\":");
        p.extend_from_slice(&snapshot);
        p.push(b'}');
        self.envelope("grants", &p, ts, "grants")?;
        self.grants = Some(snapshot);
        Ok(())
    }

    /// A run-context with the canonical `facts` list, unless it equals the last one.
    ///
    /// # Errors
    ///
    /// The write error.
    pub fn facts(&mut self, facts: Vec<u8>, ts: Option<Ts>) -> io::Result<()> {
        if self.facts.as_ref() == Some(&facts) {
            return Ok(());
        }
        let mut p = Vec::with_capacity(facts.len() + 24);
        p.extend_from_slice(b"{\"facts\":");
        p.extend_from_slice(&facts);
        p.extend_from_slice(b",\"sections\":[]}");
        self.envelope("run-context", &p, ts, "ctx")?;
        self.facts = Some(facts);
        Ok(())
    }
}

/// What a native import derived, for the caller to write the session-meta and
/// then the source lines.
pub struct Imported {
    /// The session-meta facts the conversion found, as one canonical JSON object.
    pub info: Vec<u8>,
    /// What the import had to do, one sentence each.
    pub warnings: Vec<String>,
    /// How many message envelopes were written.
    pub message_count: usize,
    /// The call ids left pending.
    pub pending: Vec<String>,
    /// The ts of the first derived envelope.
    pub first_ts: Option<Ts>,
    /// The ts after the last derived envelope.
    pub last_ts: Ts,
    /// The ids handed out so far.
    pub ids_used: u64,
    /// `"sha256:…"` of the source.
    pub sha: String,
    /// The source's size.
    pub size: u64,
    /// Every source line.
    pub lines: Vec<SourceLine>,
}

/// About how many source bytes one batch of `source-line` envelopes covers.
const LINE_BATCH: u64 = 1 << 20;

/// One batch of source lines to write: its lines (indices), the byte range
/// they span in the source, and the ts before its first line.
struct Batch {
    lines: std::ops::Range<usize>,
    start: u64,
    end: u64,
    ts: Ts,
}

/// The batches of `lines`, in order: each about [`LINE_BATCH`] bytes of the
/// source (one line alone when it is longer).
fn batches(lines: &[SourceLine], mut ts: Ts) -> Vec<Batch> {
    let mut out = Vec::new();
    let mut first = 0usize;
    while first < lines.len() {
        let Some(start) = lines.get(first).map(|l| l.offset) else {
            break;
        };
        let batch_ts = ts;
        let mut last = first;
        let mut end = start;
        while let Some(l) = lines.get(last) {
            if last > first && l.offset + u64::from(l.len) - start > LINE_BATCH {
                break;
            }
            end = l.offset + u64::from(l.len);
            if let Some(when) = l.when {
                ts = when;
            }
            last += 1;
        }
        out.push(Batch {
            lines: first..last,
            start,
            end,
            ts: batch_ts,
        });
        first = last;
    }
    out
}

/// The `source-line` envelopes of `batch`, appended to `env`; `raw` is a
/// scratch buffer for its source bytes.
fn format_batch(
    src: &File,
    lines: &[SourceLine],
    batch: &Batch,
    ids: &mut Ids,
    first_id: u64,
    raw: &mut Vec<u8>,
    env: &mut Vec<u8>,
) -> io::Result<()> {
    raw.clear();
    raw.resize((batch.end - batch.start) as usize, 0);
    src.read_exact_at(raw, batch.start)?;
    let mut ts = batch.ts;
    let mut number = itoa::Buffer::new();
    ids.n = first_id + batch.lines.start as u64;
    for i in batch.lines.clone() {
        let Some(line) = lines.get(i) else { break };
        let at = (line.offset - batch.start) as usize;
        let bytes = raw.get(at..at + line.len as usize).unwrap_or_default();
        let text = as_text(bytes)?;
        if let Some(when) = line.when {
            ts = when;
        }
        let id = ids.next("line");
        env.extend_from_slice(b"{\"id\":\"");
        env.extend_from_slice(&id);
        env.extend_from_slice(b"\",\"payload\":{\"line\":");
        env.extend_from_slice(number.format(i + 1).as_bytes());
        env.extend_from_slice(b",\"status\":\"");
        env.extend_from_slice(line.status.name());
        env.extend_from_slice(b"\",\"text\":");
        crate::import_value::write_text(env, text);
        env.extend_from_slice(b"},\"ts\":\"");
        env.extend_from_slice(&ts);
        env.extend_from_slice(b"\",\"type\":\"source-line\",\"v\":1}\n");
    }
    Ok(())
}

/// Writes one `source-line` envelope per line of `src` (read again, in order)
/// to `out`: ids from `ids` (after the derived ones and the session-meta's),
/// each line's ts its own or the one before (from `ts`).
///
/// The lines go in batches; a second thread formats every other batch while
/// this one formats the rest and writes them all, in order. `stop` is asked
/// before each batch.
///
/// # Errors
///
/// An I/O error, what `stop` answers, or a line that is no longer UTF-8 (the
/// source changed).
pub fn write_source_lines(
    src: &File,
    lines: &[SourceLine],
    ids: &mut Ids,
    ts: Ts,
    out: &mut impl Write,
    stop: Stop<'_>,
) -> io::Result<()> {
    let first_id = ids.n;
    let work = batches(lines, ts);
    let (to_main, formatted) = mpsc::sync_channel::<io::Result<Vec<u8>>>(2);
    let (give_back, returned) = mpsc::channel::<Vec<u8>>();
    let done = std::thread::scope(|scope| {
        let mut helper_ids = ids.clone();
        let work = &work;
        scope.spawn(move || {
            let mut raw = Vec::new();
            for batch in work.iter().skip(1).step_by(2) {
                let mut env = returned.try_recv().unwrap_or_default();
                env.clear();
                let r = format_batch(
                    src,
                    lines,
                    batch,
                    &mut helper_ids,
                    first_id,
                    &mut raw,
                    &mut env,
                );
                let failed = r.is_err();
                if to_main.send(r.map(|()| env)).is_err() || failed {
                    return;
                }
            }
        });
        // This side's work, in a closure that owns the receiving end: however
        // it ends, the helper's next send fails and it stops.
        let (ids, out) = (&mut *ids, &mut *out);
        let mut mine = move || -> io::Result<()> {
            let mut raw = Vec::new();
            let mut env = Vec::new();
            for (k, batch) in work.iter().enumerate() {
                stop()?;
                if k % 2 == 0 {
                    env.clear();
                    format_batch(src, lines, batch, ids, first_id, &mut raw, &mut env)?;
                    out.write_all(&env)?;
                } else {
                    let theirs = formatted
                        .recv()
                        .map_err(|_| io::Error::other("the formatting thread stopped"))??;
                    out.write_all(&theirs)?;
                    let _ = give_back.send(theirs);
                }
            }
            Ok(())
        };
        mine()
    });
    done?;
    ids.n = first_id + lines.len() as u64;
    out.flush()
}

/// The first `limit` bytes (fewer if it is shorter) of the zstd stream that is
/// `file` from its start, decompressed: to tell a compressed source's format
/// without decompressing all of it.
///
/// # Errors
///
/// An I/O error, or `InvalidData` when the file does not start a zstd stream.
pub fn zstd_head(file: &File, limit: usize) -> io::Result<Vec<u8>> {
    let mut reader = BufReader::new(file);
    reader.seek(SeekFrom::Start(0))?;
    let decoder = zstd::stream::read::Decoder::with_buffer(reader)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    match decoder.take(limit as u64).read_to_end(&mut out) {
        Ok(_) => Ok(out),
        // A stream cut short still tells its format by what it has.
        Err(_) if !out.is_empty() => Ok(out),
        Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of every length around the scan's block and the writer's batch,
    /// a blank one, text that needs escapes, and no `\n` at the end.
    fn sample() -> Vec<u8> {
        let mut data = Vec::new();
        for (i, len) in [
            0usize,
            5,
            70_000,
            1 << 19,
            (1 << 20) - 3,
            1 << 20,
            (1 << 20) + 7,
            3,
            2 << 20,
            11,
        ]
        .iter()
        .enumerate()
        {
            let line: String = (0..*len)
                .map(|k| ['a', '"', 'é', '\\', '\t', '日'][(k + i) % 6])
                .collect();
            data.extend_from_slice(line.as_bytes());
            data.push(b'\n');
        }
        data.extend_from_slice(b"{\"last\": \"no newline\"}");
        data
    }

    /// A [`Stop`] that answers an error from its `at`-th question on, and
    /// counts the questions.
    struct StopAt {
        at: usize,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl StopAt {
        fn new(at: usize) -> Self {
            StopAt {
                at,
                asked: std::sync::atomic::AtomicUsize::new(0),
            }
        }

        fn ask(&self) -> io::Result<()> {
            let n = self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if n >= self.at {
                return Err(io::Error::other("stopped"));
            }
            Ok(())
        }

        fn asked(&self) -> usize {
            self.asked.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    /// `lines` Claude Code records (a user turn and an answer each) and a Codex
    /// rollout of as many items, each line `pad` bytes of text or so.
    fn sources(lines: usize, pad: usize) -> (Vec<u8>, Vec<u8>) {
        let text = "x".repeat(pad);
        let mut claude = Vec::new();
        let mut parent = String::from("null");
        for i in 0..lines {
            let (kind, role) = if i % 2 == 0 {
                ("user", "user")
            } else {
                ("assistant", "assistant")
            };
            let when = format!(
                "2026-03-01T{:02}:{:02}:{:02}.000Z",
                10 + i / 3600,
                i / 60 % 60,
                i % 60
            );
            claude.extend_from_slice(
                format!(
                    "{{\"type\":\"{kind}\",\"uuid\":\"u{i}\",\"parentUuid\":{parent},\"sessionId\":\"s\",\"timestamp\":\"{when}\",\"message\":{{\"id\":\"m{i}\",\"role\":\"{role}\",\"content\":[{{\"type\":\"text\",\"text\":\"{text}\"}}]}}}}\n"
                )
                .as_bytes(),
            );
            parent = format!("\"u{i}\"");
        }
        let mut codex = Vec::new();
        codex.extend_from_slice(b"{\"timestamp\":\"2026-03-01T10:00:00.000Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"s\",\"cwd\":\"/w\"}}\n");
        for i in 0..lines {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let kind = if i % 2 == 0 {
                "input_text"
            } else {
                "output_text"
            };
            codex.extend_from_slice(
                format!(
                    "{{\"timestamp\":\"2026-03-01T10:00:00.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"{role}\",\"content\":[{{\"type\":\"{kind}\",\"text\":\"{text}\"}}]}}}}\n"
                )
                .as_bytes(),
            );
        }
        (claude, codex)
    }

    #[test]
    fn an_import_asks_its_stop_at_every_stretch_and_ends_when_told() -> io::Result<()> {
        // 3 MiB of lines: four scan blocks, more than a batch of source lines,
        // and records enough for several questions of the conversion.
        let (claude, codex) = sources(3 * RECORDS_PER_STOP as usize, 230);
        for (name, data) in [("claude", &claude), ("codex", &codex)] {
            let path =
                std::env::temp_dir().join(format!("at-import-stop-{name}-{}", std::process::id()));
            std::fs::write(&path, data)?;
            let file = File::open(&path)?;
            let import = |stop: Stop<'_>, out: &mut Vec<u8>| match name {
                "claude" => crate::import_claude::import(&file, out, stop),
                _ => crate::import_codex::import(&file, out, stop),
            };
            // Undisturbed: how often each pass asks.
            let counting = StopAt::new(usize::MAX);
            let mut whole = Vec::new();
            let done = match import(&|| counting.ask(), &mut whole)? {
                Ok(done) => done,
                Err(why) => panic!("{name}: {}", why.0),
            };
            let asked = counting.asked();
            let blocks = data.len().div_ceil(SCAN_BLOCK);
            // The scan once a block, the conversion once every few records
            // (here three times at least).
            assert!(asked >= blocks + 3, "{name}: asked {asked} times");
            // Told to stop at each question in turn (the first few, and the
            // conversion's): the import ends there, with that error, having
            // written at most a part of what it writes undisturbed.
            for at in (1..=blocks + 1).chain([asked - 1, asked]) {
                let stop = StopAt::new(at);
                let mut part = Vec::new();
                let err = import(&|| stop.ask(), &mut part).map(|_| ());
                assert_eq!(
                    err.map_err(|e| e.to_string()),
                    Err("stopped".into()),
                    "{name}, at {at}"
                );
                assert_eq!(
                    stop.asked(),
                    at,
                    "{name}: went on after it was told to stop"
                );
                assert!(part.len() < whole.len() || at == asked, "{name}, at {at}");
            }
            // And the source lines: asked before each batch.
            let mut ids = Ids::new(&done.sha);
            let counting = StopAt::new(usize::MAX);
            let mut lines_out = Vec::new();
            write_source_lines(
                &file,
                &done.lines,
                &mut ids,
                done.last_ts,
                &mut lines_out,
                &|| counting.ask(),
            )?;
            let batches = counting.asked();
            assert!(
                batches >= data.len() / LINE_BATCH as usize,
                "{name}: {batches} batches"
            );
            let stop = StopAt::new(2);
            let mut part = Vec::new();
            let err = write_source_lines(
                &file,
                &done.lines,
                &mut ids,
                done.last_ts,
                &mut part,
                &|| stop.ask(),
            );
            assert_eq!(err.map_err(|e| e.to_string()), Err("stopped".into()));
            assert!(
                part.len() < lines_out.len(),
                "{name}: wrote every line after a stop"
            );
            std::fs::remove_file(&path)?;
        }
        Ok(())
    }

    #[test]
    fn scan_and_source_lines_match_a_line_by_line_reading() -> io::Result<()> {
        let path = std::env::temp_dir().join(format!("at-import-run-{}", std::process::id()));
        let data = sample();
        std::fs::write(&path, &data)?;
        let file = File::open(&path)?;
        let mut seen: Vec<(u64, Vec<u8>)> = Vec::new();
        let scanned = scan(&file, &go_on, |n, offset, line| {
            assert_eq!(n, seen.len());
            seen.push((offset, line.to_vec()));
            Ok(())
        })?;
        let mut expected: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut offset = 0u64;
        for piece in data.split(|&b| b == b'\n') {
            expected.push((offset, piece.to_vec()));
            offset += piece.len() as u64 + 1;
        }
        assert_eq!(seen, expected);
        let want = crate::digest::sha256_digest(&data);
        assert_eq!(
            scanned,
            Ok((want.clone(), data.len() as u64, expected.len()))
        );

        let ts = |d: u8| {
            let mut t = EPOCH_TS;
            t[3] = b'0' + d;
            t
        };
        let lines: Vec<SourceLine> = seen
            .iter()
            .enumerate()
            .map(|(i, (offset, line))| SourceLine {
                offset: *offset,
                len: line.len() as u32,
                status: if i % 2 == 0 {
                    Status::Used
                } else {
                    Status::Blank
                },
                when: (i % 3 == 0).then(|| ts((i % 10) as u8)),
            })
            .collect();
        let mut ids = Ids::new(&want);
        ids.n = 7;
        let mut got = Vec::new();
        write_source_lines(&file, &lines, &mut ids, ts(9), &mut got, &go_on)?;
        assert_eq!(ids.n, 7 + lines.len() as u64);
        // The same envelopes, one line at a time.
        let mut reference = Ids::new(&want);
        reference.n = 7;
        let mut at = ts(9);
        let mut one = Vec::new();
        for (i, (line, (_, bytes))) in lines.iter().zip(&seen).enumerate() {
            at = line.when.unwrap_or(at);
            let id = reference.next("line");
            one.extend_from_slice(b"{\"id\":\"");
            one.extend_from_slice(&id);
            one.extend_from_slice(
                format!("\",\"payload\":{{\"line\":{},\"status\":\"", i + 1).as_bytes(),
            );
            one.extend_from_slice(line.status.name());
            one.extend_from_slice(b"\",\"text\":");
            canonical::write_str(&mut one, bytes);
            one.extend_from_slice(b"},\"ts\":\"");
            one.extend_from_slice(&at);
            one.extend_from_slice(b"\",\"type\":\"source-line\",\"v\":1}\n");
        }
        assert!(
            got == one,
            "the batched writer differs from the line-by-line one"
        );
        // A line that is no longer UTF-8 (the source changed): InvalidData.
        std::fs::write(&path, b"\xff\xfe\n")?;
        let changed = File::open(&path)?;
        let bad = [SourceLine {
            offset: 0,
            len: 2,
            status: Status::Used,
            when: None,
        }];
        let err = write_source_lines(&changed, &bad, &mut ids, EPOCH_TS, &mut Vec::new(), &go_on);
        assert_eq!(err.map_err(|e| e.kind()), Err(io::ErrorKind::InvalidData));
        std::fs::remove_file(&path)
    }
}
