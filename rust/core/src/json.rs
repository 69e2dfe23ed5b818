//! A strict, pull-style JSON reader over one line's bytes.
//!
//! It accepts exactly RFC 8259 JSON, the way Python's `json.loads` reads it:
//! any whitespace, key order and escapes; lone surrogate escapes (`"\ud800"`)
//! are kept, so decoded strings are WTF-8 (UTF-8 that may hold surrogates); no
//! `NaN`/`Infinity`; control characters inside strings are refused. Nesting is
//! limited to [`MAX_DEPTH`] containers, so hostile input fails instead of
//! overflowing the stack.
//!
//! The caller drives it: [`Reader::peek`] says what comes next, and one method
//! per kind reads it. [`Reader::skip_value`] validates a value without building
//! anything, which is what load does for the parts of a payload replay never
//! looks at.

use std::fmt;

use crate::canonical::{CLASS, ESCAPE};

/// The deepest nesting of arrays and objects read or written (512 containers).
pub const MAX_DEPTH: usize = 512;

/// The most digits an int may have: Python's own limit on int/str conversion.
pub const MAX_INT_DIGITS: usize = 4300;

/// Why a line is not one JSON value, and the byte offset where reading stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input.
    pub offset: usize,
    /// What was wrong there.
    pub reason: &'static str,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

impl std::error::Error for JsonError {}

/// What the next value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// a number
    Number,
    /// a string
    String,
    /// `[ … ]`
    Array,
    /// `{ … }`
    Object,
}

/// A number's text, already checked against the JSON grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Number<'a> {
    /// No fraction and no exponent: an integer of any size.
    Int(&'a str),
    /// A fraction or an exponent: a float.
    Float(&'a str),
}

/// A decoded string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JStr<'s> {
    /// Valid UTF-8 (the common case).
    Text(&'s str),
    /// WTF-8: holds at least one lone surrogate, encoded as three bytes.
    Wtf8(&'s [u8]),
}

impl<'s> JStr<'s> {
    /// The bytes (UTF-8, or WTF-8 for [`JStr::Wtf8`]).
    pub fn as_bytes(&self) -> &'s [u8] {
        match self {
            JStr::Text(s) => s.as_bytes(),
            JStr::Wtf8(b) => b,
        }
    }
}

/// Parses a float's text as Python's `float()` does, correctly rounded; a value
/// too large for a double (`1e400`) is refused rather than read as infinity,
/// because an infinity cannot be written back.
pub fn parse_float(text: &str) -> Result<f64, &'static str> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err("number out of range for a double"),
        Err(_) => Err("invalid number"),
    }
}

