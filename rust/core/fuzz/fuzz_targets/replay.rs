//! Replay over arbitrary sequences of envelopes (messages, compactions with and
//! without a replacement, rewinds, elisions, tool operations, duplicate and
//! clashing ids, garbage and blank lines): no panic; the state after each
//! line the writer appends (the append path, through a file that sometimes
//! fills up mid-line) equals a load
//! of the whole file up to it; a load's first refusal is the first line the
//! incremental replay refuses; and the live list is the one SPEC's rules give
//! (an independent model below).
//!
//! Input: bytes starting with `{` are taken as a JSONL file (the fixtures,
//! the generator's transcripts); anything else drives a generator of
//! envelope lines through `arbitrary`.
#![no_main]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;

use arbitrary::{Arbitrary, Unstructured};
use fuzzkit::{naive_lines, Trickle};
use libfuzzer_sys::fuzz_target;
use transcript_core::canonical::write_str;
use transcript_core::envelope::{parse_line, Detail, EnvelopeType, Id};
use transcript_core::file_state::LinksAndLength;
use transcript_core::transcript::{
    inspect, load, peek, History, LineRec, LoadError, ReplayError, Source, Transcript, WHOLE,
};
use transcript_core::writer::{Sink, WriteError, Writer};

#[derive(Debug, Arbitrary)]
enum Ref {
    Known(u8),
    Part(u8, u8),
    Unknown(u8),
}

#[derive(Debug, Arbitrary)]
enum Op {
    Message { role: u8, sticky: u8, call: Option<u8> },
    Compaction { through: Ref, replacement: Option<Vec<(u8, u8)>> },
    Rewind { through: Option<Ref> },
    Elision { items: Vec<Ref> },
    Dispatch { call: Option<u8> },
    Settle { op: Ref },
    Grants,
    RunContext { digests: Vec<u8> },
    Other,
    Meta,
    DupId(Ref),
    ClashId(u8, u8),
    Garbage(Vec<u8>),
    Blank,
}

