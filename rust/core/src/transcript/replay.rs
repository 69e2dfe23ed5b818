//! Replay: the live message list, tool operations, grants and sections that
//! each envelope, in file order, leaves; and the [`History`] a reader may keep.

use super::*;

/// [`Source::part`] of a message that is a whole line: a message line, or a
/// compaction's summary.
pub const WHOLE: u32 = u32::MAX;

/// Where a message comes from: a message line, a compaction line (its summary),
/// or the `part`-th message of a compaction's replacement (whose id is
/// `"<compaction id>:<part>"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source {
    /// The envelope's index in [`Index`].
    pub line: u32,
    /// [`WHOLE`], or the replacement message's position in its compaction.
    pub part: u32,
}

impl Source {
    pub fn whole(line: u32) -> Self {
        Source { line, part: WHOLE }
    }
}

/// One message of the live list: where it comes from and, if an elision
/// stubbed it, where the stub is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveMessage {
    /// The envelope's index in [`Index`]: the message line, or the compaction line
    /// of a summary or a replacement message.
    pub line: u32,
    /// [`WHOLE`], or the replacement message's position in compaction `line`.
    pub part: u32,
    // The elision line (never line 0, the session-meta: so the Option costs
    // nothing) and the stub's span in it.
    pub(super) stub_at: Option<(NonZeroU32, Span)>,
    /// Kept by compaction.
    pub sticky: bool,
}

impl LiveMessage {
    pub(super) fn new(line: u32, part: u32, sticky: bool) -> Self {
        LiveMessage { line, part, stub_at: None, sticky }
    }

