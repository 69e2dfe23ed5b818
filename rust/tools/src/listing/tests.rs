//! Tests of the listing: files' ends read as the reference reader reads them,
//! titles clipped as Python clips them, a batch of rows in order.

use super::title::is_python_space;
use super::*;

const TS: &str = "2026-08-09T13:10:08.542283Z";

fn line(id: &str, kind: &str, payload: &str, ts: &str) -> String {
    format!(r#"{{"id":"{id}","payload":{payload},"ts":"{ts}","type":"{kind}","v":1}}"#)
}

fn meta() -> String {
    line("m", "session-meta", r#"{"agent":"coder","model":"m-1"}"#, TS)
}

fn transcript(n: usize) -> String {
    let mut out = format!(
        "{}\n{}\n{}\n",
        meta(),
        line("s", "message", r#"{"content":"be brief","role":"system"}"#, TS),
        line("u", "message", r#"{"content":"fix  the\nbug","role":"user"}"#, TS)
    );
    for i in 0..n {
        out.push_str(&line(
            &format!("a{i}"),
            "message",
            r#"{"content":"x","role":"assistant"}"#,
            &format!("2026-08-10T00:00:{:02}.000000Z", i % 60),
        ));
        out.push('\n');
    }
    out
}

fn ends(bytes: &[u8]) -> Result<Ends, Stop> {
    read_ends(bytes, bytes.len() as u64)
}

fn answer(bytes: &[u8]) -> Ends {
    match ends(bytes) {
        Ok(e) => e,
        Err(e) => panic!("no answer: {e:?}"),
    }
}

fn s(text: &Option<Text>) -> Option<&str> {
    text.as_deref().map(|t| std::str::from_utf8(t).unwrap_or("not UTF-8"))
}

/// Why the file is not a transcript, if it is not.
fn not_one(bytes: &[u8]) -> Option<Status> {
    match ends(bytes) {
        Err(Stop::Not(status)) => Some(status),
        _ => None,
    }
}

#[test]
fn a_clean_transcript() {
    let e = answer(transcript(3).as_bytes());
    assert_eq!(e.status, Status::Clean);
    assert_eq!(s(&e.title), Some("fix the bug"));
    assert_eq!((s(&e.agent), s(&e.model)), (Some("coder"), Some("m-1")));
    assert_eq!(s(&e.started), Some(TS));
    assert_eq!(s(&e.last_activity), Some("2026-08-10T00:00:02.000000Z"));
    assert_eq!(s(&e.last_type), Some("message"));
}

#[test]
fn a_torn_tail_and_two_damaged_lines() {
    let torn = transcript(3) + r#"{"id":"cut"#;
    let e = answer(torn.as_bytes());
    assert_eq!(e.status, Status::TornTail);
    assert_eq!(s(&e.last_activity), Some("2026-08-10T00:00:02.000000Z"));
    for end in [" {", "\r{", "\t{\"id", " garbage", "garbage"] {
        let damaged = transcript(3) + end;
        assert_eq!(answer(damaged.as_bytes()).status, Status::DamagedEnd, "{end:?}");
    }
    let corrupt = transcript(3) + "garbage\n{more garbage";
    let e = answer(corrupt.as_bytes());
    assert_eq!((e.status, e.last_type), (Status::Corrupt, None));
    // Only the session-meta before a torn line: the meta is the last whole one.
    let e = answer(format!("{}\n{{\"id\":", meta()).as_bytes());
    assert_eq!((e.status, s(&e.last_type)), (Status::TornTail, Some("session-meta")));
}

#[test]
fn a_last_line_torn_inside_a_utf8_character() {
    let whole =
        transcript(2) + &line("z", "message", r#"{"content":"héllo €","role":"user"}"#, TS) + "\n";
    let bytes = whole.as_bytes();
    let euro = whole.rfind('€').unwrap_or(0);
    for cut in euro + 1..euro + 3 {
        let e = answer(&bytes[..cut]);
        assert_eq!(e.status, Status::TornTail, "cut at {cut}");
        assert_eq!(s(&e.last_activity), Some("2026-08-10T00:00:01.000000Z"));
    }
}

#[test]
fn no_newline_at_all() {
    let e = answer(meta().as_bytes());
    assert_eq!((e.status, s(&e.last_type), e.title), (Status::Clean, Some("session-meta"), None));
    // A first line without its newline that is longer than the first read.
    let big = line("m", "session-meta", &format!(r#"{{"agent":"{}"}}"#, "a".repeat(20_000)), TS);
    let e = answer(big.as_bytes());
    assert_eq!(e.agent.map(|a| a.len()), Some(20_000));
    // The last line without its newline is whole.
    let t = transcript(1);
    let e = answer(t.trim_end().as_bytes());
    assert_eq!((e.status, s(&e.last_type)), (Status::Clean, Some("message")));
}

#[test]
fn a_first_line_longer_than_the_head() {
    let payload = format!(r#"{{"agent":"a","notes":"{}"}}"#, "n".repeat(HEAD + 10));
    let long = format!(
        "{}\n{}\n",
        line("m", "session-meta", &payload, TS),
        line("u", "message", r#"{"content":"the task","role":"user"}"#, TS)
    );
    let e = answer(long.as_bytes());
    assert_eq!((s(&e.agent), s(&e.title)), (Some("a"), Some("the task")));
    let payload = format!(r#"{{"notes":"{}"}}"#, "n".repeat(HEAD_MAX));
    assert_eq!(
        not_one(format!("{}\n", line("m", "session-meta", &payload, TS)).as_bytes()),
        Some(Status::NotATranscript("the first line is longer than 1 MiB"))
    );
}

#[test]
fn the_title_after_a_long_first_message() {
    let t = format!(
        "{}\n{}\n{}\n",
        meta(),
        line(
            "s",
            "message",
            &format!(r#"{{"content":"{}","role":"system"}}"#, "s".repeat(3 * HEAD_FIRST)),
            TS
        ),
        line(
            "u",
            "message",
            r#"{"content":[{"type":"text","text":"look"},{"type":"image"},{}],"role":"user"}"#,
            TS
        )
    );
    assert_eq!(s(&answer(t.as_bytes()).title), Some("look [image] [part]"));
    // A user message cut by the end of the head is not whole there: no title.
    let t = format!(
        "{}\n{}\n{}\n",
        meta(),
        line(
            "s",
            "message",
            &format!(r#"{{"content":"{}","role":"system"}}"#, "s".repeat(HEAD - 300)),
            TS
        ),
        line("u", "message", &format!(r#"{{"role":"user","content":"{}"}}"#, "u".repeat(1000)), TS)
    );
    assert_eq!(answer(t.as_bytes()).title, None);
}

#[test]
fn a_file_shorter_than_its_stat_said() {
    let t = transcript(300);
    let bytes = t.as_bytes();
    assert!(matches!(read_ends(bytes, bytes.len() as u64 + 10_000), Err(Stop::Changed)));
    // Cut to nothing: an empty file.
    assert!(matches!(
        read_ends(&bytes[..0], bytes.len() as u64),
        Err(Stop::Not(Status::NotATranscript("the file is empty")))
    ));
    // Grown since: what was there at the stat's size is read.
    let grown =
        t.clone() + &line("late", "tool-settled", "{}", "2026-12-01T00:00:00.000000Z") + "\n";
    let e = match read_ends(grown.as_bytes(), bytes.len() as u64) {
        Ok(e) => e,
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(s(&e.last_type), Some("message"));
}

#[test]
fn crlf_lines() {
    let t = transcript(2).replace('\n', "\r\n");
    let e = answer(t.as_bytes());
    assert_eq!(e.status, Status::Clean);
    assert_eq!(s(&e.title), Some("fix the bug"));
    assert_eq!(s(&e.last_activity), Some("2026-08-10T00:00:01.000000Z"));
    let e = answer((t + "\r\n \r\n\t").as_bytes());
    assert_eq!((e.status, s(&e.last_type)), (Status::Clean, Some("message")));
}

#[test]
fn a_canonical_end_is_read_without_parsing() {
    let fields =
        lines::canonical_end(br#"{"id":"x","payload":{"a":[}],"ts":"t2","type":"m","v":1} "#);
    let got = fields.map(|f| (f.ts, f.type_));
    assert_eq!(got, Some((Some(b"t2".to_vec()), Some(b"m".to_vec()))));
    assert!(lines::canonical_end(br#"{"id":"x","ts":"t\"","type":"m","v":1}"#).is_none());
}

#[test]
fn a_long_last_line() {
    let big = line(
        "c",
        "message",
        &format!(r#"{{"content":"{}","role":"tool"}}"#, "z".repeat(200_000)),
        "2026-09-01T00:00:00.000000Z",
    );
    let t = transcript(0) + &big + "\n";
    let e = answer(t.as_bytes());
    assert_eq!(
        (e.status, s(&e.last_activity)),
        (Status::Clean, Some("2026-09-01T00:00:00.000000Z"))
    );
    let torn = t.clone() + &big[..1000];
    let e = answer(torn.as_bytes());
    assert_eq!(
        (e.status, s(&e.last_activity)),
        (Status::TornTail, Some("2026-09-01T00:00:00.000000Z"))
    );
    // Not canonical, and long: parsed whole.
    let odd = format!(
        r#"{{"v":1,"type":"grants","ts":"t","id":"g","payload":"{}"}}"#,
        "p".repeat(50_000)
    );
    let e = answer((transcript(0) + &odd + "\n\n").as_bytes());
    assert_eq!((e.status, s(&e.last_type)), (Status::Clean, Some("grants")));
}

#[test]
fn a_line_load_refuses_is_damaged() {
    // What Python's `json` reads and load's strict reader does not.
    for last in [r#"{"type":"x","n":NaN}"#, r#"{"type":"x","n":1e400}"#] {
        let e = answer((transcript(1) + last + "\n").as_bytes());
        assert_eq!(e.status, Status::TornTail, "{last}");
    }
    let last = line("xy", "message", "{}", "t2");
    let mut bad = (transcript(1) + &last).into_bytes();
    let at = bad.len() - last.len() + 7;
    bad[at] = 0xff; // inside the id: not UTF-8, but a canonical end is trusted
    assert_eq!(answer(&bad).status, Status::Clean);
    bad[at - 1] = b' '; // no canonical start: parsed, and refused
    assert_eq!(answer(&bad).status, Status::TornTail);
    // A lone surrogate is read, as WTF-8.
    let e = answer((transcript(1) + r#"{"type":"\ud800","ts":"t"}"#).as_bytes());
    assert_eq!(e.last_type, Some(vec![0xED, 0xA0, 0x80]));
}

#[test]
fn what_is_not_a_transcript_says_why() {
    let not_meta = Status::NotATranscript(NOT_META);
    for (first, status) in [
        (
            line("m", "session-meta", "{}", TS).replace("\"v\":1", "\"v\":2"),
            Status::UnsupportedVersion("version 2".into()),
        ),
        (line("m", "session-meta", "{}", TS).replace("\"v\":1", "\"v\":1.0"), not_meta.clone()),
        (line("m", "message", "{}", TS), not_meta.clone()),
        (r#"{"type":"session-meta","v":1}"#.to_owned(), not_meta.clone()),
        ("hello".to_owned(), not_meta.clone()),
        (
            "  \n\n".to_owned(),
            Status::NotATranscript("the first line is blank as far as it was read"),
        ),
    ] {
        let bytes = format!("{first}\n");
        let got = match ends(bytes.as_bytes()) {
            Ok(e) => e.status,
            Err(Stop::Not(status)) => status,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(got, status, "{first}");
    }
    assert_eq!(not_one(b""), Some(Status::NotATranscript("the file is empty")));
}

#[test]
fn a_run_ending_in_a_call_is_pending() {
    let call = |id: &str| {
        line(
            "a",
            "message",
            &format!(r#"{{"content":null,"role":"assistant","tool_calls":[{{"id":{id}}}]}}"#),
            TS,
        ) + "\n"
    };
    let status = |tail: &str| answer((transcript(1) + tail).as_bytes()).status;
    assert_eq!(status(&call(r#""c1""#)), Status::Pending { dispatched: false });
    assert_eq!(status(&call("7")), Status::Clean);
    assert_eq!(
        status(&(line("d", "tool-dispatched", "{}", TS) + "\n")),
        Status::Pending { dispatched: true }
    );
    let long = call(&format!(r#""c1","x":"{}""#, "x".repeat(3 * TAIL)));
    assert_eq!(status(&long), Status::Pending { dispatched: false });
}

fn clipped(text: &str) -> String {
    String::from_utf8(clip(text.as_bytes())).unwrap_or_default()
}

#[test]
fn clip_is_pythons_split_and_join() {
    assert_eq!(clipped("  a\u{2003}b\x1c\tc \u{3000}"), "a b c");
    assert_eq!(clipped(""), "");
    let eighty = "é".repeat(80);
    assert_eq!(clipped(&eighty), eighty);
    let c = clipped(&"word ".repeat(40));
    assert_eq!(c.chars().count(), 80);
    assert!(c.ends_with('…'));
    assert_eq!(clipped(&format!("{} b", "a".repeat(79))).chars().count(), 80);
    assert_eq!(clipped(&format!("{} bc", "a".repeat(79))), format!("{}…", "a".repeat(79)));
    // A lone surrogate (WTF-8) is one character.
    let mut wtf8 = [0xED, 0xA0, 0x80].repeat(81);
    wtf8.insert(0, b' ');
    let out = clip(&wtf8);
    assert_eq!(out.len(), 79 * 3 + "…".len());
}

#[test]
fn every_python_space() {
    // str.isspace() over every code point (CPython 3.10-3.13, Unicode 13-15).
    let python: Vec<u32> = vec![
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
        0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000,
    ];
    let ours: Vec<u32> = (0..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|&c| is_python_space(c))
        .map(u32::from)
        .collect();
    assert_eq!(ours, python);
}

#[test]
fn rows_of_a_batch_in_order() {
    rows_in_order("threads");
}

#[test]
fn rows_of_a_batch_when_no_thread_can_start() {
    transcript_core::threads::fail_spawns(true);
    rows_in_order("no-threads");
    transcript_core::threads::fail_spawns(false);
}

fn rows_in_order(name: &str) {
    let dir = std::env::temp_dir().join(format!("listing-test-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for i in 0..40 {
        let p = dir.join(format!("r{i}.jsonl"));
        std::fs::write(&p, transcript(i)).unwrap();
        paths.push(p);
    }
    paths.push(dir.join("missing.jsonl"));
    paths.push(dir.clone());
    let rows = read_rows(&paths, 2);
    assert_eq!(rows.len(), 42);
    for (i, row) in rows.iter().take(40).enumerate() {
        assert_eq!(row.size, transcript(i).len() as u64);
        assert_eq!(s(&row.ends.last_type), Some("message"));
    }
    let errno = Status::Unreadable(Unreadable::Errno(libc::ENOENT));
    assert_eq!((&rows[40].ends.status, rows[40].file_id), (&errno, None));
    let not_regular = Status::Unreadable(Unreadable::NotRegular);
    assert_eq!(rows[41].ends.status, not_regular);
    std::fs::remove_dir_all(&dir).unwrap();
}
