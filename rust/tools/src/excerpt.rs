//! The excerpt of a text that `show` prints: its lines made printable, split
//! into paragraphs and wrapped, exactly as the Python renderer does it
//! (`agent_transcript.cli.render.Renderer._wrap_py`: `printable`, then
//! `str.splitlines`, `expandtabs(4)`, `rstrip`, the lead of spaces, and
//! CPython 3.11's `textwrap.wrap` with its defaults).
//!
//! Only the lines shown are built; the others are only counted, so a text of
//! any size costs one pass over its characters. Where Python's answer would
//! depend on how its Unicode tables class a non-ASCII character (textwrap's
//! hyphen rules ask whether the characters next to a `-` are letters or word
//! characters), this gives no answer ([`excerpt`] returns `None`) and the
//! caller renders that text in Python: the answer is Python's, or none.

/// The excerpt of one text: the lines shown and what the rest comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    /// The lines shown, each prefixed by the indent asked for: every line when
    /// the excerpt is full, else at most `max_lines`.
    pub lines: Vec<String>,
    /// How many lines the whole text wraps to.
    pub total: usize,
    /// The printable text's length in code points (Python's `len`).
    pub chars: usize,
}

/// Why an excerpt cannot be built here: Python must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ambiguous;

/// The excerpt of `text`: made printable (see [`printable`]), wrapped at
/// `avail` columns, each line prefixed by `indent`. `max_lines` is `None` for
/// the whole text (`--full`), else how many lines to build (the rest are
/// counted). `None` when a character class that only Python's tables know
/// decides a break.
pub fn excerpt(
    text: &str,
    indent: &str,
    avail: usize,
    max_lines: Option<usize>,
) -> Option<Excerpt> {
    let shown = printable(text);
    // Python's `len`: every byte that does not continue a character starts one.
    let chars = shown.bytes().filter(|&b| (b as i8) >= -0x40).count();
    let mut out = Builder {
        indent,
        lines: Vec::new(),
        total: 0,
        keep: max_lines,
    };
    let mut body: Vec<char> = Vec::new();
    let mut any = false;
    for para in split_printable_lines(&shown) {
        any = true;
        if !out.wants() && fits_at_a_glance(para, avail) {
            out.total += 1; // one line, only counted
            continue;
        }
        paragraph(para, avail, &mut body, &mut out).ok()?;
    }
    if !any {
        paragraph("", avail, &mut body, &mut out).ok()?;
    }
    Some(Excerpt {
        lines: out.lines,
        total: out.total,
        chars,
    })
}

/// A paragraph that is one line whatever is in it: even with every byte a
/// character and every tab 4 columns, it is no wider than `avail`.
fn fits_at_a_glance(para: &str, avail: usize) -> bool {
    if para.len() > avail {
        return false;
    }
    if 4 * para.len() <= avail {
        return true;
    }
    let tabs: usize = para.bytes().map(|b| usize::from(b == b'\t')).sum();
    para.len() + 3 * tabs <= avail
}

struct Builder<'a> {
    indent: &'a str,
    lines: Vec<String>,
    total: usize,
    keep: Option<usize>,
}

impl Builder<'_> {
    /// Whether the next line is built (not only counted).
    fn wants(&self) -> bool {
        self.keep.is_none_or(|keep| self.lines.len() < keep)
    }

    fn push(&mut self, lead: usize, body: &[char]) {
        self.total += 1;
        if self.wants() {
            let mut line = String::with_capacity(self.indent.len() + lead + body.len());
            line.push_str(self.indent);
            line.extend(std::iter::repeat_n(' ', lead));
            line.extend(body.iter());
            self.lines.push(line);
        }
    }
}

/// `text` with control characters made visible: CPython's
/// `text.replace("\r\n", "\n").translate(...)` of `cli.style.printable`,
/// which writes U+0000-U+0008, U+000B-U+001F and U+007F-U+009F as `\xNN`.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !has_control(text.as_bytes()) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue; // the \n that follows is written next
        }
        if is_control(c) {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let n = c as usize;
            out.push_str("\\x");
            out.push(char::from(HEX[(n >> 4) & 0xf]));
            out.push(char::from(HEX[n & 0xf]));
        } else {
            out.push(c);
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

fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Python's `str.isspace` (CPython's `_PyUnicode_IsWhitespace`).
fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// The line boundaries of `str.splitlines`.
#[cfg(test)]
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{b}'
            | '\u{c}'
            | '\u{1c}'
            | '\u{1d}'
            | '\u{1e}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// `str.splitlines()` of a printable text (see [`printable`]), where the only
