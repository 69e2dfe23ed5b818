//! The writer against real files and a file whose system calls fail where a
//! full or failing disk would make them fail.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::path::PathBuf;

use super::*;
use crate::transcript::replay_tests::{line, meta};
use crate::transcript::{load, LineRec};

fn msg(id: &str) -> String {
    crate::transcript::replay_tests::msg(id, "user", "")
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("at-writer-{}-{name}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Scratch(path)
    }

    fn open(&self) -> io::Result<File> {
        File::options().create(true).read(true).append(true).open(&self.0)
    }

    fn bytes(&self) -> io::Result<Vec<u8>> {
        std::fs::read(&self.0)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What one `write(2)` of [`Faulty`] does instead of writing all it is given.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Writes only the first n bytes.
    Short(usize),
    /// Fails with this errno, writing nothing.
    Errno(i32),
    /// Returns 0.
    Zero,
}

/// A real file whose writes, fsync, truncate and check fail as planned.
struct Faulty {
    file: File,
    writes: VecDeque<Fault>,
    sync: Option<i32>,
    set_len: Option<i32>,
    check: Option<i32>,
}

impl Faulty {
    fn new(file: File) -> Self {
        Faulty { file, writes: VecDeque::new(), sync: None, set_len: None, check: None }
    }
}

fn fail(errno: Option<i32>) -> io::Result<()> {
    errno.map_or(Ok(()), |e| Err(io::Error::from_raw_os_error(e)))
}

impl Sink for Faulty {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writes.pop_front() {
            None => Sink::write(&mut self.file, buf),
            Some(Fault::Short(n)) => Sink::write(&mut self.file, &buf[..n.min(buf.len())]),
            Some(Fault::Errno(e)) => Err(io::Error::from_raw_os_error(e)),
            Some(Fault::Zero) => Ok(0),
        }
    }
    fn sync_data(&self) -> io::Result<()> {
        fail(self.sync)?;
        self.file.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        fail(self.set_len)?;
        self.file.set_len(len)
    }
    fn links_and_length(&self) -> io::Result<LinksAndLength> {
        fail(self.check)?;
        links_and_length(&self.file)
    }
}

/// A writer on a new file holding the session-meta and one message.
fn started(s: &Scratch, fsync: bool) -> io::Result<Writer<Faulty>> {
    let mut w = Writer::new(Transcript::default(), Faulty::new(s.open()?), 0, false, fsync, None);
    for l in [meta(), msg("a")] {
        w.append_line(l.as_bytes()).map_err(io::Error::other)?;
    }
    Ok(w)
}

fn file_of(lines: &[String]) -> Vec<u8> {
    (lines.join("\n") + "\n").into_bytes()
}

/// The writer's state is the one a load of its file gives.
fn agrees_with_load(w: &Writer<Faulty>, s: &Scratch) -> io::Result<()> {
    let bytes = s.bytes()?;
    assert_eq!(w.len(), bytes.len() as u64);
    let loaded =
        load(&bytes[..], bytes.len() as u64).map_err(|e| io::Error::other(format!("{e:?}")))?;
    let t = w.transcript();
    assert_eq!(t.index.len(), loaded.index.len());
    for i in 0..t.index.len() {
        assert_eq!(t.index.get(i), loaded.index.get(i));
    }
    assert_eq!(t.live, loaded.live);
    assert_eq!(t.line_count, loaded.line_count);
    Ok(())
}

fn errno(e: &WriteError) -> Option<i32> {
    match e {
        WriteError::Io(e) => e.raw_os_error(),
        _ => None,
    }
}

#[test]
fn appended_lines_are_the_file_byte_for_byte_and_load_back_as_the_writer_has_them() -> io::Result<()>
{
    let s = Scratch::new("bytes");
    let mut w = started(&s, true)?;
    w.append_line(msg("b").as_bytes()).map_err(io::Error::other)?;
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a"), msg("b")]));
    agrees_with_load(&w, &s)
}

#[test]
fn a_last_line_without_its_newline_gets_one_before_the_next_line() -> io::Result<()> {
    let s = Scratch::new("newline");
    std::fs::write(&s.0, meta())?;
    let bytes = s.bytes()?;
    let loaded =
        load(&bytes[..], bytes.len() as u64).map_err(|e| io::Error::other(format!("{e:?}")))?;
    let mut w = Writer::new(loaded, Faulty::new(s.open()?), bytes.len() as u64, true, false, None);
    w.append_line(msg("a").as_bytes()).map_err(io::Error::other)?;
    w.append_line(msg("b").as_bytes()).map_err(io::Error::other)?;
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a"), msg("b")]));
    agrees_with_load(&w, &s)
}

