//! Codex rollouts (the G2 generation: `{"timestamp", "type", "payload"}` lines),
//! imported natively: the same conversion as the Python importer's
//! `formats/codex.py` (read that for the rules). A first pass keeps where each
//! line is, its kind and token count; the second reads each line it needs
//! again, in file order, and writes its envelopes. Unsupported here, and left to
//! the Python importer: the older generations (G0, G1, G1b), damaged lines, a
//! legacy compaction (no `replacement_history`), an output that answers no live
//! call, a timestamp of another form, a lone surrogate in an emitted value.

use std::fs::File;
use std::io::{self, Write};

use crate::canonical;
use crate::import_run::{
    as_text, is_blank, read_line, scan, Emitter, EveryFewRecords, Imported, SourceLine, Status,
    Stop,
};
use crate::import_value::{
    canonical_bytes, parse, py_space, raw, to_ts, write_dumps, Ids, Ts, Unsupported, Value,
};
use crate::json::{JStr, Kind as JKind, Reader};

const SUMMARY_PREFIX: &str = "Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools that were used by that language model. Use this to build on the work that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use the information in this summary to  assist with your own analysis:";
const CONTEXTUAL: [&str; 7] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
    "<subagent_notification>",
];
const ITEM_TYPES: [&str; 14] = [
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "ghost_snapshot",
    "image_generation_call",
    "compaction",
    "compaction_summary",
    "tool_search_call",
    "tool_search_output",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    SessionMeta,
    ResponseItem,
    Compacted,
    TurnContext,
    Event,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    RolledBack,
    Aborted,
    TokenCount,
    Started,
    Other,
}

#[derive(Debug, Clone)]
struct Item {
    line: u32,
    kind: LineKind,
    event: EventKind,
    // token_count: the total; compacted: the tokens after it.
    tokens: Option<Vec<u8>>,
}

fn bad<T>(_: T) -> Unsupported {
    Unsupported("a damaged line")
}

/// What the first pass reads of a line: the shape of a G2 line.
struct Skim {
    timestamp: Option<Ts>,
    kind: Option<String>,
    payload_obj: bool,
    payload_type: Option<String>,
    record_type: bool,
    id_str: bool,
}

fn skim(text: &str) -> Result<Skim, Unsupported> {
    let mut r = Reader::new(text);
    let mut scratch = Vec::new();
    if r.peek().map_err(bad)? != JKind::Object {
        return Err(Unsupported("a line that is not a JSON object"));
    }
    let mut out = Skim {
        timestamp: None,
        kind: None,
        payload_obj: false,
        payload_type: None,
        record_type: false,
        id_str: false,
    };
    // The keys seen so far, end to end in `seen`, each ending where `ends` says.
    let mut seen: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    r.begin_object().map_err(bad)?;
    while let Some(k) = r.next_key(&mut scratch).map_err(bad)? {
        let key: &str = match k {
            JStr::Text(t) => t,
            JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate in a key")),
        };
        let mut start = 0usize;
        for &end in &ends {
            if seen.get(start..end) == Some(key.as_bytes()) {
                return Err(Unsupported("a key twice in one record"));
            }
            start = end;
        }
        seen.extend_from_slice(key.as_bytes());
        ends.push(seen.len());
        match key {
            "timestamp" => match r.peek().map_err(bad)? {
                JKind::String => {
                    let s = match r.string(&mut scratch).map_err(bad)? {
                        JStr::Text(t) => t,
                        JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate")),
                    };
                    out.timestamp = if s.is_empty() { None } else { Some(to_ts(s)?) };
                }
                JKind::Number => return Err(Unsupported("a timestamp in epoch seconds")),
                _ => r.skip_value().map_err(bad)?,
            },
            "type" => match r.peek().map_err(bad)? {
                JKind::String => {
                    let s = r.string(&mut scratch).map_err(bad)?;
                    out.kind = Some(match s {
                        JStr::Text(t) => t.to_owned(),
                        JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate")),
                    });
                }
                JKind::Null => r.skip_value().map_err(bad)?,
                _ => return Err(Unsupported("a type that is not a string")),
            },
            "record_type" => {
                out.record_type = r.peek().map_err(bad)? == JKind::String;
                r.skip_value().map_err(bad)?;
            }
            "id" => {
                out.id_str = r.peek().map_err(bad)? == JKind::String;
                r.skip_value().map_err(bad)?;
            }
            "payload" => {
                if r.peek().map_err(bad)? != JKind::Object {
                    r.skip_value().map_err(bad)?;
                    continue;
                }
                out.payload_obj = true;
                r.begin_object().map_err(bad)?;
                let mut typed = false;
                while let Some(k) = r.next_key(&mut scratch).map_err(bad)? {
                    if k.as_bytes() == b"type" {
                        if typed {
                            return Err(Unsupported("a key twice in one record"));
                        }
                        typed = true;
                        if r.peek().map_err(bad)? == JKind::String {
                            let s = r.string(&mut scratch).map_err(bad)?;
                            out.payload_type = Some(match s {
                                JStr::Text(t) => t.to_owned(),
                                JStr::Wtf8(_) => return Err(Unsupported("a lone surrogate")),
                            });
                        } else {
                            r.skip_value().map_err(bad)?;
                        }
                    } else {
                        r.skip_value().map_err(bad)?;
                    }
                }
            }
            _ => r.skip_value().map_err(bad)?,
        }
    }
    r.finish().map_err(bad)?;
    Ok(out)
}

