//! What each new envelope is stamped with: a time-ordered id and a UTC timestamp.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::fork;

/// Makes envelope ids: 32 lowercase hex characters with UUIDv7's bits (48-bit
/// Unix milliseconds, version 7, a 12-bit sequence, the variant, 62 random bits),
/// strictly increasing within one generator even when the clock stalls or steps back.
/// A generator copied by a fork reseeds before its next id in the child
/// ([`fork::generation`]), so parent and child never draw the same ids.
pub struct IdGen {
    state: u64,
    last_ms: u64,
    seq: u16,
    // The fork generation the state was seeded in.
    forks: u64,
}

// A seed from the OS's randomness (and the clock and pid, should that fail).
fn seed() -> u64 {
    let mut seed = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
    let mut state = u64::from_le_bytes(seed);
    if from_os.is_err() {
        let t = Instant::now();
        let micros = t.secs * 1_000_000 + u64::from(t.micros);
        state ^= micros.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id());
    }
    state
}

impl IdGen {
    /// A generator seeded from the OS's randomness (and the clock, should that fail).
    pub fn new() -> Self {
        IdGen { state: seed(), last_ms: 0, seq: 0, forks: fork::generation() }
    }

    // splitmix64: small, fast and well mixed; uniqueness is also checked by the index.
    fn next_random(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The next id's 128 bits (big-endian: its digits are [`hex_digits`] of
    /// them), for an envelope stamped at Unix millisecond `ms` (see
    /// [`Instant`]): the id and the timestamp of one append come from one
    /// reading of the clock.
    pub fn next_bits_at(&mut self, ms: u64) -> [u8; 16] {
        let forks = fork::generation();
        if forks != self.forks {
            // A forked child: same state as the parent, so the same "random" bits.
            self.state = seed();
            self.forks = forks;
        }
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
        let mut bits = [0u8; 16];
        bits[..8].copy_from_slice(&high.to_be_bytes());
        bits[8..].copy_from_slice(&low.to_be_bytes());
        bits
    }
}

/// The 32 lowercase hex digits of an id's 128 bits; by hand, because
/// `format!` is a noticeable share of an append.
pub fn hex_digits(bits: &[u8; 16]) -> [u8; 32] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut id = [0u8; 32];
    for (pair, &b) in id.chunks_exact_mut(2).zip(bits) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0x0F)];
    }
    id
}

impl Default for IdGen {
    fn default() -> Self {
        Self::new()
    }
}

/// One reading of the clock: Unix seconds and the microseconds past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instant {
    /// Whole seconds since the epoch.
    pub secs: u64,
    /// Microseconds past `secs`.
    pub micros: u32,
}

impl Instant {
    /// Now.
    pub fn now() -> Self {
        let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Instant { secs: d.as_secs(), micros: d.subsec_micros() }
    }

    /// Milliseconds since the epoch.
    pub fn millis(&self) -> u64 {
        self.secs * 1000 + u64::from(self.micros / 1000)
    }
}

/// Writes timestamps (`%Y-%m-%dT%H:%M:%S.%fZ`), keeping the text of the last
/// second it wrote: appends in the same second only write their microseconds.
#[derive(Debug, Clone, Default)]
pub struct Stamper {
    // The second `prefix` is the text of, plus one (0: none yet).
    secs_plus_one: u64,
    // `%Y-%m-%dT%H:%M:%S.` of that second.
    prefix: [u8; 20],
}

impl Stamper {
    /// The timestamp of `at`, `%Y-%m-%dT%H:%M:%S.%fZ`.
    pub fn text(&mut self, at: Instant) -> [u8; 27] {
        if self.secs_plus_one != at.secs.wrapping_add(1) {
            let (y, m, d) = civil_from_days((at.secs / 86_400) as i64);
            // Under 86,400: every field fits a u32.
            let rem = (at.secs % 86_400) as u32;
            let y = y.clamp(0, 9999) as u32;
            let fields =
                [(y, 4), (m, 2), (d, 2), (rem / 3600, 2), (rem / 60 % 60, 2), (rem % 60, 2)];
            let mut end = 0;
            for ((v, width), sep) in fields.into_iter().zip(*b"--T::.") {
                put_digits(&mut self.prefix[end..end + width], v);
                self.prefix[end + width] = sep;
                end += width + 1;
            }
            self.secs_plus_one = at.secs.wrapping_add(1);
        }
        let mut out = [0u8; 27];
        out[..20].copy_from_slice(&self.prefix);
        put_digits(&mut out[20..26], at.micros.min(999_999));
        out[26] = b'Z';
        out
    }
}

// `v` in exactly `out.len()` decimal digits, zero-padded.
fn put_digits(out: &mut [u8], mut v: u32) {
    for d in out.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
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
    fn timestamps_match_the_wire_format_as_the_kept_second_changes() {
        let mut kept = Stamper::default();
        for (secs, micros, text) in [
            (0, 0, "1970-01-01T00:00:00.000000Z"),
            (0, 999_999, "1970-01-01T00:00:00.999999Z"),
            (1_786_281_008, 542_283, "2026-08-09T13:10:08.542283Z"),
            (1_786_281_008, 7, "2026-08-09T13:10:08.000007Z"),
            (1_786_281_009, 0, "2026-08-09T13:10:09.000000Z"),
            (951_782_400, 1, "2000-02-29T00:00:00.000001Z"),
            (253_402_300_799, 999_999, "9999-12-31T23:59:59.999999Z"),
            (1_786_281_008, 10, "2026-08-09T13:10:08.000010Z"),
        ] {
            assert_eq!(&kept.text(Instant { secs, micros })[..], text.as_bytes());
        }
    }

    #[test]
    fn ids_of_one_millisecond_count_up() {
        let mut g = IdGen::new();
        let ms = Instant::now().millis();
        let a = hex_digits(&g.next_bits_at(ms));
        let b = hex_digits(&g.next_bits_at(ms));
        assert!(b > a);
        assert_eq!(&a[..12], &b[..12]);
    }
}