/// A writer of `meta` and `a` whose append of `b` met the faults `plan` made,
/// and that append's error; the faults are gone after it.
fn faulted(
    name: &str,
    fsync: bool,
    plan: impl FnOnce(&mut Faulty),
) -> io::Result<(Scratch, Writer<Faulty>, Option<WriteError>)> {
    let s = Scratch::new(name);
    let mut w = started(&s, fsync)?;
    plan(&mut w.file);
    let e = w.append_line(msg("b").as_bytes()).err();
    (w.file.sync, w.file.set_len, w.file.check) = (None, None, None);
    Ok((s, w, e))
}

/// The failed append left the file and the writer as they were: the same
/// line goes in once the disk works again.
fn as_before(s: &Scratch, mut w: Writer<Faulty>) -> io::Result<()> {
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a")]));
    assert_eq!(w.broken(), None);
    agrees_with_load(&w, s)?;
    w.append_line(msg("b").as_bytes()).map_err(io::Error::other)?;
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a"), msg("b")]));
    agrees_with_load(&w, s)
}

#[test]
fn a_write_refused_with_enospc_leaves_the_file_and_the_writer_as_they_were() -> io::Result<()> {
    let (s, w, e) = faulted("enospc", false, |f| f.writes.push_back(Fault::Errno(libc::ENOSPC)))?;
    assert_eq!(e.as_ref().and_then(errno), Some(libc::ENOSPC));
    as_before(&s, w)
}

#[test]
fn a_short_write_then_enospc_is_cut_back_out_of_the_file() -> io::Result<()> {
    let (s, w, e) = faulted("short", false, |f| {
        f.writes.extend([Fault::Short(10), Fault::Errno(libc::ENOSPC)])
    })?;
    assert_eq!(e.as_ref().and_then(errno), Some(libc::ENOSPC));
    as_before(&s, w)
}

#[test]
fn short_writes_and_interrupted_ones_go_on_until_the_line_is_whole() -> io::Result<()> {
    let (eintr, short) = (Fault::Errno(libc::EINTR), Fault::Short);
    let (s, w, e) =
        faulted("resume", false, |f| f.writes.extend([short(5), eintr, short(7), eintr]))?;
    assert!(e.is_none(), "{e:?}");
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a"), msg("b")]));
    agrees_with_load(&w, &s)
}

#[test]
fn a_write_of_nothing_is_an_error_and_what_it_wrote_is_cut_back() -> io::Result<()> {
    let (s, w, e) = faulted("zero", false, |f| f.writes.extend([Fault::Short(3), Fault::Zero]))?;
    match e {
        Some(WriteError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::WriteZero),
        other => panic!("{other:?}"),
    }
    as_before(&s, w)
}

#[test]
fn a_failed_fsync_cuts_the_whole_line_back() -> io::Result<()> {
    let (s, w, e) = faulted("fsync", true, |f| f.sync = Some(libc::EIO))?;
    assert_eq!(e.as_ref().and_then(errno), Some(libc::EIO));
    as_before(&s, w)
}

/// The writer is broken for good with a reason that says `said`: the next
/// append is refused with the same reason and writes nothing.
fn broken_for_good(s: &Scratch, mut w: Writer<Faulty>, said: &[&str]) -> io::Result<()> {
    let why = w.broken().unwrap_or_default().to_owned();
    assert!(why.starts_with(said[0]), "{why}");
    assert!(said.iter().all(|part| why.contains(part)), "{why}");
    let before = s.bytes()?;
    match w.append_line(msg("c").as_bytes()) {
        Err(WriteError::Broken(again)) => assert_eq!(again, why),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.bytes()?, before);
    Ok(())
}

#[test]
fn a_partial_line_that_cannot_be_cut_back_breaks_the_writer_for_good() -> io::Result<()> {
    let (s, w, e) = faulted("cut", false, |f| {
        f.writes.extend([Fault::Short(3), Fault::Errno(libc::ENOSPC)]);
        f.set_len = Some(libc::EIO);
    })?;
    assert_eq!(e.as_ref().and_then(errno), Some(libc::ENOSPC));
    let said = ["a write failed (", "the partial line could not be removed"];
    broken_for_good(&s, w, &said)
}

#[test]
fn a_check_after_the_write_that_fails_breaks_the_writer() -> io::Result<()> {
    let (s, w, e) = faulted("check", false, |f| f.check = Some(libc::EIO))?;
    assert_eq!(e.as_ref().and_then(errno), Some(libc::EIO));
    // The line is in the file: the writer must not let it pass as unwritten.
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a"), msg("b")]));
    broken_for_good(&s, w, &["the file could not be checked after a write"])
}

