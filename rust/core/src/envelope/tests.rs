use super::*;

fn parse(s: &str) -> Result<Envelope, LineError> {
    parse_line(s.as_bytes())
}

#[test]
fn ids_keep_their_lone_surrogates_and_are_shown_with_them_escaped() {
    let e = parse(r#"{"id":"\ud800","payload":{"content":"hi","role":"tool","tool_call_id":"\udc00x"},"ts":"t","type":"message","v":1}"#).unwrap();
    assert_eq!(e.id, b"\xed\xa0\x80");
    match &e.detail {
        Detail::Message { tool_call_id, .. } => {
            assert_eq!(tool_call_id.as_deref(), Some(&b"\xed\xb0\x80x"[..]))
        }
        other => panic!("{other:?}"),
    }
    // A pair of escapes is one code point; U+FFFD is itself.
    let pair =
        parse(r#"{"id":"\ud83d\ude00\ufffd","payload":{},"ts":"t","type":"x","v":1}"#).unwrap();
    assert_eq!(pair.id, "\u{1f600}\u{fffd}".as_bytes());
    assert_eq!(id_text(&e.id), "\\ud800");
    assert_eq!(id_text(b"a\xed\xbf\xbfb\xc3\xa9"), "a\\udfffb\u{e9}");
}

#[test]
fn a_message_line() {
    let e = parse(r#"{"id":"a1","payload":{"content":"hi","role":"tool","tool_call_id":"c1"},"ts":"t","type":"message","v":1}"#).unwrap();
    assert_eq!(e.id, b"a1");
    assert_eq!(e.kind, EnvelopeType::Message);
    assert_eq!(
        e.detail,
        Detail::Message { role: "tool".into(), sticky: false, tool_call_id: Some("c1".into()) }
    );
    assert_eq!(e.other_type, None);
}

#[test]
fn an_unknown_type_keeps_its_name_and_the_known_ones_have_theirs() {
    let e = parse(r#"{"id":"z","payload":null,"ts":"t","type":"later-thing","v":1}"#).unwrap();
    assert_eq!(e.kind, EnvelopeType::Other);
    assert_eq!(e.other_type.as_deref(), Some("later-thing"));
    assert_eq!(e.kind.wire_name(), None);
    let names = "session-meta message grants compaction elision tool-dispatched tool-settled";
    for name in names.split(' ').chain(["run-context", "rewind"]) {
        assert_eq!(EnvelopeType::from_wire(name.as_bytes()).wire_name(), Some(name));
    }
    for name in ["system", "user", "assistant", "tool"] {
        assert_eq!(Role::from_wire(name).wire_name(), Some(name));
    }
    assert_eq!(Role::from_wire("developer"), Role::Other);
}

#[test]
fn stickiness_follows_python_truthiness() {
    for (flags, sticky) in [
        (r#""sticky":true"#, true),
        (r#""sticky":false"#, false),
        (r#""sticky":0"#, false),
        (r#""sticky":0.0e5"#, false),
        (r#""sticky":2"#, true),
        (r#""sticky":"""#, false),
        (r#""sticky":"x""#, true),
        (r#""sticky":[]"#, false),
        (r#""sysprompt":{"a":1}"#, true),
        (r#""depth":null"#, false),
        (r#""depth":0"#, true),
    ] {
        let line = format!(
            r#"{{"id":"a","payload":{{"role":"user",{flags}}},"ts":"t","type":"message","v":1}}"#
        );
        match parse(&line).unwrap().detail {
            Detail::Message { sticky: got, .. } => assert_eq!(got, sticky, "{flags}"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn an_elision_records_where_each_stub_is() {
    let line = r#"{"id":"e","payload":{"items":[{"id":"m1","stub":"[gone]"}]},"ts":"t","type":"elision","v":1}"#;
    let e = parse(line).unwrap();
    let Detail::Elision { items } = e.detail else { panic!() };
    assert_eq!(items.len(), 1);
    let Span { start, end } = items[0].1;
    assert_eq!(&line[start as usize..end as usize], "\"[gone]\"");
}

#[test]
fn missing_fields_and_bad_versions_are_refused() {
    let refusal = |line: &str| match parse(line) {
        Err(LineError::Invalid(_)) => "invalid",
        Err(LineError::Version(_)) => "version",
        Err(LineError::Malformed(_)) => "malformed",
        other => panic!("{line}: {other:?}"),
    };
    for (line, why) in [
        (r#"{"payload":{},"ts":"t","type":"x","v":1}"#, "invalid"),
        (r#"{"id":"","payload":{},"ts":"t","type":"x","v":1}"#, "invalid"),
        (r#"{"id":"a","ts":"t","type":"x","v":1}"#, "invalid"),
        (r#"{"id":"a","payload":{},"ts":1,"type":"x","v":1}"#, "invalid"),
        (r#"{"id":"a","payload":{},"ts":"t","type":"x","v":2}"#, "version"),
        (r#"{"id":"a","payload":{},"ts":"t","type":"x","v":"1"}"#, "invalid"),
        (r#"[1]"#, "invalid"),
        (r#"{"id":"a""#, "malformed"),
        (r#"{"id":"a","payload":{"content":"x"},"ts":"t","type":"message","v":1}"#, "invalid"),
    ] {
        assert_eq!(refusal(line), why, "{line}");
    }
}

#[test]
fn member_spans_find_members_without_decoding_them() {
    let line = r#"{"id":"a","payload":{"content":"x\ny","role":"tool","role":"user","n":[1,{"role":2}]},"ts":"t","type":"message","v":1}"#;
    let spans = member_spans(line.as_bytes(), &["v", "payload", "nope", "id"]).unwrap();
    let text: Vec<_> =
        spans.iter().map(|s| s.map(|s| &line[s.start as usize..s.end as usize])).collect();
    assert_eq!(text[0], Some("1"));
    assert!(text[1].unwrap().starts_with(r#"{"content""#));
    assert_eq!((text[2], text[3]), (None, Some(r#""a""#)));
    let at = |line: &str, path: &[&str]| {
        member_span_at(line.as_bytes(), path)
            .unwrap()
            .map(|s| line[s.start as usize..s.end as usize].to_string())
    };
    assert_eq!(
        at(line, &["payload", "role"]).as_deref(),
        Some(r#""user""#),
        "the last duplicate wins"
    );
    assert_eq!(at(line, &["payload", "content"]).as_deref(), Some(r#""x\ny""#));
    assert_eq!(at(line, &["payload", "x"]), None);
    assert_eq!(at(line, &["v"]).as_deref(), Some("1"));
    let not_object = r#"{"id":"a","payload":[1],"ts":"t","type":"x","v":1}"#;
    assert_eq!(at(not_object, &["payload", "role"]), None);
    let twice = r#"{"payload":{"role":"a"},"payload":{"n":1}}"#;
    assert_eq!(at(twice, &["payload", "role"]), None);
    let size = |line: &str, path: &[&str]| string_size_at(line.as_bytes(), path).unwrap();
    assert_eq!(size(line, &["payload", "content"]), Some(Some(3)));
    assert_eq!(size(line, &["payload", "n"]), Some(None));
    assert_eq!(size(line, &["payload", "x"]), None);
    assert_eq!(size(r#"{"payload":{"content":null}}"#, &["payload", "content"]), Some(Some(0)));
    assert_eq!(member_spans(b"[1]", &["a"]).unwrap(), vec![None]);
}

#[test]
fn a_rewind_names_an_id_or_null_and_nothing_else() {
    let rewind = |through: &str| {
        parse(&format!(
            r#"{{"id":"r","payload":{{"through-id":{through}}},"ts":"t","type":"rewind","v":1}}"#
        ))
    };
    let through = |id: &str| rewind(id).map(|e| e.detail);
    assert_eq!(through(r#""m1""#), Ok(Detail::Rewind { through: Some("m1".into()) }));
    assert_eq!(through("null"), Ok(Detail::Rewind { through: None }));
    for bad in ["1", "[]", r#"{"id":"m1"}"#] {
        assert!(matches!(rewind(bad), Err(LineError::Invalid(_))), "{bad}");
    }
    assert!(matches!(
        parse(r#"{"id":"r","payload":{},"ts":"t","type":"rewind","v":1}"#),
        Err(LineError::Invalid(_))
    ));
}

#[test]
fn a_replacement_records_where_each_message_is_and_whether_it_is_sticky() {
    let line = r#"{"id":"c","payload":{"replacement":[{"content":"a","role":"user"}, {"role":"system","sysprompt":true,"x":[1]},{"depth":0,"role":"tool"}],"replaces-through-id":"m","summary":"s"},"ts":"t","type":"compaction","v":1}"#;
    let Detail::Compaction { through, replacement: Some(parts) } = parse(line).unwrap().detail
    else {
        panic!()
    };
    assert_eq!(through, b"m");
    let got: Vec<_> = parts
        .iter()
        .map(|p| (&line[p.span.start as usize..p.span.end as usize], p.sticky, &*p.role))
        .collect();
    assert_eq!(
        got,
        [
            (r#"{"content":"a","role":"user"}"#, false, "user"),
            (r#"{"role":"system","sysprompt":true,"x":[1]}"#, true, "system"),
            (r#"{"depth":0,"role":"tool"}"#, true, "tool"),
        ]
    );
    let compaction = |replacement: &str| {
        parse(&format!(
            r#"{{"id":"c","payload":{{"replaces-through-id":"m","summary":"s"{replacement}}},"ts":"t","type":"compaction","v":1}}"#
        ))
    };
    let Detail::Compaction { replacement, .. } = compaction("").unwrap().detail else { panic!() };
    assert_eq!(replacement, None, "no replacement");
    let Detail::Compaction { replacement, .. } = compaction(r#","replacement":[]"#).unwrap().detail
    else {
        panic!()
    };
    assert_eq!(replacement, Some(vec![]), "an empty one");
    for bad in ["null", "{}", "[1]", r#"[{"content":"x"}]"#, r#"[{"role":1}]"#] {
        let refused = compaction(&format!(r#","replacement":{bad}"#));
        assert!(matches!(refused, Err(LineError::Invalid(_))), "{bad}");
    }
}

// Lines of every shape the scanner reads, and a few it leaves to the
// strict reader.
const SCANNED: &[&str] = &[
    r#"{"id":"f2a4d27bdcf4bb99f4bea97300000001","payload":{"agent":"a","n":[1,-2.5e3,{"x":null}]},"ts":"2026-08-09T13:10:09.492057Z","type":"session-meta","v":1}"#,
    r#"{"id":"09325626e6b58de744ab6cce00000003","payload":{"content":"a \"q\" \u00e9 日本語 🚀","role":"user"},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"2e8d4b8a8f54f8ceacaab39e00000005","payload":{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"src/d.py\"}","name":"Bash"},"id":"call_1","type":"function"}]},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"bc01bfce6a27e0dfcbf8754400000006","payload":{"arguments":{"path":"x"},"call-id":"call_1","round":0,"tool":"Bash"},"ts":"t","type":"tool-dispatched","v":1}"#,
    r#"{"id":"7c9260dc74e088a9b9492f2500000007","payload":{"content":"x\ty\n","role":"tool","tool_call_id":"call_1"},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"d08f1bb2531d6460f0caeef000000008","payload":{"op-id":"bc01bfce6a27e0dfcbf8754400000006","outcome":"completed"},"ts":"t","type":"tool-settled","v":1}"#,
    r#"{"id":"s","payload":{"content":"x","role":"system","sysprompt":true},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"d","payload":{"content":[],"depth":0,"role":"user","sticky":false},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"g","payload":{"grants":[true,false,{}]},"ts":"t","type":"grants","v":1}"#,
    r#"{"id":"g2","payload":[],"ts":"t","type":"grants","v":1}"#,
    r#"{"id":"m","payload":{},"ts":"t","type":"session-meta","v":1}"#,
    r#"{"id":"u","payload":{"role":"user","role":"tool","tool_call_id":"c","tool_call_id":7},"ts":"t","type":"message","v":1}"#,
    r#"{"id":"x","payload":{"call-id":null},"ts":"t","type":"tool-dispatched","v":1}"#,
];

#[test]
fn the_scanner_reads_what_the_strict_reader_reads() {
    for line in SCANNED {
        let scanned = scan_line(line.as_bytes());
        assert!(scanned.is_ok(), "not scanned: {line}");
        let strict = parse_line_strict(line.as_bytes());
        assert_eq!(scanned.map(|s| s.envelope()).ok(), strict.ok(), "{line}");
    }
    for line in [
        r#"{"id": "a","payload":{},"ts":"t","type":"grants","v":1}"#,
        r#"{"id":"a","payload":{"role":"user"},"ts":"t","type":"message","v":1} "#,
        r#"{"id":"a","payload":{"role":"us\u0065r"},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"a","payload":{"role":"developer"},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"a","payload":{"replaces-through-id":"m","summary":"s"},"ts":"t","type":"compaction","v":1}"#,
        r#"{"id":"a","payload":{"role":"user","sticky":1},"ts":"t","type":"message","v":1}"#,
        r#"{"id":"a","payload":{},"ts":"t","type":"later-thing","v":1}"#,
        r#"{"id":"","payload":{},"ts":"t","type":"grants","v":1}"#,
    ] {
        assert!(scan_line(line.as_bytes()).is_err(), "scanned: {line}");
    }
}

// Every one-byte change, cut and insertion of the lines above: whatever the
// scanner accepts, the strict reader accepts with the same envelope.
#[test]
fn the_scanner_accepts_nothing_the_strict_reader_refuses() {
    let mut tried = 0u64;
    let mut scanned = 0u64;
    let check = |bytes: &[u8], tried: &mut u64, scanned: &mut u64| {
        *tried += 1;
        if let Ok(s) = scan_line(bytes) {
            *scanned += 1;
            let strict = parse_line_strict(bytes);
            let line = String::from_utf8_lossy(bytes);
            assert_eq!(Ok(s.envelope()), strict, "{line}");
        }
    };
    let replacements: &[u8] = b"\"\\{}[],:0-.eE+ntfu1a\x00\x1f\x7f\xc3\xff/ \t";
    for line in SCANNED {
        let line = line.as_bytes();
        for i in 0..line.len() {
            let mut m = line.to_vec();
            for &r in replacements {
                m[i] = r;
                check(&m, &mut tried, &mut scanned);
            }
            m[i] = line[i];
            check(&line[..i], &mut tried, &mut scanned);
            let mut cut = line.to_vec();
            cut.remove(i);
            check(&cut, &mut tried, &mut scanned);
            for &r in replacements {
                let mut ins = line.to_vec();
                ins.insert(i, r);
                check(&ins, &mut tried, &mut scanned);
            }
        }
    }
    assert!(scanned > 1000 && tried > 2 * scanned, "{scanned} of {tried}");
}

#[test]
fn run_context_lists_the_sections_it_carries() {
    let e = parse(r#"{"id":"r","payload":{"facts":[],"sections":[{"digest":"d1","name":"a","text":"x"},{"digest":"d2","name":"b","rendered-in":"q"}]},"ts":"t","type":"run-context","v":1}"#).unwrap();
    assert_eq!(e.detail, Detail::RunContext { carried: vec!["d1".into()] });
}
