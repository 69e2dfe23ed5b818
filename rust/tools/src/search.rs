//! Search: where a pattern matches the text of transcripts.
//!
//! The pattern matches the *decoded* text (a user searches for `"quoted"`,
//! not `\"quoted\"`) of the strings a person reads: message content, tool
//! calls and their arguments, tool results (tool messages), compaction
//! summaries and replacements, a dispatch's tool and arguments, a settle's
//! error and reason, an elision's stubs. Ids, part types, signatures and
//! base64 data are not searched ([`SKIPPED_KEYS`]).
//!
//! Lines that cannot match are never decoded: a prefilter runs over the raw
//! bytes, many lines at a time. Any match in decoded text starts with one of
//! the pattern's prefix literals (`regex_syntax`'s extractor), and a literal
//! in decoded text appears in the line as its canonical JSON encoding, unless
//! the writer escaped what canonical JSON writes plainly: `\uXXXX` for a
//! printable character, or `\/`. A line holding either of those is decoded
//! too. Only a pattern without prefix literals (`.*x`) decodes every line.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use regex::bytes::Regex as BytesRegex;
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::literal::Extractor;

use transcript_core::envelope::EnvelopeType;
use transcript_core::json::{JStr, JsonError, Kind, Reader};
use transcript_core::scan::{tail_scan, ReadAt, Tail};
use transcript_core::threads::spawn_or_run;
use transcript_core::transcript::{load, LoadError, Transcript, WHOLE};

/// Keys whose string values are never searched: ids, part types, signatures
/// and base64 data, which nobody searches for and which would match hex or
/// type names everywhere.
pub const SKIPPED_KEYS: &[&str] =
    &["type", "id", "tool_use_id", "tool_call_id", "call_id", "signature", "data"];

/// What to search for, and where.
#[derive(Debug)]
pub struct Query {
    text: Regex,
    prefilter: Option<Prefilter>,
    all_lines: bool,
    role: Option<String>,
    kind: Option<String>,
}

impl Query {
    /// A query for `pattern` (a regular expression, or with `literal` a fixed
    /// string), matched case-insensitively with `ignore_case`; `^` and `$`
    /// match at each line of a text. With `all_lines` every line of a file is
    /// searched, otherwise only the live messages replay gives. `role` and
    /// `kind` keep only the hits in a message of that role, in an envelope of
    /// that type. `Err` says why the pattern is refused.
    pub fn new(
        pattern: &str,
        literal: bool,
        ignore_case: bool,
        all_lines: bool,
        role: Option<String>,
        kind: Option<String>,
    ) -> Result<Query, String> {
        let source = if literal { regex::escape(pattern) } else { pattern.to_owned() };
        let text = RegexBuilder::new(&source)
            .case_insensitive(ignore_case)
            .multi_line(true)
            .build()
            .map_err(|e| one_line(&e.to_string()))?;
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(ignore_case)
            .multi_line(true)
            .build()
            .parse(&source)
            .map_err(|e| one_line(&e.to_string()))?;
        Ok(Query { text, prefilter: prefilter(&hir), all_lines, role, kind })
    }
}

// The last line of an error (the regex crate draws the pattern and a caret above it).
fn one_line(error: &str) -> String {
    let last = error.lines().rev().find(|l| !l.trim().is_empty());
    last.unwrap_or(error).trim().trim_start_matches("error: ").to_owned()
}

