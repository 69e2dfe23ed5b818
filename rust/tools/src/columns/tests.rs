//! Tests of the columns: timestamps, layouts, content text, whole files.

use super::payload::content_text;
use super::*;

#[test]
fn timestamps_parse_as_spec_writes_them() {
    assert_eq!(parse_ts(b"1970-01-01T00:00:00.000000Z"), Some(0));
    assert_eq!(parse_ts(b"2026-08-09T13:10:08.542283Z"), Some(1_786_281_008_542_283));
    assert_eq!(parse_ts(b"2026-08-09T13:10:08Z"), Some(1_786_281_008_000_000));
    assert_eq!(parse_ts(b"2026-08-09T13:10:08.5+00:00"), Some(1_786_281_008_500_000));
    for bad in [
        &b"2026-02-30T00:00:00Z"[..],
        b"2026-08-09 13:10:08Z",
        b"yesterday",
        b"2026-08-09T13:10:08.Z",
        b"",
    ] {
        assert_eq!(parse_ts(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn bits_and_columns_are_laid_out_as_arrow_lays_them() {
    let mut b = Bits::default();
    for bit in [true, false, true, true, false, false, false, false, true] {
        b.push(bit);
    }
    assert_eq!((b.bytes.as_slice(), b.len, b.unset), (&[0b0000_1101, 1][..], 9, 5));
    let mut t = Utf8::default();
    t.push_str("ab");
    t.push_null();
    t.push_wtf8(&[b'x', 0xED, 0xA0, 0x80]);
    assert_eq!(t.data, b"abx\\ud800");
    let offsets: Vec<i64> = t
        .offsets
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    assert_eq!(offsets, [0, 2, 2, 9]);
}

#[test]
fn a_content_reads_as_text() {
    let mut out = Vec::new();
    assert!(content_text(r#""hi \u00e9""#, &mut out).unwrap_or(false));
    assert_eq!(out, "hi é".as_bytes());
    assert!(content_text(
        r#"[{"type":"text","text":"a"},{"type":"image_url"},{"text":"b"}]"#,
        &mut out
    )
    .unwrap_or(false));
    assert_eq!(out, b"a\n[image_url]\n[part]");
    assert!(!content_text("null", &mut out).unwrap_or(true));
    assert!(content_text(r#"{"x": 1}"#, &mut out).unwrap_or(false));
    assert_eq!(out, br#"{"x": 1}"#);
}

#[test]
fn the_text_column_takes_the_last_content_and_escapes_a_lone_surrogate() {
    let lines = [
        r#"{"id":"m","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}"#,
        r#"{"id":"a","payload":{"role":"user","content":"x\ny","content":"last"},"ts":"2026-01-01T00:00:01Z","type":"message","v":1}"#,
        r#"{"id":"b","payload":{"role":"user","content":"gone","content":null},"ts":"2026-01-01T00:00:02Z","type":"message","v":1}"#,
        r#"{"id":"c","payload":{"role":"user","content":"\ud800 \u00e9\n"},"ts":"2026-01-01T00:00:03Z","type":"message","v":1}"#,
        r#"{"id":"d","payload":{"role":"user","content":[{"type":"text","text":"p"}],"content":"q\"r"},"ts":"2026-01-01T00:00:04Z","type":"message","v":1}"#,
        r#"{"id":"e","payload":{"content":{"k":1},"role":"user"},"ts":"2026-01-01T00:00:05Z","type":"message","v":1}"#,
    ];
    let text = lines.join("\n") + "\n";
    let src = text.as_bytes();
    let t = transcript_core::transcript::inspect(src, text.len() as u64)
        .map_err(|_| ())
        .unwrap_or_default();
    assert_eq!(t.index.len(), lines.len());
    let input = Input { index: &t.index, src, replay: Some(&t), end: text.len() as u64 };
    let mut batch = Batch::default();
    let Ok(mut f) = FileState::new(b"s.jsonl", input) else { unreachable!() };
    assert!(matches!(f.fill(&mut batch, input, usize::MAX), Ok(true)));
    let m = &batch.messages.text;
    let offsets: Vec<usize> = m
        .offsets
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()) as usize)
        .collect();
    let rows: Vec<Option<&[u8]>> = (0..m.len())
        .map(|i| {
            let valid = m.valid.bytes[i / 8] >> (i % 8) & 1 == 1;
            valid.then(|| &m.data[offsets[i]..offsets[i + 1]])
        })
        .collect();
    let want: [Option<&[u8]>; 5] = [
        Some(b"last"),
        None,
        Some("\\ud800 \u{e9}\n".as_bytes()),
        Some(b"q\"r"),
        Some(br#"{"k":1}"#),
    ];
    assert_eq!(rows, want);
}

#[test]
fn a_transcript_fills_the_four_tables() {
    let lines = [
        r#"{"id":"m","payload":{"agent":"a"},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}"#,
        r#"{"id":"u","payload":{"role":"user","content":"go"},"ts":"2026-01-01T00:00:01.000000Z","type":"message","v":1}"#,
        r#"{"id":"d","payload":{"call-id":"c","tool":"ls","arguments":{},"arguments-digest":"x","idempotency":"unknown","run-id":null,"round":null},"ts":"2026-01-01T00:00:02.000000Z","type":"tool-dispatched","v":1}"#,
        r#"{"id":"k","payload":{"summary":"s","replaces-through-id":"u","tokens-before":2,"tokens-after":1,"fallback":false},"ts":"2026-01-01T00:00:03.000000Z","type":"compaction","v":1}"#,
    ];
    let text = lines.join("\n") + "\n";
    let src = text.as_bytes();
    let t = transcript_core::transcript::inspect(src, text.len() as u64)
        .map_err(|_| ())
        .unwrap_or_default();
    assert_eq!(t.index.len(), 4);
    let input = Input { index: &t.index, src, replay: Some(&t), end: text.len() as u64 };
    let mut batch = Batch::default();
    let started = FileState::new(b"s.jsonl", input);
    assert!(started.is_ok());
    let Ok(mut f) = started else { return };
    assert_eq!(f.started(), parse_ts(b"2026-01-01T00:00:00.000000Z"));
    assert!(matches!(f.fill(&mut batch, input, usize::MAX), Ok(true)));
    f.finish(&mut batch, input, "clean", None, text.len() as i64, None, 4);
    assert_eq!(batch.rows(), [1, 4, 2, 1]);
    // The user message was compacted away; the summary is live at 0.
    assert_eq!(batch.messages.live.values.bytes, [0b10]);
    assert_eq!(batch.tool_operations.state.data, b"dispatched");
}