    pub fn source(&self) -> Source {
        Source { line: self.line, part: self.part }
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
    pub fn source(&self) -> Source {
        Source { line: self.line, part: self.part }
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

/// An envelope [`Transcript::accept`] found may follow a transcript's lines,
/// or a message line the writer made itself, which
/// [`Transcript::accept_message`] accepted from what it knows of it.
#[derive(Debug)]
pub struct Accepted(AcceptedKind);

#[derive(Debug)]
pub(super) enum AcceptedKind {
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
    pub(super) id: [u8; 32],
    pub(super) key: Keyed,
    // How many lines the transcript had then: while it has no more, the id
    // is still fresh without looking again.
    pub(super) drawn_at: usize,
}

impl FreshId {
    pub fn digits(&self) -> &[u8; 32] {
        &self.id
    }

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
    pub(super) ids: IdTable,
    /// The live messages, compactions, elisions and rewinds applied.
    pub live: Vec<LiveMessage>,
    // Line index -> position in `live`, or NOT_LIVE.
    pub(super) live_pos: Vec<u32>,
    // Compaction line -> its replacement's messages, for the compactions that
    // carry one (a transcript without any pays nothing).
    pub(super) parts: HashMap<u32, Box<[Part]>>,
    // Replacement message -> its position in `live`, while it is live.
    pub(super) part_pos: HashMap<Source, u32>,
    /// Dispatched, unsettled operations by dispatch line, in dispatch order.
    pub pending: BTreeMap<u32, PendingOp>,
    // Call id -> the pending operations dispatched for it that no tool message
    // has answered yet, so a tool message finds its own without a scan of them
    // all (a writer that never settles would make that quadratic). Keyed by
    // what the file says, hence the std map's seeded hash.
    pub(super) awaiting: std::collections::HashMap<Id, Vec<u32>>,
    /// The last grants line.
    pub grants: Option<u32>,
    /// Section digest -> the run-context line carrying its text.
    pub sections: std::collections::HashMap<Box<str>, u32>,
    /// Lines in the file, blank ones included: the next line's number less one.
    pub line_count: u64,
    /// What replay did, when asked to keep it (see [`inspect`]).
    pub history: Option<History>,
}

pub(super) const NOT_LIVE: u32 = u32::MAX;

// `k` as `f"{k}"` writes it (no sign, no leading zero), or None.
pub(super) fn canonical_index(digits: &[u8]) -> Option<u32> {
    let first = *digits.first()?;
    if !digits.iter().all(u8::is_ascii_digit) || (first == b'0' && digits.len() > 1) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok().filter(|&k| k != WHOLE)
}

impl Transcript {
    pub(super) fn live_position(&self, at: Source) -> Option<u32> {
        if at.part == WHOLE {
            self.live_pos.get(at.line as usize).copied().filter(|&p| p != NOT_LIVE)
        } else {
            self.part_pos.get(&at).copied()
        }
    }

    pub(super) fn set_position(&mut self, at: Source, position: u32) {
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
    pub(super) fn part_named(&self, id: &[u8]) -> Option<Source> {
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

    /// Checks that `env` can follow what is there; `strict` also refuses settles
    /// of unknown or settled operations (an append does; a load tolerates them).
    pub fn check(&self, env: &Envelope, strict: bool) -> Result<(), ReplayError> {
        self.check_keyed(env, &Keyed::of(&env.id), strict)
    }

    // What every envelope must pass: the session-meta first and only there,
    // an id no envelope or replacement message has.
    pub(super) fn check_head(
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

    pub(super) fn check_keyed(
        &self,
        env: &Envelope,
        key: &Keyed,
        strict: bool,
    ) -> Result<(), ReplayError> {
        self.check_head(env.kind, key, || env.id.clone())?;
        match &env.detail {
            Detail::Compaction { through, .. } if !self.is_live(through) => {
                Err(ReplayError::UnknownId { id: id_text(through), by: "compaction" })
            }
            Detail::Compaction { replacement: Some(parts), .. } => {
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
                Err(ReplayError::UnknownId { id: id_text(id), by: "rewind" })
            }
            Detail::Elision { items } => match items.iter().find(|(id, _)| !self.is_live(id)) {
                Some((id, _)) => Err(ReplayError::UnknownId { id: id_text(id), by: "elision" }),
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
                return FreshId { id, key, drawn_at: self.index.len() };
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
            tool_call_id: if role == "tool" { tool_call_id.map(Into::into) } else { None },
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
            AcceptedKind::Message { key, other_role, sticky, tool_call_id, .. } => {
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
    pub(super) fn reserve(&mut self, more: usize) {
        self.index.reserve(more);
        self.ids.reserve(more);
        let _ = self.live_pos.try_reserve_exact(more);
    }

    // The record, id and live position of the next line; its index.
    pub(super) fn add_line(&mut self, rec: LineRec, key: Keyed) -> u32 {
        let index = u32::try_from(self.index.len()).unwrap_or(u32::MAX);
        self.line_count = self.line_count.max(rec.number);
        self.index.push_rec(rec);
        self.live_pos.push(NOT_LIVE);
        self.ids.push(key, index);
        index
    }

    // Message line `index` joins the live list; a tool message's answers the
    // operation dispatched for its call.
    pub(super) fn add_message(&mut self, index: u32, sticky: bool, tool_call_id: Option<&[u8]>) {
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
    pub(super) fn dispatch(&mut self, index: u32, call_id: Option<Id>) {
        if let Some(call) = &call_id {
            self.awaiting.entry(call.clone()).or_default().push(index);
        }
        self.pending.insert(index, PendingOp { call_id, result: None });
    }

    // Settle line `index` settles the operation dispatched at `op`, if pending.
    pub(super) fn settle(&mut self, index: u32, op: Option<u32>) {
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
    pub(super) fn push_scanned(
        &mut self,
        s: ScannedLine,
        rec: LineRec,
        calls: &[u8],
        ops: &[Keyed],
    ) -> Result<(), ReplayError> {
        self.check_head(s.kind, &s.key, || s.key.id_bytes())?;
        let call = s.call.and_then(|(at, len)| calls.get(at as usize..(at + len) as usize));
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

    pub(super) fn push_checked(&mut self, env: Envelope, key: Keyed, rec: LineRec) {
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
            Detail::Message { sticky, tool_call_id, .. } => {
                self.add_message(index, sticky, tool_call_id.as_deref())
            }
            Detail::Compaction { through, replacement } => {
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
                    Some(id) => self.position(id).map_or(self.live.len(), |p| p as usize + 1),
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
                        elided.push(Elided { line: m.line, part: m.part, stub_before: m.stub() });
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
                    self.sections.entry(digest.into_boxed_str()).or_insert(index);
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

    pub(super) fn sizes_of<R: ReadAt + ?Sized>(
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
                    let stub = bytes.get(at.start as usize..at.end as usize).unwrap_or_default();
                    (line, string_size(stub).map(Some))
                }
                None if e.part != WHOLE => {
                    let bytes = self.index.read_line(src, e.line, &mut buf)?;
                    let at = self.part(e.line, e.part).map(|p| p.span).unwrap_or_default();
                    let payload = bytes.get(at.start as usize..at.end as usize).unwrap_or_default();
                    (e.line, string_size_at(payload, &["content"]))
                }
                None => {
                    let kind = self.index.get(e.line as usize).map(|r| r.kind);
                    let key =
                        if kind == Some(EnvelopeType::Compaction) { "summary" } else { "content" };
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
