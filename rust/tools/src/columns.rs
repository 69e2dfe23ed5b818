//! The export tables (`sessions`, `envelopes`, `messages`, `tool_operations`)
//! as columns in Arrow's memory layout, built in one pass over a transcript's
//! lines: little-endian value buffers, `i64` offsets and UTF-8 data for text,
//! LSB-first validity bitmaps. A binding wraps them as Arrow arrays without
//! copying a value one by one (no arrow crate needed: the layout is the spec's).
//!
//! What a line says comes from the line (the payload's members, read with the
//! same JSON reader load uses); what replay made of it (live or not, its live
//! position, what later compacted, elided or rewound it, which settle settled
//! an operation, which operations are pending) comes from the core's own
//! replay and its [`History`](transcript_core::transcript::History), never from a second opinion. A file load
//! refuses is exported from peek's lenient index, without any replayed state
//! (those columns are null) and with settles matched to dispatches by id.
//!
//! The pass works a budget at a time ([`FileState::fill`]): a caller can write
//! out what a batch holds and go on, so memory holds a batch, not a file.
//!
//! Buffers are little-endian, as Arrow's are on every platform this builds for.

use rustc_hash::FxHashMap as HashMap;

use transcript_core::envelope::{id_text, EnvelopeType, Span};
use transcript_core::json::{JStr, JsonError, Kind, Number, Reader};
use transcript_core::scan::ReadAt;
use transcript_core::transcript::{Index, LineRec, LoadError, Source, Transcript, WHOLE};

/// A validity (or boolean values) bitmap as Arrow lays it out: bit `i % 8` of
/// byte `i / 8`, least significant first.
#[derive(Debug, Default, Clone)]
pub struct Bits {
    /// The packed bits.
    pub bytes: Vec<u8>,
    /// How many bits.
    pub len: usize,
    /// How many of them are 0 (for a validity bitmap: the null count).
    pub unset: usize,
}

impl Bits {
    /// Adds one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len % 8 == 0 {
            self.bytes.push(0);
        }
        if bit {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 1 << (self.len % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }
}

/// A text column (Arrow `large_utf8`): `offsets` has one more entry than rows.
#[derive(Debug, Clone)]
pub struct Utf8 {
    /// `i64` offsets into `data`, little-endian, starting at 0.
    pub offsets: Vec<u8>,
    /// The UTF-8 text of every row, back to back.
    pub data: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Default for Utf8 {
    fn default() -> Self {
        Utf8 {
            offsets: 0i64.to_le_bytes().to_vec(),
            data: Vec::new(),
            valid: Bits::default(),
        }
    }
}

impl Utf8 {
    fn end(&mut self) {
        let at = i64::try_from(self.data.len()).unwrap_or(i64::MAX);
        self.offsets.extend_from_slice(&at.to_le_bytes());
    }

    /// Adds a row of text that is known to be UTF-8.
    pub fn push_str(&mut self, text: &str) {
        self.data.extend_from_slice(text.as_bytes());
        self.end();
        self.valid.push(true);
    }

    /// Where the next row's text starts in `data`.
    fn row_start(&self) -> usize {
        self.offsets
            .len()
            .checked_sub(8)
            .and_then(|at| self.offsets.get(at..))
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, |b| usize::try_from(i64::from_le_bytes(b)).unwrap_or(0))
    }

    /// Ends a row whose text was appended to `data` directly, decoded from a
    /// `str` (so UTF-8 already; not checked again).
    fn end_row(&mut self) {
        debug_assert!(std::str::from_utf8(&self.data[self.row_start()..]).is_ok());
        self.end();
        self.valid.push(true);
    }

    /// Adds a row from decoded JSON string bytes (WTF-8): a lone surrogate is
    /// written as its `\uXXXX` escape, so the column stays UTF-8.
    pub fn push_wtf8(&mut self, bytes: &[u8]) {
        match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => self.push_str(text),
            Err(_) => self.push_str(&id_text(bytes)),
        }
    }

    /// Adds a null row.
    pub fn push_null(&mut self) {
        self.end();
        self.valid.push(false);
    }

    /// Adds `text` (WTF-8) or a null.
    pub fn push_opt(&mut self, text: Option<&[u8]>) {
        match text {
            Some(t) => self.push_wtf8(t),
            None => self.push_null(),
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.valid.len
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.valid.len == 0
    }
}