const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "developer"];
// What makes a message sticky, and what looks like it but does not.
const STICKY: [(&str, bool); 7] = [
    ("", false),
    (r#","sticky":true"#, true),
    (r#","sysprompt":true"#, true),
    (r#","depth":1"#, true),
    (r#","sticky":0"#, false),
    (r#","depth":null"#, false),
    (r#","sticky":[0]"#, true),
];

fn jstr(out: &mut Vec<u8>, s: &[u8]) {
    write_str(out, s);
}

struct Gen {
    ids: Vec<Vec<u8>>,
    n: usize,
    lines: Vec<Vec<u8>>,
}

impl Gen {
    fn pick(&self, r: &Ref) -> Vec<u8> {
        match r {
            Ref::Known(i) if !self.ids.is_empty() => {
                self.ids[usize::from(*i) % self.ids.len()].clone()
            }
            Ref::Part(i, k) if !self.ids.is_empty() => {
                let mut id = self.ids[usize::from(*i) % self.ids.len()].clone();
                id.extend_from_slice(format!(":{}", k % 4).as_bytes());
                id
            }
            Ref::Known(i) | Ref::Part(i, _) | Ref::Unknown(i) => format!("zz{i}").into_bytes(),
        }
    }

    fn line(&mut self, id: Option<Vec<u8>>, ty: &str, payload: &[u8]) {
        let id = id.unwrap_or_else(|| {
            self.n += 1;
            format!("e{}", self.n).into_bytes()
        });
        let mut out = b"{\"id\":".to_vec();
        jstr(&mut out, &id);
        out.extend_from_slice(b",\"payload\":");
        out.extend_from_slice(payload);
        out.extend_from_slice(b",\"ts\":\"2026-08-09T13:10:08.542283Z\",\"type\":");
        jstr(&mut out, ty.as_bytes());
        out.extend_from_slice(b",\"v\":1}");
        self.ids.push(id);
        self.lines.push(out);
    }

    fn message_payload(role: u8, sticky: u8, call: Option<u8>) -> Vec<u8> {
        let mut p = b"{\"content\":\"hi\",\"role\":".to_vec();
        jstr(&mut p, ROLES[usize::from(role) % ROLES.len()].as_bytes());
        p.extend_from_slice(STICKY[usize::from(sticky) % STICKY.len()].0.as_bytes());
        if let Some(c) = call {
            p.extend_from_slice(format!(",\"tool_call_id\":\"c{}\"", c % 4).as_bytes());
        }
        p.push(b'}');
        p
    }

    fn op(&mut self, op: &Op) {
        match op {
            Op::Message { role, sticky, call } => {
                self.line(None, "message", &Self::message_payload(*role, *sticky, *call))
            }
            Op::Compaction { through, replacement } => {
                let mut p = b"{\"fallback\":false,\"replaces-through-id\":".to_vec();
                jstr(&mut p, &self.pick(through));
                if let Some(parts) = replacement {
                    p.extend_from_slice(b",\"replacement\":[");
                    for (i, (role, sticky)) in parts.iter().take(6).enumerate() {
                        if i > 0 {
                            p.push(b',');
                        }
                        p.extend_from_slice(&Self::message_payload(*role, *sticky, None));
                    }
                    p.push(b']');
                }
                p.extend_from_slice(b",\"summary\":\"s\",\"tokens-after\":1,\"tokens-before\":2}");
                self.line(None, "compaction", &p)
            }
            Op::Rewind { through } => {
                let mut p = b"{\"through-id\":".to_vec();
                match through {
                    Some(r) => jstr(&mut p, &self.pick(r)),
                    None => p.extend_from_slice(b"null"),
                }
                p.push(b'}');
                self.line(None, "rewind", &p)
            }
            Op::Elision { items } => {
                let mut p = b"{\"items\":[".to_vec();
                for (i, r) in items.iter().take(6).enumerate() {
                    if i > 0 {
                        p.push(b',');
                    }
                    p.extend_from_slice(b"{\"id\":");
                    jstr(&mut p, &self.pick(r));
                    p.extend_from_slice(b",\"stub\":\"[elided]\"}");
                }
                p.extend_from_slice(b"]}");
                self.line(None, "elision", &p)
            }
            Op::Dispatch { call } => {
                let p = match call {
                    Some(c) => {
                        format!("{{\"arguments\":{{}},\"call-id\":\"c{}\",\"tool\":\"t\"}}", c % 4)
                    }
                    None => "{\"arguments\":{},\"call-id\":null,\"tool\":\"t\"}".to_string(),
                };
                self.line(None, "tool-dispatched", p.as_bytes())
            }
            Op::Settle { op } => {
                let mut p = b"{\"op-id\":".to_vec();
                jstr(&mut p, &self.pick(op));
                p.extend_from_slice(b",\"outcome\":\"completed\"}");
                self.line(None, "tool-settled", &p)
            }
            Op::Grants => self.line(None, "grants", b"{\"grants\":{\"x\":1}}"),
            Op::RunContext { digests } => {
                let mut p = b"{\"facts\":[],\"sections\":[".to_vec();
                for (i, d) in digests.iter().take(4).enumerate() {
                    if i > 0 {
                        p.push(b',');
                    }
                    if d % 2 == 0 {
                        p.extend_from_slice(
                            format!("{{\"digest\":\"d{}\",\"name\":\"n\",\"text\":\"t\"}}", d % 8)
                                .as_bytes(),
                        );
                    } else {
                        p.extend_from_slice(
                            format!(
                                "{{\"digest\":\"d{}\",\"name\":\"n\",\"rendered-in\":\"x\"}}",
                                d % 8
                            )
                            .as_bytes(),
                        );
                    }
                }
                p.extend_from_slice(b"]}");
                self.line(None, "run-context", &p)
            }
            Op::Other => self.line(None, "x-custom", b"[1,2]"),
            Op::Meta => self.line(None, "session-meta", b"{}"),
            Op::DupId(r) => {
                let id = self.pick(r);
                self.line(Some(id), "message", &Self::message_payload(1, 0, None))
            }
            Op::ClashId(i, k) => {
                let id = self.pick(&Ref::Part(*i, *k));
                self.line(Some(id), "message", &Self::message_payload(1, 0, None))
            }
            Op::Garbage(bytes) => {
                self.lines.push(bytes.iter().copied().filter(|&b| b != b'\n').collect())
            }
            Op::Blank => self.lines.push(b" \t".to_vec()),
        }
    }
}

/// SPEC's replay, written plainly: the live list as ids.
#[derive(Default)]
struct Model {
    /// Every envelope's id, by line index.
    ids: Vec<Id>,
    /// Compaction line index -> its replacement's length.
    parts: BTreeMap<usize, usize>,
    /// (id, sticky, line index of the elision that stubbed it).
    live: Vec<(Id, bool, Option<usize>)>,
    /// Dispatch line -> (call id, result line).
    pending: BTreeMap<usize, (Option<Id>, Option<usize>)>,
}

impl Model {
    fn taken(&self, id: &[u8]) -> bool {
        self.ids.iter().any(|i| i == id) || self.part_named(id)
    }

    fn part_named(&self, id: &[u8]) -> bool {
        let Some(colon) = id.iter().rposition(|&b| b == b':') else { return false };
        let digits = &id[colon + 1..];
        let canonical = !digits.is_empty()
            && digits.iter().all(u8::is_ascii_digit)
            && (digits[0] != b'0' || digits.len() == 1);
        if !canonical || digits.len() > 9 {
            return false;
        }
        let k: usize =
            std::str::from_utf8(digits).ok().and_then(|d| d.parse().ok()).unwrap_or(usize::MAX);
        self.ids
            .iter()
            .position(|i| i.as_slice() == &id[..colon])
            .and_then(|line| self.parts.get(&line))
            .is_some_and(|&n| k < n)
    }

    fn pos(&self, id: &[u8]) -> Option<usize> {
        self.live.iter().position(|(i, _, _)| i == id)
    }

    /// Whether replay must accept `env` (strict: as an append), and applies it.
    fn apply(&mut self, env: &transcript_core::envelope::Envelope, strict: bool) -> bool {
        let index = self.ids.len();
        if (index == 0) != (env.kind == EnvelopeType::SessionMeta) || self.taken(&env.id) {
            return false;
        }
        match &env.detail {
            Detail::Compaction { through, replacement } => {
                let Some(i) = self.pos(through) else { return false };
                if let Some(parts) = replacement {
                    for k in 0..parts.len() {
                        let mut id = env.id.clone();
                        id.extend_from_slice(format!(":{k}").as_bytes());
                        if self.ids.contains(&id) {
                            return false;
                        }
                    }
                }
                let mut live: Vec<_> = self.live[..=i].iter().filter(|m| m.1).cloned().collect();
                match replacement {
                    None => live.push((env.id.clone(), false, None)),
                    Some(parts) => {
                        for (k, p) in parts.iter().enumerate() {
                            let mut id = env.id.clone();
                            id.extend_from_slice(format!(":{k}").as_bytes());
                            live.push((id, p.sticky, None));
                        }
                        self.parts.insert(index, parts.len());
                    }
                }
                live.extend(self.live[i + 1..].iter().cloned());
                self.live = live;
            }
            Detail::Rewind { through } => {
                let keep = match through {
                    None => 0,
                    Some(id) => match self.pos(id) {
                        Some(i) => i + 1,
                        None => return false,
                    },
                };
                self.live.truncate(keep);
            }
            Detail::Elision { items } => {
                if items.iter().any(|(id, _)| self.pos(id).is_none()) {
                    return false;
                }
                for (id, _) in items {
                    if let Some(i) = self.pos(id) {
                        self.live[i].2 = Some(index);
                    }
                }
            }
            Detail::Message { sticky, tool_call_id, .. } => {
                self.live.push((env.id.clone(), *sticky, None));
                if let Some(call) = tool_call_id {
                    for op in self.pending.values_mut() {
                        if op.1.is_none() && op.0.as_ref() == Some(call) {
                            op.1 = Some(index);
                        }
                    }
                }
            }
            Detail::ToolDispatched { call_id } => {
                self.pending.insert(index, (call_id.clone(), None));
            }
            Detail::ToolSettled { op_id } => {
                let line = self.ids.iter().position(|i| i == op_id);
                match line {
                    Some(l) if self.pending.contains_key(&l) => {
                        self.pending.remove(&l);
                    }
                    _ if strict => return false,
                    _ => {}
                }
            }
            _ => {}
        }
        self.ids.push(env.id.clone());
        true
    }

    fn id_of(&self, at: Source) -> Id {
        let mut id = self.ids[at.line as usize].clone();
        if at.part != WHOLE {
            id.extend_from_slice(format!(":{}", at.part).as_bytes());
        }
        id
    }

    fn agrees(&self, t: &Transcript) {
        let live: Vec<(Id, bool, Option<usize>)> = t
            .live
            .iter()
            .map(|m| (self.id_of(m.source()), m.sticky, m.stub().map(|(l, _)| l as usize)))
            .collect();
        assert_eq!(live, self.live, "the live list is not SPEC's");
        let pending: BTreeMap<usize, (Option<Id>, Option<usize>)> = t
            .pending
            .iter()
            .map(|(l, p)| (*l as usize, (p.call_id.clone(), p.result.map(|r| r as usize))))
            .collect();
        assert_eq!(pending, self.pending, "pending operations");
    }
}

fn same_history(a: &History, b: &History) {
    assert_eq!(a.compactions, b.compactions);
    assert_eq!(a.elisions, b.elisions);
    assert_eq!(a.rewinds, b.rewinds);
    assert_eq!(a.settled_by, b.settled_by);
    assert_eq!(a.elided_by, b.elided_by);
    assert_eq!(a.compacted_by, b.compacted_by);
    assert_eq!(a.rewound_by, b.rewound_by);
}

/// The incremental state equals the loaded one in everything a session reads.
fn same(inc: &Transcript, loaded: &Transcript, ids: &[Id], lines_too: bool) {
    assert_eq!(inc.index.len(), loaded.index.len(), "envelope count");
    for i in 0..inc.index.len() {
        assert_eq!(inc.index.get(i), loaded.index.get(i), "line record {i}");
        assert_eq!(inc.index.type_name(i), loaded.index.type_name(i));
        assert_eq!(inc.index.role(i), loaded.index.role(i));
        let line = u32::try_from(i).unwrap_or(u32::MAX);
        assert_eq!(inc.parts_of(line), loaded.parts_of(line), "replacement of line {i}");
    }
    assert_eq!(inc.live, loaded.live, "live messages");
    assert_eq!(inc.pending, loaded.pending, "pending operations");
    assert_eq!(inc.grants, loaded.grants, "grants");
    assert_eq!(inc.sections, loaded.sections, "sections");
    if lines_too {
        assert_eq!(inc.line_count, loaded.line_count, "line count");
    }
    for id in ids {
        for k in [None, Some(0), Some(1), Some(2)] {
            let mut id = id.clone();
            if let Some(k) = k {
                id.extend_from_slice(format!(":{k}").as_bytes());
            }
            assert_eq!(inc.resolve(&id), loaded.resolve(&id));
            assert_eq!(inc.position(&id), loaded.position(&id));
            assert_eq!(inc.line_of(&id), loaded.line_of(&id));
        }
    }
    if let (Some(a), Some(b)) = (&inc.history, &loaded.history) {
        same_history(a, b);
    }
}

fn with_history() -> Transcript {
    let mut t = Transcript::default();
    t.history = Some(History::default());
    t
}

/// A file in memory for the writer, whose next write can be made to write
/// `short` bytes and then fail as a full disk does.
struct MemFile {
    bytes: RefCell<Vec<u8>>,
    short: Cell<Option<usize>>,
}

impl Sink for MemFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.short.take() {
            Some(0) => Err(io::Error::from_raw_os_error(28)), // ENOSPC
            Some(n) => {
                let n = n.min(buf.len());
                self.bytes.borrow_mut().extend_from_slice(&buf[..n]);
                // The rest of the line finds the disk full.
                self.short.set(Some(0));
                Ok(n)
            }
            None => {
                self.bytes.borrow_mut().extend_from_slice(buf);
                Ok(buf.len())
            }
        }
    }
    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.bytes.borrow_mut().truncate(len as usize);
        Ok(())
    }
    fn links_and_length(&self) -> io::Result<LinksAndLength> {
        Ok(LinksAndLength { links: 1, len: self.bytes.borrow().len() as u64 })
    }
}

/// The append path over `lines`, through the writer itself: each line is
/// appended (some first into a disk that fills up mid-line, which must leave
/// file and state as they were); the writer accepts exactly what SPEC
/// accepts, and after each, a load of its file is the same state.
fn appended(lines: &[Vec<u8>], every: bool) {
    let sink = MemFile { bytes: RefCell::new(Vec::new()), short: Cell::new(None) };
    let mut w = Writer::new(with_history(), sink, 0, false, false, None);
    let mut model = Model::default();
    let mut ids = Vec::new();
    let n = lines.len();
    for (k, line) in lines.iter().enumerate() {
        let Ok(env) = parse_line(line) else { continue };
        let expected = model.apply(&env, true);
        if k % 5 == 4 {
            let before = w.file().bytes.borrow().clone();
            let (len, count) = (w.len(), w.transcript().index.len());
            // Short of the whole line (its `\n` included), so the write fails.
            w.file().short.set(Some(k % (line.len() + 1)));
            let failed = w.append_line(line);
            assert!(failed.is_err(), "a write into a full disk succeeded");
            assert_eq!(*w.file().bytes.borrow(), before, "a failed write left bytes behind");
            assert_eq!((w.len(), w.transcript().index.len()), (len, count));
            assert_eq!(w.broken(), None);
            w.file().short.set(None);
        }
        let accepted = match w.append_line(line) {
            Ok(()) => true,
            Err(WriteError::Refused(_)) => false,
            Err(e) => panic!("the writer failed: {e}"),
        };
        assert_eq!(
            accepted,
            expected,
            "the writer disagrees with SPEC on {:?}",
            String::from_utf8_lossy(line)
        );
        if !accepted {
            continue;
        }
        ids.push(env.id.clone());
        let inc = w.transcript();
        model.agrees(inc);
        let file = w.file().bytes.borrow().clone();
        assert_eq!(w.len(), file.len() as u64);
        if every || k + 1 == n {
            let src = Trickle { bytes: &file, step: 1 + (k % 7) * 1000 };
            let loaded = match inspect(&src, file.len() as u64) {
                Ok(t) => t,
                Err(e) => panic!("a file of accepted appends does not load: {e:?}"),
            };
            same(inc, &loaded, &ids, true);
            if let Ok(plain) = load(&file[..], file.len() as u64) {
                same(&plain, &loaded, &ids, true);
            }
        }
    }
}

/// The load path over `file` as it is: replay line by line until the first
/// refusal, and a load of the whole file must stop there with the same error.
fn loaded_whole(file: &[u8]) {
    let (lines, count) = naive_lines(file);
    let mut inc = with_history();
    let mut model = Model::default();
    let mut ids = Vec::new();
    let mut first_error: Option<(u64, Result<ReplayError, String>)> = None;
    let mut parsed = 0usize;
    for &(s, e, number) in &lines {
        let line = &file[s..e];
        let env = match parse_line(line) {
            Ok(env) => env,
            Err(err) => {
                first_error = Some((number, Err(err.to_string())));
                break;
            }
        };
        parsed += 1;
        let expected = model.apply(&env, false);
        ids.push(env.id.clone());
        let rec = LineRec::new(&env, s as u64, line.len(), number);
        match inc.push(env, rec, false) {
            Ok(()) => {
                assert!(
                    expected,
                    "replay accepts what SPEC refuses: {:?}",
                    String::from_utf8_lossy(line)
                );
                model.agrees(&inc);
            }
            Err(err) => {
                assert!(
                    !expected,
                    "replay refuses what SPEC accepts ({err}): {:?}",
                    String::from_utf8_lossy(line)
                );
                first_error = Some((number, Ok(err)));
                break;
            }
        }
    }
    let whole = inspect(file, file.len() as u64);
    match (whole, first_error) {
        (Ok(t), None) => {
            assert!(!inc.index.is_empty());
            same(&inc, &t, &ids, false);
            assert_eq!(t.line_count, count, "line count");
        }
        (Err(LoadError::Empty), None) => assert!(inc.index.is_empty()),
        (Err(LoadError::Replay { line, error }), Some((at, Ok(want)))) => {
            assert_eq!((line, error), (at, want));
        }
        (Err(LoadError::Line { line, error }), Some((at, Err(want)))) => {
            assert_eq!((line, error.to_string()), (at, want));
        }
        (got, want) => panic!("load gave {got:?}, line by line gave {want:?}"),
    }
    // Peek reads every line that parses, whatever replay would say.
    let Ok(p) = peek(file, file.len() as u64) else { panic!("peek failed in memory") };
    let parses = lines.iter().filter(|&&(s, e, _)| parse_line(&file[s..e]).is_ok()).count();
    assert_eq!(p.index.len(), parses);
    assert_eq!(p.line_count, count);
    assert!(parsed <= parses);
}

fuzz_target!(|data: &[u8]| {
    if data.first() == Some(&b'{') {
        loaded_whole(data);
        let (lines, _) = naive_lines(data);
        let lines: Vec<Vec<u8>> = lines.iter().map(|&(s, e, _)| data[s..e].to_vec()).collect();
        appended(&lines, lines.len() <= 32);
        return;
    }
    let mut u = Unstructured::new(data);
    let Ok(ops) = <Vec<Op>>::arbitrary(&mut u) else { return };
    let mut g = Gen { ids: Vec::new(), n: 0, lines: Vec::new() };
    g.line(Some(b"m0".to_vec()), "session-meta", b"{\"agent\":\"fuzz\"}");
    for op in ops.iter().take(200) {
        g.op(op);
    }
    let mut file = Vec::new();
    for line in &g.lines {
        file.extend_from_slice(line);
        file.push(b'\n');
    }
    loaded_whole(&file);
    appended(&g.lines, g.lines.len() <= 48);
});