/// The pull reader. Create one per value with [`Reader::new`].
pub struct Reader<'a> {
    // The same bytes twice: as text, so slices of it are known UTF-8 without
    // checking them again, and as bytes, to scan.
    text: &'a str,
    input: &'a [u8],
    pos: usize,
    depth: usize,
    // True right after `[` or `{`: the next item may be the closing bracket and
    // must not be preceded by a comma.
    first: bool,
    // Whether `skip_value` refuses numbers Python cannot hold (see there).
    check_numbers: bool,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Reader { text, input: text.as_bytes(), pos: 0, depth: 0, first: false, check_numbers: true }
    }

    /// A reader at the start of `bytes`, which must be UTF-8: checked here, once,
    /// with SIMD, instead of string by string.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self, JsonError> {
        match simdutf8::compat::from_utf8(bytes) {
            Ok(text) => Ok(Self::new(text)),
            Err(e) => Err(JsonError { offset: e.valid_up_to(), reason: "invalid UTF-8" }),
        }
    }

    /// The byte offset reached so far.
    pub fn offset(&self) -> usize {
        self.pos
    }

    fn err<T>(&self, reason: &'static str) -> Result<T, JsonError> {
        Err(JsonError { offset: self.pos, reason })
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.input.get(self.pos) {
            if b == b' ' || b == b'\n' || b == b'\r' || b == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// What the next value is; whitespace before it is skipped.
    pub fn peek(&mut self) -> Result<Kind, JsonError> {
        self.skip_ws();
        match self.input.get(self.pos) {
            Some(b'{') => Ok(Kind::Object),
            Some(b'[') => Ok(Kind::Array),
            Some(b'"') => Ok(Kind::String),
            Some(b't') | Some(b'f') => Ok(Kind::Bool),
            Some(b'n') => Ok(Kind::Null),
            Some(b'-') | Some(b'0'..=b'9') => Ok(Kind::Number),
            Some(_) => self.err("expected a value"),
            None => self.err("unexpected end of input"),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), JsonError> {
        match self.input.get(self.pos..self.pos + word.len()) {
            Some(s) if s == word => {
                self.pos += word.len();
                Ok(())
            }
            _ => self.err("invalid literal"),
        }
    }

    /// Reads `null`.
    pub fn null(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        self.literal(b"null")
    }

    /// Reads `true` or `false`.
    pub fn boolean(&mut self) -> Result<bool, JsonError> {
        self.skip_ws();
        match self.input.get(self.pos) {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => self.err("expected true or false"),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.input.get(self.pos), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Reads a number, checking its grammar; the text is returned as it stands.
    pub fn number(&mut self) -> Result<Number<'a>, JsonError> {
        self.skip_ws();
        let start = self.pos;
        if self.input.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.input.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.err("invalid number"),
        }
        let mut float = false;
        if self.input.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
            float = true;
        }
        if matches!(self.input.get(self.pos), Some(b'e') | Some(b'E')) {
            self.pos += 1;
            if matches!(self.input.get(self.pos), Some(b'+') | Some(b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
            float = true;
        }
        // The grammar above admits only ASCII, so this cannot fail.
        let text =
            std::str::from_utf8(&self.input[start..self.pos]).or(self.err("invalid number"))?;
        Ok(if float { Number::Float(text) } else { Number::Int(text) })
    }

    // Reads the `"` that opens a string.
    fn open_string(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.input.get(self.pos) != Some(&b'"') {
            return self.err("expected a string");
        }
        self.pos += 1;
        Ok(())
    }

    /// Reads a string. Without escapes the result borrows the input; with them
    /// it is decoded into `scratch` (cleared first).
    pub fn string<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<JStr<'s>, JsonError>
    where
        'a: 's,
    {
        self.open_string()?;
        let start = self.pos;
        self.pos = plain_run_from(self.input, self.pos);
        if self.input.get(self.pos) == Some(&b'"') {
            self.pos += 1;
            // The input is UTF-8 and a run starts and ends next to ASCII
            // bytes, so this slice is always on character boundaries.
            let text = self.text.get(start..self.pos - 1);
            return text
                .map(JStr::Text)
                .ok_or(JsonError { offset: start, reason: "invalid UTF-8 in string" });
        }
        scratch.clear();
        scratch.extend_from_slice(&self.input[start..self.pos]);
        if self.string_rest(scratch)? {
            return Ok(JStr::Wtf8(scratch.as_slice()));
        }
        // Runs of valid text and escapes that are not surrogates: UTF-8 by
        // construction; checked all the same, with SIMD (std's check was
        // a tenth of an export's column pass).
        match simdutf8::basic::from_utf8(scratch) {
            Ok(text) => Ok(JStr::Text(text)),
            Err(_) => self.err("invalid UTF-8 in string"),
        }
    }

    /// Reads a string and appends it, decoded, to `out`. Answers true when it
    /// holds a lone surrogate (what it appended is then WTF-8); otherwise what
    /// it appended is UTF-8 (runs of the input, which is, and escapes of scalar
    /// values), so a caller need not check it again. On an error `out` may
    /// hold part of the string.
    pub fn string_into(&mut self, out: &mut Vec<u8>) -> Result<bool, JsonError> {
        self.open_string()?;
        self.string_rest(out)
    }

    /// Reads a string and answers its size once decoded, in UTF-8 bytes (a lone
    /// surrogate counts its three WTF-8 bytes), without building it.
    pub fn string_size(&mut self) -> Result<u64, JsonError> {
        let mut size = 0u64;
        self.open_string()?;
        self.string_rest(&mut size)?;
        Ok(size)
    }

    // The one loop of every string read: the rest of a string whose opening
    // quote is consumed, each run of plain bytes and each escaped code point
    // handed to `sink`; true when it held a lone surrogate. Inlined into each
    // kind of sink, so the skip builds and counts nothing.
    #[inline(always)]
    fn string_rest<S: Sink>(&mut self, sink: &mut S) -> Result<bool, JsonError> {
        let mut surrogate = false;
        loop {
            let at = plain_run_from(self.input, self.pos);
            // Runs start and end next to ASCII bytes of UTF-8 input, so each is
            // whole characters: a sink may take it as UTF-8.
            sink.run(&self.input[self.pos..at]);
            self.pos = at;
            match self.input.get(at) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(surrogate);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let code = self.escape()?;
                    surrogate |= (0xD800..0xE000).contains(&code);
                    sink.code(code);
                }
                Some(_) => return self.err("control character in string"),
                None => return self.err("unterminated string"),
            }
        }
    }

    // Skips a string without decoding it, checking it all the same.
    fn skip_string(&mut self) -> Result<(), JsonError> {
        self.open_string()?;
        self.string_rest(&mut ()).map(drop)
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.input.get(self.pos) {
                Some(&c @ b'0'..=b'9') => c - b'0',
                Some(&c @ b'a'..=b'f') => c - b'a' + 10,
                Some(&c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return self.err("invalid \\u escape"),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    // Decodes one escape (its backslash consumed): the code point it stands
    // for, a lone surrogate kept as one.
    fn escape(&mut self) -> Result<u32, JsonError> {
        let c = match self.input.get(self.pos) {
            Some(&c) => c,
            None => return self.err("unterminated string"),
        };
        self.pos += 1;
        Ok(match c {
            b'"' | b'\\' | b'/' => u32::from(c),
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => 0x0a,
            b'r' => 0x0d,
            b't' => 0x09,
            b'u' => {
                let unit = self.hex4()?;
                if (0xD800..0xDC00).contains(&unit)
                    && self.input.get(self.pos..self.pos + 2) == Some(b"\\u")
                {
                    // A high surrogate followed by an escaped low one is one code point.
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4()?;
                    if (0xDC00..0xE000).contains(&low) {
                        return Ok(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
                    }
                    self.pos = save;
                }
                unit
            }
            _ => return self.err("invalid escape"),
        })
    }

    fn enter(&mut self) -> Result<(), JsonError> {
        if self.depth >= MAX_DEPTH {
            return self.err("nesting deeper than 512");
        }
        self.depth += 1;
        self.pos += 1;
        self.first = true;
        Ok(())
    }

    /// Reads `{`. Then call [`Reader::next_key`] until it answers `None`.
    pub fn begin_object(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.input.get(self.pos) != Some(&b'{') {
            return self.err("expected an object");
        }
        self.enter()
    }

    /// The next key of the object and its `:`, or `None` at its `}`.
    pub fn next_key<'s>(&mut self, scratch: &'s mut Vec<u8>) -> Result<Option<JStr<'s>>, JsonError>
    where
        'a: 's,
    {
        if !self.more(b'}')? {
            return Ok(None);
        }
        let key = self.string(scratch)?;
        self.skip_ws();
        if self.input.get(self.pos) != Some(&b':') {
            return self.err("expected ':'");
        }
        self.pos += 1;
        Ok(Some(key))
    }

    /// Reads `[`. Then call [`Reader::next_item`] before each item.
    pub fn begin_array(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.input.get(self.pos) != Some(&b'[') {
            return self.err("expected an array");
        }
        self.enter()
    }

    /// True when another item follows (its comma consumed), false at `]`.
    pub fn next_item(&mut self) -> Result<bool, JsonError> {
        self.more(b']')
    }

    // Shared by objects and arrays: a closing bracket, or a separator and more.
    fn more(&mut self, close: u8) -> Result<bool, JsonError> {
        self.skip_ws();
        let first = std::mem::replace(&mut self.first, false);
        match self.input.get(self.pos) {
            Some(&c) if c == close => {
                self.pos += 1;
                self.depth -= 1;
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) if first => Ok(true),
            Some(_) => {
                self.err(if close == b'}' { "expected ',' or '}'" } else { "expected ',' or ']'" })
            }
            None => self.err("unexpected end of input"),
        }
    }

    /// Reads a number as [`Reader::number`] does and, unless this reader checks
    /// syntax alone, refuses one Python cannot hold: an int of more than
    /// [`MAX_INT_DIGITS`] digits, a float out of a double's range.
    pub fn checked_number(&mut self) -> Result<Number<'a>, JsonError> {
        self.skip_ws();
        let at = self.pos;
        let n = self.number()?;
        if !self.check_numbers {
            return Ok(n);
        }
        let refused = match n {
            Number::Int(t) if t.trim_start_matches('-').len() > MAX_INT_DIGITS => {
                Some("an int of more than 4300 digits")
            }
            Number::Int(_) => None,
            Number::Float(t) => parse_float(t).err(),
        };
        match refused {
            Some(reason) => Err(JsonError { offset: at, reason }),
            None => Ok(n),
        }
    }

    /// Reads and checks one whole value of any kind, building nothing.
    ///
    /// Iterative: the containers open inside the value are one bit each (set
    /// for an object), so a value nested [`MAX_DEPTH`] deep costs a few words
    /// of stack, not a frame per level, and a thread with a small stack can
    /// check it.
    pub fn skip_value(&mut self) -> Result<(), JsonError> {
        let mut objects = [0u64; MAX_DEPTH.div_ceil(64)];
        let base = self.depth;
        loop {
            // One value, or the opening of a container and its first member.
            let opened = match self.peek()? {
                Kind::Null => self.null().map(|()| false)?,
                Kind::Bool => self.boolean().map(|_| false)?,
                Kind::Number => self.checked_number().map(|_| false)?,
                Kind::String => self.skip_string().map(|()| false)?,
                Kind::Array => {
                    self.begin_array()?;
                    let level = self.depth - base - 1;
                    objects[level / 64] &= !(1 << (level % 64));
                    self.next_item()?
                }
                Kind::Object => {
                    self.begin_object()?;
                    let level = self.depth - base - 1;
                    objects[level / 64] |= 1 << (level % 64);
                    self.skip_key()?
                }
            };
            if opened {
                continue;
            }
            // The value ended: close the containers it ended, up to the next
            // member or item, or the end of the whole value.
            loop {
                if self.depth == base {
                    return Ok(());
                }
                let level = self.depth - base - 1;
                let more = if objects[level / 64] & (1 << (level % 64)) != 0 {
                    self.skip_key()?
                } else {
                    self.next_item()?
                };
                if more {
                    break;
                }
            }
        }
    }

    // The next key of an object and its `:`, skipped; false at its `}`.
    fn skip_key(&mut self) -> Result<bool, JsonError> {
        if !self.more(b'}')? {
            return Ok(false);
        }
        self.skip_string()?;
        self.skip_ws();
        if self.input.get(self.pos) != Some(&b':') {
            return self.err("expected ':'");
        }
        self.pos += 1;
        Ok(true)
    }

    /// Checks that nothing but whitespace follows the value.
    pub fn finish(&mut self) -> Result<(), JsonError> {
        self.skip_ws();
        if self.pos == self.input.len() {
            Ok(())
        } else {
            self.err("extra data after the value")
        }
    }
}

/// The end of the run of plain string bytes (not a quote, a backslash or a
/// control character) of `input` from `at`: the fast scanner's and the
/// reader's shared inner loop.
pub(crate) fn plain_run_from(input: &[u8], mut at: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        at = sse2_plain_run(input, at);
    }
    while let Some(&b) = input.get(at) {
        // The bytes that end a run of plain string characters are the ones the
        // canonical writer escapes (control characters are refused in strings).
        if CLASS[usize::from(b)] == ESCAPE {
            break;
        }
        at += 1;
    }
    at
}

/// The fast scanner's answer when it cannot vouch for the bytes: the caller
/// then reads them again with the strict [`Reader`], which decides (and says
/// why, if they are refused).
pub(crate) struct Unsure;

/// Past the string whose opening quote is just before `at`, in `input` (known
/// UTF-8): what [`Reader`] checks of a string it skips (escapes, no control
/// character), without decoding it.
pub(crate) fn fast_string_end(input: &[u8], mut at: usize) -> Result<usize, Unsure> {
    loop {
        at = plain_run_from(input, at);
        match input.get(at) {
            Some(b'"') => return Ok(at + 1),
            Some(b'\\') => match input.get(at + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => at += 2,
                Some(b'u') => {
                    let hex = input.get(at + 2..at + 6).ok_or(Unsure)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return Err(Unsure);
                    }
                    at += 6;
                }
                _ => return Err(Unsure),
            },
            _ => return Err(Unsure),
        }
    }
}

// Past the number starting at `at`: its grammar, and what `checked_number`
// refuses (an int of more than MAX_INT_DIGITS digits, a float out of range).
fn fast_number_end(input: &[u8], mut at: usize) -> Result<usize, Unsure> {
    let start = at;
    let digits = |input: &[u8], mut at: usize| {
        let from = at;
        while matches!(input.get(at), Some(b'0'..=b'9')) {
            at += 1;
        }
        (at, at - from)
    };
    if input.get(at) == Some(&b'-') {
        at += 1;
    }
    let int_start = at;
    match input.get(at) {
        Some(b'0') => at += 1,
        Some(b'1'..=b'9') => at = digits(input, at).0,
        _ => return Err(Unsure),
    }
    let int_digits = at - int_start;
    let mut float = false;
    if input.get(at) == Some(&b'.') {
        let (end, n) = digits(input, at + 1);
        if n == 0 {
            return Err(Unsure);
        }
        at = end;
        float = true;
    }
    if matches!(input.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(input.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let (end, n) = digits(input, at);
        if n == 0 {
            return Err(Unsure);
        }
        at = end;
        float = true;
    }
    if float {
        let text = std::str::from_utf8(&input[start..at]).map_err(|_| Unsure)?;
        parse_float(text).map_err(|_| Unsure)?;
    } else if int_digits > MAX_INT_DIGITS {
        return Err(Unsure);
    }
    Ok(at)
}

/// Past the JSON value starting at `at` in `input` (known UTF-8), checked as
/// [`Reader::skip_value`] checks it (numbers Python cannot hold refused), for
/// values as canonical JSON writes them: no whitespace, nesting at most 64
/// deep. Anything else (whitespace, deeper nesting, any error) is [`Unsure`],
/// never a wrong answer: a value it accepts, the reader accepts.
pub(crate) fn fast_value_end(input: &[u8], mut at: usize) -> Result<usize, Unsure> {
    // One bit per open container, set for an object.
    let mut objects: u64 = 0;
    let mut depth = 0u32;
    loop {
        // A value.
        match input.get(at) {
            Some(b'"') => at = fast_string_end(input, at + 1)?,
            Some(&open @ (b'{' | b'[')) => {
                if depth == 64 {
                    return Err(Unsure);
                }
                depth += 1;
                let object = open == b'{';
                objects = objects << 1 | u64::from(object);
                at += 1;
                match input.get(at) {
                    Some(&c) if c == if object { b'}' } else { b']' } => {
                        at += 1;
                        depth -= 1;
                        objects >>= 1;
                    }
                    Some(b'"') if object => {
                        at = fast_string_end(input, at + 1)?;
                        if input.get(at) != Some(&b':') {
                            return Err(Unsure);
                        }
                        at += 1;
                        continue;
                    }
                    _ if object => return Err(Unsure),
                    _ => continue,
                }
            }
            Some(&c @ (b't' | b'f' | b'n')) => {
                let word: &[u8] = match c {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if input.get(at..at + word.len()) != Some(word) {
                    return Err(Unsure);
                }
                at += word.len();
            }
            Some(b'-' | b'0'..=b'9') => at = fast_number_end(input, at)?,
            _ => return Err(Unsure),
        }
        // After a value: close what it ends, up to the next member or item.
        loop {
            if depth == 0 {
                return Ok(at);
            }
            let object = objects & 1 == 1;
            match input.get(at) {
                Some(b',') => {
                    at += 1;
                    if object {
                        if input.get(at) != Some(&b'"') {
                            return Err(Unsure);
                        }
                        at = fast_string_end(input, at + 1)?;
                        if input.get(at) != Some(&b':') {
                            return Err(Unsure);
                        }
                        at += 1;
                    }
                    break;
                }
                Some(&c) if c == if object { b'}' } else { b']' } => {}
                _ => return Err(Unsure),
            }
            at += 1;
            depth -= 1;
            objects >>= 1;
        }
    }
}

/// The first offset from `at` whose 16-byte block holds a quote, a backslash or
/// a control character, or where fewer than 16 bytes remain.
#[cfg(target_arch = "x86_64")]
fn sse2_plain_run(input: &[u8], mut at: usize) -> usize {
    while at + 16 <= input.len() {
        let mask = stop_mask16(input, at);
        if mask != 0 {
            return at + mask.trailing_zeros() as usize;
        }
        at += 16;
    }
    at
}

/// Bit `i` set when `input[at + i]` is a quote, a backslash or a control
/// character, for the 16 bytes from `at`; all clear when fewer than 16 remain.
#[cfg(target_arch = "x86_64")]
fn stop_mask16(input: &[u8], at: usize) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let Some(block) = input.get(at..at + 16) else {
        return 0;
    };
    // SAFETY: SSE2 is part of the x86_64 baseline, so these instructions exist
    // on every machine this code runs on; the load reads exactly the 16 bytes
    // of `block`, a slice of `input` checked just above; unaligned loads need
    // no alignment.
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        // x <= 0x1f (unsigned) exactly when min(x, 0x1f) == x.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

/// WTF-8 from UTF-16 code units (a Python str's, with `surrogatepass`): a
/// high surrogate followed by a low one is one code point, any other surrogate
/// is kept alone; the bytes the reader decodes from that string's JSON
/// (canonical JSON writes each lone surrogate as an escape, and the reader
/// joins an escaped pair).
pub fn wtf8_from_utf16(units: impl IntoIterator<Item = u16>) -> Vec<u8> {
    let mut out = Vec::new();
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => push_code_point(&mut out, u32::from(c)),
            Err(e) => push_code_point(&mut out, u32::from(e.unpaired_surrogate())),
        }
    }
    out
}

// What reading a string does with its text (see `Reader::string_rest`).
trait Sink {
    fn run(&mut self, bytes: &[u8]);
    fn code(&mut self, code: u32);
}

// Decoding keeps the bytes.
impl Sink for Vec<u8> {
    #[inline(always)]
    fn run(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    #[inline(always)]
    fn code(&mut self, code: u32) {
        // An ASCII escape (`\n`, `\"`) is the common case: one byte, pushed here.
        match u8::try_from(code) {
            Ok(byte) if byte < 0x80 => self.push(byte),
            _ => push_code_point(self, code),
        }
    }
}

// Sizing counts them, as UTF-8 (and WTF-8, for a lone surrogate) encodes them.
impl Sink for u64 {
    #[inline(always)]
    fn run(&mut self, bytes: &[u8]) {
        *self += bytes.len() as u64;
    }
    #[inline(always)]
    fn code(&mut self, code: u32) {
        *self += match code {
            0..0x80 => 1,
            0x80..0x800 => 2,
            0x800..0x10000 => 3,
            _ => 4,
        };
    }
}

// Skipping keeps nothing: the checks are the reading's own.
impl Sink for () {
    #[inline(always)]
    fn run(&mut self, _: &[u8]) {}
    #[inline(always)]
    fn code(&mut self, _: u32) {}
}

/// Appends `code` (a scalar value or a surrogate) in UTF-8's encoding scheme.
fn push_code_point(out: &mut Vec<u8>, code: u32) {
    // Truncating casts are intended: each byte takes its bits of `code`.
    if code < 0x80 {
        out.push(code as u8);
    } else if code < 0x800 {
        out.extend_from_slice(&[0xC0 | (code >> 6) as u8, 0x80 | (code & 0x3F) as u8]);
    } else if code < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3F) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    }
}

/// The size of a JSON string value once decoded, in UTF-8 bytes (a lone
/// surrogate counts its three WTF-8 bytes, as Python's `surrogatepass` does);
/// 0 for `null`; None for any other value. Nothing is built.
pub fn string_size(value: &[u8]) -> Result<Option<u64>, JsonError> {
    let mut r = Reader::from_bytes(value)?;
    Ok(match r.peek()? {
        Kind::String => Some(r.string_size()?),
        Kind::Null => Some(0),
        _ => None,
    })
}

/// True when `line` is exactly one JSON value (whitespace around it allowed).
///
/// This is the tail check's question, so it is about syntax alone: a number
/// too big for Python is still a whole value (and load refuses it as damage,
/// rather than the repair cutting off a complete line).
pub fn is_one_value(line: &[u8]) -> bool {
    Reader::from_bytes(line)
        .and_then(|mut r| {
            r.check_numbers = false;
            r.skip_value().and_then(|()| r.finish())
        })
        .is_ok()
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
