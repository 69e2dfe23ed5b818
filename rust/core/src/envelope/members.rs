//! Member lookups: where the members a reader wants are in a JSON value, found
//! without decoding anything but the keys.

use super::types::span;
use super::Span;
use crate::json::{JsonError, Kind, Reader};

/// Where the members named `keys` are in the JSON object `value`: one span per
/// key, in `keys` order (the last of duplicate members wins), None for a key it
/// does not have; all None when `value` is not an object. Nothing but the keys
/// is decoded, so a reader can decode the few members it wants and no more.
pub fn member_spans(value: &[u8], keys: &[&str]) -> Result<Vec<Option<Span>>, JsonError> {
    member_spans_in(Reader::from_bytes(value)?, keys)
}

/// [`member_spans`] of text already checked as UTF-8 (a reader that checked a
/// whole line once reads its parts with this, never checking them again).
pub fn member_spans_in_text(value: &str, keys: &[&str]) -> Result<Vec<Option<Span>>, JsonError> {
    member_spans_in(Reader::new(value), keys)
}

fn member_spans_in(mut r: Reader<'_>, keys: &[&str]) -> Result<Vec<Option<Span>>, JsonError> {
    let mut spans = vec![None; keys.len()];
    if r.peek()? != Kind::Object {
        return Ok(spans);
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
            spans[at] = Some(span(start, r.offset()));
        }
    }
    Ok(spans)
}

/// Where the value at `path` is in the JSON value `value`: each step names a
/// member of an object (the last of duplicate members wins); None when a step
/// is missing or not an object. One pass, nothing decoded but the keys:
/// `&["payload", "content"]` finds a message's content.
pub fn member_span_at(value: &[u8], path: &[&str]) -> Result<Option<Span>, JsonError> {
    let mut r = Reader::from_bytes(value)?;
    visit_at(&mut r, path, &mut |r| {
        r.peek()?;
        let start = r.offset();
        r.skip_value()?;
        Ok(span(start, r.offset()))
    })
}

/// The decoded UTF-8 size of the string at `path` in `value` (see
/// [`member_span_at`]), measured in the same pass without building it:
/// `Some(Some(n))` for a string, `Some(Some(0))` for null, `Some(None)` for
/// any other value, None when there is nothing at `path`.
pub fn string_size_at(value: &[u8], path: &[&str]) -> Result<Option<Option<u64>>, JsonError> {
    let mut r = Reader::from_bytes(value)?;
    visit_at(&mut r, path, &mut |r| {
        Ok(match r.peek()? {
            Kind::String => Some(r.string_size()?),
            Kind::Null => {
                r.null()?;
                Some(0)
            }
            _ => {
                r.skip_value()?;
                None
            }
        })
    })
}

// Walks `path` down from the value `r` is at, calling `leaf` (which must read
// the value it is at) on each value found there; answers the last call's
// result. `r` ends past the value it started at.
fn visit_at<T>(
    r: &mut Reader<'_>,
    path: &[&str],
    leaf: &mut impl FnMut(&mut Reader<'_>) -> Result<T, JsonError>,
) -> Result<Option<T>, JsonError> {
    let Some((step, rest)) = path.split_first() else {
        return leaf(r).map(Some);
    };
    if r.peek()? != Kind::Object {
        r.skip_value()?;
        return Ok(None);
    }
    r.begin_object()?;
    let mut found = None;
    let mut key_buf = Vec::new();
    loop {
        let hit = match r.next_key(&mut key_buf)? {
            None => break,
            Some(k) => k.as_bytes() == step.as_bytes(),
        };
        if hit {
            found = visit_at(r, rest, leaf)?;
        } else {
            r.skip_value()?;
        }
    }
    Ok(found)
}
