//! Claude Code sessions, imported natively: the same conversion as the Python
//! importer's `formats/claude_code.py` (read that for the rules), for the
//! records it meets in almost every session. A first pass keeps a few words a
//! record (uuids interned, parent links, kind, flags, timestamp) to find the
//! active branch; the second reads each record of it again and writes its
//! envelopes. Unsupported here, and left to the Python importer: damaged lines,
//! a uuid twice, a branch not taken (a rewind), an orphan or duplicate tool
//! result, a timestamp of another form, a lone surrogate in an emitted value.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};

use crate::canonical;
use crate::import_run::{
    as_text, is_blank, read_line, scan, Emitter, EveryFewRecords, Imported, SourceLine, Status,
    Stop,
};
use crate::import_value::{
    canonical_bytes, parse, py_space, when_of, write_dumps, Ids, Ts, Unsupported, Value,
};
use crate::json::{JStr, Kind, Reader};

const REJECTED: [&str; 2] = [
    "The user doesn't want to proceed with this tool use",
    "User rejected",
];
const INTERRUPTED: &str = "[Request interrupted by user for tool use]";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecKind {
    User,
    Assistant,
    Attachment,
    System,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Content {
    #[default]
    Absent,
    Str,
    List,
    Other,
}

/// What the first pass keeps of a chain record.
#[derive(Debug, Clone)]
struct Rec {
    line: u32,
    uid: u32,
    parent: Option<u32>,
    logical: Option<u32>,
    kind: RecKind,
    sidechain: bool,
    boundary: bool,
    local_command: bool,
    compact_summary: bool,
    api_error: bool,
    mid: Option<u32>,
    content: Content,
    results: u32,
    rest: bool,
    when: Option<Ts>,
    session_id: Option<u32>,
    cwd: Option<u32>,
    git_branch: Option<u32>,
    version: Option<u32>,
}

#[derive(Default)]
struct Interner {
    index: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.into());
        self.index.insert(s.into(), i);
        i
    }

    fn name(&self, i: u32) -> &str {
        self.names.get(i as usize).map_or("", |s| s)
    }
}

/// The top-level members the first pass reads of one line.
#[derive(Default)]
struct Skim {
    kind: Option<String>,
    uuid: Option<String>,
    parent: Option<String>,
    logical: Option<String>,
    timestamp: Option<Ts>,
    sidechain: bool,
    subtype: Option<String>,
    compact_summary: bool,
    api_error: bool,
    session_id: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    git_branch: Option<String>,
    summary: Option<String>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    permission_mode: Option<String>,
    leaf_uuid: Option<String>,
    mid: Option<String>,
    content: Content,
    results: u32,
    rest: bool,
}

fn bad<T>(_: T) -> Unsupported {
    Unsupported("a damaged line")
}

fn text_of(s: JStr<'_>) -> Result<String, Unsupported> {
    match s {
        JStr::Text(t) => Ok(t.to_owned()),
        JStr::Wtf8(_) => Err(Unsupported("a lone surrogate in a record's field")),
    }
}