#[test]
fn a_file_deleted_truncated_or_written_by_another_breaks_the_writer_after_its_write(
) -> io::Result<()> {
    type Change = fn(&Scratch) -> io::Result<()>;
    let changes: [(&str, Change, &str); 3] = [
        ("deleted", |s| std::fs::remove_file(&s.0), "deleted or replaced"),
        (
            "truncated",
            |s| File::options().write(true).open(&s.0)?.set_len(5),
            "truncated under the session (",
        ),
        (
            "other",
            |s| io::Write::write_all(&mut s.open()?, b"{}\n"),
            "another program wrote to the transcript",
        ),
    ];
    for (name, change, said) in changes {
        let s = Scratch::new(name);
        let mut w = started(&s, false)?;
        change(&s)?;
        match w.append_line(msg("b").as_bytes()) {
            Err(WriteError::Broken(why)) => assert!(why.contains(said), "{name}: {why}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(matches!(w.append_line(msg("c").as_bytes()), Err(WriteError::Broken(_))));
        // The line is not in the transcript, which says only what it read back.
        assert_eq!(w.transcript().index.len(), 2, "{name}");
    }
    Ok(())
}

#[test]
fn a_real_enospc_from_dev_full_is_the_error_and_nothing_breaks() -> io::Result<()> {
    let full = File::options().write(true).open("/dev/full")?;
    let mut w = Writer::new(Transcript::default(), full, 0, false, false, None);
    let e = w.append_line(meta().as_bytes()).err();
    assert_eq!(e.as_ref().and_then(errno), Some(libc::ENOSPC));
    // Nothing was written and nothing asked for a cut-back.
    assert_eq!(w.broken(), None);
    assert!(w.is_empty());
    assert_eq!(w.transcript().index.len(), 0);
    Ok(())
}

#[test]
fn envelopes_replay_or_the_reader_refuse_are_not_written() -> io::Result<()> {
    let s = Scratch::new("refused");
    let mut w = started(&s, false)?;
    let before = s.bytes()?;
    assert!(matches!(
        w.append_line(msg("a").as_bytes()),
        Err(WriteError::Refused(ReplayError::DuplicateId(_)))
    ));
    match w.append_line(b"{\"id\":") {
        Err(WriteError::Invalid(why)) => {
            assert!(why.starts_with("the envelope does not read back: "), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.bytes()?, before);
    assert_eq!(w.broken(), None);
    agrees_with_load(&w, &s)
}

#[test]
fn lines_of_one_append_go_in_one_write_or_not_at_all() -> io::Result<()> {
    let s = Scratch::new("batch");
    let mut w = started(&s, false)?;
    let (b, c) = (w.fresh_id(1), w.fresh_id(1));
    let mut buf = w.take_buffer();
    let mut ends = Vec::new();
    for (fresh, role) in [(&b, "user"), (&c, "tool")] {
        let id = fresh.as_str();
        buf.extend_from_slice(
            line(
                id,
                "message",
                &format!(r#"{{"content":"x","role":"{role}","tool_call_id":"k"}}"#),
            )
            .as_bytes(),
        );
        buf.push(b'\n');
        ends.push(buf.len());
    }
    let made =
        |id, role| Made::Message { id, role, sticky: false, tool_call_id: Some(b"k".as_slice()) };
    // The same id twice: refused before anything is written.
    let twice = [(made(&b, "user"), ends[0]), (made(&b, "tool"), ends[1])];
    assert!(matches!(w.append(buf.clone(), &twice), Err(WriteError::Invalid(_))));
    assert_eq!(w.transcript().index.len(), 2);
    w.file.writes.push_back(Fault::Short(1));
    let lines = [(made(&b, "user"), ends[0]), (made(&c, "tool"), ends[1])];
    w.append(buf.clone(), &lines).map_err(io::Error::other)?;
    let mut want = file_of(&[meta(), msg("a")]);
    want.extend_from_slice(&buf[1..]);
    assert_eq!(s.bytes()?, want);
    // What the writer knew of each message is what its line reads back as.
    agrees_with_load(&w, &s)?;
    let rec: Option<LineRec> = w.transcript().index.get(3);
    assert_eq!(rec.map(|r| r.number), Some(4));
    Ok(())
}

#[test]
fn a_closed_writer_refuses_appends_and_reads_through_the_file_it_was_given() -> io::Result<()> {
    let s = Scratch::new("closed");
    let mut w = started(&s, false)?;
    w.close(Faulty::new(File::open(&s.0)?));
    match w.append_line(msg("b").as_bytes()) {
        Err(WriteError::Broken(why)) => assert_eq!(why, "the session is closed"),
        other => panic!("{other:?}"),
    }
    assert_eq!(s.bytes()?, file_of(&[meta(), msg("a")]));
    Ok(())
}