/// A column of 8-byte values (Arrow `int64`, `timestamp[us]` or `float64`).
#[derive(Debug, Default, Clone)]
pub struct Fixed {
    /// The values, little-endian, 8 bytes a row (0 under a null).
    pub values: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Fixed {
    /// Adds an integer or a null.
    pub fn push_i64(&mut self, v: Option<i64>) {
        self.values.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
        self.valid.push(v.is_some());
    }

    /// Adds a float or a null.
    pub fn push_f64(&mut self, v: Option<f64>) {
        self.values
            .extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
        self.valid.push(v.is_some());
    }
}

/// A boolean column (Arrow `bool`): values and validity, both bitmaps.
#[derive(Debug, Default, Clone)]
pub struct Bool {
    /// The values (0 under a null).
    pub values: Bits,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Bool {
    /// Adds a value or a null.
    pub fn push(&mut self, v: Option<bool>) {
        self.values.push(v.unwrap_or(false));
        self.valid.push(v.is_some());
    }
}

/// A list-of-text column (Arrow `list<large_utf8>`).
#[derive(Debug, Clone)]
pub struct TextList {
    /// `i32` offsets into `items`, little-endian, starting at 0.
    pub offsets: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
    /// Every row's items, back to back.
    pub items: Utf8,
}

impl Default for TextList {
    fn default() -> Self {
        TextList {
            offsets: 0i32.to_le_bytes().to_vec(),
            valid: Bits::default(),
            items: Utf8::default(),
        }
    }
}

impl TextList {
    fn end(&mut self, valid: bool) {
        let at = i32::try_from(self.items.len()).unwrap_or(i32::MAX);
        self.offsets.extend_from_slice(&at.to_le_bytes());
        self.valid.push(valid);
    }
}

/// One column of a table, borrowed mutably (a binding moves its buffers out
/// instead of copying them), with its Arrow type.
#[derive(Debug)]
pub enum Column<'a> {
    /// `large_utf8`.
    Text(&'a mut Utf8),
    /// `int64`.
    Int(&'a mut Fixed),
    /// `timestamp[us, tz=UTC]`.
    Timestamp(&'a mut Fixed),
    /// `float64`.
    Float(&'a mut Fixed),
    /// `bool`.
    Bool(&'a mut Bool),
    /// `list<large_utf8>`.
    TextList(&'a mut TextList),
}

/// `sessions`: one row per file.
#[derive(Debug, Default, Clone)]
pub struct Sessions {
    pub session: Utf8,
    pub session_id: Utf8,
    pub status: Utf8,
    pub reason: Utf8,
    pub size: Fixed,
    pub mtime: Fixed,
    pub lines: Fixed,
    pub envelopes: Fixed,
    pub messages: Fixed,
    pub live_messages: Fixed,
    pub compactions: Fixed,
    pub elisions: Fixed,
    pub rewinds: Fixed,
    pub tool_operations: Fixed,
    pub pending: Fixed,
    pub first_ts: Fixed,
    pub last_ts: Fixed,
    pub last_type: Utf8,
    pub agent: Utf8,
    pub model: Utf8,
    pub meta: Utf8,
}

/// `envelopes`: one row per envelope (every line that is one).
#[derive(Debug, Default, Clone)]
pub struct Envelopes {
    pub session: Utf8,
    pub line: Fixed,
    pub id: Utf8,
    pub r#type: Utf8,
    pub ts: Fixed,
    pub bytes: Fixed,
    pub payload: Utf8,
}

/// `messages`: one row per message line, compaction summary and replacement message.
#[derive(Debug, Default, Clone)]
pub struct Messages {
    pub session: Utf8,
    pub line: Fixed,
    pub id: Utf8,
    pub source: Utf8,
    pub part: Fixed,
    pub ts: Fixed,
    pub role: Utf8,
    pub name: Utf8,
    pub text: Utf8,
    pub tool_call_id: Utf8,
    pub tool_call_ids: TextList,
    pub tool_call_names: TextList,
    pub sticky: Bool,
    pub live: Bool,
    pub live_position: Fixed,
    pub elided_line: Fixed,
    pub compacted_line: Fixed,
    pub rewound_line: Fixed,
}

/// `tool_operations`: one row per dispatched operation, plus one per settle
/// line that settles none (an unknown or already settled operation).
#[derive(Debug, Default, Clone)]
pub struct ToolOperations {
    pub session: Utf8,
    pub op_id: Utf8,
    pub call_id: Utf8,
    pub tool: Utf8,
    pub arguments_digest: Utf8,
    pub idempotency: Utf8,
    pub run_id: Utf8,
    pub round: Fixed,
    pub dispatch_line: Fixed,
    pub dispatched_ts: Fixed,
    pub settle_line: Fixed,
    pub settled_ts: Fixed,
    pub outcome: Utf8,
    pub reason: Utf8,
    pub duration: Fixed,
    pub state: Utf8,
    pub result_message_id: Utf8,
}

impl Sessions {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("session_id", Text(&mut self.session_id)),
            ("status", Text(&mut self.status)),
            ("reason", Text(&mut self.reason)),
            ("size", Int(&mut self.size)),
            ("mtime", Timestamp(&mut self.mtime)),
            ("lines", Int(&mut self.lines)),
            ("envelopes", Int(&mut self.envelopes)),
            ("messages", Int(&mut self.messages)),
            ("live_messages", Int(&mut self.live_messages)),
            ("compactions", Int(&mut self.compactions)),
            ("elisions", Int(&mut self.elisions)),
            ("rewinds", Int(&mut self.rewinds)),
            ("tool_operations", Int(&mut self.tool_operations)),
            ("pending", Int(&mut self.pending)),
            ("first_ts", Timestamp(&mut self.first_ts)),
            ("last_ts", Timestamp(&mut self.last_ts)),
            ("last_type", Text(&mut self.last_type)),
            ("agent", Text(&mut self.agent)),
            ("model", Text(&mut self.model)),
            ("meta", Text(&mut self.meta)),
        ]
    }
}

impl Envelopes {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("line", Int(&mut self.line)),
            ("id", Text(&mut self.id)),
            ("type", Text(&mut self.r#type)),
            ("ts", Timestamp(&mut self.ts)),
            ("bytes", Int(&mut self.bytes)),
            ("payload", Text(&mut self.payload)),
        ]
    }
}

impl Messages {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("line", Int(&mut self.line)),
            ("id", Text(&mut self.id)),
            ("source", Text(&mut self.source)),
            ("part", Int(&mut self.part)),
            ("ts", Timestamp(&mut self.ts)),
            ("role", Text(&mut self.role)),
            ("name", Text(&mut self.name)),
            ("text", Text(&mut self.text)),
            ("tool_call_id", Text(&mut self.tool_call_id)),
            ("tool_call_ids", TextList(&mut self.tool_call_ids)),
            ("tool_call_names", TextList(&mut self.tool_call_names)),
            ("sticky", Bool(&mut self.sticky)),
            ("live", Bool(&mut self.live)),
            ("live_position", Int(&mut self.live_position)),
            ("elided_line", Int(&mut self.elided_line)),
            ("compacted_line", Int(&mut self.compacted_line)),
            ("rewound_line", Int(&mut self.rewound_line)),
        ]
    }
}

impl ToolOperations {
    /// The columns, named, in schema order.
    pub fn columns(&mut self) -> Vec<(&'static str, Column<'_>)> {
        use Column::*;
        vec![
            ("session", Text(&mut self.session)),
            ("op_id", Text(&mut self.op_id)),
            ("call_id", Text(&mut self.call_id)),
            ("tool", Text(&mut self.tool)),
            ("arguments_digest", Text(&mut self.arguments_digest)),
            ("idempotency", Text(&mut self.idempotency)),
            ("run_id", Text(&mut self.run_id)),
            ("round", Int(&mut self.round)),
            ("dispatch_line", Int(&mut self.dispatch_line)),
            ("dispatched_ts", Timestamp(&mut self.dispatched_ts)),
            ("settle_line", Int(&mut self.settle_line)),
            ("settled_ts", Timestamp(&mut self.settled_ts)),
            ("outcome", Text(&mut self.outcome)),
            ("reason", Text(&mut self.reason)),
            ("duration", Float(&mut self.duration)),
            ("state", Text(&mut self.state)),
            ("result_message_id", Text(&mut self.result_message_id)),
        ]
    }
}

/// The rows of the four tables gathered so far, from one file or many.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub sessions: Sessions,
    pub envelopes: Envelopes,
    pub messages: Messages,
    pub tool_operations: ToolOperations,
}

impl Batch {
    /// About how many bytes the batch holds (its big columns and a guess per row).
    pub fn bytes(&self) -> usize {
        self.envelopes.payload.data.len()
            + self.messages.text.data.len()
            + (self.envelopes.line.valid.len + self.messages.line.valid.len) * 96
    }

