//! The canonical writer round trip: a value written with the core's canonical
//! primitives reads back (with the core's reader) as the same value, floats to
//! the bit and strings with their lone surrogates; the text is valid UTF-8,
//! and writing what was read gives the same bytes (canonical is a fixed point).
//! Arbitrary bytes given to `write_str` never make it panic, and valid UTF-8
//! among them reads back as itself.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::{Arbitrary, Unstructured};
use fuzzkit::{read_value, write_value, Value};
use libfuzzer_sys::fuzz_target;
use transcript_core::canonical::{has_surrogate_pair, write_f64, write_i64, write_str, write_u64};
use transcript_core::json::{parse_float, wtf8_from_utf16, MAX_DEPTH};

/// A Python value canonical_json accepts, as the binding's walker sees it.
#[derive(Debug, Arbitrary)]
enum Py {
    None,
    Bool(bool),
    Int(i64),
    BigInt(u64, u64, bool),
    Float(f64),
    Str(Vec<u16>),
    Text(String),
    List(Vec<Py>),
    Dict(Vec<(Vec<u16>, Py)>),
    Deep(u16),
}

/// The value, the canonical text the walker would write for it, as the reader's tree.
fn expect(v: &Py, depth: usize) -> Option<Value> {
    Some(match v {
        Py::None => Value::Null,
        Py::Bool(b) => Value::Bool(*b),
        Py::Int(i) => {
            let mut t = Vec::new();
            write_i64(&mut t, *i);
            Value::Int(String::from_utf8(t).ok()?)
        }
        Py::BigInt(hi, lo, neg) => {
            // An int past u64: digits of hi then lo (zero-padded), as Python writes.
            let mut t = Vec::new();
            if *neg {
                t.push(b'-');
            }
            if *hi == 0 {
                write_u64(&mut t, *lo);
            } else {
                write_u64(&mut t, *hi);
                t.extend_from_slice(format!("{lo:020}").as_bytes());
            }
            if t == b"-0" {
                t = b"0".to_vec();
            }
            Value::Int(String::from_utf8(t).ok()?)
        }
        Py::Float(f) => {
            let mut t = Vec::new();
            if write_f64(&mut t, *f).is_err() {
                assert!(!f.is_finite());
                return None;
            }
            let text = String::from_utf8(t).ok()?;
            // Read back to the bit (-0.0 included).
            let back = parse_float(&text).ok()?;
            assert_eq!(back.to_bits(), f.to_bits(), "{f:?} written as {text}");
            Value::Float(text)
        }
        Py::Str(units) => {
            let w = wtf8_from_utf16(units.iter().copied());
            // The walker refuses a high surrogate right before a low one; UTF-16
            // units decode such a pair into one character, so none are here.
            assert!(!has_surrogate_pair(&w));
            let lone = std::str::from_utf8(&w).is_err();
            Value::Str(w, lone)
        }
        Py::Text(s) => Value::Str(s.as_bytes().to_vec(), false),
        Py::List(items) => {
            if depth >= MAX_DEPTH {
                return None;
            }
            Value::Array(items.iter().map(|i| expect(i, depth + 1)).collect::<Option<_>>()?)
        }
        Py::Dict(pairs) => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let mut map = BTreeMap::new();
            for (k, v) in pairs {
                map.insert(wtf8_from_utf16(k.iter().copied()), expect(v, depth + 1)?);
            }
            Value::Object(map)
        }
        Py::Deep(n) => {
            let n = usize::from(*n % 600);
            if depth + n > MAX_DEPTH {
                return None;
            }
            let mut v = Value::Null;
            for _ in 0..n {
                v = Value::Array(vec![v]);
            }
            v
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    if let Ok(raw) = <Vec<u8>>::arbitrary(&mut u) {
        let mut out = Vec::new();
        write_str(&mut out, &raw);
        if let Ok(text) = std::str::from_utf8(&raw) {
            let (back, _) = read_value(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
            assert_eq!(back, Value::Str(text.as_bytes().to_vec(), false));
        }
    }
    let Ok(py) = Py::arbitrary_take_rest(u) else { return };
    let Some(want) = expect(&py, 0) else { return };
    let mut out = Vec::new();
    write_value(&mut out, &want, 0).expect("a value within the limits is written");
    assert!(std::str::from_utf8(&out).is_ok(), "canonical JSON that is not UTF-8");
    let (back, seen) =
        read_value(&out).unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&out)));
    assert!(!seen.unholdable_number);
    assert_eq!(back, want, "read(write(v)) != v");
    let mut again = Vec::new();
    write_value(&mut again, &back, 0).expect("written once, written twice");
    assert_eq!(again, out, "canonical text is not a fixed point");
});