/// The raw-byte prefilter: the prefix literals as canonical JSON writes them,
/// or a non-canonical escape that could hide one: `\u`, and `\/` when a
/// literal holds a `/`.
#[derive(Debug)]
enum Prefilter {
    /// One literal: each needle by memmem, a pass each, which costs less than
    /// one pass of the regex's multi-literal search.
    Needles(Vec<memchr::memmem::Finder<'static>>),
    /// Several literals (an ignored case gives one per case).
    Regex(BytesRegex),
}

// None when the pattern has no prefix literals.
fn prefilter(hir: &regex_syntax::hir::Hir) -> Option<Prefilter> {
    let seq = Extractor::new().extract(hir);
    let literals = seq.literals()?;
    let mut needles = Vec::with_capacity(literals.len() + 2);
    for literal in literals {
        let text = std::str::from_utf8(literal.as_bytes()).ok()?;
        if text.is_empty() {
            return None;
        }
        needles.push(json_text(text));
    }
    if needles.iter().any(|n| n.contains('/')) {
        needles.push(r"\/".to_owned());
    }
    needles.push(r"\u".to_owned());
    if literals.len() == 1 {
        let finders = needles.iter().map(|n| memchr::memmem::Finder::new(n).into_owned());
        return Some(Prefilter::Needles(finders.collect()));
    }
    let alternatives: Vec<String> = needles.iter().map(|n| regex::escape(n)).collect();
    regex::bytes::RegexBuilder::new(&alternatives.join("|"))
        .unicode(false)
        .build()
        .ok()
        .map(Prefilter::Regex)
}

impl Prefilter {
    // Where the first candidate at or after `from` starts. `next` holds each
    // needle's next hit in `block` (None: no more), empty before the first
    // call on a block, so that no needle searches a byte of it twice.
    fn find(&self, block: &[u8], from: usize, next: &mut Vec<Option<usize>>) -> Option<usize> {
        let needles = match self {
            Prefilter::Regex(r) => return r.find_at(block, from).map(|m| m.start()),
            Prefilter::Needles(needles) => needles,
        };
        let search = |f: &memchr::memmem::Finder<'_>| f.find(&block[from..]).map(|i| from + i);
        if next.is_empty() {
            next.extend(needles.iter().map(search));
        }
        for (f, at) in needles.iter().zip(next.iter_mut()) {
            if at.is_some_and(|a| a < from) {
                *at = search(f);
            }
        }
        next.iter().flatten().min().copied()
    }
}

/// `text` as canonical JSON writes it inside a string (what
/// `json.dumps(text, ensure_ascii=False)` writes between its quotes).
fn json_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// One string the pattern matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The 1-based line of the envelope it is in (for a stubbed message's
    /// stub, in live mode: the message's line).
    pub line: u64,
    /// The envelope's id; `"<compaction id>:<k>"` for a replacement message.
    pub id: String,
    /// The envelope type.
    pub kind: String,
    /// The message's role; a summary is a user message; None outside messages.
    pub role: Option<String>,
    /// The payload key the string is under (`content`, `tool_calls`,
    /// `summary`, `replacement`, `arguments`, `stub`, ...).
    pub field: &'static str,
    /// The decoded string (a lone surrogate as U+FFFD).
    pub text: String,
    /// Byte ranges of the matches in `text`.
    pub spans: Vec<(usize, usize)>,
}

/// Why a file could not be searched.
#[derive(Debug)]
pub enum SearchError {
    /// Opening or reading it failed.
    Io(io::Error),
    /// Replay refuses it (live mode): what is wrong, for a person.
    Unreplayable(String),
}

/// What searching one file gives.
pub type FileResult = Result<Vec<Hit>, SearchError>;

/// Searches each of `paths` (a `.zst` name is read as a zstd archive) on up
/// to `threads` threads; one result per path, in order.
pub fn search_files(paths: &[PathBuf], query: &Query, threads: usize) -> Vec<FileResult> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<FileResult>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let (next_ref, slots_ref) = (&next, &slots);
    let work = move || loop {
        let i = next_ref.fetch_add(1, Ordering::Relaxed);
        let (Some(path), Some(slot)) = (paths.get(i), slots_ref.get(i)) else {
            break;
        };
        let found = search_file(path, query);
        if let Ok(mut slot) = slot.lock() {
            *slot = Some(found);
        }
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> =
            (0..threads.clamp(1, paths.len().max(1))).map(|_| spawn_or_run(scope, work)).collect();
        for w in workers {
            let _ = w.join();
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner().ok().flatten().unwrap_or_else(|| {
                Err(SearchError::Io(io::Error::other("the search of this file failed")))
            })
        })
        .collect()
}