/// line ends left are `\n`, U+2028 and U+2029 (E2 80 A8, E2 80 A9).
fn split_printable_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let bytes = rest.as_bytes();
        let mut from = 0;
        loop {
            match memchr::memchr2(b'\n', 0xe2, &bytes[from..]) {
                None => {
                    let line = rest;
                    rest = "";
                    return Some(line);
                }
                Some(k) => {
                    let at = from + k;
                    let end = if bytes[at] == b'\n' {
                        at + 1
                    } else if bytes.get(at + 1) == Some(&0x80)
                        && matches!(bytes.get(at + 2), Some(0xa8 | 0xa9))
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

/// `str.splitlines()`: the lines without their ends (`\r\n` is one end); no
/// empty last line after a final end. (What [`split_printable_lines`] is
/// tested against.)
#[cfg(test)]
fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.char_indices().find(|&(_, c)| is_line_break(c)) {
            None => {
                let line = rest;
                rest = "";
                Some(line)
            }
            Some((at, c)) => {
                let line = &rest[..at];
                let mut end = at + c.len_utf8();
                if c == '\r' && rest.as_bytes().get(end) == Some(&b'\n') {
                    end += 1;
                }
                rest = &rest[end..];
                Some(line)
            }
        }
    })
}

/// One paragraph of `_wrap_py`'s loop: `expandtabs(4).rstrip()`, its lead of
/// spaces (at most half the width), then one line or `textwrap.wrap`.
fn paragraph(
    para: &str,
    avail: usize,
    body: &mut Vec<char>,
    out: &mut Builder<'_>,
) -> Result<(), Ambiguous> {
    body.clear();
    for c in para.chars() {
        if c == '\t' {
            let spaces = 4 - body.len() % 4;
            body.extend(std::iter::repeat_n(' ', spaces));
        } else {
            body.push(c);
        }
    }
    while body.last().is_some_and(|&c| is_py_space(c)) {
        body.pop();
    }
    let spaces = body.iter().take_while(|&&c| c == ' ').count();
    let lead = spaces.min(avail / 2);
    let text = &body[spaces..];
    if lead + text.len() <= avail {
        out.push(lead, text);
        return Ok(());
    }
    let before = out.total;
    wrap(text, avail, lead, out)?;
    if out.total == before {
        out.push(lead, &[]); // `textwrap.wrap(...) or [lead]`
    }
    Ok(())
}