    /// Rows in each table: sessions, envelopes, messages, tool operations.
    pub fn rows(&self) -> [usize; 4] {
        [
            self.sessions.session.len(),
            self.envelopes.session.len(),
            self.messages.session.len(),
            self.tool_operations.session.len(),
        ]
    }
}

/// Microseconds since the Unix epoch of a timestamp written as SPEC writes
/// them (`2026-08-09T13:10:08.542283Z`; 0 to 9 fraction digits, `Z` or
/// `+00:00`); None for any other text.
pub fn parse_ts(ts: &[u8]) -> Option<i64> {
    let digits = |s: &[u8]| -> Option<i64> {
        if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
            return None;
        }
        s.iter().try_fold(0i64, |n, &d| {
            n.checked_mul(10)?.checked_add(i64::from(d - b'0'))
        })
    };
    if ts.len() < 20 || ts[4] != b'-' || ts[7] != b'-' || ts[10] != b'T' {
        return None;
    }
    if ts[13] != b':' || ts[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&ts[..4])?, digits(&ts[5..7])?, digits(&ts[8..10])?);
    let (h, mi, s) = (
        digits(&ts[11..13])?,
        digits(&ts[14..16])?,
        digits(&ts[17..19])?,
    );
    let mut rest = &ts[19..];
    let mut micros = 0i64;
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 9 {
            return None;
        }
        let frac = &rest[1..1 + n];
        for k in 0..6 {
            micros = micros * 10 + frac.get(k).map_or(0, |&b| i64::from(b - b'0'));
        }
        rest = &rest[1 + n..];
    }
    if rest != b"Z" && rest != b"+00:00" {
        return None;
    }
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + s * 1_000_000 + micros)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn malformed(rec: &LineRec) -> impl Fn(JsonError) -> LoadError + '_ {
    move |e| LoadError::Line {
        line: rec.number,
        error: transcript_core::envelope::LineError::Malformed(e),
    }
}

fn slice(text: &str, at: Span) -> &str {
    text.get(at.start as usize..at.end as usize)
        .unwrap_or_default()
}

/// `line` as text: every line is checked once (with SIMD), then read through
/// slices of it, never checked again.
fn utf8<'l>(line: &'l [u8], rec: &LineRec) -> Result<&'l str, LoadError> {
    simdutf8::basic::from_utf8(line).map_err(|_| {
        malformed(rec)(JsonError {
            offset: 0,
            reason: "invalid UTF-8",
        })
    })
}

/// Where the members named `keys` are in the JSON object `value` (see
/// [`transcript_core::envelope::member_spans`]), read from text already checked.
fn members(value: &str, keys: &[&str]) -> Result<Vec<Option<Span>>, JsonError> {
    let mut out = vec![None; keys.len()];
    let mut r = Reader::new(value);
    if r.peek()? != Kind::Object {
        return Ok(out);
    }
    r.begin_object()?;
    let mut key_buf = Vec::new();
    loop {
        let wanted = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => keys.iter().position(|w| w.as_bytes() == k.as_bytes()),
        };
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        if let Some(at) = wanted {
            out[at] = Some(Span {
                start: u32::try_from(start).unwrap_or(u32::MAX),
                end: u32::try_from(r.offset()).unwrap_or(u32::MAX),
            });
        }
    }
    Ok(out)
}

/// The JSON string `value` decoded (WTF-8), or None when it is not a string.
fn string_of<'s>(value: &'s str, scratch: &'s mut Vec<u8>) -> Result<Option<&'s [u8]>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::String {
        return Ok(None);
    }
    let s = r.string(scratch)?;
    Ok(Some(match s {
        JStr::Text(t) => t.as_bytes(),
        JStr::Wtf8(b) => b,
    }))
}

/// The JSON string `value`, owned, or None.
fn owned_string(value: Option<&str>) -> Result<Option<Vec<u8>>, JsonError> {
    let Some(value) = value else { return Ok(None) };
    let mut scratch = Vec::new();
    Ok(string_of(value, &mut scratch)?.map(<[u8]>::to_vec))
}

/// The JSON number `value` as an integer, or None (a float, or not a number).
fn int_of(value: &str) -> Result<Option<i64>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::Number {
        return Ok(None);
    }
    Ok(match r.number()? {
        Number::Int(text) => text.parse().ok(),
        Number::Float(_) => None,
    })
}

/// The JSON number `value` as a float, or None (not a number).
fn float_of(value: &str) -> Result<Option<f64>, JsonError> {
    let mut r = Reader::new(value);
    if r.peek()? != Kind::Number {
        return Ok(None);
    }
    Ok(match r.number()? {
        Number::Int(text) | Number::Float(text) => text.parse().ok(),
    })
}

fn is_null(value: &str) -> bool {
    value == "null"
}

/// The spans of the items of the JSON array `value` (empty when it is not one).
fn items_of(value: &str) -> Result<Vec<Span>, JsonError> {
    let mut r = Reader::new(value);
    let mut out = Vec::new();
    if r.peek()? != Kind::Array {
        return Ok(out);
    }
    r.begin_array()?;
    while r.next_item()? {
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        out.push(Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(r.offset()).unwrap_or(u32::MAX),
        });
    }
    Ok(out)
}