/// Searches one file (a `.zst` name is read as a zstd archive).
pub fn search_file(path: &Path, query: &Query) -> Result<Vec<Hit>, SearchError> {
    let file = open_regular(path).map_err(SearchError::Io)?;
    if path.extension().is_some_and(|e| e == "zst") {
        let mut data = Vec::new();
        transcript_core::archive::decompress(&file, &mut data, &transcript_core::stop::go_on)
            .map_err(SearchError::Io)?;
        search_source(data.as_slice(), data.len() as u64, query)
    } else {
        let size = file.metadata().map_err(SearchError::Io)?.len();
        search_source(&file, size, query)
    }
}

// `path` opened for reading if it is a regular file; never waiting on a FIFO.
fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !kind.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Searches the first `size` bytes of `src`.
pub fn search_source<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    query: &Query,
) -> Result<Vec<Hit>, SearchError> {
    let mut hits = Vec::new();
    if query.all_lines {
        candidates(src, size, query.prefilter.as_ref(), |number, line| {
            every_line_hits(number, line, query, &mut hits);
        })
        .map_err(SearchError::Io)?;
        return Ok(hits);
    }
    // What load would replay: a torn last line is left out, as load's repair
    // would remove it; a damaged end is refused, as load refuses it.
    let (tail, _) = tail_scan(src, size).map_err(SearchError::Io)?;
    let size = match tail {
        Tail::Empty => return Err(SearchError::Unreplayable("empty".to_owned())),
        Tail::Whole { .. } => size,
        Tail::Torn { keep, .. } => keep,
        Tail::Corrupt { line } | Tail::Damaged { line } => {
            return Err(SearchError::Unreplayable(format!(
                "corrupt at line {line}: load would refuse it"
            )))
        }
    };
    let mut found: Vec<(u64, Vec<u8>)> = Vec::new();
    candidates(src, size, query.prefilter.as_ref(), |number, line| {
        found.push((number, line.to_vec()));
    })
    .map_err(SearchError::Io)?;
    if found.is_empty() {
        return Ok(hits);
    }
    let transcript = load(src, size).map_err(|e| SearchError::Unreplayable(load_error(&e)))?;
    let live = Live::of(&transcript);
    for (number, line) in &found {
        live_hits(*number, line, &transcript, &live, query, &mut hits);
    }
    hits.sort_by_key(|h| h.line);
    Ok(hits)
}

fn load_error(e: &LoadError) -> String {
    match e {
        LoadError::Io(e) => e.to_string(),
        LoadError::Line { line, error } => format!("corrupt at line {line}: {error}"),
        LoadError::Replay { line, error } => format!("corrupt at line {line}: {error}"),
        LoadError::Empty => "empty".to_owned(),
    }
}

// How much is read at once: many lines per prefilter search.
const CHUNK: usize = 4 << 20;

/// Calls `each(line number, line)` for every line of the first `size` bytes
/// of `src` that `prefilter` finds something in (every non-blank line without
/// one), in order. The line is given without its `\n`.
fn candidates<R: ReadAt + ?Sized>(
    src: &R,
    size: u64,
    prefilter: Option<&Prefilter>,
    mut each: impl FnMut(u64, &[u8]),
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut held = 0; // bytes of an unfinished line carried at the front of `buf`
    let mut offset = 0u64;
    let mut lines = 0u64; // lines before buf[0]
    loop {
        if held == buf.len() {
            buf.resize(buf.len() * 2, 0); // one line longer than the buffer
        }
        let want = (buf.len() - held).min(usize::try_from(size - offset).unwrap_or(usize::MAX));
        let mut got = 0;
        while got < want {
            let n = src.read_at(&mut buf[held + got..held + want], offset + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        offset += got as u64;
        let filled = held + got;
        let at_end = got < want || offset >= size;
        let complete = if at_end {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[..filled]) {
                Some(i) => i + 1,
                None => {
                    held = filled;
                    continue;
                }
            }
        };
        lines += scan_block(&buf[..complete], lines, prefilter, &mut each);
        if at_end {
            return Ok(());
        }
        buf.copy_within(complete..filled, 0);
        held = filled - complete;
    }
}

// One block of whole lines (the last one may lack its `\n` at the end of the
// file); answers how many `\n` it holds.
fn scan_block(
    block: &[u8],
    before: u64,
    prefilter: Option<&Prefilter>,
    each: &mut impl FnMut(u64, &[u8]),
) -> u64 {
    let mut lines = before;
    let mut pos = 0;
    let mut next = Vec::new();
    while pos < block.len() {
        let start = match prefilter {
            None => pos,
            Some(p) => match p.find(block, pos, &mut next) {
                None => break,
                Some(at) => memchr::memrchr(b'\n', &block[pos..at]).map_or(pos, |i| pos + i + 1),
            },
        };
        lines += memchr::memchr_iter(b'\n', &block[pos..start]).count() as u64;
        let end = memchr::memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i);
        let line = &block[start..end];
        if !transcript_core::scan::is_blank(line) {
            each(lines + 1, line);
        }
        if end < block.len() {
            lines += 1;
        }
        pos = end + 1;
    }
    if pos < block.len() {
        lines += memchr::memchr_iter(b'\n', &block[pos..]).count() as u64;
    }
    lines - before
}