/// `textwrap.wrap(text, width, initial_indent=lead, subsequent_indent=lead)`
/// with every other argument its default (`break_long_words`,
/// `break_on_hyphens`, `drop_whitespace`; no `max_lines`), for a `text` of no
/// tab and no line end (what a paragraph is here).
fn wrap(text: &[char], width: usize, lead: usize, out: &mut Builder<'_>) -> Result<(), Ambiguous> {
    let mut chunks = split_chunks(text)?;
    chunks.reverse();
    let blank = |(a, b): (usize, usize)| text[a..b].iter().all(|&c| is_py_space(c));
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
                    if let Some(hyphen) = word[..space_left.min(word.len())]
                        .iter()
                        .rposition(|&c| c == '-')
                    {
                        if hyphen > 0 && word[..hyphen].iter().any(|&c| c != '-') {
                            end = hyphen + 1;
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
    Ok(())
}

/// Whitespace as textwrap's regular expressions class it (`string.whitespace`).
fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// `\w` of a `str` pattern, known here for ASCII only.
fn is_word(c: char) -> Result<bool, Ambiguous> {
    if c.is_ascii() {
        Ok(c.is_ascii_alphanumeric() || c == '_')
    } else {
        Err(Ambiguous)
    }
}

/// textwrap's `letter`, `[^\d\W]`, known here for ASCII only.
fn is_letter(c: char) -> Result<bool, Ambiguous> {
    if c.is_ascii() {
        Ok(c.is_ascii_alphabetic() || c == '_')
    } else {
        Err(Ambiguous)
    }
}

/// textwrap's `word_punct`, `[\w!"\'&.,?]`, known here for ASCII only.
fn is_word_punct(c: char) -> Result<bool, Ambiguous> {
    Ok(matches!(c, '!' | '"' | '\'' | '&' | '.' | ',' | '?') || is_word(c)?)
}

/// `TextWrapper.wordsep_re.split(text)` without its empty strings, as
/// `(start, end)` ranges: a run of whitespace, an em-dash between words, or a
/// word (broken after the hyphen of a hyphenated word).
fn split_chunks(c: &[char]) -> Result<Vec<(usize, usize)>, Ambiguous> {
    let n = c.len();
    let at = |k: usize| c.get(k).copied();
    let letter = |k: usize| -> Result<bool, Ambiguous> { at(k).map_or(Ok(false), is_letter) };
    let word = |k: usize| -> Result<bool, Ambiguous> { at(k).map_or(Ok(false), is_word) };
    // `(?<=word_punct) -{2,} (?=\w)` at k: the end of the dashes, if it matches.
    let em_dash = |k: usize| -> Result<Option<usize>, Ambiguous> {
        if at(k) != Some('-') || at(k + 1) != Some('-') || k == 0 || !is_word_punct(c[k - 1])? {
            return Ok(None);
        }
        let mut end = k;
        while at(end) == Some('-') {
            end += 1;
        }
        Ok(if word(end)? { Some(end) } else { None })
    };
    let mut chunks = Vec::new();
    let mut i = 0;
    while i < n {
        let end = if is_ws(c[i]) {
            let mut end = i;
            while end < n && is_ws(c[end]) {
                end += 1;
            }
            end
        } else if let Some(end) = em_dash(i)? {
            end
        } else {
            // `nws+?` then: a hyphen inside a hyphenated word, the end of the
            // word, or an em-dash ahead.
            let mut k = i + 1;
            loop {
                if at(k) == Some('-') {
                    let behind = (k >= 2 && letter(k - 2)? && letter(k - 1)?)
                        || (k >= 3 && letter(k - 3)? && at(k - 2) == Some('-') && letter(k - 1)?);
                    if behind
                        && letter(k + 1)?
                        && (letter(k + 2)? || (at(k + 2) == Some('-') && letter(k + 3)?))
                    {
                        break k + 1;
                    }
                }
                if k == n || is_ws(c[k]) {
                    break k;
                }
                if at(k) == Some('-') && at(k + 1) == Some('-') && is_word_punct(c[k - 1])? {
                    let mut end = k;
                    while at(end) == Some('-') {
                        end += 1;
                    }
                    if word(end)? {
                        break k;
                    }
                }
                k += 1;
            }
        };
        chunks.push((i, end));
        i = end;
    }
    Ok(chunks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str, avail: usize, max: Option<usize>) -> (Vec<String>, usize) {
        match excerpt(text, "", avail, max) {
            Some(e) => (e.lines, e.total),
            None => (vec!["<python>".into()], 0),
        }
    }

    #[test]
    fn printable_lines_split_as_splitlines_splits_them() {
        for text in [
            "",
            "a",
            "a\n",
            "a\n\nb",
            "\u{2028}x\u{2029}\u{2027}y\u{e2}",
            "a\r\nb\rc\x0bd\u{85}e\x1cf",
            "é\nΩ",
        ] {
            let shown = printable(text);
            let got: Vec<&str> = split_printable_lines(&shown).collect();
            let want: Vec<&str> = split_lines(&shown).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn chunks_as_textwrap_splits_them() {
        let text: Vec<char> = "Look, goof-ball -- use the -b option!".chars().collect();
        let got: Vec<String> = split_chunks(&text)
            .unwrap_or_default()
            .into_iter()
            .map(|(a, b)| text[a..b].iter().collect())
            .collect();
        assert_eq!(
            got,
            [
                "Look,", " ", "goof-", "ball", " ", "--", " ", "use", " ", "the", " ", "-b", " ",
                "option!"
            ]
        );
    }

    #[test]
    fn a_short_text_is_one_line_and_an_empty_one_too() {
        assert_eq!(lines("hello", 20, Some(8)), (vec!["hello".to_string()], 1));
        assert_eq!(lines("", 20, Some(8)), (vec![String::new()], 1));
        assert_eq!(
            lines("a\n\nb\n", 20, None),
            (vec!["a".into(), "".into(), "b".into()], 3)
        );
    }

    #[test]
    fn long_lines_wrap_and_the_rest_is_counted() {
        let text = "word ".repeat(100);
        let (shown, total) = lines(&text, 20, Some(2));
        assert_eq!(shown, ["word word word word", "word word word word"]);
        assert_eq!(total, 25);
        assert_eq!(
            lines(&"x".repeat(45), 20, None).0,
            ["x".repeat(20), "x".repeat(20), "x".repeat(5)]
        );
    }

    #[test]
    fn control_characters_are_made_visible() {
        assert_eq!(printable("a\r\nb\x1b[0m\r\u{85}"), "a\nb\\x1b[0m\\x0d\\x85");
        assert_eq!(excerpt("\x1b", "", 20, None).map(|e| e.chars), Some(4));
    }

    #[test]
    fn a_line_is_printable_as_is_only_without_a_control_or_its_escape() {
        assert!(printable_as_is(
            br#"{"a":"x\ny\tz \u00e9 \\r \ud800","b":[1,"\u2028"]}"#
        ));
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

    #[test]
    fn a_hyphen_beside_a_non_ascii_character_is_left_to_python() {
        let text = format!("{} éé-éé {}", "a ".repeat(20), "b ".repeat(20));
        assert_eq!(excerpt(&text, "", 20, None), None);
        // Away from any hyphen, non-ASCII text is wrapped here.
        assert!(excerpt(&"é ".repeat(30), "", 20, None).is_some());
    }
}