fn span_of(start: usize, end: usize) -> Span {
    Span {
        start: u32::try_from(start).unwrap_or(u32::MAX),
        end: u32::try_from(end).unwrap_or(u32::MAX),
    }
}

/// The string `r` is at, decoded and owned; None (and the value skipped) when
/// it is not a string.
fn read_string(r: &mut Reader<'_>, scratch: &mut Vec<u8>) -> Result<Option<Vec<u8>>, JsonError> {
    if r.peek()? != Kind::String {
        r.skip_value()?;
        return Ok(None);
    }
    Ok(Some(r.string(scratch)?.as_bytes().to_vec()))
}

/// What a message row takes from a message payload.
#[derive(Debug, Default)]
struct MessageFields {
    role: Option<Vec<u8>>,
    name: Option<Vec<u8>>,
    tool_call_id: Option<Vec<u8>>,
    // The content's text is at the end of the text column's data (see `walk_message`).
    has_text: bool,
    // That text may hold a lone surrogate (WTF-8); else it is UTF-8, decoded
    // from a `str`, and not checked again.
    text_wtf8: bool,
    // Where `tool_calls` is in the text walked.
    tool_calls: Option<Span>,
    sticky: bool,
}

/// Reads the message payload `r` is at (in `text`, the text `r` reads),
/// decoding the members a row takes as it meets them; the content's text is
/// appended to `out` (the text column's data: the row is ended by the caller,
/// see [`FileState::message`]). `r` ends past the payload.
fn walk_message(
    r: &mut Reader<'_>,
    text: &str,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<MessageFields, JsonError> {
    let mut f = MessageFields::default();
    let row_start = out.len();
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(f);
    }
    r.begin_object()?;
    let mut key_buf = Vec::new();
    let (mut sticky, mut sysprompt, mut depth) = (false, false, false);
    loop {
        let key = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => k.as_bytes().to_owned(),
        };
        match &key[..] {
            b"role" => f.role = read_string(r, scratch)?,
            b"name" => f.name = read_string(r, scratch)?,
            b"tool_call_id" => f.tool_call_id = read_string(r, scratch)?,
            b"content" => {
                let kind = r.peek()?;
                // A later `content` wins (duplicate keys): the earlier one's text goes.
                out.truncate(row_start);
                match kind {
                    Kind::String => {
                        f.text_wtf8 = r.string_into(out)?;
                        f.has_text = true;
                    }
                    Kind::Null => {
                        r.null()?;
                        f.has_text = false;
                    }
                    _ => {
                        let start = r.offset();
                        r.skip_value()?;
                        let mut built = Vec::new();
                        f.has_text =
                            content_text(slice(text, span_of(start, r.offset())), &mut built)?;
                        out.extend_from_slice(&built);
                        f.text_wtf8 = true;
                    }
                }
            }
            b"tool_calls" => {
                r.peek()?;
                let start = r.offset();
                r.skip_value()?;
                f.tool_calls = Some(span_of(start, r.offset()));
            }
            b"sticky" | b"sysprompt" => {
                let on = match r.peek()? {
                    Kind::Bool => r.boolean()?,
                    _ => {
                        r.skip_value()?;
                        false
                    }
                };
                if key == b"sticky" {
                    sticky = on;
                } else {
                    sysprompt = on;
                }
            }
            b"depth" => {
                depth = r.peek()? != Kind::Null;
                r.skip_value()?;
            }
            _ => r.skip_value()?,
        }
    }
    f.sticky = sticky || sysprompt || depth;
    Ok(f)
}

/// A message's content as text to read: a string as it is; a list of parts
/// with each text part's `text` and `[type]` for any other part, joined by
/// newlines; null as None; any other value as its JSON text.
fn content_text(content: &str, out: &mut Vec<u8>) -> Result<bool, JsonError> {
    out.clear();
    let mut scratch = Vec::new();
    let mut r = Reader::new(content);
    match r.peek()? {
        Kind::Null => return Ok(false),
        Kind::String => {
            let s = r.string(&mut scratch)?;
            out.extend_from_slice(s.as_bytes());
        }
        Kind::Array => {
            for (k, at) in items_of(content)?.into_iter().enumerate() {
                if k > 0 {
                    out.push(b'\n');
                }
                let item = slice(content, at);
                let found = members(item, &["type", "text"])?;
                let kind = match found[0] {
                    Some(s) => owned_string(Some(slice(item, s)))?,
                    None => None,
                };
                let text = match found[1] {
                    Some(s) => string_of(slice(item, s), &mut scratch)?,
                    None => None,
                };
                match (kind.as_deref(), text) {
                    (Some(b"text"), Some(t)) => out.extend_from_slice(t),
                    (Some(kind), _) => {
                        out.push(b'[');
                        out.extend_from_slice(kind);
                        out.push(b']');
                    }
                    (None, _) if item.starts_with('{') => out.extend_from_slice(b"[part]"),
                    (None, _) => out.extend_from_slice(item.as_bytes()),
                }
            }
        }
        _ => out.extend_from_slice(content.as_bytes()),
    }
    Ok(true)
}

/// A dispatched operation (or an unmatched settle) waiting for the end of its
/// file to be written as a `tool_operations` row.
#[derive(Debug, Default, Clone)]
struct Op {
    op_id: Option<Vec<u8>>,
    call_id: Option<Vec<u8>>,
    tool: Option<Vec<u8>>,
    arguments_digest: Option<Vec<u8>>,
    idempotency: Option<Vec<u8>>,
    run_id: Option<Vec<u8>>,
    round: Option<i64>,
    dispatch: Option<u32>,
    dispatched_ts: Option<i64>,
    settle: Option<u32>,
    settled_ts: Option<i64>,
    outcome: Option<Vec<u8>>,
    reason: Option<Vec<u8>>,
    duration: Option<f64>,
}

/// What the file's last row needs: counts and the first and last envelopes.
#[derive(Debug, Default, Clone)]
struct Totals {
    envelopes: i64,
    messages: i64,
    compactions: i64,
    elisions: i64,
    rewinds: i64,
    dispatches: i64,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    last_type: Option<String>,
}