/// A JSON value, only as far as search needs it.
#[derive(Debug)]
enum Value {
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
    Other,
}

impl Value {
    fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Obj(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    // Every string in it, in order, but those under a skipped key.
    fn strings<'v>(&'v self, out: &mut Vec<&'v str>) {
        match self {
            Value::Str(s) => out.push(s),
            Value::Arr(items) => items.iter().for_each(|v| v.strings(out)),
            Value::Obj(members) => {
                for (k, v) in members {
                    if !SKIPPED_KEYS.contains(&k.as_str()) {
                        v.strings(out);
                    }
                }
            }
            Value::Other => {}
        }
    }
}

// A decoded JSON string; a lone surrogate (WTF-8, three bytes) becomes U+FFFD.
fn text_of(s: JStr<'_>) -> String {
    match s {
        JStr::Text(t) => t.to_owned(),
        JStr::Wtf8(mut bytes) => {
            let mut out = String::with_capacity(bytes.len());
            while !bytes.is_empty() {
                match std::str::from_utf8(bytes) {
                    Ok(t) => {
                        out.push_str(t);
                        break;
                    }
                    Err(e) => {
                        let (good, rest) = bytes.split_at(e.valid_up_to());
                        out.push_str(std::str::from_utf8(good).unwrap_or_default());
                        out.push('\u{fffd}');
                        bytes = rest.get(3..).unwrap_or_default();
                    }
                }
            }
            out
        }
    }
}

fn value(r: &mut Reader<'_>) -> Result<Value, JsonError> {
    let mut scratch = Vec::new();
    Ok(match r.peek()? {
        Kind::String => Value::Str(text_of(r.string(&mut scratch)?)),
        Kind::Array => {
            r.begin_array()?;
            let mut items = Vec::new();
            while r.next_item()? {
                items.push(value(r)?);
            }
            Value::Arr(items)
        }
        Kind::Object => {
            r.begin_object()?;
            let mut members = Vec::new();
            while let Some(key) = r.next_key(&mut scratch)? {
                let key = text_of(key);
                members.push((key, value(r)?));
            }
            Value::Obj(members)
        }
        _ => {
            r.skip_value()?;
            Value::Other
        }
    })
}

// A line's `id`, `type` and payload; None for a line that is not one.
fn envelope(line: &[u8]) -> Option<(String, String, Value)> {
    let mut r = Reader::from_bytes(line).ok()?;
    let Value::Obj(members) = value(&mut r).ok()? else {
        return None;
    };
    r.finish().ok()?;
    let mut id = None;
    let mut kind = None;
    let mut payload = None;
    for (k, v) in members {
        match (k.as_str(), v) {
            ("id", Value::Str(s)) => id = Some(s),
            ("type", Value::Str(s)) => kind = Some(s),
            ("payload", v) => payload = Some(v),
            _ => {}
        }
    }
    Some((id?, kind?, payload?))
}

// A searched string and where it is.
struct Text<'v> {
    field: &'static str,
    role: Option<&'v str>,
    text: &'v str,
}

