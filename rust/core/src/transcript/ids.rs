//! The id table: every envelope's id, packed where its form allows, found
//! through a seeded open-addressing table.

use super::*;

/// Envelope id -> line index, for every line. The ids of the usual forms (32
/// lowercase hex digits, like this library's, or a lowercase UUID with its
/// dashes) are kept packed in 16 bytes, the others whole on the side; an open
/// addressing table of line indices finds them. About 30 bytes a line, where a
/// map of boxed ids takes about 90: on a file of small lines the id table is
/// most of a session's memory.
#[derive(Debug, Default)]
pub(super) struct IdTable {
    // Line i's id packed (see `pack`), or zeros when its form is OTHER.
    pub(super) packed: Vec<[u8; 16]>,
    // Line i's form: HEX32, UUID or OTHER.
    pub(super) form: Vec<u8>,
    // The OTHER ids, by line.
    pub(super) others: HashMap<u32, Box<[u8]>>,
    // `hash >> 32 << 32 | line index`, or EMPTY; of any length (or empty),
    // under 3/4 full (a load sizes it two thirds full). The hash's high half
    // picks the home slot and is compared before the id is: a probe rarely
    // reads an id that is not the one looked for.
    pub(super) slots: Vec<u64>,
}

pub(super) const EMPTY: u64 = u64::MAX;
pub(super) const HEX32: u8 = 0;
pub(super) const UUID: u8 = 1;
pub(super) const OTHER: u8 = 2;

// Each byte's value as a lowercase hex digit, or 0xFF.
#[cfg(not(target_arch = "x86_64"))]
pub(super) const HEX: [u8; 256] = {
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
pub(super) fn unhex(digits: &[u8]) -> Option<[u8; 16]> {
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
pub(super) fn unhex16(digits: &[u8], out: &mut [u8]) -> bool {
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
pub(super) fn pack(id: &[u8]) -> Option<(u8, [u8; 16])> {
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
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// The high half of a 128-bit product folded onto its low half (wyhash's and
// foldhash's step): with secret operands, an output nobody can aim at.
pub(super) fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p >> 64) as u64 ^ p as u64
}

/// The id hash's secret: drawn once per process from the system's randomness
/// (std's `RandomState`). Ids come from files anyone may write; an unseeded
/// hash lets them be chosen so that all probe one slot, and a load of 160,000
/// such lines goes quadratic (30 s instead of half a second).
pub(super) fn id_seed() -> &'static (std::collections::hash_map::RandomState, [u64; 3]) {
    static SEED: std::sync::OnceLock<(std::collections::hash_map::RandomState, [u64; 3])> =
        std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let keys = [state.hash_one(0u8), state.hash_one(1u8), state.hash_one(2u8)];
        (state, keys)
    })
}

pub(super) fn hash_packed(form: u8, packed: &[u8; 16]) -> u64 {
    let (a, b) = packed.split_at(8);
    let a = u64::from_le_bytes(a.try_into().unwrap_or_default());
    let b = u64::from_le_bytes(b.try_into().unwrap_or_default());
    let [k0, k1, k2] = id_seed().1;
    mix(fold(a ^ k0, b ^ k1 ^ u64::from(form)) ^ k2)
}

pub(super) fn hash_other(id: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    // SipHash, keyed: the rare id that is not 32 hex digits or a UUID.
    id_seed().0.hash_one(id)
}

/// An id as the id table keeps it, with its hash: worked out where the line
/// is read (on a parser thread during a load), so that replay only probes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Keyed {
    pub(super) form: u8,
    pub(super) packed: [u8; 16],
    // The id itself, for the OTHER form only.
    pub(super) other: Option<Box<[u8]>>,
    pub(super) hash: u64,
}

impl Keyed {
    pub(crate) fn of(id: &[u8]) -> Self {
        match pack(id) {
            Some((form, packed)) => {
                Keyed { form, packed, other: None, hash: hash_packed(form, &packed) }
            }
            None => {
                Keyed { form: OTHER, packed: [0; 16], other: Some(id.into()), hash: hash_other(id) }
            }
        }
    }

    /// The key of the id whose 32 lowercase hex digits are those of `bits`:
    /// [`Keyed::of`] of those digits, without reading them.
    pub(crate) fn of_hex32_bits(bits: [u8; 16]) -> Self {
        Keyed { form: HEX32, packed: bits, other: None, hash: hash_packed(HEX32, &bits) }
    }

    // The id's bytes again (for a message about it).
    pub(super) fn id_bytes(&self) -> Vec<u8> {
        if let Some(id) = &self.other {
            return id.to_vec();
        }
        let mut out = crate::stamp::hex_digits(&self.packed).to_vec();
        if self.form == UUID {
            for at in [20, 16, 12, 8] {
                out.insert(at, b'-');
            }
        }
        out
    }

    // The id's bytes, when it is not packed (a packed id has no `:`, so it
    // never names a replacement message).
    pub(super) fn other_id(&self) -> Option<&[u8]> {
        self.other.as_deref()
    }
}

impl IdTable {
    // The first slot to probe for `hash`: its high half (the tag every slot
    // keeps) scaled to the table's length, which need not be a power of two,
    // so the table is sized to what it holds, not to the next doubling.
    pub(super) fn home(&self, hash: u64) -> usize {
        ((u128::from(hash >> 32) * self.slots.len() as u128) >> 32) as usize
    }

    /// The line of `id`, if an envelope has it.
    pub(super) fn get(&self, id: &[u8]) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(&Keyed::of(id))
    }

    /// Asks the processor for the slot `hash` is looked up in, ahead of the
    /// lookup: replay does it a few lines ahead, so that its probe of a table
    /// bigger than the cache does not wait on memory.
    #[inline]
    pub(super) fn prefetch(&self, hash: u64) {
        if let Some(slot) = self.slots.get(self.home(hash)) {
            prefetch(slot);
        }
    }

    /// The line of the id `key`, if an envelope has it.
    pub(super) fn find(&self, key: &Keyed) -> Option<u32> {
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
    pub(super) fn place(&mut self, line: u32, hash: u64) {
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
    pub(super) fn reserve(&mut self, more: usize) {
        let _ = self.packed.try_reserve_exact(more);
        let _ = self.form.try_reserve_exact(more);
        let want = (self.form.len() + more).saturating_mul(3) / 2 + 1;
        if want > self.slots.len() {
            self.grow_to(want.max(64));
        }
    }

    // Moves every slot to a new table of `size` slots. Each slot's tag is its
    // hash's high half, which is all `home` reads: no id is hashed again.
    pub(super) fn grow_to(&mut self, size: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; size]);
        for slot in old.into_iter().filter(|&s| s != EMPTY) {
            self.place(slot as u32, slot);
        }
    }

    /// Adds the id of the next line, `line` (lines are added in order, each
    /// id once: replay has checked it is new).
    pub(super) fn push(&mut self, key: Keyed, line: u32) {
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
pub(super) fn prefetch<T>(item: &T) {
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
