//! The strict reader's vector scan and its WTF-8; the grammar and its limits are tested
//! through the binding (tests/core/test_reader.py, test_tail_check.py).

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