// A message payload's searched strings; `content` false for a stubbed one.
fn message_texts<'v>(
    payload: &'v Value,
    field: Option<&'static str>,
    content: bool,
    out: &mut Vec<Text<'v>>,
) {
    let role = payload.get("role").and_then(Value::str);
    let keys: &[&'static str] = if content { &["content", "tool_calls"] } else { &["tool_calls"] };
    for &key in keys {
        let mut strings = Vec::new();
        if let Some(v) = payload.get(key) {
            v.strings(&mut strings);
        }
        out.extend(strings.into_iter().map(|text| Text {
            field: field.unwrap_or(key),
            role,
            text,
        }));
    }
}

// Every searched string of an envelope, read as a line of its own.
fn line_texts<'v>(kind: &str, payload: &'v Value, out: &mut Vec<(Option<u32>, Text<'v>)>) {
    let plain =
        |field: &'static str, role: Option<&'v str>, out: &mut Vec<(Option<u32>, Text<'v>)>| {
            let mut strings = Vec::new();
            if let Some(v) = payload.get(field) {
                v.strings(&mut strings);
            }
            out.extend(strings.into_iter().map(|text| (None, Text { field, role, text })));
        };
    match kind {
        "message" => {
            let mut texts = Vec::new();
            message_texts(payload, None, true, &mut texts);
            out.extend(texts.into_iter().map(|t| (None, t)));
        }
        "compaction" => {
            plain("summary", Some("user"), out);
            if let Some(Value::Arr(parts)) = payload.get("replacement") {
                for (k, part) in parts.iter().enumerate() {
                    let mut texts = Vec::new();
                    message_texts(part, Some("replacement"), true, &mut texts);
                    let k = u32::try_from(k).ok();
                    out.extend(texts.into_iter().map(|t| (k, t)));
                }
            }
        }
        "tool-dispatched" => {
            plain("tool", None, out);
            plain("arguments", None, out);
        }
        "tool-settled" => {
            plain("error", None, out);
            plain("reason", None, out);
        }
        "elision" => {
            if let Some(Value::Arr(items)) = payload.get("items") {
                for item in items {
                    if let Some(text) = item.get("stub").and_then(Value::str) {
                        out.push((None, Text { field: "stub", role: None, text }));
                    }
                }
            }
        }
        _ => {}
    }
}

impl Query {
    // The hit of `text`, if the pattern matches it and the filters keep it.
    fn hit(&self, line: u64, id: String, kind: &str, t: &Text<'_>) -> Option<Hit> {
        if self.kind.as_deref().is_some_and(|k| k != kind) {
            return None;
        }
        if self.role.is_some() && self.role.as_deref() != t.role {
            return None;
        }
        let spans: Vec<(usize, usize)> =
            self.text.find_iter(t.text).map(|m| (m.start(), m.end())).collect();
        if spans.is_empty() {
            return None;
        }
        Some(Hit {
            line,
            id,
            kind: kind.to_owned(),
            role: t.role.map(str::to_owned),
            field: t.field,
            text: t.text.to_owned(),
            spans,
        })
    }
}

fn part_id(id: &str, part: Option<u32>) -> String {
    match part {
        Some(k) => format!("{id}:{k}"),
        None => id.to_owned(),
    }
}

fn every_line_hits(number: u64, line: &[u8], query: &Query, hits: &mut Vec<Hit>) {
    // A line that is not an envelope (damage) has nothing to search.
    let Some((id, kind, payload)) = envelope(line) else {
        return;
    };
    let mut texts = Vec::new();
    line_texts(&kind, &payload, &mut texts);
    for (part, t) in &texts {
        hits.extend(query.hit(number, part_id(&id, *part), &kind, t));
    }
}

/// Which messages of which lines replay left live.
struct Live {
    // Line index -> its live messages: WHOLE (the message, or a compaction's
    // summary) or a replacement's position, and whether a stub replaced it.
    by_line: HashMap<u32, Vec<(u32, bool)>>,
    // Elision line index -> the live messages whose stub it gave: (line index, part).
    stubs: HashMap<u32, Vec<(u32, u32)>>,
}

impl Live {
    fn of(t: &Transcript) -> Live {
        let mut by_line: HashMap<u32, Vec<(u32, bool)>> = HashMap::new();
        let mut stubs: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
        for m in &t.live {
            let stub = m.stub();
            by_line.entry(m.line).or_default().push((m.part, stub.is_some()));
            if let Some((at, _)) = stub {
                stubs.entry(at).or_default().push((m.line, m.part));
            }
        }
        Live { by_line, stubs }
    }
}

// The index of the envelope on line `number`.
fn index_of(t: &Transcript, number: u64) -> Option<u32> {
    let (mut lo, mut hi) = (0usize, t.index.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match t.index.number(mid)?.cmp(&number) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return u32::try_from(mid).ok(),
        }
    }
    None
}

