//! The envelope index: where every envelope is, its number, type and role,
//! about 9 bytes a line; the lines stay in the file.

use super::*;

/// Where one envelope is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRec {
    /// Offset of its first byte.
    pub offset: u64,
    /// Its length, without the `\n`.
    pub len: u32,
    /// 1-based line number, blank lines counted.
    pub number: u64,
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
pub(super) fn on_every_core<T, F>(items: &[u32], each: F) -> Result<Vec<T>, LoadError>
where
    T: Send,
    F: Fn(u32) -> Result<T, LoadError> + Sync,
{
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let per = items.len().div_ceil(cores).max(256);
    if items.len() <= per {
        return items.iter().map(|&i| each(i)).collect();
    }
    let each = &each;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(per)
            .map(|part| {
                spawn_or_run(scope, move || part.iter().map(|&i| each(i)).collect::<Vec<_>>())
            })
            .collect();
        let mut out = Vec::with_capacity(items.len());
        for h in handles {
            let part =
                h.join().map_err(|()| LoadError::Io(io::Error::other("a reader thread failed")))?;
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
    pub(super) offsets: Vec<u32>,
    // highs[k]: the first index whose offset is at least (k + 1) << 32.
    pub(super) highs: Vec<u32>,
    pub(super) lens: Vec<u32>,
    // The type's code in the low four bits, the role's (0 for none) above.
    pub(super) tags: Vec<u8>,
    // (first index, number - index - 1) from each index where that difference
    // changes; none while it is 0.
    pub(super) bumps: Vec<(u32, u64)>,
    // Line index -> name, for EnvelopeType::Other and Role::Other only.
    pub(super) other_types: HashMap<u32, Box<str>>,
    pub(super) other_roles: HashMap<u32, Box<str>>,
}

pub(super) const KINDS: [EnvelopeType; 10] = [
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
pub(super) const ROLES: [Role; 5] =
    [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Other];

pub(super) fn tag_of(kind: EnvelopeType, role: Option<Role>) -> u8 {
    let k = KINDS.iter().position(|&x| x == kind).unwrap_or(9) as u8;
    let r = role.map_or(0, |r| ROLES.iter().position(|&x| x == r).unwrap_or(4) as u8 + 1);
    k | r << 4
}

pub(super) fn kind_of_tag(tag: u8) -> EnvelopeType {
    KINDS.get(usize::from(tag & 0x0F)).copied().unwrap_or(EnvelopeType::Other)
}

pub(super) fn role_of_tag(tag: u8) -> Option<Role> {
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
    pub(super) fn push_rec(&mut self, rec: LineRec) {
        let i = self.len() as u64;
        let bump = rec.number.saturating_sub(i + 1);
        if bump != self.bumps.last().map_or(0, |b| b.1) {
            self.bumps.push((u32::try_from(i).unwrap_or(u32::MAX), bump));
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

    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

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
    pub(super) fn offset(&self, i: usize) -> Option<u64> {
        let low = u64::from(*self.offsets.get(i)?);
        let high = self.highs.partition_point(|&h| (h as usize) <= i) as u64;
        Some(high << 32 | low)
    }

    /// Every envelope's record, in file order.
    pub fn records(&self) -> Vec<LineRec> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

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
                totals.push(TypeTotal { name, count: 0, bytes: 0 });
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
        let rec = self.get(i as usize).ok_or_else(|| io::Error::other("no such envelope"))?;
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
            let malformed =
                |error| LoadError::Line { line: number, error: LineError::Malformed(error) };
            let mut spans = vec![None; keys.len()];
            if let Some(p) = member_span_at(&line, &["payload"]).map_err(malformed)? {
                let payload = &line[p.start as usize..p.end as usize];
                let inner = member_spans(payload, keys).map_err(malformed)?;
                for (out, at) in spans.iter_mut().zip(inner) {
                    *out = at.map(|m| Span { start: p.start + m.start, end: p.start + m.end });
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
