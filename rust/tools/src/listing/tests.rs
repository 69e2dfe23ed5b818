//! Tests of the listing that no test through the binding can make: a file
//! cut short between its stat and its read, and a batch read when no thread
//! can start. Everything else a row says is checked in Python against the
//! reference reader (`tests/fleet/test_ls_native.py`).

use super::*;

fn line(id: &str, kind: &str, payload: &str, ts: &str) -> String {
    format!(r#"{{"id":"{id}","payload":{payload},"ts":"{ts}","type":"{kind}","v":1}}"#)
}

fn transcript(n: usize) -> String {
    let ts = "2026-08-09T13:10:08.542283Z";
    let mut out = format!(
        "{}\n{}\n",
        line("m", "session-meta", r#"{"agent":"coder","model":"m-1"}"#, ts),
        line("u", "message", r#"{"content":"fix  the\nbug","role":"user"}"#, ts)
    );
    for i in 0..n {
        out.push_str(&line(
            &format!("a{i}"),
            "message",
            r#"{"content":"x","role":"assistant"}"#,
            ts,
        ));
        out.push('\n');
    }
    out
}

fn last_type(ends: &Ends) -> Option<&[u8]> {
    ends.last_type.as_deref()
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
    assert_eq!(last_type(&e), Some(&b"message"[..]));
}

#[test]
fn rows_of_a_batch_in_order_with_threads_or_without() {
    for (name, fail) in [("threads", false), ("no-threads", true)] {
        transcript_core::threads::fail_spawns(fail);
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
        transcript_core::threads::fail_spawns(false);
        assert_eq!(rows.len(), 42);
        for (i, row) in rows.iter().take(40).enumerate() {
            assert_eq!(row.size, transcript(i).len() as u64);
            assert_eq!(last_type(&row.ends), Some(&b"message"[..]));
        }
        let errno = Status::Unreadable(Unreadable::Errno(libc::ENOENT));
        assert_eq!((&rows[40].ends.status, rows[40].file_id), (&errno, None));
        assert_eq!(rows[41].ends.status, Status::Unreadable(Unreadable::NotRegular));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
