//! The strict reader against the cases of the JSON grammar and its limits.

use super::*;

#[test]
fn the_plain_run_stops_where_a_byte_at_a_time_would() {
    fn one_at_a_time(input: &[u8], at: usize) -> usize {
        (at..input.len()).find(|&i| CLASS[usize::from(input[i])] == ESCAPE).unwrap_or(input.len())
    }
    // Every stop byte (and its neighbours, and bytes >= 0x80) at every
    // place of runs long enough for each vector width, from every start.
    let stops = [b'"', b'\\', 0x00, 0x1f, 0x20, b'!', b'#', b'[', b']', 0x7f, 0x80, 0xe6, 0xff];
    for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100] {
        for place in 0..len.max(1) {
            for &b in &stops {
                let mut input = vec![b'a'; len];
                if place < len {
                    input[place] = b;
                }
                for from in [0, 1, place.saturating_sub(1), place, len] {
                    let from = from.min(len);
                    assert_eq!(
                        plain_run_from(&input, from),
                        one_at_a_time(&input, from),
                        "byte {b:#x} at {place} of {len}, from {from}"
                    );
                }
            }
        }
    }
}

fn valid(s: &str) -> bool {
    is_one_value(s.as_bytes())
}

#[test]
fn accepts_every_kind_of_value() {
    for s in [
        "null",
        "true",
        "false",
        "0",
        "-0",
        "12",
        "-1.5e+10",
        "1E-7",
        "\"\"",
        "\"a\\u00e9\\n\"",
        "[]",
        "{}",
        " [1, {\"a\": [null]} ] ",
        "{\"a\":1,\"a\":2}",
        "\"\\ud800\"",
        "\"日本\"",
    ] {
        assert!(valid(s), "{s}");
    }
}

#[test]
fn refuses_what_json_loads_refuses() {
    for s in [
        "",
        " ",
        "nul",
        "NaN",
        "Infinity",
        "-Infinity",
        "01",
        "1.",
        ".5",
        "1e",
        "+1",
        "[1,]",
        "{\"a\":1,}",
        "[1 2]",
        "{\"a\" 1}",
        "{1:2}",
        "\"a",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\t\"",
        "[",
        "]",
        "{}}",
        "1 2",
        "'a'",
        "[01]",
    ] {
        assert!(!valid(s), "{s:?}");
    }
}

#[test]
fn string_size_is_the_decoded_utf8_length() {
    for (text, size) in [
        (r#""abc""#, Some(3)),
        (r#""a\nb""#, Some(3)),
        (r#""\u00e9é""#, Some(4)),
        (r#""\ud83d\ude00""#, Some(4)),
        (r#""\ud800""#, Some(3)),
        ("null", Some(0)),
        ("[1]", None),
        ("7", None),
    ] {
        assert_eq!(string_size(text.as_bytes()).unwrap(), size, "{text}");
    }
}

#[test]
fn refuses_invalid_utf8_and_a_character_cut_short() {
    assert!(!is_one_value(b"\"\xff\""));
    assert!(!is_one_value(b"\"\xf0\x9f\x9a\""));
    assert!(is_one_value("\"🚀\"".as_bytes()));
}

#[test]
fn nesting_is_limited_to_512_without_overflowing_the_stack() {
    let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
    assert!(valid(&ok));
    let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
    assert!(!valid(&deep));
    let hostile = "[".repeat(100_000);
    assert!(!valid(&hostile));
    let objects = "{\"a\":".repeat(100_000);
    assert!(!valid(&objects));
}

#[test]
fn utf16_with_lone_surrogates_is_the_wtf8_the_reader_decodes() {
    let mut scratch = Vec::new();
    for text in [r#""a\ud800b""#, r#""\ud83d\ude00\udc00\ud83d""#, r#""é""#] {
        let mut r = Reader::new(text);
        let decoded = r.string(&mut scratch).unwrap().as_bytes().to_vec();
        let units: Vec<u16> = match text {
            r#""a\ud800b""# => vec![0x61, 0xD800, 0x62],
            r#""é""# => vec![0xE9],
            _ => vec![0xD83D, 0xDE00, 0xDC00, 0xD83D],
        };
        assert_eq!(wtf8_from_utf16(units), decoded, "{text}");
    }
}

#[test]
fn every_stop_byte_is_found_at_every_position_of_a_block() {
    let mut scratch = Vec::new();
    for len in 0..48 {
        for at in 0..len {
            let mut body = vec![b'a'; len];
            body[at] = 0x01;
            let mut text = vec![b'"'];
            text.extend_from_slice(&body);
            text.push(b'"');
            assert!(!is_one_value(&text), "control at {at} of {len}");
            let mut text = vec![b'"'];
            text.extend(std::iter::repeat_n(b'a', at));
            text.extend_from_slice(b"\\n");
            text.extend(std::iter::repeat_n(b'a', len - at - 1));
            text.push(b'"');
            let mut r = Reader::from_bytes(&text).unwrap();
            let got = r.string(&mut scratch).unwrap();
            let mut want = vec![b'a'; at];
            want.push(b'\n');
            want.extend(std::iter::repeat_n(b'a', len - at - 1));
            assert_eq!(got.as_bytes(), want.as_slice(), "escape at {at} of {len}");
            body[at] = b'"';
            let mut text = vec![b'"'];
            text.extend_from_slice(&body);
            let mut r = Reader::from_bytes(&text).unwrap();
            assert_eq!(
                r.string(&mut scratch).unwrap().as_bytes().len(),
                at,
                "quote at {at} of {len}"
            );
        }
    }
}

#[test]
fn numbers_python_cannot_hold_are_refused_but_still_whole_values() {
    let big = format!("[{}]", "9".repeat(MAX_INT_DIGITS + 1));
    let ok = format!("[-{}]", "9".repeat(MAX_INT_DIGITS));
    for bad in [big.as_str(), "[1e999]", "{\"a\":-1E400}"] {
        let mut r = Reader::from_bytes(bad.as_bytes()).unwrap();
        assert!(r.skip_value().is_err(), "{bad:.20}");
        assert!(is_one_value(bad.as_bytes()), "{bad:.20}");
    }
    let mut r = Reader::from_bytes(ok.as_bytes()).unwrap();
    assert_eq!(r.skip_value(), Ok(()));
}

#[test]
fn skipping_a_string_agrees_with_decoding_it() {
    // Deterministic pseudo-random strings over the bytes that matter.
    let alphabet: &[&[u8]] = &[
        b"a",
        b"\\n",
        b"\\\"",
        b"\\\\",
        b"\\u00e9",
        b"\\ud800",
        b"\\x",
        b"\\u12",
        b"\t",
        b"\x01",
        b"\"",
        "é".as_bytes(),
        "🚀".as_bytes(),
        b"\\",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut scratch = Vec::new();
    for _ in 0..20_000 {
        let mut text = vec![b'"'];
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let parts = (state % 40) as usize;
        for k in 0..parts {
            let pick = (state.rotate_left(k as u32 * 5) % alphabet.len() as u64) as usize;
            text.extend_from_slice(if pick % 3 == 0 { b"plain text " } else { alphabet[pick] });
        }
        text.push(b'"');
        let decoded =
            Reader::from_bytes(&text).and_then(|mut r| r.string(&mut scratch).map(|_| r.offset()));
        let skipped = Reader::from_bytes(&text).and_then(|mut r| {
            r.peek()?;
            r.skip_value().map(|()| r.offset())
        });
        assert_eq!(decoded.is_ok(), skipped.is_ok(), "{:?}", String::from_utf8_lossy(&text));
        if let (Ok(a), Ok(b)) = (decoded, skipped) {
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
