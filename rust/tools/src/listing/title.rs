//! A listing's title: the first user message among the file's first lines,
//! its content made text as the reference reader makes it, then clipped as
//! Python's `" ".join(text.split())` and cut to [`TITLE_CHARS`] characters.

use std::sync::OnceLock;

use transcript_core::json::{JStr, Kind, Reader};

use super::lines::{python_might_read, string_is};
use super::{Bad, Stop, TITLE_CHARS};

/// The first user message's text among the whole lines of `head` after the
/// first line (which ends at `first_end`), clipped; None when none is whole
/// there. Only the lines that hold `"user"` are parsed.
pub(super) fn find_title(head: &[u8], first_end: usize) -> Result<Option<String>, Stop> {
    static FINDER: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(br#""user""#));
    let mut at = first_end + 1;
    loop {
        let Some(hit) = head
            .get(at..)
            .and_then(|rest| finder.find(rest))
            .map(|i| at + i)
        else {
            return Ok(None);
        };
        let before = head.get(..hit).unwrap_or(&[]);
        let start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        let Some(end) = head
            .get(hit..)
            .and_then(|r| memchr::memchr(b'\n', r))
            .map(|i| hit + i)
        else {
            return Ok(None); // the line goes on past the head: not whole here
        };
        at = end + 1;
        let line = head.get(start..end).unwrap_or(&[]);
        match user_text(line) {
            Ok(Some(text)) => return Ok(Some(clip(&text))),
            Ok(None) => {}
            Err(Bad::Invalid) if !python_might_read(line) => {}
            Err(_) => return Err(Stop::Defer),
        }
    }
}

/// A message's content as `content_text` in `agent_transcript.inspect` makes
/// it: a string as it is; a list's text parts joined with newlines, other
/// parts named `[type]`. What else it may be is for the reference reader.
enum Content {
    Missing,
    Text(String),
    Other,
}

fn content(r: &mut Reader<'_>) -> Result<Content, Bad> {
    let mut scratch = Vec::new();
    match r.peek()? {
        Kind::Null => {
            r.null()?;
            Ok(Content::Missing)
        }
        Kind::String => match r.string(&mut scratch)? {
            JStr::Text(s) => Ok(Content::Text(s.to_owned())),
            JStr::Wtf8(_) => Ok(Content::Other),
        },
        Kind::Array => {
            let mut pieces: Vec<String> = Vec::new();
            let mut plain = true;
            r.begin_array()?;
            while r.next_item()? {
                if r.peek()? != Kind::Object {
                    plain = false; // a part that is not an object is shown as JSON
                    r.skip_value()?;
                    continue;
                }
                let (mut kind, mut text) = (Some(None::<String>), None::<String>);
                r.begin_object()?;
                let mut key_scratch = Vec::new();
                while let Some(key) = r.next_key(&mut key_scratch)? {
                    match key.as_bytes() {
                        b"type" => {
                            kind = match r.peek()? {
                                Kind::Null => r.null().map(|()| Some(None))?,
                                Kind::String => match r.string(&mut scratch)? {
                                    JStr::Text(s) => Some(Some(s.to_owned())),
                                    JStr::Wtf8(_) => None,
                                },
                                _ => r.skip_value().map(|()| None)?,
                            }
                        }
                        b"text" => {
                            text = match r.peek()? {
                                Kind::String => match r.string(&mut scratch)? {
                                    JStr::Text(s) => Some(s.to_owned()),
                                    JStr::Wtf8(_) => {
                                        plain = false;
                                        None
                                    }
                                },
                                _ => r.skip_value().map(|()| None)?,
                            }
                        }
                        _ => r.skip_value()?,
                    }
                }
                match (kind, text) {
                    (Some(Some(k)), Some(t)) if k == "text" => pieces.push(t),
                    (Some(Some(k)), _) if !k.is_empty() => pieces.push(format!("[{k}]")),
                    (Some(_), _) => pieces.push("[part]".to_owned()),
                    (None, _) => plain = false, // a type that is neither a string nor null
                }
            }
            Ok(if plain {
                Content::Text(pieces.join("\n"))
            } else {
                Content::Other
            })
        }
        _ => {
            r.skip_value()?;
            Ok(Content::Other)
        }
    }
}

/// The content text of a line that is a user message, None for any other line.
fn user_text(line: &[u8]) -> Result<Option<String>, Bad> {
    let mut r = Reader::from_bytes(line)?;
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        r.finish()?;
        return Ok(None);
    }
    let mut is_message = false;
    let mut user: Option<Content> = None; // the payload's content when its role is user
    let mut scratch = Vec::new();
    let mut value_scratch = Vec::new();
    r.begin_object()?;
    while let Some(key) = r.next_key(&mut scratch)? {
        match key.as_bytes() {
            b"type" => is_message = string_is(&mut r, &mut value_scratch, "message")?,
            b"payload" => {
                user = None;
                if r.peek()? == Kind::Object {
                    let (mut role_user, mut body) = (false, Content::Missing);
                    r.begin_object()?;
                    let mut inner = Vec::new();
                    while let Some(k) = r.next_key(&mut inner)? {
                        match k.as_bytes() {
                            b"role" => role_user = string_is(&mut r, &mut value_scratch, "user")?,
                            b"content" => body = content(&mut r)?,
                            _ => r.skip_value()?,
                        }
                    }
                    if role_user {
                        user = Some(body);
                    }
                } else {
                    r.skip_value()?;
                }
            }
            _ => r.skip_value()?,
        }
    }
    r.finish()?;
    match (is_message, user) {
        (true, Some(Content::Text(t))) => Ok(Some(t)),
        (true, Some(Content::Other)) => Err(Bad::Defer),
        _ => Ok(None),
    }
}

/// Python's `str.isspace()`, which `str.split()` splits on.
pub(super) fn is_python_space(c: char) -> bool {
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

/// `" ".join(text.split())`, clipped to [`TITLE_CHARS`] characters, the last
/// one `…` when it was longer.
pub fn clip(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * TITLE_CHARS + 4));
    let mut n = 0usize;
    let mut gap = false; // a space is owed before the next character
    for c in text.chars() {
        if is_python_space(c) {
            gap = n > 0;
            continue;
        }
        if gap {
            out.push(' ');
            n += 1;
            gap = false;
        }
        if n > TITLE_CHARS {
            break;
        }
        out.push(c);
        n += 1;
        if n > TITLE_CHARS {
            break;
        }
    }
    if n <= TITLE_CHARS {
        return out;
    }
    let mut clipped: String = out.chars().take(TITLE_CHARS - 1).collect();
    clipped.push('…');
    clipped
}
