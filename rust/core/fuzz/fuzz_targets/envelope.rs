//! The envelope check: `parse_line` never panics, accepts only whole JSON
//! objects, and every span it or the member lookups hand out lies inside the
//! line and is one JSON value (a stub: a string or anything; a replacement
//! message: an object).
#![no_main]

use libfuzzer_sys::fuzz_target;
use transcript_core::envelope::{
    id_text, member_span_at, member_spans, parse_line, string_size_at, Detail, LineError, Span,
};
use transcript_core::json::is_one_value;
use transcript_core::transcript::LineRec;

fn slice(line: &[u8], s: Span) -> &[u8] {
    assert!(s.start <= s.end && s.end as usize <= line.len(), "span {s:?} out of {}", line.len());
    &line[s.start as usize..s.end as usize]
}

fuzz_target!(|line: &[u8]| {
    let whole = is_one_value(line);
    match parse_line(line) {
        Ok(env) => {
            assert!(whole, "an envelope that is not one JSON value");
            assert!(!env.id.is_empty());
            let _ = id_text(&env.id);
            let rec = LineRec::new(&env, 0, line.len(), 1);
            assert_eq!(rec.kind, env.kind);
            match &env.detail {
                Detail::Elision { items } => {
                    for (id, span) in items {
                        let _ = id_text(id);
                        assert!(is_one_value(slice(line, *span)));
                    }
                }
                Detail::Compaction { replacement: Some(parts), .. } => {
                    for p in parts {
                        let text = slice(line, p.span);
                        assert!(is_one_value(text));
                        assert_eq!(text.first(), Some(&b'{'));
                    }
                }
                _ => {}
            }
        }
        Err(LineError::Malformed(e)) => assert!(e.offset <= line.len()),
        Err(LineError::Invalid(_) | LineError::Version(_)) => {
            assert!(whole, "refused as not an envelope, yet not one JSON value");
        }
    }
    if !whole {
        assert!(matches!(parse_line(line), Err(LineError::Malformed(_))));
    }
    // The lookups the binding's readers use on a line.
    if let Ok(spans) = member_spans(line, &["id", "payload", "type", "ts", "v"]) {
        for s in spans.into_iter().flatten() {
            assert!(is_one_value(slice(line, s)));
        }
    }
    for path in [&["payload", "content"][..], &["payload"][..], &["payload", "items"][..]] {
        if let Ok(Some(s)) = member_span_at(line, path) {
            assert!(is_one_value(slice(line, s)));
        }
        let _ = string_size_at(line, path);
    }
});