/// One file's export in progress: where the pass is, and what it has seen.
#[derive(Debug)]
pub struct FileState {
    session: Vec<u8>,
    next: usize,
    // Replayed files only: the live position of each whole line, and of each
    // replacement message.
    live_pos: Vec<u32>,
    part_pos: HashMap<Source, u32>,
    ops: Vec<Op>,
    // Dispatch line -> its row in `ops` (replayed), or dispatch id -> row (lenient).
    op_by_line: HashMap<u32, usize>,
    // Operation ids come from the file: a seeded hash (SipHash), not Fx.
    op_by_id: std::collections::HashMap<Vec<u8>, usize>,
    // The ids of the lines holding the result of a pending operation.
    result_ids: HashMap<u32, Vec<u8>>,
    totals: Totals,
    meta: Option<Vec<u8>>,
    session_id: Option<Vec<u8>>,
    agent: Option<Vec<u8>>,
    model: Option<Vec<u8>>,
    started: Option<i64>,
    text: Vec<u8>,
    scratch: Vec<u8>,
}

const NOT_LIVE: u32 = u32::MAX;

/// Where the rows of one file come from: the envelope list, the file, and
/// the replay when load accepts the file.
pub struct Input<'a, R: ReadAt + ?Sized> {
    /// Every envelope of the file (load's index, or peek's lenient one).
    pub index: &'a Index,
    /// The file.
    pub src: &'a R,
    /// The core's replay (with its history), or None when load refuses the file.
    pub replay: Option<&'a Transcript>,
    /// The bytes of the file read (a last line without its `\n` is one byte shorter).
    pub end: u64,
}

impl<R: ReadAt + ?Sized> Clone for Input<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: ReadAt + ?Sized> Copy for Input<'_, R> {}

impl FileState {
    /// Starts the export of one file: `session` is the key its rows carry (its
    /// path). Reads the first envelope, for [`FileState::started`].
    pub fn new<R: ReadAt + ?Sized>(session: &[u8], from: Input<'_, R>) -> Result<Self, LoadError> {
        let mut s = FileState {
            session: session.to_vec(),
            next: 0,
            live_pos: Vec::new(),
            part_pos: HashMap::default(),
            ops: Vec::new(),
            op_by_line: HashMap::default(),
            op_by_id: std::collections::HashMap::new(),
            result_ids: HashMap::default(),
            totals: Totals::default(),
            meta: None,
            session_id: None,
            agent: None,
            model: None,
            started: None,
            text: Vec::new(),
            scratch: Vec::new(),
        };
        if let Some(t) = from.replay {
            s.live_pos = vec![NOT_LIVE; from.index.len()];
            for (k, m) in t.live.iter().enumerate() {
                let k = u32::try_from(k).unwrap_or(NOT_LIVE);
                if m.part == WHOLE {
                    if let Some(p) = s.live_pos.get_mut(m.line as usize) {
                        *p = k;
                    }
                } else {
                    s.part_pos.insert(m.source(), k);
                }
            }
            for op in t.pending.values() {
                if let Some(r) = op.result {
                    s.result_ids.insert(r, Vec::new());
                }
            }
        }
        if let Some(rec) = &from.index.get(0) {
            if rec.kind == EnvelopeType::SessionMeta {
                let mut buf = Vec::new();
                let line = utf8(from.index.read_line(from.src, 0, &mut buf)?, rec)?;
                let spans = members(line, &["id", "payload", "ts"]).map_err(malformed(rec))?;
                s.session_id =
                    owned_string(spans[0].map(|at| slice(line, at))).map_err(malformed(rec))?;
                if let Some(at) = spans[1] {
                    let payload = slice(line, at);
                    s.meta = Some(payload.as_bytes().to_vec());
                    let m = members(payload, &["agent", "model"]).map_err(malformed(rec))?;
                    s.agent =
                        owned_string(m[0].map(|at| slice(payload, at))).map_err(malformed(rec))?;
                    s.model =
                        owned_string(m[1].map(|at| slice(payload, at))).map_err(malformed(rec))?;
                }
                let ts =
                    owned_string(spans[2].map(|at| slice(line, at))).map_err(malformed(rec))?;
                s.started = ts.as_deref().and_then(parse_ts);
            }
        }
        Ok(s)
    }

    /// The session-meta's timestamp, in microseconds since the epoch, when it
    /// has one that parses: the day the export files the session under.
    pub fn started(&self) -> Option<i64> {
        self.started
    }

    /// Whether every envelope has been read.
    pub fn done(&self, index: &Index) -> bool {
        self.next >= index.len()
    }

