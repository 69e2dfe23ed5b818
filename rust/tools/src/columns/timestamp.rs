//! A timestamp's text as SPEC writes it, read as microseconds since the epoch.

/// Microseconds since the Unix epoch of a timestamp written as SPEC writes
/// them (`2026-08-09T13:10:08.542283Z`; 0 to 9 fraction digits, `Z` or
/// `+00:00`); None for any other text.
pub fn parse_ts(ts: &[u8]) -> Option<i64> {
    let digits = |s: &[u8]| -> Option<i64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        s.iter().try_fold(0i64, |n, &d| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))
    };
    if ts.len() < 20 || ts[4] != b'-' || ts[7] != b'-' || ts[10] != b'T' {
        return None;
    }
    if ts[13] != b':' || ts[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&ts[..4])?, digits(&ts[5..7])?, digits(&ts[8..10])?);
    let (h, mi, s) = (digits(&ts[11..13])?, digits(&ts[14..16])?, digits(&ts[17..19])?);
    let mut rest = &ts[19..];
    let mut micros = 0i64;
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 9 {
            return None;
        }
        let frac = &rest[1..1 + n];
        for k in 0..6 {
            micros = micros * 10 + frac.get(k).map_or(0, |&b| i64::from(b - b'0'));
        }
        rest = &rest[1 + n..];
    }
    if rest != b"Z" && rest != b"+00:00" {
        return None;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + s * 1_000_000 + micros)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
