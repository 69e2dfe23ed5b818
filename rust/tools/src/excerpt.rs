//! The excerpt of a text that `show` prints: its lines made printable, split
//! into paragraphs and wrapped, exactly as Python would (`printable` of
//! `cli.style`, then `str.splitlines`, `expandtabs(4)`, `rstrip`, the lead of
//! spaces, and CPython 3.11's `textwrap.wrap` with its defaults; the test
//! suite holds it to that Python, `tests/cli/test_show_excerpt.py`).
//!
//! The text is WTF-8, as the core's JSON reader gives a string: a lone
//! surrogate is a character of its own, which no rule here counts as a space,
//! a letter or a line end (nor does Python). Only the lines shown are built;
//! the others are only counted, so a text of any size costs one pass over its
//! characters. Where textwrap's hyphen rules ask how Python's Unicode tables
//! class a non-ASCII character (a letter, a digit, or neither), the caller's
//! `class` answers: the binding asks Python itself, so there is one table.

/// The excerpt of one text: the lines shown and what the rest comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// The lines shown (WTF-8), each prefixed by the indent asked for: every
    /// line when the excerpt is full, else at most `max_lines`.
    pub lines: Vec<Vec<u8>>,
    /// How many lines the whole text wraps to.
    pub total: usize,
    /// The printable text's length in code points (Python's `len`).
    pub chars: usize,
}

/// How a regular expression of Python's classes a character: textwrap's
/// `\w` is a letter or a digit, its `[^\d\W]` (a letter) is `\w` but not `\d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `\w` and not `\d` (`str.isalnum()` but not `str.isdecimal()`, or `_`).
    Letter,
    /// `\d` (`str.isdecimal()`).
    Digit,
    /// Neither (punctuation, a space, a mark, a lone surrogate).
    Other,
}

/// The excerpt of `text` (WTF-8): made printable (see [`printable`]), wrapped
/// at `avail` columns, each line prefixed by `indent`. `max_lines` is `None`
/// for the whole text (`--full`), else how many lines to build (the rest are
/// counted). `class` answers for the non-ASCII characters beside a hyphen.
pub fn excerpt(
    text: &[u8],
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
    class: &mut dyn FnMut(char) -> Class,
) -> Excerpt {
    let shown = printable(text);
    // Python's `len`: every byte that does not continue a character starts one.
    let chars = shown.iter().filter(|&&b| (b as i8) >= -0x40).count();
    let mut out = Builder { indent, lines: Vec::new(), total: 0, keep: max_lines };
    let mut body: Vec<u32> = Vec::new();
    let mut any = false;
    for para in split_printable_lines(&shown) {
        any = true;
        if !out.wants() && fits_at_a_glance(para, avail) {
            out.total += 1; // one line, only counted
            continue;
        }
        paragraph(para, avail, &mut body, &mut out, class);
    }
    if !any {
        paragraph(b"", avail, &mut body, &mut out, class);
    }
    Excerpt { lines: out.lines, total: out.total, chars }
}

/// A paragraph that is one line whatever is in it: even with every byte a
/// character and every tab 4 columns, it is no wider than `avail`.
fn fits_at_a_glance(para: &[u8], avail: usize) -> bool {
    if para.len() > avail {
        return false;
    }
    if 4 * para.len() <= avail {
        return true;
    }
    let tabs: usize = para.iter().map(|&b| usize::from(b == b'\t')).sum();
    para.len() + 3 * tabs <= avail
}

struct Builder<'a> {
    indent: &'a str,
    lines: Vec<Vec<u8>>,
    total: usize,
    keep: Option<usize>,
}

impl Builder<'_> {
    /// Whether the next line is built (not only counted).
    fn wants(&self) -> bool {
        self.keep.is_none_or(|keep| self.lines.len() < keep)
    }

    fn push(&mut self, lead: usize, body: &[u32]) {
        self.total += 1;
        if self.wants() {
            let mut line = Vec::with_capacity(self.indent.len() + lead + body.len());
            line.extend_from_slice(self.indent.as_bytes());
            line.resize(line.len() + lead, b' ');
            for &u in body {
                match char::from_u32(u) {
                    Some(c) => line.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    // A lone surrogate, as WTF-8 writes it (u < 0x10000: no truncation).
                    None => line.extend_from_slice(&[
                        0xe0 | (u >> 12) as u8,
                        0x80 | ((u >> 6) & 0x3f) as u8,
                        0x80 | (u & 0x3f) as u8,
                    ]),
                }
            }
            self.lines.push(line);
        }
    }
}