fn live_hits(
    number: u64,
    line: &[u8],
    t: &Transcript,
    live: &Live,
    query: &Query,
    hits: &mut Vec<Hit>,
) {
    let Some(i) = index_of(t, number) else {
        return;
    };
    let Some((id, kind, payload)) = envelope(line) else {
        return;
    };
    let mut texts: Vec<(Option<u32>, Text<'_>)> = Vec::new();
    let here = live.by_line.get(&i).map_or(&[][..], |v| v);
    match t.index.kind(i as usize) {
        Some(EnvelopeType::Message) => {
            for &(_, stubbed) in here {
                let mut found = Vec::new();
                message_texts(&payload, None, !stubbed, &mut found);
                texts.extend(found.into_iter().map(|t| (None, t)));
            }
        }
        Some(EnvelopeType::Compaction) => {
            for &(part, stubbed) in here {
                if part == WHOLE {
                    let summary = payload.get("summary").and_then(Value::str);
                    if let (Some(text), false) = (summary, stubbed) {
                        texts.push((None, Text { field: "summary", role: Some("user"), text }));
                    }
                } else if let Some(Value::Arr(parts)) = payload.get("replacement") {
                    if let Some(message) = parts.get(part as usize) {
                        let mut found = Vec::new();
                        message_texts(message, Some("replacement"), !stubbed, &mut found);
                        texts.extend(found.into_iter().map(|t| (Some(part), t)));
                    }
                }
            }
        }
        Some(EnvelopeType::Elision) => {
            if let Some(stubbed) = live.stubs.get(&i) {
                stub_hits(&payload, t, stubbed, query, hits);
            }
            return;
        }
        _ => return,
    }
    for (part, text) in &texts {
        hits.extend(query.hit(number, part_id(&id, *part), &kind, text));
    }
}

// The hits in the stubs an elision gave live messages: each at its message's
// line, under the message's id.
fn stub_hits(
    payload: &Value,
    t: &Transcript,
    stubbed: &[(u32, u32)],
    query: &Query,
    hits: &mut Vec<Hit>,
) {
    let Some(Value::Arr(items)) = payload.get("items") else {
        return;
    };
    for item in items {
        let (Some(id), Some(text)) =
            (item.get("id").and_then(Value::str), item.get("stub").and_then(Value::str))
        else {
            continue;
        };
        let Some(at) = t.resolve(id.as_bytes()) else {
            continue;
        };
        if !stubbed.contains(&(at.line, at.part)) {
            continue;
        }
        let line = at.line as usize;
        let (Some(number), Some(kind)) = (t.index.number(line), t.index.type_name(line)) else {
            continue;
        };
        let role = if at.part != WHOLE {
            t.part(at.line, at.part).map(|p| &*p.role)
        } else if kind == "compaction" {
            Some("user")
        } else {
            t.index.role(line)
        };
        let text = Text { field: "stub", role, text };
        hits.extend(query.hit(number, id.to_owned(), kind, &text));
    }
}

// The matching, the prefilter and the line numbers across read blocks are
// checked in Python against `re` (`tests/search/test_grep_differential.py`);
// here, what no test through the binding can make: no thread to search on.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_searched_here_when_no_thread_can_start() {
        let dir = std::env::temp_dir().join(format!("search-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = r#"{"id":"m0","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}
{"id":"m1","payload":{"content":"needle","role":"user"},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}
"#;
        let paths: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = dir.join(format!("{i}.jsonl"));
                std::fs::write(&p, body).unwrap();
                p
            })
            .collect();
        let query = Query::new("needle", true, false, false, None, None).unwrap();
        transcript_core::threads::fail_spawns(true);
        let found = search_files(&paths, &query, 2);
        transcript_core::threads::fail_spawns(false);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.len(), 3);
        for r in found {
            assert_eq!(r.unwrap().len(), 1);
        }
    }
}