/// A string member (None for any other value, which is skipped).
fn opt_string(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<String>, Unsupported> {
    if r.peek().map_err(bad)? == Kind::String {
        let s = r.string(scratch).map_err(bad)?;
        return text_of(s).map(Some);
    }
    r.skip_value().map_err(bad)?;
    Ok(None)
}

/// True for `true`, false for anything else (skipped).
fn is_true(r: &mut Reader<'_>) -> Result<bool, Unsupported> {
    if r.peek().map_err(bad)? == Kind::Bool {
        return r.boolean().map_err(bad);
    }
    r.skip_value().map_err(bad)?;
    Ok(false)
}

/// The top-level keys the first pass reads (each may appear once).
const SKIMMED: [&str; 19] = [
    "type",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "timestamp",
    "isSidechain",
    "subtype",
    "isCompactSummary",
    "isApiErrorMessage",
    "sessionId",
    "cwd",
    "version",
    "gitBranch",
    "summary",
    "customTitle",
    "aiTitle",
    "permissionMode",
    "message",
    "leafUuid",
];

fn skim(text: &str) -> Result<Skim, Unsupported> {
    let mut r = Reader::new(text);
    let mut scratch = Vec::new();
    let mut out = Skim::default();
    if r.peek().map_err(bad)? != Kind::Object {
        return Err(Unsupported("a line that is not a JSON object"));
    }
    r.begin_object().map_err(bad)?;
    // The known keys seen so far, one bit each (a key twice is refused).
    let mut seen = 0u32;
    while let Some(k) = r.next_key(&mut scratch).map_err(bad)? {
        let key: &str = match k {
            JStr::Text(t) => t,
            JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate in a record's field")),
        };
        if let Some(bit) = SKIMMED.iter().position(|known| *known == key) {
            if seen & (1 << bit) != 0 {
                return Err(Unsupported("a key twice in one record"));
            }
            seen |= 1 << bit;
        }
        match key {
            "type" => {
                if r.peek().map_err(bad)? != Kind::String && r.peek().map_err(bad)? != Kind::Null {
                    return Err(Unsupported("a type that is not a string"));
                }
                out.kind = opt_string(&mut r, &mut scratch)?;
            }
            "uuid" => out.uuid = opt_string(&mut r, &mut scratch)?,
            "parentUuid" => out.parent = opt_string(&mut r, &mut scratch)?,
            "logicalParentUuid" => out.logical = opt_string(&mut r, &mut scratch)?,
            "timestamp" => match r.peek().map_err(bad)? {
                Kind::String => {
                    let s = text_of(r.string(&mut scratch).map_err(bad)?)?;
                    out.timestamp = when_of(Some(&Value::string(s.as_str())))?;
                }
                Kind::Number => return Err(Unsupported("a timestamp in epoch seconds")),
                _ => r.skip_value().map_err(bad)?,
            },
            "isSidechain" => out.sidechain = is_true(&mut r)?,
            "subtype" => out.subtype = opt_string(&mut r, &mut scratch)?,
            "isCompactSummary" => out.compact_summary = is_true(&mut r)?,
            "isApiErrorMessage" => out.api_error = is_true(&mut r)?,
            "sessionId" => out.session_id = opt_string(&mut r, &mut scratch)?,
            "cwd" => out.cwd = opt_string(&mut r, &mut scratch)?,
            "version" => out.version = opt_string(&mut r, &mut scratch)?,
            "gitBranch" => out.git_branch = opt_string(&mut r, &mut scratch)?,
            "summary" => out.summary = opt_string(&mut r, &mut scratch)?,
            "customTitle" => out.custom_title = opt_string(&mut r, &mut scratch)?,
            "aiTitle" => out.ai_title = opt_string(&mut r, &mut scratch)?,
            "permissionMode" => out.permission_mode = opt_string(&mut r, &mut scratch)?,
            "leafUuid" => out.leaf_uuid = opt_string(&mut r, &mut scratch)?,
            "message" => skim_message(&mut r, &mut scratch, &mut out)?,
            "compactMetadata" => refuse_preserved_segment(&mut r, &mut scratch)?,
            _ => r.skip_value().map_err(bad)?,
        }
    }
    r.finish().map_err(bad)?;
    Ok(out)
}

/// A compaction that kept some messages (`compactMetadata.preservedSegment`)
/// relinks the tree on resume: the Python importer does that.
fn refuse_preserved_segment(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<(), Unsupported> {
    if r.peek().map_err(bad)? != Kind::Object {
        return r.skip_value().map_err(bad);
    }
    r.begin_object().map_err(bad)?;
    while let Some(k) = r.next_key(scratch).map_err(bad)? {
        if text_of(k)? == "preservedSegment" {
            return Err(Unsupported("a compaction with a preserved segment"));
        }
        r.skip_value().map_err(bad)?;
    }
    Ok(())
}

fn skim_message(
    r: &mut Reader<'_>,
    scratch: &mut Vec<u8>,
    out: &mut Skim,
) -> Result<(), Unsupported> {
    if r.peek().map_err(bad)? != Kind::Object {
        return r.skip_value().map_err(bad);
    }
    r.begin_object().map_err(bad)?;
    let mut seen = (false, false);
    while let Some(k) = r.next_key(scratch).map_err(bad)? {
        let key: &str = match k {
            JStr::Text(t) => t,
            JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate in a record's field")),
        };
        match key {
            "id" => {
                if seen.0 {
                    return Err(Unsupported("a key twice in one record"));
                }
                seen.0 = true;
                out.mid = opt_string(r, scratch)?;
            }
            "content" => {
                if seen.1 {
                    return Err(Unsupported("a key twice in one record"));
                }
                seen.1 = true;
                match r.peek().map_err(bad)? {
                    Kind::Null => {
                        r.null().map_err(bad)?;
                        out.content = Content::Absent;
                    }
                    Kind::String => {
                        r.skip_value().map_err(bad)?;
                        out.content = Content::Str;
                    }
                    Kind::Array => {
                        out.content = Content::List;
                        r.begin_array().map_err(bad)?;
                        while r.next_item().map_err(bad)? {
                            if block_is_result(r, scratch)? {
                                out.results += 1;
                            } else {
                                out.rest = true;
                            }
                        }
                    }
                    _ => {
                        r.skip_value().map_err(bad)?;
                        out.content = Content::Other;
                    }
                }
            }
            _ => r.skip_value().map_err(bad)?,
        }
    }
    Ok(())
}

fn block_is_result(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<bool, Unsupported> {
    if r.peek().map_err(bad)? != Kind::Object {
        r.skip_value().map_err(bad)?;
        return Ok(false);
    }
    r.begin_object().map_err(bad)?;
    let mut result = false;
    let mut typed = false;
    while let Some(k) = r.next_key(scratch).map_err(bad)? {
        let is_type = match k {
            JStr::Text(t) => t == "type",
            JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate in a record's field")),
        };
        if is_type {
            if typed {
                return Err(Unsupported("a key twice in one record"));
            }
            typed = true;
            result = opt_string(r, scratch)?.as_deref() == Some("tool_result");
        } else {
            r.skip_value().map_err(bad)?;
        }
    }
    Ok(result)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupKind {
    User,
    Assistant,
    Tool,
    Summary,
}

#[derive(Debug, Clone)]
struct Group {
    kind: GroupKind,
    recs: Vec<u32>,
    mid: Option<u32>,
    // For a tool group: which tool_result of the record; for a user group from
    // a list: the blocks that are not results.
    result: u32,
}

/// Record indices grouped by an interned id.
type Groups = HashMap<u32, Vec<u32>>;

struct Tree {
    recs: Vec<Rec>,
    by_uid: HashMap<u32, u32>,
    siblings: Option<(Groups, Groups)>,
}

fn sort_key(when: Option<Ts>) -> (bool, Ts) {
    match when {
        Some(t) => (false, t),
        None => (true, [0u8; 27]),
    }
}

impl Tree {
    fn rec(&self, i: u32) -> Option<&Rec> {
        self.recs.get(i as usize)
    }

    fn leaf(&self) -> Option<u32> {
        let all_side = self.recs.iter().all(|r| r.sidechain);
        let mut best: Option<(u32, Ts)> = None;
        for (i, r) in self.recs.iter().enumerate() {
            if r.sidechain && !all_side {
                continue;
            }
            if let Some(when) = r.when {
                if best.is_none_or(|(_, b)| when > b) {
                    best = Some((i as u32, when));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    fn walk(&mut self, leaf: u32) -> Vec<u32> {
        let mut chain = Vec::new();
        let mut seen = vec![false; self.recs.len()];
        let mut at = Some(leaf);
        while let Some(i) = at {
            match seen.get_mut(i as usize) {
                Some(s) if !*s => *s = true,
                _ => break,
            }
            chain.push(i);
            at = self
                .rec(i)
                .and_then(|r| r.parent)
                .and_then(|p| self.by_uid.get(&p).copied());
        }
        chain.reverse();
        self.recover_parallel_results(chain, &mut seen)
    }

    fn recover_parallel_results(&mut self, chain: Vec<u32>, seen: &mut [bool]) -> Vec<u32> {
        let assistants: Vec<u32> = chain
            .iter()
            .copied()
            .filter(|&i| self.rec(i).is_some_and(|r| r.kind == RecKind::Assistant))
            .collect();
        let mut anchor: HashMap<u32, u32> = HashMap::new();
        for &u in &assistants {
            if let Some(mid) = self.rec(u).and_then(|r| r.mid) {
                anchor.insert(mid, u);
            }
        }
        if anchor.is_empty() {
            return chain;
        }
        if self.siblings.is_none() {
            let mut siblings: HashMap<u32, Vec<u32>> = HashMap::new();
            let mut results: HashMap<u32, Vec<u32>> = HashMap::new();
            for (i, r) in self.recs.iter().enumerate() {
                if let (RecKind::Assistant, Some(mid)) = (r.kind, r.mid) {
                    siblings.entry(mid).or_default().push(i as u32);
                } else if r.kind == RecKind::User && r.results > 0 {
                    if let Some(p) = r.parent {
                        results.entry(p).or_default().push(i as u32);
                    }
                }
            }
            self.siblings = Some((siblings, results));
        }
        let Some((siblings, results)) = self.siblings.as_ref() else {
            return chain;
        };
        let mut insert: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut done: Vec<u32> = Vec::new();
        for &u in &assistants {
            let Some(mid) = self.recs.get(u as usize).and_then(|r| r.mid) else {
                continue;
            };
            if done.contains(&mid) {
                continue;
            }
            done.push(mid);
            let empty = Vec::new();
            let group = siblings.get(&mid).unwrap_or(&empty);
            let unseen = |i: &u32| !seen.get(*i as usize).copied().unwrap_or(true);
            let mut sibs: Vec<u32> = group.iter().copied().filter(unseen).collect();
            let mut trs: Vec<u32> = Vec::new();
            for &m in group {
                let uid = self.recs.get(m as usize).map(|r| r.uid);
                if let Some(list) = uid.and_then(|u| results.get(&u)) {
                    trs.extend(list.iter().copied().filter(unseen));
                }
            }
            if sibs.is_empty() && trs.is_empty() {
                continue;
            }
            let recs = &self.recs;
            let key = |i: &u32| sort_key(recs.get(*i as usize).and_then(|r| r.when));
            sibs.sort_by_key(key);
            trs.sort_by_key(key);
            for &i in sibs.iter().chain(trs.iter()) {
                if let Some(s) = seen.get_mut(i as usize) {
                    *s = true;
                }
            }
            if let Some(&a) = anchor.get(&mid) {
                sibs.extend(trs);
                insert.insert(a, sibs);
            }
        }
        if insert.is_empty() {
            return chain;
        }
        let mut out = Vec::with_capacity(chain.len());
        for u in chain {
            out.push(u);
            if let Some(extra) = insert.get(&u) {
                out.extend(extra.iter().copied());
            }
        }
        out
    }
}

/// Imports the Claude Code session `file`: its derived envelopes go to `out`;
/// the rest of what the caller writes is in the answer.
///
/// # Errors
///
/// An I/O error; `Ok(Err(Unsupported))` for a session the Python importer must take.
pub fn import(
    file: &File,
    out: &mut impl Write,
    stop: Stop<'_>,
) -> io::Result<Result<Imported, Unsupported>> {
    let mut uuids = Interner::default();
    let mut strings = Interner::default();
    let mut lines: Vec<SourceLine> = Vec::new();
    let mut recs: Vec<Rec> = Vec::new();
    let mut by_uid: HashMap<u32, u32> = HashMap::new();
    let mut bridge: HashMap<u32, Option<u32>> = HashMap::new();
    let mut titles: (Option<String>, Option<String>, Option<String>) = (None, None, None);
    let mut last_mode: Option<String> = None;
    let mut summaries: Vec<(String, Option<String>)> = Vec::new();
    let scanned = scan(file, stop, |n, offset, raw| {
        let mut line = SourceLine {
            offset,
            len: raw.len() as u32,
            status: Status::Metadata,
            when: None,
        };
        if is_blank(raw) {
            line.status = Status::Blank;
            lines.push(line);
            return Ok(());
        }
        let text =
            simdutf8::basic::from_utf8(raw).map_err(|_| Unsupported("a line that is not UTF-8"))?;
        let s = skim(text)?;
        line.when = s.timestamp;
        lines.push(line);
        let kind = match s.kind.as_deref() {
            Some("user") => Some(RecKind::User),
            Some("assistant") => Some(RecKind::Assistant),
            Some("attachment") => Some(RecKind::Attachment),
            Some("system") => Some(RecKind::System),
            _ => None,
        };
        if kind.is_none() {
            match s.kind.as_deref() {
                Some("summary") if s.summary.is_some() => {
                    titles.2 = s.summary.clone();
                    summaries.push((s.summary.clone().unwrap_or_default(), s.leaf_uuid.clone()));
                }
                Some("custom-title") if s.custom_title.is_some() => {
                    titles.0 = s.custom_title.clone()
                }
                Some("ai-title") if s.ai_title.is_some() => titles.1 = s.ai_title.clone(),
                Some("permission-mode") if s.permission_mode.is_some() => {
                    last_mode = s.permission_mode.clone()
                }
                _ => {}
            }
        }
        let Some(uid) = s.uuid.as_deref() else {
            return Ok(());
        };
        let uid = uuids.id(uid);
        let mut parent = s.parent.as_deref().map(|p| uuids.id(p));
        if let Some(p) = parent {
            if let Some(&bridged) = bridge.get(&p) {
                parent = bridged;
            }
        }
        if s.kind.as_deref() == Some("progress") {
            bridge.insert(uid, parent);
            return Ok(());
        }
        let Some(kind) = kind else {
            return Ok(());
        };
        if by_uid.contains_key(&uid) {
            return Err(Unsupported("a uuid twice"));
        }
        by_uid.insert(uid, recs.len() as u32);
        recs.push(Rec {
            line: n as u32,
            uid,
            parent,
            logical: s.logical.as_deref().map(|p| uuids.id(p)),
            kind,
            sidechain: s.sidechain,
            boundary: kind == RecKind::System && s.subtype.as_deref() == Some("compact_boundary"),
            local_command: kind == RecKind::System && s.subtype.as_deref() == Some("local_command"),
            compact_summary: s.compact_summary,
            api_error: s.api_error,
            mid: if kind == RecKind::Assistant {
                s.mid.as_deref().map(|m| uuids.id(m))
            } else {
                None
            },
            content: s.content,
            results: s.results,
            rest: s.rest,
            when: s.timestamp,
            session_id: s.session_id.as_deref().map(|x| strings.id(x)),
            cwd: s.cwd.as_deref().map(|x| strings.id(x)),
            git_branch: s.git_branch.as_deref().map(|x| strings.id(x)),
            version: s.version.as_deref().map(|x| strings.id(x)),
        });
        Ok(())
    })?;
    let (sha, size, _) = match scanned {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let mut info: Vec<(&'static str, Value<'static>)> = Vec::new();
    if let Some(title) = titles.0.clone().or(titles.1.clone()).or(titles.2.clone()) {
        info.push(("title", Value::Str(title.into())));
    }
    let mut session_id = None;
    let mut cwd = None;
    let mut git_branch = None;
    let mut version = None;
    for r in &recs {
        session_id = session_id.or(r.session_id);
        cwd = cwd.or(r.cwd);
        git_branch = git_branch.or(r.git_branch);
        version = r.version.or(version);
    }
    for (name, v) in [
        ("session-id", session_id),
        ("cwd", cwd),
        ("git-branch", git_branch),
        ("version", version),
    ] {
        if let Some(v) = v {
            info.push((name, Value::Str(strings.name(v).to_owned().into())));
        }
    }
    let tree = Tree {
        recs,
        by_uid,
        siblings: None,
    };
    let mut emit = Emitter::new(Ids::new(&sha), out);
    let warnings = Vec::new();
    if let Some(leaf) = tree.leaf() {
        if let Some(r) = tree.rec(leaf) {
            info.push(("leaf", Value::Str(uuids.name(r.uid).to_owned().into())));
        }
        let mut conv = Convert {
            file,
            stop: EveryFewRecords::new(stop),
            tree,
            lines,
            emit,
            info,
            uuids: &uuids,
            active: Vec::new(),
        };
        if let Err(e) = conv.run(leaf, last_mode)? {
            return Ok(Err(e));
        }
        // The last summary whose leaf is on the active branch names the session.
        if titles.0.is_none() && titles.1.is_none() {
            let on_branch = |leaf: &Option<String>| {
                leaf.as_deref()
                    .and_then(|l| uuids.index.get(l))
                    .and_then(|u| conv.tree.by_uid.get(u))
                    .is_some_and(|&i| conv.active.get(i as usize).copied().unwrap_or(false))
            };
            if let Some((text, _)) = summaries.iter().rev().find(|(_, leaf)| on_branch(leaf)) {
                conv.info.retain(|(k, _)| *k != "title");
                conv.info.push(("title", Value::Str(text.clone().into())));
            }
        }
        (lines, emit, info) = (conv.lines, conv.emit, conv.info);
    }
    let message_count = emit.message_count;
    let pending = emit.pending_calls();
    let first_ts = emit.first_ts;
    let last_ts = emit.ts;
    let (ids, _) = emit.finish()?;
    Ok(Ok(Imported {
        info: canonical_bytes(&Value::obj(info)),
        warnings,
        message_count,
        pending,
        first_ts,
        last_ts,
        ids_used: ids.n,
        sha,
        size,
        lines,
    }))
}

fn grants_snapshot(mode: &str) -> Vec<u8> {
    let mut g = Vec::new();
    g.extend_from_slice(b"{\"claude-code\":{\"permission-mode\":");
    canonical::write_str(&mut g, mode.as_bytes());
    g.extend_from_slice(b"}}");
    g
}

struct Convert<'f, 'i, 'w, 's, W: Write> {
    file: &'f File,
    stop: EveryFewRecords<'s>,
    tree: Tree,
    lines: Vec<SourceLine>,
    emit: Emitter<&'w mut W>,
    info: Vec<(&'static str, Value<'static>)>,
    uuids: &'i Interner,
    active: Vec<bool>,
}

type Step = io::Result<Result<(), Unsupported>>;

macro_rules! need {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(u) => return Ok(Err(u)),
        }
    };
}

/// A record read again and parsed.
struct Full {
    text: String,
}

impl Full {
    fn value(&self) -> Result<Value<'_>, Unsupported> {
        match parse(&self.text)? {
            Some(v) => Ok(v),
            None => Err(Unsupported("a damaged line")),
        }
    }
}

impl<W: Write> Convert<'_, '_, '_, '_, W> {
    fn full(&self, rec: u32) -> io::Result<Full> {
        let line = self
            .tree
            .rec(rec)
            .and_then(|r| self.lines.get(r.line as usize));
        let Some(line) = line else {
            return Ok(Full {
                text: String::new(),
            });
        };
        self.stop.record()?;
        let mut buf = Vec::new();
        read_line(self.file, line, &mut buf)?;
        as_text(&buf)?;
        // SAFETY: `as_text` just checked that `buf` is UTF-8.
        Ok(Full {
            text: unsafe { String::from_utf8_unchecked(buf) },
        })
    }

    fn segments(&mut self, leaf: u32) -> Vec<Vec<u32>> {
        let mut segments = vec![self.tree.walk(leaf)];
        let mut followed: Vec<u32> = Vec::new();
        while let Some(&first) = segments.first().and_then(|s| s.first()) {
            let Some(r) = self.tree.rec(first) else { break };
            let logical = r
                .logical
                .and_then(|l| self.tree.by_uid.get(&l).copied().map(|i| (l, i)));
            let Some((luid, li)) = logical.filter(|_| r.boundary) else {
                break;
            };
            if followed.contains(&luid) {
                break;
            }
            followed.push(luid);
            let earlier = self.tree.walk(li);
            segments.insert(0, earlier);
        }
        segments
    }

    fn groups(&self, segment: &[u32]) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for (i, &u) in segment.iter().enumerate() {
            let Some(r) = self.tree.rec(u) else { continue };
            match r.kind {
                RecKind::Attachment => {}
                RecKind::System => {
                    if r.local_command {
                        groups.push(Group {
                            kind: GroupKind::User,
                            recs: vec![u],
                            mid: None,
                            result: 0,
                        });
                    }
                }
                RecKind::Assistant => {
                    if r.api_error {
                        continue;
                    }
                    let mut target = None;
                    if let Some(mid) = r.mid {
                        for (gi, g) in groups.iter().enumerate().rev() {
                            if g.kind == GroupKind::Assistant && g.mid == Some(mid) {
                                target = Some(gi);
                                break;
                            }
                            if g.kind != GroupKind::Assistant && g.kind != GroupKind::Tool {
                                break;
                            }
                        }
                    }
                    match target.and_then(|t| groups.get_mut(t)) {
                        Some(g) => g.recs.push(u),
                        None => groups.push(Group {
                            kind: GroupKind::Assistant,
                            recs: vec![u],
                            mid: r.mid,
                            result: 0,
                        }),
                    }
                }
                RecKind::User => {
                    let after_boundary = i > 0
                        && segment
                            .get(i - 1)
                            .and_then(|&p| self.tree.rec(p))
                            .is_some_and(|p| p.boundary);
                    if r.compact_summary && after_boundary {
                        groups.push(Group {
                            kind: GroupKind::Summary,
                            recs: vec![u],
                            mid: None,
                            result: 0,
                        });
                        continue;
                    }
                    match r.content {
                        Content::List => {
                            for k in 0..r.results {
                                groups.push(Group {
                                    kind: GroupKind::Tool,
                                    recs: vec![u],
                                    mid: None,
                                    result: k,
                                });
                            }
                            if r.rest {
                                groups.push(Group {
                                    kind: GroupKind::User,
                                    recs: vec![u],
                                    mid: None,
                                    result: 1,
                                });
                            }
                        }
                        Content::Str | Content::Other => {
                            groups.push(Group {
                                kind: GroupKind::User,
                                recs: vec![u],
                                mid: None,
                                result: 0,
                            });
                        }
                        Content::Absent => {}
                    }
                }
            }
        }
        groups
    }

    fn provenance(&self, g: &Group) -> Value<'static> {
        let uuids = g
            .recs
            .iter()
            .filter_map(|&u| self.tree.rec(u))
            .map(|r| Value::Str(self.uuids.name(r.uid).to_owned().into()))
            .collect();
        let lines = g
            .recs
            .iter()
            .filter_map(|&u| self.tree.rec(u))
            .map(|r| Value::Int((r.line + 1).to_string().into()))
            .collect();
        Value::Obj(vec![
            ("lines".into(), Value::Arr(lines)),
            ("uuids".into(), Value::Arr(uuids)),
        ])
    }

    fn run(&mut self, leaf: u32, last_mode: Option<String>) -> Step {
        let segments = self.segments(leaf);
        let mut active = vec![false; self.tree.recs.len()];
        for &u in segments.iter().flatten() {
            if let Some(a) = active.get_mut(u as usize) {
                *a = true;
            }
            if let Some(line) = self
                .tree
                .rec(u)
                .and_then(|r| self.lines.get_mut(r.line as usize))
            {
                line.status = Status::Used;
            }
        }
        for (i, r) in self.tree.recs.iter().enumerate() {
            if active.get(i).copied().unwrap_or(false) {
                continue;
            }
            if !r.sidechain {
                // A branch not taken: the Python importer writes it, then a rewind.
                let parent_active = r
                    .parent
                    .and_then(|p| self.tree.by_uid.get(&p))
                    .is_some_and(|&p| active.get(p as usize).copied().unwrap_or(false));
                if parent_active {
                    return Ok(Err(Unsupported("a branch not taken")));
                }
            }
            if let Some(line) = self.lines.get_mut(r.line as usize) {
                line.status = if r.sidechain {
                    Status::Sidechain
                } else {
                    Status::OffBranch
                };
            }
        }
        self.active = active;
        let mut st = State {
            round: -1,
            ..State::default()
        };
        for (index, segment) in segments.iter().enumerate() {
            let groups = self.groups(segment);
            if index > 0 && groups.first().is_none_or(|g| g.kind != GroupKind::Summary) {
                let ts = segment
                    .first()
                    .and_then(|&u| self.tree.rec(u))
                    .and_then(|r| r.when);
                self.emit.rewind(0, ts)?;
                st.answered.clear();
            }
            for g in &groups {
                need!(self.group(g, segment, &mut st)?);
            }
        }
        if let Some(mode) = last_mode {
            if st.mode.as_deref() != Some(mode.as_str()) {
                self.emit.grants(grants_snapshot(&mode), None)?;
            }
        }
        Ok(Ok(()))
    }

    fn emit_facts(&mut self, st: &State, ts: Option<Ts>) -> io::Result<()> {
        let mut facts = Vec::new();
        facts.push(b'[');
        let mut first = true;
        for (name, v) in [
            ("cwd", &st.cwd),
            ("version", &st.version),
            ("git-branch", &st.git_branch),
            ("model", &st.model),
        ] {
            if let Some(v) = v {
                if !first {
                    facts.push(b',');
                }
                first = false;
                facts.push(b'[');
                canonical::write_str(&mut facts, name.as_bytes());
                facts.push(b',');
                canonical::write_str(&mut facts, v.as_bytes());
                facts.push(b']');
            }
        }
        facts.push(b']');
        self.emit.facts(facts, ts)
    }

    fn group(&mut self, g: &Group, segment: &[u32], st: &mut State) -> Step {
        let Some(&first) = g.recs.first() else {
            return Ok(Ok(()));
        };
        let fulls: Vec<Full> = g
            .recs
            .iter()
            .map(|&u| self.full(u))
            .collect::<io::Result<_>>()?;
        let values: Vec<Value<'_>> = need!(fulls.iter().map(Full::value).collect::<Result<_, _>>());
        let Some(r) = values.first() else {
            return Ok(Ok(()));
        };
        let ts = self
            .tree
            .rec(first)
            .and_then(|x| x.when)
            .or(Some(self.emit.ts));
        if let Some(v) = r.str_of("cwd") {
            st.cwd = Some(v.to_owned());
        }
        if let Some(v) = r.str_of("version") {
            st.version = Some(v.to_owned());
        }
        if let Some(v) = r.str_of("gitBranch") {
            st.git_branch = Some(v.to_owned());
        }
        let message = r.get("message").filter(|m| m.is_obj());
        let content = message.and_then(|m| m.get("content"));
        match g.kind {
            GroupKind::Summary => {
                let boundary = match segment.first() {
                    Some(&b) => self.full(b)?,
                    None => return Ok(Err(Unsupported("a summary without its boundary"))),
                };
                let b = need!(boundary.value());
                let cm = b.get("compactMetadata").filter(|c| c.is_obj());
                let tokens = |key: &str| -> Result<Vec<u8>, Unsupported> {
                    match cm.and_then(|c| c.get(key)) {
                        Some(Value::Int(t)) => Ok(canonical_bytes(&Value::Int(t.clone()))),
                        Some(Value::Bool(_)) => Err(Unsupported("a token count that is a bool")),
                        _ => Ok(b"0".to_vec()),
                    }
                };
                let before = need!(tokens("preTokens"));
                let after = need!(tokens("postTokens"));
                match content {
                    Some(Value::Str(s)) => {
                        self.emit.compaction(s, &before, &after, false, None, ts)?;
                    }
                    _ => {
                        let (parts, _) = need!(user_content(content));
                        let mut cc = self.provenance(g);
                        cc.set("isCompactSummary", Value::Bool(true));
                        let payload = Value::obj(vec![
                            ("claude-code", cc),
                            ("role", Value::string("user")),
                            ("content", parts),
                        ]);
                        let summary = need!(text_of_content(content));
                        self.emit.compaction(
                            &summary,
                            &before,
                            &after,
                            false,
                            Some(&[canonical_bytes(&payload)]),
                            ts,
                        )?;
                    }
                }
                st.answered.clear();
            }
            GroupKind::User => {
                if let Some(mode) = r.str_of("permissionMode") {
                    if st.mode.as_deref() != Some(mode) {
                        st.mode = Some(mode.to_owned());
                        self.emit.grants(grants_snapshot(mode), ts)?;
                    }
                }
                let local = self.tree.rec(first).is_some_and(|x| x.local_command);
                let said_from: Option<Value<'_>> = if local {
                    Some(r.get("content").cloned().unwrap_or(Value::string("")))
                } else if g.result == 1 {
                    // the blocks of a list that are not tool results
                    let rest: Vec<Value<'_>> = content
                        .and_then(Value::as_arr)
                        .unwrap_or_default()
                        .iter()
                        .filter(|b| b.str_of("type") != Some("tool_result") || !b.is_obj())
                        .cloned()
                        .collect();
                    Some(Value::Arr(rest))
                } else {
                    content.cloned()
                };
                let (said, dropped) = need!(user_content(said_from.as_ref()));
                let mut cc = self.provenance(g);
                for key in ["isMeta", "promptId", "isCompactSummary"] {
                    if let Some(v) = r.get(key) {
                        cc_set(&mut cc, key, v.clone());
                    }
                }
                if !dropped.is_empty() {
                    cc.set("blocks-dropped", Value::Arr(dropped));
                }
                self.emit_facts(st, ts)?;
                let payload = Value::obj(vec![
                    ("claude-code", cc),
                    ("role", Value::string("user")),
                    ("content", said),
                ]);
                self.emit.message(&payload, ts)?;
                if !r.get("isMeta").is_some_and(Value::truthy) {
                    st.run_id = Some(match r.str_of("promptId") {
                        Some(p) => p.to_owned(),
                        None => self
                            .tree
                            .rec(first)
                            .map(|x| self.uuids.name(x.uid).to_owned())
                            .unwrap_or_default(),
                    });
                    st.round = -1;
                    st.seen_mids.clear();
                }
            }
            GroupKind::Assistant => {
                let mut blocks: Vec<&Value<'_>> = Vec::new();
                let mut wrapped: Vec<Value<'_>> = Vec::new();
                for v in &values {
                    let m = v.get("message").filter(|m| m.is_obj());
                    match m.and_then(|m| m.get("content")) {
                        Some(Value::Arr(items)) => blocks.extend(items.iter()),
                        Some(Value::Str(s)) => wrapped.push(Value::obj(vec![
                            ("type", Value::string("text")),
                            ("text", Value::Str(s.clone())),
                        ])),
                        _ => {}
                    }
                    if !wrapped.is_empty() {
                        return Ok(Err(Unsupported("an assistant message with string content")));
                    }
                }
                let mut texts: Vec<&Value<'_>> = Vec::new();
                let mut calls: Vec<&Value<'_>> = Vec::new();
                let mut thinking: Vec<Value<'_>> = Vec::new();
                let mut dropped: Vec<Value<'_>> = Vec::new();
                for &b in &blocks {
                    let kind = if b.is_obj() { b.str_of("type") } else { None };
                    match kind {
                        Some("text") => texts.push(b.get("text").unwrap_or(&EMPTY)),
                        Some("tool_use") if b.str_of("id").is_some() => calls.push(b),
                        Some("thinking" | "redacted_thinking") => thinking.push(b.clone()),
                        _ => dropped.push(b.clone()),
                    }
                }
                let mut joined = String::new();
                for t in &texts {
                    match t.as_str() {
                        Some(s) => joined.push_str(s),
                        None => {
                            return Ok(Err(Unsupported("a text block whose text is not a string")))
                        }
                    }
                }
                if calls.is_empty() && joined.trim_matches(py_space).is_empty() {
                    return Ok(Ok(()));
                }
                let content = match texts.len() {
                    0 => Value::Null,
                    1 => texts.first().map(|t| (*t).clone()).unwrap_or(Value::Null),
                    _ => Value::Arr(
                        texts
                            .iter()
                            .map(|t| {
                                Value::obj(vec![
                                    ("type", Value::string("text")),
                                    ("text", (*t).clone()),
                                ])
                            })
                            .collect(),
                    ),
                };
                let mut cc = self.provenance(g);
                for (key, name) in [
                    ("id", "message-id"),
                    ("model", "model"),
                    ("stop_reason", "stop-reason"),
                ] {
                    match message.and_then(|m| m.get(key)) {
                        None | Some(Value::Null) => {}
                        Some(v) => cc_set(&mut cc, name, v.clone()),
                    }
                }
                if !thinking.is_empty() {
                    cc.set("thinking", Value::Arr(thinking));
                }
                if !dropped.is_empty() {
                    cc.set("blocks-dropped", Value::Arr(dropped));
                }
                let model = cc.str_of("model").map(str::to_owned);
                let mut payload = Value::obj(vec![
                    ("claude-code", cc),
                    ("role", Value::string("assistant")),
                    ("content", content),
                ]);
                let mut tool_calls = Vec::new();
                let mut names = Vec::new();
                for b in &calls {
                    let name = match b.get("name") {
                        None => String::new(),
                        Some(Value::Str(s)) => s.to_string(),
                        Some(_) => return Ok(Err(Unsupported("a tool name that is not a string"))),
                    };
                    let empty = Value::Obj(Vec::new());
                    let input = b.get("input").unwrap_or(&empty);
                    let mut arguments = Vec::new();
                    write_dumps(&mut arguments, input);
                    // Written from text and ASCII: UTF-8 (checked all the same).
                    let arguments = match simdutf8::basic::from_utf8(&arguments) {
                        // SAFETY: `from_utf8` just checked that the bytes are UTF-8.
                        Ok(_) => unsafe { String::from_utf8_unchecked(arguments) },
                        Err(_) => String::from_utf8_lossy(&arguments).into_owned(),
                    };
                    tool_calls.push(Value::obj(vec![
                        ("id", b.get("id").cloned().unwrap_or(Value::Null)),
                        ("type", Value::string("function")),
                        (
                            "function",
                            Value::obj(vec![
                                ("name", Value::Str(name.clone().into())),
                                ("arguments", Value::Str(arguments.into())),
                            ]),
                        ),
                    ]));
                    names.push(name);
                }
                if !tool_calls.is_empty() {
                    payload.set("tool_calls", Value::Arr(tool_calls));
                }
                if let Some(model) = model.filter(|m| m != "<synthetic>") {
                    st.model = Some(model.clone());
                    self.info.retain(|(k, _)| *k != "model");
                    self.info.push(("model", Value::Str(model.into())));
                }
                self.emit_facts(st, ts)?;
                self.emit.message(&payload, ts)?;
                let mid = g.mid;
                if mid.is_none_or(|m| !st.seen_mids.contains(&m)) {
                    st.round += 1;
                    if let Some(m) = mid {
                        st.seen_mids.push(m);
                    }
                }
                for (b, name) in calls.iter().zip(names) {
                    let empty = Value::Obj(Vec::new());
                    let input = b.get("input").unwrap_or(&empty);
                    let id = b.str_of("id").unwrap_or_default();
                    self.emit.dispatch(
                        id,
                        &name,
                        input,
                        st.run_id.as_deref(),
                        st.round.max(0),
                        ts,
                    )?;
                }
            }
            GroupKind::Tool => {
                let block = content
                    .and_then(Value::as_arr)
                    .unwrap_or_default()
                    .iter()
                    .filter(|b| b.is_obj() && b.str_of("type") == Some("tool_result"))
                    .nth(g.result as usize);
                let Some(b) = block else {
                    return Ok(Err(Unsupported("a tool result that moved")));
                };
                let Some(call) = b.str_of("tool_use_id") else {
                    return Ok(Err(Unsupported("an orphan tool result")));
                };
                if !self.emit.is_call(call) || st.answered.iter().any(|a| a == call) {
                    return Ok(Err(Unsupported("an orphan or duplicate tool result")));
                }
                let result = need!(result_content(b));
                let mut cc = self.provenance(g);
                if let Some(e) = b.get("is_error") {
                    cc_set(&mut cc, "is_error", e.clone());
                }
                st.answered.push(call.to_owned());
                // The text is needed only to tell why a call failed.
                let failed = b.get("is_error") == Some(&Value::Bool(true));
                let text = if failed {
                    need!(text_of_content(Some(&result)))
                } else {
                    need!(check_text_blocks(&result));
                    String::new()
                };
                let payload = Value::obj(vec![
                    ("claude-code", cc),
                    ("role", Value::string("tool")),
                    ("tool_call_id", Value::string(call)),
                    ("content", result),
                ]);
                self.emit.message(&payload, ts)?;
                let mut outcome = "completed";
                let mut fields: Vec<(&str, Vec<u8>)> = Vec::new();
                if failed {
                    outcome = "failed";
                    let tur = r.get("toolUseResult");
                    if REJECTED.iter().any(|s| text.contains(s)) {
                        fields.push((
                            "reason",
                            canonical_bytes(&Value::string("rejected-by-user")),
                        ));
                    } else if text.contains(INTERRUPTED)
                        || tur.and_then(|t| t.get("interrupted")) == Some(&Value::Bool(true))
                    {
                        fields.push(("reason", canonical_bytes(&Value::string("interrupted"))));
                    } else if !text.is_empty() {
                        fields.push(("error", canonical_bytes(&Value::string(text.as_str()))));
                    }
                }
                if let Some(d) = need!(duration(r.get("toolUseResult"))) {
                    let mut out = Vec::new();
                    if canonical::write_f64(&mut out, d).is_ok() {
                        fields.push(("duration", out));
                    }
                }
                fields.sort_by(|a, b| a.0.cmp(b.0));
                self.emit.settle(call, outcome, ts, &fields)?;
            }
        }
        Ok(Ok(()))
    }
}

static EMPTY: Value<'static> = Value::Str(crate::import_value::JText::Borrowed(""));

fn cc_set<'a>(cc: &mut Value<'a>, key: &str, v: Value<'a>) {
    if let Value::Obj(members) = cc {
        if let Some(slot) = members.iter_mut().find(|(k, _)| k == key) {
            slot.1 = v;
        } else {
            members.push((key.to_owned().into(), v));
        }
    }
}

#[derive(Default)]
struct State {
    cwd: Option<String>,
    version: Option<String>,
    git_branch: Option<String>,
    model: Option<String>,
    mode: Option<String>,
    run_id: Option<String>,
    round: i64,
    seen_mids: Vec<u32>,
    answered: Vec<String>,
}

/// `_part`: a text or image block in OpenAI chat shape, None for any other.
fn part<'a>(b: &Value<'a>) -> Result<Option<Value<'a>>, Unsupported> {
    if !b.is_obj() {
        return Ok(None);
    }
    match b.str_of("type") {
        Some("text") => Ok(Some(Value::obj(vec![
            ("type", Value::string("text")),
            ("text", b.get("text").cloned().unwrap_or(Value::string(""))),
        ]))),
        Some("image") => {
            let src = b.get("source").filter(|s| s.is_obj());
            match src.and_then(|s| s.str_of("type")) {
                Some("base64") => {
                    let field = |k: &str| -> Result<String, Unsupported> {
                        match src.and_then(|s| s.get(k)) {
                            None | Some(Value::Null) => Ok("None".to_owned()),
                            Some(Value::Str(s)) => Ok(s.to_string()),
                            Some(_) => {
                                Err(Unsupported("an image source field that is not a string"))
                            }
                        }
                    };
                    let url = format!("data:{};base64,{}", field("media_type")?, field("data")?);
                    Ok(Some(image_url(Value::Str(url.into()))))
                }
                Some("url") => Ok(Some(image_url(
                    src.and_then(|s| s.get("url"))
                        .cloned()
                        .unwrap_or(Value::Null),
                ))),
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

fn image_url(url: Value<'_>) -> Value<'_> {
    Value::obj(vec![
        ("type", Value::string("image_url")),
        ("image_url", Value::obj(vec![("url", url)])),
    ])
}

/// `_user_content`: a list's blocks split into parts and the ones dropped.
fn user_content<'a>(
    content: Option<&Value<'a>>,
) -> Result<(Value<'a>, Vec<Value<'a>>), Unsupported> {
    let Some(Value::Arr(items)) = content else {
        return Ok((content.cloned().unwrap_or(Value::Null), Vec::new()));
    };
    let mut parts = Vec::new();
    let mut dropped = Vec::new();
    for b in items {
        match part(b)? {
            Some(p) => parts.push(p),
            None => dropped.push(b.clone()),
        }
    }
    Ok((Value::Arr(parts), dropped))
}

/// `_result_content`: a tool_result block's content as the tool message's.
fn result_content<'a>(block: &Value<'a>) -> Result<Value<'a>, Unsupported> {
    match block.get("content") {
        None | Some(Value::Null) => Ok(Value::string("")),
        Some(Value::Arr(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for b in items {
                out.push(part(b)?.unwrap_or_else(|| b.clone()));
            }
            Ok(Value::Arr(out))
        }
        Some(other) => Ok(other.clone()),
    }
}

/// What [`text_of_content`] refuses, without building the text.
fn check_text_blocks(content: &Value<'_>) -> Result<(), Unsupported> {
    if let Value::Arr(items) = content {
        for b in items
            .iter()
            .filter(|b| b.is_obj() && b.str_of("type") == Some("text"))
        {
            if !matches!(b.get("text"), None | Some(Value::Str(_))) {
                return Err(Unsupported("a text block whose text is not a string"));
            }
        }
    }
    Ok(())
}

/// `_text_of`: the text of a content value.
fn text_of_content(content: Option<&Value<'_>>) -> Result<String, Unsupported> {
    match content {
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(Value::Arr(items)) => {
            let mut out = String::new();
            let mut first = true;
            for b in items
                .iter()
                .filter(|b| b.is_obj() && b.str_of("type") == Some("text"))
            {
                if !first {
                    out.push('\n');
                }
                first = false;
                match b.get("text") {
                    None => {}
                    Some(Value::Str(s)) => out.push_str(s),
                    Some(_) => return Err(Unsupported("a text block whose text is not a string")),
                }
            }
            Ok(out)
        }
        _ => Ok(String::new()),
    }
}

/// `_duration`: seconds from a toolUseResult's own duration fields.
fn duration(result: Option<&Value<'_>>) -> Result<Option<f64>, Unsupported> {
    let Some(r) = result.filter(|r| r.is_obj()) else {
        return Ok(None);
    };
    for (key, scale) in [
        ("durationMs", 1000.0),
        ("totalDurationMs", 1000.0),
        ("durationSeconds", 1.0),
    ] {
        match r.get(key) {
            Some(Value::Int(t)) => match t.parse::<i64>() {
                Ok(v) if v.unsigned_abs() < (1u64 << 53) => return Ok(Some(v as f64 / scale)),
                _ => return Err(Unsupported("a duration too large")),
            },
            Some(Value::Float(f)) => return Ok(Some(f / scale)),
            _ => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skim_reads_the_chain_fields() {
        let line = r#"{"parentUuid":"a","type":"user","uuid":"b","timestamp":"2026-03-01T10:00:00.000Z","message":{"content":[{"type":"tool_result"},{"type":"text"}]}}"#;
        let s = skim(line).unwrap_or_default();
        assert_eq!(s.uuid.as_deref(), Some("b"));
        assert_eq!((s.results, s.rest, s.content), (1, true, Content::List));
        assert!(skim("[1]").is_err());
    }
}