/// Each code point of WTF-8 `bytes`, a lone surrogate (`ED A0..BF xx`, which
/// UTF-8 refuses) as its own. (Every character of a long text pays for the
/// check: simdutf8's is the faster one.)
fn code_points(mut bytes: &[u8], mut each: impl FnMut(u32)) {
    loop {
        let (valid, rest) = match simdutf8::compat::from_utf8(bytes) {
            Ok(s) => (s, &[][..]),
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                (std::str::from_utf8(valid).unwrap_or_default(), rest)
            }
        };
        valid.chars().for_each(|c| each(u32::from(c)));
        let [a, b, c, more @ ..] = rest else { return };
        each((u32::from(a & 0x0f) << 12) | (u32::from(b & 0x3f) << 6) | u32::from(c & 0x3f));
        bytes = more;
    }
}

/// `text` with control characters made visible: CPython's
/// `text.replace("\r\n", "\n").translate(...)` of `cli.style.printable`,
/// which writes U+0000-U+0008, U+000B-U+001F and U+007F-U+009F as `\xNN`.
/// On WTF-8 bytes: each of those is one byte, or C2 80-C2 9F.
fn printable(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !has_control(text) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut bytes = text.iter().copied().peekable();
    while let Some(b) = bytes.next() {
        let next = bytes.peek().copied();
        let code = match b {
            b'\r' if next == Some(b'\n') => continue, // the \n that follows is written next
            b'\t' | b'\n' => None,
            0..0x20 | 0x7f => Some(b),
            0xc2 if next.is_some_and(|n| (0x80..=0x9f).contains(&n)) => bytes.next(),
            _ => None,
        };
        match code {
            Some(n) => out.extend_from_slice(format!("\\x{n:02x}").as_bytes()),
            None => out.push(b),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `bytes` (UTF-8) hold a character [`printable`] rewrites. U+0000-U+001F
/// and U+007F are one byte; U+0080-U+009F are C2 80-C2 9F. Blocks of 32 bytes
/// are tested without a branch (so the loop is vectorised); a block with a
/// byte that may be one is looked at closely.
fn has_control(bytes: &[u8]) -> bool {
    let maybe = |b: u8| ((b < 0x20) & (b != b'\t') & (b != b'\n')) | (b == 0x7f) | (b == 0xc2);
    let exact = |from: usize, to: usize| {
        bytes[from..to].iter().enumerate().any(|(k, &b)| {
            ((b < 0x20) & (b != b'\t') & (b != b'\n'))
                || b == 0x7f
                || (b == 0xc2 && bytes.get(from + k + 1).is_some_and(|&n| n <= 0x9f))
        })
    };
    let mut start = 0;
    for block in bytes.chunks(32) {
        if block.iter().fold(false, |any, &b| any | maybe(b)) && exact(start, start + block.len()) {
            return true;
        }
        start += block.len();
    }
    false
}

/// Whether every string a JSON `line` decodes to is its own [`printable`]
/// form, so that what `show` prints of it needs no copy: no byte below 0x20
/// (a raw control, or `\r`), no DEL, no C1 control (C2 80-C2 9F), and no
/// escape that could decode to one of those (`\r`, `\b`, `\f`, or `\u`
/// followed by `00` and `0`, `1`, `7`, `8` or `9`). It may say no for a line
/// that holds none (an escaped `\n` written as `\u000a`, say): that line
/// is then copied, as before.
pub fn printable_as_is(line: &[u8]) -> bool {
    if has_control(line) {
        return false; // also every raw byte below 0x20 but \t and \n, which JSON escapes
    }
    let mut at = 0;
    while let Some(k) = line.get(at..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let i = at + k;
        let escape = line.get(i + 1..).unwrap_or_default();
        if matches!(escape.first(), Some(b'r' | b'b' | b'f'))
            || (escape.starts_with(b"u00")
                && matches!(escape.get(3), Some(b'0' | b'1' | b'7' | b'8' | b'9')))
        {
            return false;
        }
        at = i + 2; // past the escaped character: `\\` is one escape
    }
    true
}

/// `str.splitlines()` of a printable text (see [`printable`]), where the only
/// line ends left are `\n`, U+2028 and U+2029 (E2 80 A8, E2 80 A9).
fn split_printable_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut from = 0;
        loop {
            match memchr::memchr2(b'\n', 0xe2, &rest[from..]) {
                None => {
                    let line = rest;
                    rest = &[];
                    return Some(line);
                }
                Some(k) => {
                    let at = from + k;
                    let end = if rest[at] == b'\n' {
                        at + 1
                    } else if rest.get(at + 1) == Some(&0x80)
                        && matches!(rest.get(at + 2), Some(0xa8 | 0xa9))
                    {
                        at + 3
                    } else {
                        from = at + 1;
                        continue;
                    };
                    let line = &rest[..at];
                    rest = &rest[end..];
                    return Some(line);
                }
            }
        }
    })
}

