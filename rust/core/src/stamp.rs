//! What each new envelope is stamped with: a time-ordered id and a UTC timestamp.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

// How many forks this process is from its first one, as told by `forked`.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// Call in a forked child (the binding's at-fork handler does): every generator
/// copied across the fork then reseeds itself before its next id, so parent and
/// child never draw the same ids.
pub fn forked() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// Makes envelope ids: 32 lowercase hex characters with UUIDv7's bits (48-bit
/// Unix milliseconds, version 7, a 12-bit sequence, the variant, 62 random bits),
/// strictly increasing within one generator even when the clock stalls or steps back.
pub struct IdGen {
    state: u64,
    last_ms: u64,
    seq: u16,
    // `FORKS` when the state was seeded.
    forks: u64,
}

// A seed from the OS's randomness (and the clock and pid, should that fail).
fn seed() -> u64 {
    let mut seed = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
    let mut state = u64::from_le_bytes(seed);
    if from_os.is_err() {
        state ^= now().0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id());
    }
    state
}

impl IdGen {
    /// A generator seeded from the OS's randomness (and the clock, should that fail).
    pub fn new() -> Self {
        IdGen {
            state: seed(),
            last_ms: 0,
            seq: 0,
            forks: FORKS.load(Ordering::Relaxed),
        }
    }

    // splitmix64: small, fast and well mixed; uniqueness is also checked by the index.
    fn next_random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next id.
    pub fn next_id(&mut self) -> String {
        let forks = FORKS.load(Ordering::Relaxed);
        if forks != self.forks {
            // A forked child: same state as the parent, so the same "random" bits.
            self.state = seed();
            self.forks = forks;
        }
        let ms = now().0 / 1000;
        if ms > self.last_ms {
            self.last_ms = ms;
            // Start low in the sequence space, leaving room to count up.
            self.seq = (self.next_random() & 0x7FF) as u16;
        } else if self.seq >= 0xFFF {
            self.last_ms += 1;
            self.seq = 0;
        } else {
            self.seq += 1;
        }
        let high = (self.last_ms & 0xFFFF_FFFF_FFFF) << 16 | 0x7000 | u64::from(self.seq);
        let low = (self.next_random() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        let mut id = String::with_capacity(32);
        push_hex(&mut id, high);
        push_hex(&mut id, low);
        id
    }
}

// Sixteen lowercase hex digits of `v`; by hand, because `format!` is a
// noticeable share of an append.
fn push_hex(out: &mut String, v: u64) {
    for shift in (0..16).rev() {
        out.push(char::from(
            b"0123456789abcdef"[((v >> (shift * 4)) & 0xF) as usize],
        ));
    }
}

impl Default for IdGen {
    fn default() -> Self {
        Self::new()
    }
}

// Microseconds since the epoch, and the same split as (seconds, micros).
fn now() -> (u64, u64, u32) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_micros() as u64, d.as_secs(), d.subsec_micros())
}

/// Now, as the wire writes it: `%Y-%m-%dT%H:%M:%S.%fZ` in UTC.
pub fn utc_timestamp() -> String {
    let (_, secs, micros) = now();
    format_timestamp(secs, micros)
}

/// `secs` since the epoch plus `micros`, as `%Y-%m-%dT%H:%M:%S.%fZ`.
pub fn format_timestamp(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let mut out = String::with_capacity(27);
    push_digits(&mut out, y.clamp(0, 9999) as u64, 4);
    out.push('-');
    push_digits(&mut out, u64::from(m), 2);
    out.push('-');
    push_digits(&mut out, u64::from(d), 2);
    out.push('T');
    push_digits(&mut out, rem / 3600, 2);
    out.push(':');
    push_digits(&mut out, rem / 60 % 60, 2);
    out.push(':');
    push_digits(&mut out, rem % 60, 2);
    out.push('.');
    push_digits(&mut out, u64::from(micros), 6);
    out.push('Z');
    out
}

// `v` in exactly `width` decimal digits, zero-padded.
fn push_digits(out: &mut String, v: u64, width: u32) {
    for place in (0..width).rev() {
        out.push(char::from(b'0' + (v / 10u64.pow(place) % 10) as u8));
    }
}

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_match_the_wire_format() {
        assert_eq!(format_timestamp(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_timestamp(1_786_281_008, 542_283),
            "2026-08-09T13:10:08.542283Z"
        );
        assert_eq!(
            format_timestamp(951_782_400, 1),
            "2000-02-29T00:00:00.000001Z"
        );
        assert_eq!(utc_timestamp().len(), 27);
    }

    #[test]
    fn a_generator_copied_by_a_fork_reseeds() {
        let parent = IdGen::new();
        let mut child = IdGen {
            state: parent.state,
            last_ms: parent.last_ms,
            seq: parent.seq,
            forks: parent.forks,
        };
        let mut parent = parent;
        forked();
        let (a, b) = (parent.next_id(), child.next_id());
        assert_ne!(a[16..], b[16..], "the same random bits on both sides");
    }

    #[test]
    fn ids_are_uuid7_shaped_and_strictly_increasing() {
        let mut g = IdGen::new();
        let mut last = String::new();
        for _ in 0..10_000 {
            let id = g.next_id();
            assert_eq!(id.len(), 32);
            assert!(id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert_eq!(&id[12..13], "7");
            assert!(matches!(&id[16..17], "8" | "9" | "a" | "b"));
            assert!(id > last, "{id} after {last}");
            last = id;
        }
    }
}