    /// Adds the rows of the next envelopes to `batch` until every envelope is
    /// read (returns true) or `batch` holds `budget` bytes (returns false:
    /// call again after taking the batch's rows).
    pub fn fill<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: Input<'_, R>,
        budget: usize,
    ) -> Result<bool, LoadError> {
        const WINDOW: usize = 4 << 20;
        let mut window = Window::default();
        // Room for what this call adds, reserved once (growing by doubling
        // would copy the payloads again and again).
        if let Some(rec) = from.index.get(self.next) {
            let rest = usize::try_from(from.end.saturating_sub(rec.offset)).unwrap_or(usize::MAX);
            let room = rest.min(budget.saturating_sub(batch.bytes()));
            batch.envelopes.payload.data.reserve(room);
            batch.messages.text.data.reserve(room / 2);
        }
        while let Some(rec) = &from.index.get(self.next) {
            let i = self.next;
            // A window no bigger than what is left of the file: a small file's is small.
            let left = usize::try_from(from.end.saturating_sub(rec.offset)).unwrap_or(WINDOW);
            window.read(from.src, rec, WINDOW.min(left))?;
            self.envelope(batch, &from, i, rec, window.line(rec))?;
            self.next += 1;
            if batch.bytes() >= budget && self.next < from.index.len() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn envelope<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        i: usize,
        rec: &LineRec,
        bytes: &[u8],
    ) -> Result<(), LoadError> {
        let bytes = utf8(bytes, rec)?;
        let bad = malformed(rec);
        let line_no = i64::try_from(rec.number).unwrap_or(i64::MAX);
        // One pass over the line: the id, the ts, where the payload is and, for
        // a message, its members (decoded as they are met, never scanned twice).
        let mut r = Reader::new(bytes);
        let (mut id, mut ts_text, mut at, mut fields) = (None, None, None, None);
        if r.peek().map_err(&bad)? == Kind::Object {
            r.begin_object().map_err(&bad)?;
            let mut key_buf = Vec::new();
            loop {
                let key = match r.next_key(&mut key_buf).map_err(&bad)? {
                    None => break,
                    Some(k) => k.as_bytes().to_owned(),
                };
                match &key[..] {
                    b"id" => id = read_string(&mut r, &mut self.scratch).map_err(&bad)?,
                    b"ts" => ts_text = read_string(&mut r, &mut self.scratch).map_err(&bad)?,
                    b"payload" => {
                        r.peek().map_err(&bad)?;
                        let start = r.offset();
                        if rec.kind == EnvelopeType::Message {
                            let text = &mut batch.messages.text;
                            text.data.truncate(text.row_start());
                            let f = walk_message(&mut r, bytes, &mut text.data, &mut self.scratch);
                            fields = Some(f.map_err(&bad)?);
                        } else {
                            r.skip_value().map_err(&bad)?;
                        }
                        at = Some(span_of(start, r.offset()));
                    }
                    _ => r.skip_value().map_err(&bad)?,
                }
            }
        }
        let ts = ts_text.as_deref().and_then(parse_ts);
        let payload = at.map_or("null", |at| slice(bytes, at));
        let kind = from.index.type_name(i).unwrap_or("");
        let i32_ = u32::try_from(i).unwrap_or(u32::MAX);

        let e = &mut batch.envelopes;
        e.session.push_wtf8(&self.session);
        e.line.push_i64(Some(line_no));
        e.id.push_opt(id.as_deref());
        e.r#type.push_str(kind);
        e.ts.push_i64(ts);
        let size = from.index.size_of(i, from.end).unwrap_or(0);
        e.bytes.push_i64(i64::try_from(size).ok());
        // The payload as written: the line is valid UTF-8 (the reader checked it).
        e.payload.push_str(payload);

        let t = &mut self.totals;
        t.envelopes += 1;
        if t.envelopes == 1 {
            t.first_ts = ts;
        }
        t.last_ts = ts;
        t.last_type = Some(kind.to_owned());
        if let Some(slot) = self.result_ids.get_mut(&i32_) {
            *slot = id.clone().unwrap_or_default();
        }

        match rec.kind {
            EnvelopeType::Message => {
                self.totals.messages += 1;
                let at = Source::whole(i32_);
                let fields = fields.unwrap_or_default();
                self.message(
                    batch,
                    from,
                    at,
                    line_no,
                    id.as_deref(),
                    ts,
                    "message",
                    bytes,
                    fields,
                )
                .map_err(&bad)?;
            }
            EnvelopeType::Compaction => {
                self.totals.compactions += 1;
                let p = members(payload, &["summary", "replacement"]).map_err(&bad)?;
                match p[1] {
                    Some(r) if !is_null(slice(payload, r)) => {
                        let list = slice(payload, r);
                        for (k, item) in items_of(list).map_err(&bad)?.into_iter().enumerate() {
                            let k = u32::try_from(k).unwrap_or(WHOLE - 1);
                            let mut part_id = id.clone().unwrap_or_default();
                            part_id.push(b':');
                            part_id.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
                            let at = Source {
                                line: i32_,
                                part: k,
                            };
                            let item = slice(list, item);
                            let mut r = Reader::new(item);
                            let fields = walk_message(
                                &mut r,
                                item,
                                &mut batch.messages.text.data,
                                &mut self.scratch,
                            )
                            .map_err(&bad)?;
                            self.message(
                                batch,
                                from,
                                at,
                                line_no,
                                Some(&part_id),
                                ts,
                                "replacement",
                                item,
                                fields,
                            )
                            .map_err(&bad)?;
                        }
                    }
                    _ => {
                        // The summary, as replay splices it: {"role": "user", "content": summary}.
                        let at = Source::whole(i32_);
                        self.summary(
                            batch,
                            from,
                            at,
                            line_no,
                            id.as_deref(),
                            ts,
                            p[0].map(|s| slice(payload, s)),
                        )
                        .map_err(&bad)?;
                    }
                }
            }
            EnvelopeType::Elision => self.totals.elisions += 1,
            EnvelopeType::Rewind => self.totals.rewinds += 1,
            EnvelopeType::ToolDispatched => {
                self.totals.dispatches += 1;
                let keys = [
                    "call-id",
                    "tool",
                    "arguments-digest",
                    "idempotency",
                    "run-id",
                    "round",
                ];
                let p = members(payload, &keys).map_err(&bad)?;
                let get = |k: usize| p[k].map(|at| slice(payload, at));
                let op = Op {
                    op_id: id.clone(),
                    call_id: owned_string(get(0)).map_err(&bad)?,
                    tool: owned_string(get(1)).map_err(&bad)?,
                    arguments_digest: owned_string(get(2)).map_err(&bad)?,
                    idempotency: owned_string(get(3)).map_err(&bad)?,
                    run_id: owned_string(get(4)).map_err(&bad)?,
                    round: match get(5) {
                        Some(v) => int_of(v).map_err(&bad)?,
                        None => None,
                    },
                    dispatch: Some(i32_),
                    dispatched_ts: ts,
                    ..Op::default()
                };
                let row = self.ops.len();
                if from.replay.is_some() {
                    self.op_by_line.insert(i32_, row);
                } else if let Some(id) = &id {
                    self.op_by_id.insert(id.clone(), row);
                }
                self.ops.push(op);
            }
            EnvelopeType::ToolSettled => {
                let p =
                    members(payload, &["op-id", "outcome", "reason", "duration"]).map_err(&bad)?;
                let get = |k: usize| p[k].map(|at| slice(payload, at));
                let op_id = owned_string(get(0)).map_err(&bad)?;
                let outcome = owned_string(get(1)).map_err(&bad)?;
                let reason = match get(2) {
                    Some(v) if !is_null(v) => match owned_string(Some(v)).map_err(&bad)? {
                        Some(s) => Some(s),
                        None => Some(v.as_bytes().to_vec()),
                    },
                    _ => None,
                };
                let duration = match get(3) {
                    Some(v) => float_of(v).map_err(&bad)?,
                    None => None,
                };
                // The dispatch this settle settles, as replay decided (or by id, leniently).
                let named = op_id.as_deref().and_then(|op| match from.replay {
                    Some(t) => t.line_of(op).and_then(|d| self.op_by_line.get(&d).copied()),
                    None => self.op_by_id.get(op).copied(),
                });
                let settles = named.filter(|&row| match from.replay {
                    Some(t) => {
                        self.ops[row]
                            .dispatch
                            .and_then(|d| t.history.as_ref()?.settled_by.get(&d).copied())
                            == Some(i32_)
                    }
                    None => self.ops[row].settle.is_none(),
                });
                let row = match settles {
                    Some(row) => row,
                    None => {
                        let tool = named.and_then(|r| self.ops[r].tool.clone());
                        self.ops.push(Op {
                            op_id: op_id.clone(),
                            tool,
                            ..Op::default()
                        });
                        self.ops.len() - 1
                    }
                };
                let op = &mut self.ops[row];
                op.settle = Some(i32_);
                op.settled_ts = ts;
                op.outcome = outcome;
                op.reason = reason;
                op.duration = duration;
            }
            _ => {}
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn message<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
        line_no: i64,
        id: Option<&[u8]>,
        ts: Option<i64>,
        source: &str,
        text: &str,
        fields: MessageFields,
    ) -> Result<(), JsonError> {
        let m = &mut batch.messages;
        m.session.push_wtf8(&self.session);
        m.line.push_i64(Some(line_no));
        m.id.push_opt(id);
        m.source.push_str(source);
        m.part
            .push_i64((at.part != WHOLE).then_some(i64::from(at.part)));
        m.ts.push_i64(ts);
        m.role.push_opt(fields.role.as_deref());
        m.name.push_opt(fields.name.as_deref());
        m.tool_call_id.push_opt(fields.tool_call_id.as_deref());
        // The content's text is already at the end of the column's data.
        let row_start = m.text.row_start();
        match (fields.has_text, fields.text_wtf8) {
            (false, _) => {
                m.text.data.truncate(row_start);
                m.text.push_null();
            }
            (true, true) => {
                let wtf8 = m.text.data.split_off(row_start);
                m.text.push_wtf8(&wtf8);
            }
            (true, false) => m.text.end_row(),
        }
        let calls = match fields.tool_calls {
            Some(at) => {
                let v = slice(text, at);
                Some((v, items_of(v)?))
            }
            None => None,
        };
        match &calls {
            Some((v, items)) if v.starts_with('[') => {
                for &item in items {
                    let call = slice(v, item);
                    let s = members(call, &["id", "function"])?;
                    let cid = match s[0] {
                        Some(x) => {
                            string_of(slice(call, x), &mut self.scratch)?.map(<[u8]>::to_vec)
                        }
                        None => None,
                    };
                    m.tool_call_ids.items.push_opt(cid.as_deref());
                    let name = match s[1] {
                        Some(f) => {
                            let f = slice(call, f);
                            match members(f, &["name"])?[0] {
                                Some(n) => {
                                    string_of(slice(f, n), &mut self.scratch)?.map(<[u8]>::to_vec)
                                }
                                None => None,
                            }
                        }
                        None => None,
                    };
                    m.tool_call_names.items.push_opt(name.as_deref());
                }
                m.tool_call_ids.end(true);
                m.tool_call_names.end(true);
            }
            _ => {
                m.tool_call_ids.end(false);
                m.tool_call_names.end(false);
            }
        }
        m.sticky.push(Some(fields.sticky));
        self.replayed_columns(batch, from, at);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn summary<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
        line_no: i64,
        id: Option<&[u8]>,
        ts: Option<i64>,
        summary: Option<&str>,
    ) -> Result<(), JsonError> {
        let m = &mut batch.messages;
        m.session.push_wtf8(&self.session);
        m.line.push_i64(Some(line_no));
        m.id.push_opt(id);
        m.source.push_str("summary");
        m.part.push_i64(None);
        m.ts.push_i64(ts);
        m.role.push_str("user");
        m.name.push_null();
        let has_text = match summary {
            Some(v) => content_text(v, &mut self.text)?,
            None => false,
        };
        m.text.push_opt(has_text.then_some(&self.text[..]));
        m.tool_call_id.push_null();
        m.tool_call_ids.end(false);
        m.tool_call_names.end(false);
        m.sticky.push(Some(false));
        self.replayed_columns(batch, from, at);
        Ok(())
    }

    // live, live_position, elided_line, compacted_line, rewound_line: replay's.
    fn replayed_columns<R: ReadAt + ?Sized>(
        &self,
        batch: &mut Batch,
        from: &Input<'_, R>,
        at: Source,
    ) {
        let m = &mut batch.messages;
        let Some(t) = from.replay else {
            m.live.push(None);
            m.live_position.push_i64(None);
            m.elided_line.push_i64(None);
            m.compacted_line.push_i64(None);
            m.rewound_line.push_i64(None);
            return;
        };
        let pos = if at.part == WHOLE {
            self.live_pos
                .get(at.line as usize)
                .copied()
                .filter(|&p| p != NOT_LIVE)
        } else {
            self.part_pos.get(&at).copied()
        };
        m.live.push(Some(pos.is_some()));
        m.live_position.push_i64(pos.map(i64::from));
        let number = |l: Option<&u32>| {
            l.and_then(|&l| from.index.get(l as usize))
                .and_then(|r| i64::try_from(r.number).ok())
        };
        let h = t.history.as_ref();
        m.elided_line
            .push_i64(number(h.and_then(|h| h.elided_by.get(&at))));
        m.compacted_line
            .push_i64(number(h.and_then(|h| h.compacted_by.get(&at))));
        m.rewound_line
            .push_i64(number(h.and_then(|h| h.rewound_by.get(&at))));
    }

    /// Adds the file's `tool_operations` rows and its `sessions` row, once
    /// every envelope is read. `status`, `reason`, `size`, `mtime` (µs since
    /// the epoch) and `lines` are what the caller found the file to be.
    #[allow(clippy::too_many_arguments)]
    pub fn finish<R: ReadAt + ?Sized>(
        &mut self,
        batch: &mut Batch,
        from: Input<'_, R>,
        status: &str,
        reason: Option<&str>,
        size: i64,
        mtime: Option<i64>,
        lines: i64,
    ) {
        let number = |l: Option<u32>| {
            l.and_then(|l| from.index.get(l as usize))
                .and_then(|r| i64::try_from(r.number).ok())
        };
        let o = &mut batch.tool_operations;
        for op in std::mem::take(&mut self.ops) {
            o.session.push_wtf8(&self.session);
            o.op_id.push_opt(op.op_id.as_deref());
            o.call_id.push_opt(op.call_id.as_deref());
            o.tool.push_opt(op.tool.as_deref());
            o.arguments_digest.push_opt(op.arguments_digest.as_deref());
            o.idempotency.push_opt(op.idempotency.as_deref());
            o.run_id.push_opt(op.run_id.as_deref());
            o.round.push_i64(op.round);
            o.dispatch_line.push_i64(number(op.dispatch));
            o.dispatched_ts.push_i64(op.dispatched_ts);
            o.settle_line.push_i64(number(op.settle));
            o.settled_ts.push_i64(op.settled_ts);
            o.outcome.push_opt(op.outcome.as_deref());
            o.reason.push_opt(op.reason.as_deref());
            o.duration.push_f64(op.duration);
            let pending = match (from.replay, op.dispatch) {
                (Some(t), Some(d)) => t.pending.get(&d),
                _ => None,
            };
            let state = match (from.replay, op.dispatch, pending) {
                (None, _, _) => None,
                (Some(_), None, _) => Some("unmatched-settle"),
                (Some(_), Some(_), Some(p)) if p.result.is_some() => Some("result-persisted"),
                (Some(_), Some(_), Some(_)) => Some("dispatched"),
                (Some(_), Some(_), None) => Some("settled"),
            };
            match state {
                Some(s) => o.state.push_str(s),
                None => o.state.push_null(),
            }
            let result = pending
                .and_then(|p| p.result)
                .and_then(|r| self.result_ids.get(&r));
            o.result_message_id.push_opt(result.map(|v| &v[..]));
        }
        let s = &mut batch.sessions;
        let t = &self.totals;
        s.session.push_wtf8(&self.session);
        s.session_id.push_opt(self.session_id.as_deref());
        s.status.push_str(status);
        match reason {
            Some(r) => s.reason.push_str(r),
            None => s.reason.push_null(),
        }
        s.size.push_i64(Some(size));
        s.mtime.push_i64(mtime);
        s.lines.push_i64(Some(lines));
        s.envelopes.push_i64(Some(t.envelopes));
        s.messages.push_i64(Some(t.messages));
        s.live_messages.push_i64(
            from.replay
                .map(|r| i64::try_from(r.live.len()).unwrap_or(i64::MAX)),
        );
        s.compactions.push_i64(Some(t.compactions));
        s.elisions.push_i64(Some(t.elisions));
        s.rewinds.push_i64(Some(t.rewinds));
        s.tool_operations.push_i64(Some(t.dispatches));
        s.pending.push_i64(
            from.replay
                .map(|r| i64::try_from(r.pending.len()).unwrap_or(i64::MAX)),
        );
        s.first_ts.push_i64(t.first_ts);
        s.last_ts.push_i64(t.last_ts);
        match &t.last_type {
            Some(k) => s.last_type.push_str(k),
            None => s.last_type.push_null(),
        }
        s.agent.push_opt(self.agent.as_deref());
        s.model.push_opt(self.model.as_deref());
        s.meta.push_opt(self.meta.as_deref());
    }
}

/// A window of the file, read a few MiB at a time, that the envelopes are
/// sliced from in file order.
#[derive(Default)]
struct Window {
    buf: Vec<u8>,
    // The bytes of `buf` read (from `start`).
    len: usize,
    start: u64,
}

impl Window {
    fn read<R: ReadAt + ?Sized>(
        &mut self,
        src: &R,
        rec: &LineRec,
        size: usize,
    ) -> Result<(), LoadError> {
        let end = rec.offset + u64::from(rec.len);
        if rec.offset >= self.start && end <= self.start + self.len as u64 {
            return Ok(());
        }
        let want = size.max(rec.len as usize);
        // Grown (and zeroed) once, not again on every read.
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let mut filled = 0;
        while filled < want {
            let n = src.read_at(&mut self.buf[filled..want], rec.offset + filled as u64)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        self.len = filled;
        self.start = rec.offset;
        if filled < rec.len as usize {
            return Err(LoadError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            )));
        }
        Ok(())
    }

    fn line(&self, rec: &LineRec) -> &[u8] {
        let at = usize::try_from(rec.offset - self.start).unwrap_or(usize::MAX);
        self.buf[..self.len]
            .get(at..at + rec.len as usize)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_as_spec_writes_them() {
        assert_eq!(parse_ts(b"1970-01-01T00:00:00.000000Z"), Some(0));
        assert_eq!(
            parse_ts(b"2026-08-09T13:10:08.542283Z"),
            Some(1_786_281_008_542_283)
        );
        assert_eq!(
            parse_ts(b"2026-08-09T13:10:08Z"),
            Some(1_786_281_008_000_000)
        );
        assert_eq!(
            parse_ts(b"2026-08-09T13:10:08.5+00:00"),
            Some(1_786_281_008_500_000)
        );
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
        assert_eq!(
            (b.bytes.as_slice(), b.len, b.unset),
            (&[0b0000_1101, 1][..], 9, 5)
        );
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
        let input = Input {
            index: &t.index,
            src,
            replay: Some(&t),
            end: text.len() as u64,
        };
        let mut batch = Batch::default();
        let Ok(mut f) = FileState::new(b"s.jsonl", input) else {
            unreachable!()
        };
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
        let input = Input {
            index: &t.index,
            src,
            replay: Some(&t),
            end: text.len() as u64,
        };
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
}