/// Python's `str.isspace` (CPython's `_PyUnicode_IsWhitespace`) of a code point.
fn is_space(u: u32) -> bool {
    matches!(
        u,
        0x09..=0x0d | 0x1c..=0x20 | 0x85 | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
    )
}

/// One paragraph of the renderer: `expandtabs(4).rstrip()`, its lead of
/// spaces (at most half the width), then one line or `textwrap.wrap`.
fn paragraph(
    para: &[u8],
    avail: usize,
    body: &mut Vec<u32>,
    out: &mut Builder<'_>,
    class: &mut dyn FnMut(char) -> Class,
) {
    body.clear();
    code_points(para, |u| {
        if u == u32::from('\t') {
            let spaces = 4 - body.len() % 4;
            body.resize(body.len() + spaces, u32::from(' '));
        } else {
            body.push(u);
        }
    });
    while body.last().is_some_and(|&u| is_space(u)) {
        body.pop();
    }
    let spaces = body.iter().take_while(|&&u| u == u32::from(' ')).count();
    let lead = spaces.min(avail / 2);
    let text = &body[spaces..];
    if lead + text.len() <= avail {
        out.push(lead, text);
        return;
    }
    let before = out.total;
    wrap(text, avail, lead, out, class);
    if out.total == before {
        out.push(lead, &[]); // `textwrap.wrap(...) or [lead]`
    }
}

/// `textwrap.wrap(text, width, initial_indent=lead, subsequent_indent=lead)`
/// with every other argument its default (`break_long_words`,
/// `break_on_hyphens`, `drop_whitespace`; no `max_lines`), for a `text` of no
/// tab and no line end (what a paragraph is here).
fn wrap(
    text: &[u32],
    width: usize,
    lead: usize,
    out: &mut Builder<'_>,
    class: &mut dyn FnMut(char) -> Class,
) {
    let mut chunks = Chunks { c: text, class }.split();
    chunks.reverse();
    let blank = |(a, b): (usize, usize)| text[a..b].iter().all(|&u| is_space(u));
    // `width - len(indent)`: the lead is at most half of a width of at least 20.
    let room = width.saturating_sub(lead);
    let mut lines = 0usize;
    while let Some(&top) = chunks.last() {
        if lines > 0 && blank(top) {
            chunks.pop();
        }
        // The line is one run of the text: the chunks it takes are consecutive.
        let mut line: Vec<(usize, usize)> = Vec::new();
        let mut len = 0usize;
        while let Some(&(a, b)) = chunks.last() {
            if len + (b - a) <= room {
                line.push((a, b));
                len += b - a;
                chunks.pop();
            } else {
                break;
            }
        }
        if let Some(&(a, b)) = chunks.last() {
            if b - a > room {
                // _handle_long_word
                let space_left = if room < 1 { 1 } else { room - len };
                let mut end = space_left;
                if b - a > space_left {
                    let word = &text[a..b];
                    let hyphen = u32::from('-');
                    if let Some(at) =
                        word[..space_left.min(word.len())].iter().rposition(|&u| u == hyphen)
                    {
                        if at > 0 && word[..at].iter().any(|&u| u != hyphen) {
                            end = at + 1;
                        }
                    }
                }
                let end = end.min(b - a);
                line.push((a, a + end));
                if let Some(last) = chunks.last_mut() {
                    *last = (a + end, b);
                }
            }
        }
        if line.last().is_some_and(|&piece| blank(piece)) {
            line.pop();
        }
        if let (Some(&(start, _)), Some(&(_, end))) = (line.first(), line.last()) {
            out.push(lead, &text[start..end]);
            lines += 1;
        }
    }
}

