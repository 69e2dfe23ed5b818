//! A listing's title: the first user message among the file's first lines,
//! its content made text (as `content_text` in `agent_transcript.inspect`
//! makes it, but for content that is neither a string nor a list of parts,
//! shown as its JSON as the file has it), then clipped as Python's
//! `" ".join(text.split())` and cut to [`TITLE_CHARS`] characters.

use std::sync::OnceLock;

use transcript_core::json::{JsonError, Kind, Reader};

use super::lines::{members, string_is};
use super::{Text, TITLE_CHARS};

/// The first user message's text among the whole lines of `head` after the
/// first line (which ends at `first_end`), clipped; None when none is whole
/// there. Only the lines that hold `"user"` are parsed; a line load would
/// refuse is no message.
pub(super) fn find_title(head: &[u8], first_end: usize) -> Option<Text> {
    static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(br#""user""#));
    let mut at = first_end + 1;
    loop {
        let hit = at + finder.find(head.get(at..)?)?;
        let before = head.get(..hit).unwrap_or(&[]);
        let start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        // None when the line goes on past the head: not whole here.
        let end = hit + memchr::memchr(b'\n', head.get(hit..)?)?;
        at = end + 1;
        if let Ok(Some(text)) = user_text(head.get(start..end).unwrap_or(&[])) {
            return Some(clip(&text));
        }
    }
}

/// The JSON of the next value as the line has it.
fn raw_value<'a>(r: &mut Reader<'a>, line: &'a [u8]) -> Result<&'a [u8], JsonError> {
    r.peek()?; // past the blanks before it
    let from = r.offset();
    r.skip_value()?;
    Ok(line.get(from..r.offset()).unwrap_or(&[]))
}

/// A message's content as text: a string as it is; a list's text parts
/// joined with newlines, other parts named `[type]`; None for null.
fn content<'a>(r: &mut Reader<'a>, line: &'a [u8]) -> Result<Option<Text>, JsonError> {
    let mut scratch = Vec::new();
    match r.peek()? {
        Kind::Null => r.null().map(|()| None),
        Kind::String => Ok(Some(r.string(&mut scratch)?.as_bytes().to_vec())),
        Kind::Array => {
            let mut out: Text = Vec::new();
            r.begin_array()?;
            let mut first = true;
            while r.next_item()? {
                if !std::mem::take(&mut first) {
                    out.push(b'\n');
                }
                if r.peek()? != Kind::Object {
                    out.extend_from_slice(raw_value(r, line)?);
                    continue;
                }
                let (mut kind, mut text) = (None::<Text>, None::<Text>);
                r.begin_object()?;
                let mut key_scratch = Vec::new();
                while let Some(key) = r.next_key(&mut key_scratch)? {
                    let field = match key.as_bytes() {
                        b"type" => &mut kind,
                        b"text" => &mut text,
                        _ => {
                            r.skip_value()?;
                            continue;
                        }
                    };
                    *field = match r.peek()? {
                        Kind::String => Some(r.string(&mut scratch)?.as_bytes().to_vec()),
                        _ => r.skip_value().map(|()| None)?,
                    };
                }
                match (kind.as_deref(), text) {
                    (Some(b"text"), Some(t)) => out.extend_from_slice(&t),
                    (Some(k), _) if !k.is_empty() => {
                        out.push(b'[');
                        out.extend_from_slice(k);
                        out.push(b']');
                    }
                    _ => out.extend_from_slice(b"[part]"),
                }
            }
            Ok(Some(out))
        }
        _ => Ok(Some(raw_value(r, line)?.to_vec())),
    }
}

/// The content text of a line that is a user message, None for any other line.
fn user_text(line: &[u8]) -> Result<Option<Text>, JsonError> {
    let mut r = Reader::from_bytes(line)?;
    let mut is_message = false;
    let mut user: Option<Option<Text>> = None; // the payload's content when its role is user
    let mut scratch = Vec::new();
    members(&mut r, |key, r| {
        match key {
            b"type" => is_message = string_is(r, &mut scratch, "message")?,
            b"payload" => {
                let (mut role_user, mut body) = (false, None);
                members(r, |k, r| {
                    match k {
                        b"role" => role_user = string_is(r, &mut scratch, "user")?,
                        b"content" => body = content(r, line)?,
                        _ => r.skip_value()?,
                    }
                    Ok(())
                })?;
                user = role_user.then_some(body);
            }
            _ => r.skip_value()?,
        }
        Ok(())
    })?;
    r.finish()?;
    Ok(user.flatten().filter(|_| is_message))
}

/// Python's `str.isspace()`, which `str.split()` splits on.
fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\x1c'..='\x1f'
            | ' '
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

/// `" ".join(text.split())` of WTF-8 `text`, clipped to [`TITLE_CHARS`]
/// characters, the last one `…` when it was longer. A lone surrogate is one
/// character, and no space.
fn clip(text: &[u8]) -> Text {
    let mut out = Vec::with_capacity(text.len().min(4 * TITLE_CHARS + 4));
    let (mut n, mut gap, mut i) = (0usize, false, 0usize); // gap: a space is owed
    let mut cut = 0; // where the `…` goes if it comes to that
    while let Some(&lead) = text.get(i) {
        let len = match lead {
            0..=0x7F => 1,
            0x80..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        let unit = text.get(i..i + len).unwrap_or(&[]);
        i += len;
        let c = std::str::from_utf8(unit).ok().and_then(|s| s.chars().next());
        if c.is_some_and(is_python_space) {
            gap = n > 0;
            continue;
        }
        for piece in [&b" "[..], unit] {
            if piece == b" " && !std::mem::take(&mut gap) {
                continue;
            }
            if n == TITLE_CHARS - 1 {
                cut = out.len();
            }
            if n == TITLE_CHARS {
                out.truncate(cut);
                out.extend_from_slice("…".as_bytes());
                return out;
            }
            out.extend_from_slice(piece);
            n += 1;
        }
    }
    out
}
