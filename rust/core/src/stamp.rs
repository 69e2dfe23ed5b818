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
        state ^= now().0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(std::process::id());
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

    /// The next id.
    pub fn next_id(&mut self) -> String {
        let id = self.next_id_at(Instant::now().millis());
        // The digits are ASCII.
        id.iter().map(|&b| char::from(b)).collect()
    }

    /// The next id, as its 32 ASCII digits, for an envelope stamped at Unix
    /// millisecond `ms` (see [`Instant`]): the id and the timestamp of one
    /// append come from one reading of the clock.
    pub fn next_id_at(&mut self, ms: u64) -> [u8; 32] {
        hex_digits(&self.next_bits_at(ms))
    }

    /// The next id's 128 bits (big-endian: its digits are [`hex_digits`] of them).
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

/// The 32 lowercase hex digits of an id's 128 bits.
pub fn hex_digits(bits: &[u8; 16]) -> [u8; 32] {
    let mut id = [0u8; 32];
    let (a, b) = id.split_at_mut(16);
    let (high, low) = bits.split_at(8);
    hex16(a, u64::from_be_bytes(high.try_into().unwrap_or_default()));
    hex16(b, u64::from_be_bytes(low.try_into().unwrap_or_default()));
    id
}

// Sixteen lowercase hex digits of `v` into `out` (16 bytes); by hand,
// because `format!` is a noticeable share of an append.
fn hex16(out: &mut [u8], v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, o) in out.iter_mut().take(16).enumerate() {
        *o = DIGITS[((v >> ((15 - i) * 4)) & 0xF) as usize];
    }
}

impl Default for IdGen {
    fn default() -> Self {
        Self::new()
    }
}

// Microseconds since the epoch, and the same split as (seconds, micros).
fn now() -> (u64, u64, u32) {
    let t = Instant::now();
    (t.secs * 1_000_000 + u64::from(t.micros), t.secs, t.micros)
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
    /// The timestamp of `at`: what [`format_timestamp`] writes.
    pub fn text(&mut self, at: Instant) -> [u8; 27] {
        if self.secs_plus_one != at.secs.wrapping_add(1) {
            let text = format_timestamp(at.secs, 0);
            self.prefix.copy_from_slice(&text.as_bytes()[..20]);
            self.secs_plus_one = at.secs.wrapping_add(1);
        }
        let mut out = [0u8; 27];
        out[..20].copy_from_slice(&self.prefix);
        let mut v = at.micros.min(999_999);
        for d in out[20..26].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out[26] = b'Z';
        out
    }
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
        assert_eq!(format_timestamp(1_786_281_008, 542_283), "2026-08-09T13:10:08.542283Z");
        assert_eq!(format_timestamp(951_782_400, 1), "2000-02-29T00:00:00.000001Z");
    }

    #[test]
    fn the_stamper_writes_what_format_timestamp_does() {
        let mut st = Stamper::default();
        let cases = [
            (0, 0),
            (0, 999_999),
            (1_786_281_008, 542_283),
            (1_786_281_008, 7),
            (1_786_281_009, 0),
            (951_782_400, 1),
            (253_402_300_799, 999_999),
            (1_786_281_008, 10),
        ];
        for (secs, micros) in cases {
            let out = st.text(Instant { secs, micros });
            assert_eq!(&out[..], format_timestamp(secs, micros).as_bytes());
        }
    }

    #[test]
    fn ids_of_one_millisecond_count_up_and_next_id_is_next_id_at() {
        let mut g = IdGen::new();
        let ms = Instant::now().millis();
        let a = g.next_id_at(ms);
        let b = g.next_id_at(ms);
        assert!(b > a);
        assert_eq!(&a[..12], &b[..12]);
        let c = g.next_id();
        assert!(c.as_bytes() > &b[..]);
    }
}