/// Whitespace as textwrap's regular expressions class it (`string.whitespace`).
fn is_ws(u: u32) -> bool {
    matches!(u, 0x09..=0x0d | 0x20)
}

/// A paragraph's code points as `TextWrapper.wordsep_re` sees them.
struct Chunks<'a> {
    c: &'a [u32],
    class: &'a mut dyn FnMut(char) -> Class,
}

impl Chunks<'_> {
    fn is(&self, k: usize, c: char) -> bool {
        self.c.get(k) == Some(&u32::from(c))
    }

    /// The class of the code point at `k` (`Other` past either end): ASCII
    /// known here, the rest asked of `class`.
    fn class(&mut self, k: usize) -> Class {
        match self.c.get(k).and_then(|&u| char::from_u32(u)) {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => Class::Letter,
            Some(c) if c.is_ascii_digit() => Class::Digit,
            Some(c) if !c.is_ascii() => (self.class)(c),
            _ => Class::Other,
        }
    }

    /// textwrap's `letter`, `[^\d\W]`.
    fn letter(&mut self, k: usize) -> bool {
        self.class(k) == Class::Letter
    }

    /// `\w`.
    fn word(&mut self, k: usize) -> bool {
        self.class(k) != Class::Other
    }

    /// `(?<=word_punct) -{2,} (?=\w)` at `k`, with textwrap's `word_punct`
    /// `[\w!"\'&.,?]`: the end of the dashes, if it matches.
    fn em_dash(&mut self, k: usize) -> Option<usize> {
        if k == 0 || !self.is(k, '-') || !self.is(k + 1, '-') {
            return None;
        }
        let punct = ['!', '"', '\'', '&', '.', ',', '?'].iter().any(|&p| self.is(k - 1, p));
        if !punct && !self.word(k - 1) {
            return None;
        }
        let mut end = k;
        while self.is(end, '-') {
            end += 1;
        }
        self.word(end).then_some(end)
    }

    /// `wordsep_re.split(text)` without its empty strings, as `(start, end)`
    /// ranges: a run of whitespace, an em-dash between words, or a word
    /// (broken after the hyphen of a hyphenated word).
    fn split(mut self) -> Vec<(usize, usize)> {
        let n = self.c.len();
        let mut chunks = Vec::new();
        let mut i = 0;
        while i < n {
            let end = if is_ws(self.c[i]) {
                i + self.c[i..].iter().take_while(|&&u| is_ws(u)).count()
            } else if let Some(end) = self.em_dash(i) {
                end
            } else {
                // `nws+?` then: a hyphen inside a hyphenated word, the end of
                // the word, or an em-dash ahead.
                let mut k = i + 1;
                loop {
                    if self.is(k, '-') {
                        let behind = (k >= 2 && self.letter(k - 2) && self.letter(k - 1))
                            || (k >= 3
                                && self.letter(k - 3)
                                && self.is(k - 2, '-')
                                && self.letter(k - 1));
                        if behind
                            && self.letter(k + 1)
                            && (self.letter(k + 2) || (self.is(k + 2, '-') && self.letter(k + 3)))
                        {
                            break k + 1;
                        }
                    }
                    if k == n || is_ws(self.c[k]) || self.em_dash(k).is_some() {
                        break k;
                    }
                    k += 1;
                }
            };
            chunks.push((i, end));
            i = end;
        }
        chunks
    }
}

// The excerpt is checked in Python against textwrap (`wrap_py` in
// `tests/cli/test_show_excerpt.py`); here, the test of `show`'s shortcut,
// which prints a line as it is, with the same text a copy would print.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_printable_as_is_only_without_a_control_or_its_escape() {
        assert!(printable_as_is(br#"{"a":"x\ny\tz \u00e9 \\r \ud800","b":[1,"\u2028"]}"#));
        for line in [
            &br#"{"a":"\r"}"#[..],
            br#"{"a":"\u001b"}"#,
            br#"{"a":"\u0085"}"#,
            br#"{"a":"\u007f"}"#,
            br#"{"a":"\b\f"}"#,
            b"{\"a\":\"\x7f\"}",
            "{\"a\":\"\u{85}\"}".as_bytes(),
            b"{\"a\":\r\"b\"}",
        ] {
            assert!(printable_as_is(b"ends in a backslash \\"));
            assert!(!printable_as_is(line), "{}", String::from_utf8_lossy(line));
        }
    }
}