/// `_total_tokens`: `info.last_token_usage.total_tokens` of a token_count payload.
fn total_tokens(body: &Value<'_>) -> Option<Vec<u8>> {
    let info = body.get("info").filter(|i| i.is_obj())?;
    let last = info.get("last_token_usage").filter(|l| l.is_obj())?;
    match last.get("total_tokens") {
        Some(v @ Value::Int(_)) => Some(canonical_bytes(v)),
        _ => None,
    }
}

/// Imports the Codex rollout `file`: its derived envelopes go to `out`.
///
/// # Errors
///
/// An I/O error; `Ok(Err(Unsupported))` for a rollout the Python importer must take.
pub fn import(
    file: &File,
    out: &mut impl Write,
    stop: Stop<'_>,
) -> io::Result<Result<Imported, Unsupported>> {
    let mut lines: Vec<SourceLine> = Vec::new();
    let mut items: Vec<Item> = Vec::new();
    let mut open_compacted: Vec<usize> = Vec::new();
    let mut first = true;
    let scanned = scan(file, stop, |n, offset, rawline| {
        let mut line = SourceLine {
            offset,
            len: rawline.len() as u32,
            status: Status::Metadata,
            when: None,
        };
        if is_blank(rawline) {
            line.status = Status::Blank;
            lines.push(line);
            return Ok(());
        }
        let text = simdutf8::basic::from_utf8(rawline)
            .map_err(|_| Unsupported("a line that is not UTF-8"))?;
        let s = skim(text)?;
        line.when = s.timestamp;
        lines.push(line);
        let was_first = std::mem::replace(&mut first, false);
        let kind = match (s.kind.as_deref(), s.payload_obj) {
            (Some("session_meta"), true) => Some(LineKind::SessionMeta),
            (Some("response_item"), true) => Some(LineKind::ResponseItem),
            (Some("compacted"), true) => Some(LineKind::Compacted),
            (Some("turn_context"), true) => Some(LineKind::TurnContext),
            (Some("event_msg"), true) => Some(LineKind::Event),
            _ => None,
        };
        let Some(kind) = kind else {
            if s.record_type {
                return Err(Unsupported("a G1b rollout"));
            }
            if was_first && s.kind.is_none() && s.id_str {
                return Err(Unsupported("a G1 rollout"));
            }
            if s.kind.as_deref().is_some_and(|k| ITEM_TYPES.contains(&k)) {
                return Err(Unsupported("a G1 rollout"));
            }
            return Ok(());
        };
        let mut item = Item {
            line: n as u32,
            kind,
            event: EventKind::Other,
            tokens: None,
        };
        if kind == LineKind::Event {
            item.event = match s.payload_type.as_deref() {
                Some("thread_rolled_back") => EventKind::RolledBack,
                Some("turn_aborted") => EventKind::Aborted,
                Some("token_count") => EventKind::TokenCount,
                Some("task_started" | "turn_started") => EventKind::Started,
                _ => EventKind::Other,
            };
            if item.event == EventKind::TokenCount {
                let v = parse(text)?.ok_or(Unsupported("a damaged line"))?;
                item.tokens = v.get("payload").and_then(total_tokens);
            }
        }
        // The tokens after a compaction: the first token_count after it, unless
        // a response item comes first.
        if kind == LineKind::ResponseItem || item.event == EventKind::TokenCount {
            let value = if kind == LineKind::ResponseItem {
                None
            } else {
                item.tokens.clone()
            };
            for at in open_compacted.drain(..) {
                if let Some(c) = items.get_mut(at) {
                    c.tokens = Some(value.clone().unwrap_or_else(|| b"0".to_vec()));
                }
            }
        }
        if kind == LineKind::Compacted {
            open_compacted.push(items.len());
        }
        items.push(item);
        Ok(())
    })?;
    let (sha, size, _) = match scanned {
        Ok(x) => x,
        Err(e) => return Ok(Err(e)),
    };
    let mut conv = Convert::new(Emitter::new(Ids::new(&sha), out), false);
    let mut info: Vec<(&'static str, Option<Value<'static>>)> = Vec::new();
    let mut facts: Vec<(&'static str, String)> = Vec::new();
    let mut buf = Vec::new();
    let every = EveryFewRecords::new(stop);
    for item in &items {
        if item.kind == LineKind::Event && item.event == EventKind::Other {
            continue;
        }
        let Some(line) = lines.get(item.line as usize).cloned() else {
            continue;
        };
        let ts = line.when;
        if item.event == EventKind::TokenCount {
            if let Some(t) = &item.tokens {
                conv.tokens = t.clone();
            }
            continue;
        }
        every.record()?;
        read_line(file, &line, &mut buf)?;
        let text = as_text(&buf)?;
        let record = match parse(text) {
            Ok(Some(v)) => v,
            Ok(None) => return Ok(Err(Unsupported("a damaged line"))),
            Err(e) => return Ok(Err(e)),
        };
        let Some(body) = record.get("payload") else {
            continue;
        };
        match item.kind {
            LineKind::SessionMeta => {
                if !info.iter().any(|(k, _)| *k == "session-id") {
                    set_info(&mut info, "generation", Some(Value::string("G2")));
                    for (key, name) in [
                        ("id", "session-id"),
                        ("cwd", "cwd"),
                        ("cli_version", "version"),
                        ("originator", "originator"),
                        ("model_provider", "model-provider"),
                        ("git", "git"),
                        ("forked_from_id", "forked-from"),
                    ] {
                        if let Some(v) = body.get(key) {
                            set_info(&mut info, name, non_null(v));
                        }
                    }
                    if let Some(cwd) = body.str_of("cwd") {
                        set_fact(&mut facts, "cwd", cwd);
                    }
                    conv.emit.at(ts);
                }
            }
            LineKind::ResponseItem => {
                if body.str_of("type") == Some("ghost_snapshot") {
                    continue;
                }
                if !facts.is_empty() && body.str_of("type") == Some("message") {
                    let mut sorted = facts.clone();
                    sorted.sort_by(|a, b| a.0.cmp(b.0));
                    let mut f = vec![b'['];
                    for (i, (k, v)) in sorted.iter().enumerate() {
                        if i > 0 {
                            f.push(b',');
                        }
                        f.push(b'[');
                        canonical::write_str(&mut f, k.as_bytes());
                        f.push(b',');
                        canonical::write_str(&mut f, v.as_bytes());
                        f.push(b']');
                    }
                    f.push(b']');
                    conv.emit.facts(f, ts)?;
                }
                if let Err(e) = conv.response_item(item.line, body, ts)? {
                    return Ok(Err(e));
                }
            }
            LineKind::Compacted => {
                let after = item.tokens.clone().unwrap_or_else(|| b"0".to_vec());
                if let Err(e) = conv.compacted(item.line, body, ts, &after)? {
                    return Ok(Err(e));
                }
            }
            LineKind::TurnContext => {
                conv.flush()?;
                if let Some(t) = body.str_of("turn_id") {
                    conv.run_id = Some(t.to_owned());
                }
                for (key, name) in [
                    ("cwd", "cwd"),
                    ("model", "model"),
                    ("effort", "effort"),
                    ("approval_policy", "approval-policy"),
                ] {
                    if let Some(v) = body.str_of(key) {
                        set_fact(&mut facts, name, v);
                    }
                }
                if let Some(model) = body.str_of("model") {
                    set_info(&mut info, "model", Some(Value::string(model.to_owned())));
                    if !info.iter().any(|(k, _)| *k == "cwd") {
                        info.push(("cwd", body.get("cwd").and_then(non_null)));
                    }
                }
                let mut grants: Vec<(&str, Value<'_>)> = Vec::new();
                for (key, name) in [
                    ("approval_policy", "approval-policy"),
                    ("sandbox_policy", "sandbox-policy"),
                ] {
                    if let Some(v) = body.get(key) {
                        grants.push((name, v.clone()));
                    }
                }
                if !grants.is_empty() {
                    let g = Value::obj(vec![("codex", Value::obj(grants))]);
                    conv.emit.grants(canonical_bytes(&g), ts)?;
                }
                conv.mark(item.line, Status::Used);
            }
            LineKind::Event => match item.event {
                EventKind::RolledBack => {
                    if let Err(e) = conv.rollback(item.line, body.get("num_turns"), ts)? {
                        return Ok(Err(e));
                    }
                }
                EventKind::Aborted => {
                    let reason = match body.get("reason") {
                        None | Some(Value::Null) => "None".to_owned(),
                        Some(Value::Str(s)) => s.to_string(),
                        Some(_) => {
                            return Ok(Err(Unsupported("an abort reason that is not a string")))
                        }
                    };
                    conv.aborted(&reason, ts)?;
                }
                EventKind::Started => {
                    if let Some(t) = body.str_of("turn_id") {
                        conv.run_id = Some(t.to_owned());
                    }
                }
                EventKind::TokenCount | EventKind::Other => {}
            },
        }
    }
    conv.flush()?;
    for (line, status) in conv.statuses.drain(..) {
        if let Some(l) = lines.get_mut(line as usize) {
            l.status = status;
        }
    }
    let info: Vec<(&str, Value<'_>)> = info
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    let warnings = std::mem::take(&mut conv.warnings);
    let emit = conv.emit;
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

/// A value kept for the session-meta; None for null (dropped there).
fn non_null(v: &Value<'_>) -> Option<Value<'static>> {
    if *v == Value::Null {
        None
    } else {
        Some(raw(v))
    }
}

fn set_info(
    info: &mut Vec<(&'static str, Option<Value<'static>>)>,
    key: &'static str,
    value: Option<Value<'static>>,
) {
    match info.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value,
        None => info.push((key, value)),
    }
}

fn set_fact(facts: &mut Vec<(&'static str, String)>, key: &'static str, value: &str) {
    match facts.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = value.to_owned(),
        None => facts.push((key, value.to_owned())),
    }
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

/// The assistant message the next calls may still join.
struct Pending {
    extra: Vec<(&'static str, Value<'static>)>,
    item_kinds: Vec<String>,
    tool_kinds: Vec<(String, String)>,
    content: Value<'static>,
    calls: Vec<(String, String, String, Option<Ts>)>,
    lines: Vec<u32>,
    ts: Option<Ts>,
}

struct Convert<W: Write> {
    emit: Emitter<W>,
    keep_payloads: bool,
    payloads: Vec<Vec<u8>>,
    real_user: Vec<bool>,
    lines_of: Vec<Vec<u32>>,
    pending: Option<Pending>,
    reasoning: Vec<Value<'static>>,
    reasoning_lines: Vec<u32>,
    run_id: Option<String>,
    turns: u64,
    round: i64,
    tokens: Vec<u8>,
    statuses: Vec<(u32, Status)>,
    warnings: Vec<String>,
}

impl<W: Write> Convert<W> {
    fn new(emit: Emitter<W>, keep_payloads: bool) -> Self {
        Convert {
            emit,
            keep_payloads,
            payloads: Vec::new(),
            real_user: Vec::new(),
            lines_of: Vec::new(),
            pending: None,
            reasoning: Vec::new(),
            reasoning_lines: Vec::new(),
            run_id: None,
            turns: 0,
            round: 0,
            tokens: b"0".to_vec(),
            statuses: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn mark(&mut self, line: u32, status: Status) {
        self.statuses.push((line, status));
    }

    fn message(
        &mut self,
        payload: &[u8],
        lines: Vec<u32>,
        real_user: bool,
        ts: Option<Ts>,
    ) -> io::Result<()> {
        self.emit.message_bytes(payload, ts)?;
        if self.keep_payloads {
            self.payloads.push(payload.to_vec());
        }
        self.real_user.push(real_user);
        for &l in &lines {
            self.mark(l, Status::Used);
        }
        self.lines_of.push(lines);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let mut extra = p.extra;
        extra.push((
            "items",
            Value::Arr(p.item_kinds.into_iter().map(Value::string).collect()),
        ));
        if !p.tool_kinds.is_empty() {
            let kinds = p
                .tool_kinds
                .into_iter()
                .map(|(c, k)| (c.into(), Value::string(k)))
                .collect();
            extra.push(("tool-kinds", Value::Obj(kinds)));
        }
        let mut payload = Value::obj(vec![
            ("codex", Value::obj(extra)),
            ("role", Value::string("assistant")),
            ("content", p.content),
        ]);
        if !p.calls.is_empty() {
            let calls = p
                .calls
                .iter()
                .map(|(id, tool, text, _)| {
                    Value::obj(vec![
                        ("id", Value::string(id.clone())),
                        ("type", Value::string("function")),
                        (
                            "function",
                            Value::obj(vec![
                                ("name", Value::string(tool.clone())),
                                ("arguments", Value::string(text.clone())),
                            ]),
                        ),
                    ])
                })
                .collect();
            payload.set("tool_calls", Value::Arr(calls));
        }
        self.message(&canonical_bytes(&payload), p.lines, false, p.ts)?;
        for (call_id, tool, text, cts) in &p.calls {
            let arguments = match parse(text) {
                Ok(Some(v)) => v,
                _ => Value::string(text.as_str()),
            };
            self.emit.dispatch(
                call_id,
                tool,
                &arguments,
                self.run_id.as_deref(),
                self.round,
                *cts,
            )?;
        }
        self.round += 1;
        Ok(())
    }

    fn take_reasoning(&mut self, p: &mut Pending) {
        if !self.reasoning.is_empty() {
            p.extra
                .push(("reasoning", Value::Arr(std::mem::take(&mut self.reasoning))));
            p.lines.append(&mut self.reasoning_lines);
        }
        self.reasoning.clear();
        self.reasoning_lines.clear();
    }

    fn response_item(&mut self, line: u32, item: &Value<'_>, ts: Option<Ts>) -> Step {
        let kind = item.str_of("type");
        match kind {
            Some("reasoning") => {
                self.reasoning.push(raw(item));
                self.reasoning_lines.push(line);
                return Ok(Ok(()));
            }
            Some("message") if item.str_of("role") == Some("assistant") => {
                self.flush()?;
                let mut p = Pending {
                    extra: codex_extra(item),
                    item_kinds: vec!["message".to_owned()],
                    tool_kinds: Vec::new(),
                    content: raw(&parts(item.get("content"))),
                    calls: Vec::new(),
                    lines: vec![line],
                    ts,
                };
                self.take_reasoning(&mut p);
                self.pending = Some(p);
                return Ok(Ok(()));
            }
            Some(k @ ("function_call" | "custom_tool_call" | "local_shell_call")) => {
                let (call_id, tool, text) = need!(call(item, k));
                if let Err(u) = parse(&text) {
                    return Ok(Err(u));
                }
                if matches!(parse(&text), Ok(None))
                    && (text.contains("NaN") || text.contains("Infinity"))
                {
                    return Ok(Err(Unsupported(
                        "arguments json.loads may read as a non-finite float",
                    )));
                }
                if self.pending.is_none() {
                    let mut p = Pending {
                        extra: Vec::new(),
                        item_kinds: Vec::new(),
                        tool_kinds: Vec::new(),
                        content: Value::Null,
                        calls: Vec::new(),
                        lines: Vec::new(),
                        ts,
                    };
                    self.take_reasoning(&mut p);
                    self.pending = Some(p);
                }
                if let Some(p) = self.pending.as_mut() {
                    p.item_kinds.push(k.to_owned());
                    if k != "function_call" {
                        match p.tool_kinds.iter_mut().find(|(c, _)| *c == call_id) {
                            Some(slot) => slot.1 = k.to_owned(),
                            None => p.tool_kinds.push((call_id.clone(), k.to_owned())),
                        }
                    }
                    p.lines.push(line);
                    p.calls.push((call_id, tool, text, ts));
                }
                return Ok(Ok(()));
            }
            _ => {}
        }
        self.flush()?;
        self.reasoning.clear();
        self.reasoning_lines.clear();
        match kind {
            Some("message") => {
                let role = item.str_of("role");
                if let Some(role @ ("user" | "developer")) = role {
                    let mut extra = codex_extra(item);
                    extra.push(("items", Value::Arr(vec![Value::string("message")])));
                    let payload = Value::obj(vec![
                        ("codex", Value::obj(extra)),
                        ("role", Value::string(role)),
                        ("content", parts(item.get("content"))),
                    ]);
                    let real = is_real_user(item);
                    self.message(&canonical_bytes(&payload), vec![line], real, ts)?;
                    if real {
                        self.turns += 1;
                        self.round = 0;
                        if self
                            .run_id
                            .as_deref()
                            .is_none_or(|r| r.starts_with("turn-"))
                        {
                            self.run_id = Some(format!("turn-{}", self.turns));
                        }
                    }
                }
            }
            Some(k @ ("function_call_output" | "custom_tool_call_output")) => {
                let call_id = match item.get("call_id") {
                    None => String::new(),
                    Some(Value::Str(s)) => s.to_string(),
                    Some(_) => return Ok(Err(Unsupported("a call id that is not a string"))),
                };
                if !self.emit.is_open_call(&call_id) {
                    if self.keep_payloads {
                        return Ok(Ok(()));
                    }
                    return Ok(Err(Unsupported("an output that answers no live call")));
                }
                let (content, rest) = output(item);
                let mut extra = codex_extra(item);
                extra.push(("items", Value::Arr(vec![Value::string(k)])));
                if let Some(rest) = &rest {
                    extra.push(("output", Value::Obj(rest.clone())));
                }
                let payload = Value::obj(vec![
                    ("codex", Value::obj(extra)),
                    ("role", Value::string("tool")),
                    ("tool_call_id", Value::string(call_id.as_str())),
                    ("content", content.clone()),
                ]);
                self.message(&canonical_bytes(&payload), vec![line], false, ts)?;
                let mut outcome = "completed";
                let mut fields: Vec<(&str, Vec<u8>)> = Vec::new();
                let success_false = rest
                    .as_ref()
                    .and_then(|r| r.iter().find(|(k, _)| k == "success"))
                    .is_some_and(|(_, v)| *v == Value::Bool(false));
                if content.as_str() == Some("aborted") {
                    outcome = "outcome-unknown";
                    fields.push(("reason", canonical_bytes(&Value::string("aborted"))));
                } else if success_false {
                    outcome = "failed";
                }
                if let Some(d) = need!(duration(&content)) {
                    let mut out = Vec::new();
                    if canonical::write_f64(&mut out, d).is_ok() {
                        fields.push(("duration", out));
                    }
                }
                fields.sort_by(|a, b| a.0.cmp(b.0));
                self.emit.settle(&call_id, outcome, ts, &fields)?;
            }
            _ => {}
        }
        Ok(Ok(()))
    }

    fn compacted(&mut self, line: u32, body: &Value<'_>, ts: Option<Ts>, after: &[u8]) -> Step {
        self.flush()?;
        let message = body.str_of("message").unwrap_or_default().to_owned();
        let Some(history) = body.get("replacement_history").and_then(Value::as_arr) else {
            return Ok(Err(Unsupported("a legacy compaction")));
        };
        let mut sub = Convert::new(Emitter::new(Ids::new("scratch"), io::sink()), true);
        let mut encrypted = false;
        for it in history {
            if it.is_obj() && matches!(it.str_of("type"), Some("compaction" | "compaction_summary"))
            {
                encrypted = true;
            }
            if it.is_obj() && it.str_of("type") != Some("ghost_snapshot") {
                need!(sub.response_item(line, it, ts)?);
            }
        }
        sub.flush()?;
        let replacement = std::mem::take(&mut sub.payloads);
        let flags = std::mem::take(&mut sub.real_user);
        let mut summary = message;
        let mut fallback = false;
        if summary.is_empty() {
            let mut found = String::new();
            for it in history
                .iter()
                .filter(|i| i.is_obj() && i.str_of("role") == Some("user"))
                .rev()
            {
                let t = need!(text_of(it));
                if t.starts_with(SUMMARY_PREFIX) {
                    found = t;
                    break;
                }
            }
            summary = found;
        }
        if summary.is_empty() {
            summary = if encrypted {
                "(encrypted remote compaction)"
            } else {
                "(no summary)"
            }
            .to_owned();
            fallback = true;
        }
        if encrypted {
            self.warnings.push(format!(
                "line {}: an encrypted remote compaction; its summary is not readable",
                line + 1
            ));
        }
        self.mark(line, Status::Used);
        let tokens = self.tokens.clone();
        self.emit
            .compaction(&summary, &tokens, after, fallback, Some(&replacement), ts)?;
        self.lines_of = flags.iter().map(|_| vec![line]).collect();
        self.real_user = flags;
        Ok(Ok(()))
    }

    fn rollback(&mut self, line: u32, turns: Option<&Value<'_>>, ts: Option<Ts>) -> Step {
        self.flush()?;
        self.mark(line, Status::Used);
        let positions: Vec<usize> = self
            .real_user
            .iter()
            .enumerate()
            .filter(|(_, r)| **r)
            .map(|(i, _)| i)
            .collect();
        let n = match turns {
            Some(Value::Int(t)) => match t.parse::<i64>() {
                Ok(n) => n,
                Err(_) => return Ok(Err(Unsupported("a rollback of too many turns"))),
            },
            Some(Value::Bool(_)) => return Ok(Err(Unsupported("a rollback of a bool"))),
            _ => return Ok(Ok(())),
        };
        if n <= 0 || positions.is_empty() {
            return Ok(Ok(()));
        }
        let cut = if n as usize >= positions.len() {
            positions.first().copied().unwrap_or(0)
        } else {
            positions
                .get(positions.len() - n as usize)
                .copied()
                .unwrap_or(0)
        };
        let dropped: Vec<u32> = self
            .lines_of
            .get(cut..)
            .unwrap_or_default()
            .iter()
            .flatten()
            .copied()
            .collect();
        for l in dropped {
            self.mark(l, Status::RolledBack);
        }
        self.emit.rewind(cut, ts)?;
        self.real_user.truncate(cut);
        self.lines_of.truncate(cut);
        Ok(Ok(()))
    }

    fn aborted(&mut self, reason: &str, ts: Option<Ts>) -> io::Result<()> {
        self.flush()?;
        let why = canonical_bytes(&Value::string(format!("turn-aborted:{reason}")));
        for call_id in self.emit.pending_calls() {
            self.emit
                .settle(&call_id, "outcome-unknown", ts, &[("reason", why.clone())])?;
        }
        Ok(())
    }
}

/// `_codex_extra` without its `items`: `phase` and `end_turn` when present.
fn codex_extra(item: &Value<'_>) -> Vec<(&'static str, Value<'static>)> {
    let mut extra = Vec::new();
    for key in ["phase", "end_turn"] {
        if let Some(v) = item.get(key) {
            extra.push((if key == "phase" { "phase" } else { "end_turn" }, raw(v)));
        }
    }
    extra
}

/// `_parts`: a content list in OpenAI chat shape (anything else as it is).
fn parts<'a>(content: Option<&Value<'a>>) -> Value<'a> {
    let Some(Value::Arr(items)) = content else {
        return content.cloned().unwrap_or(Value::Null);
    };
    let mut out = Vec::with_capacity(items.len());
    for p in items {
        let kind = if p.is_obj() { p.str_of("type") } else { None };
        match kind {
            Some("input_text" | "output_text" | "text") => out.push(Value::obj(vec![
                ("type", Value::string("text")),
                ("text", p.get("text").cloned().unwrap_or(Value::string(""))),
            ])),
            Some("input_image") => {
                let mut url = vec![("url", p.get("image_url").cloned().unwrap_or(Value::Null))];
                if let Some(d) = p.get("detail") {
                    url.push(("detail", d.clone()));
                }
                out.push(Value::obj(vec![
                    ("type", Value::string("image_url")),
                    ("image_url", Value::obj(url)),
                ]));
            }
            _ => out.push(p.clone()),
        }
    }
    Value::Arr(out)
}

/// `_text`: the text of a message item.
fn text_of(item: &Value<'_>) -> Result<String, Unsupported> {
    match item.get("content") {
        Some(Value::Arr(parts)) => {
            let mut out = String::new();
            for p in parts.iter().filter(|p| p.is_obj()) {
                match p.get("text") {
                    None => {}
                    Some(Value::Str(s)) => out.push_str(s),
                    Some(_) => return Err(Unsupported("a text that is not a string")),
                }
            }
            Ok(out)
        }
        Some(Value::Str(s)) => Ok(s.to_string()),
        _ => Ok(String::new()),
    }
}

/// `_is_real_user`: a user message whose first text is not contextual.
fn is_real_user(item: &Value<'_>) -> bool {
    if item.str_of("type") != Some("message") || item.str_of("role") != Some("user") {
        return false;
    }
    let first = item
        .get("content")
        .and_then(Value::as_arr)
        .unwrap_or_default()
        .iter()
        .find_map(|p| if p.is_obj() { p.str_of("text") } else { None })
        .unwrap_or_default();
    let text = first.trim_start_matches(py_space);
    let head: String = text.chars().take(64).collect::<String>().to_lowercase();
    !CONTEXTUAL
        .iter()
        .any(|m| text.starts_with(m) || head.starts_with(&m.to_lowercase()))
}

/// `_call`: a call item's `(call id, tool name, arguments text)`.
fn call(item: &Value<'_>, kind: &str) -> Result<(String, String, String), Unsupported> {
    let text = |v: Option<&Value<'_>>| -> Result<String, Unsupported> {
        match v {
            None => Ok(String::new()),
            Some(Value::Str(s)) => Ok(s.to_string()),
            Some(_) => Err(Unsupported("a call field that is not a string")),
        }
    };
    match kind {
        "local_shell_call" => {
            let id = item
                .get("call_id")
                .filter(|v| v.truthy())
                .or(item.get("id").filter(|v| v.truthy()));
            let mut action = Vec::new();
            write_dumps(&mut action, item.get("action").unwrap_or(&Value::Null));
            Ok((
                text(id)?,
                "local_shell".to_owned(),
                String::from_utf8_lossy(&action).into_owned(),
            ))
        }
        "custom_tool_call" => Ok((
            text(item.get("call_id"))?,
            text(item.get("name"))?,
            text(item.get("input"))?,
        )),
        _ => {
            let arguments = match item.get("arguments") {
                Some(Value::Str(s)) => s.to_string(),
                None | Some(Value::Null) => "null".to_owned(),
                Some(_) => {
                    return Err(Unsupported("function call arguments that are not a string"))
                }
            };
            Ok((
                text(item.get("call_id"))?,
                text(item.get("name"))?,
                arguments,
            ))
        }
    }
}

/// `_output`: an output item's tool-message content, and the rest of an object output.
#[allow(clippy::type_complexity)]
fn output<'a>(
    item: &Value<'a>,
) -> (
    Value<'a>,
    Option<Vec<(std::borrow::Cow<'a, str>, Value<'a>)>>,
) {
    match item.get("output") {
        Some(Value::Obj(members)) => {
            let rest: Vec<_> = members
                .iter()
                .filter(|(k, _)| k != "content")
                .cloned()
                .collect();
            let content = members
                .iter()
                .find(|(k, _)| k == "content")
                .map(|(_, v)| v.clone());
            let content = match content {
                Some(v @ Value::Arr(_)) => parts(Some(&v)),
                Some(v) => v,
                None => Value::string(""),
            };
            (content, if rest.is_empty() { None } else { Some(rest) })
        }
        Some(v @ Value::Arr(_)) => (parts(Some(v)), None),
        None | Some(Value::Null) => (Value::string(""), None),
        Some(v) => (v.clone(), None),
    }
}

/// `_duration`: seconds from a JSON output's metadata or a `Wall time:` line.
fn duration(content: &Value<'_>) -> Result<Option<f64>, Unsupported> {
    let Some(text) = content.as_str() else {
        return Ok(None);
    };
    if text.starts_with('{') {
        if let Some(parsed) = parse(text)? {
            if let Some(meta) = parsed.get("metadata").filter(|m| m.is_obj()) {
                match meta.get("duration_seconds") {
                    Some(Value::Int(t)) => match t.parse::<i64>() {
                        Ok(v) if v.unsigned_abs() < (1u64 << 53) => return Ok(Some(v as f64)),
                        _ => return Err(Unsupported("a duration too large")),
                    },
                    Some(Value::Float(f)) => return Ok(Some(*f)),
                    _ => {}
                }
            }
        }
    }
    for l in text.split('\n') {
        if let Some(mid) = l
            .strip_prefix("Wall time: ")
            .and_then(|r| r.strip_suffix(" seconds"))
        {
            if !mid.is_empty() && mid.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return match mid.parse::<f64>() {
                    Ok(v) => Ok(Some(v)),
                    Err(_) => Err(Unsupported("a wall time that is not a number")),
                };
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_come_from_the_output_text() {
        let wall = Value::string("Exit code: 0\nWall time: 0.25 seconds\nOutput:\n");
        assert_eq!(duration(&wall), Ok(Some(0.25)));
        let meta = Value::string(r#"{"output":"","metadata":{"duration_seconds":2}}"#);
        assert_eq!(duration(&meta), Ok(Some(2.0)));
        assert!(duration(&Value::string("Wall time: 1.2.3 seconds")).is_err());
        assert_eq!(duration(&Value::Null), Ok(None));
    }

    #[test]
    fn contextual_user_messages_are_not_turns() {
        let text = |t: &str| {
            Value::obj(vec![
                ("type", Value::string("message")),
                ("role", Value::string("user")),
                (
                    "content",
                    Value::Arr(vec![Value::obj(vec![(
                        "text",
                        Value::Str(t.to_owned().into()),
                    )])]),
                ),
            ])
        };
        assert!(is_real_user(&text("hello")));
        assert!(!is_real_user(&text("  <ENVIRONMENT_CONTEXT>x")));
        assert!(!is_real_user(&text("# AGENTS.md instructions for /w")));
    }
}
