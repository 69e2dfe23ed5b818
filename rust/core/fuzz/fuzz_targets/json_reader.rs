//! The JSON reader: never panics, never reads out of bounds (run under ASan),
//! and agrees with serde_json (`arbitrary_precision`: numbers as written) on
//! everything both accept. Also: the tail check's `is_one_value`, the checked
//! `skip_value` and `string_size` agree with the tree the reader builds.
#![no_main]

use std::collections::BTreeMap;

use fuzzkit::{read_value, Value};
use libfuzzer_sys::fuzz_target;
use transcript_core::json::{is_one_value, string_size, Reader, MAX_DEPTH};

fn from_serde(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            let t = n.to_string();
            if t.contains(['.', 'e', 'E']) {
                Value::Float(t)
            } else {
                Value::Int(t)
            }
        }
        serde_json::Value::String(s) => Value::Str(s.as_bytes().to_vec(), false),
        serde_json::Value::Array(a) => Value::Array(a.iter().map(from_serde).collect()),
        serde_json::Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_bytes().to_vec(), from_serde(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}

// A float's exact value as text: sign, significant digits, and the exponent of
// the first one (serde_json rewrites `1E5` as `1e+5`; the value is what counts).
fn exact(text: &str) -> String {
    let t = text.to_ascii_lowercase();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, t),
    };
    let (mantissa, exp) = match t.split_once('e') {
        Some((m, e)) => (m.to_string(), e.trim_start_matches('+').to_string()),
        None => (t.clone(), "0".to_string()),
    };
    // An exponent of any length: as digits without leading zeros, and the
    // shift of the point added apart (both sides get the same treatment).
    let (eneg, edigits) = match exp.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, exp.as_str()),
    };
    let edigits = edigits.trim_start_matches('0');
    let (int, frac) = mantissa.split_once('.').unwrap_or((&mantissa, ""));
    let all = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0');
    if digits.is_empty() {
        return format!("{}0", if neg { "-" } else { "" });
    }
    let shift = int.len() as i128 - lead as i128;
    let sign = if neg { "-" } else { "" };
    match edigits.parse::<i64>() {
        Ok(e) => format!("{sign}0.{digits}e{}", i128::from(if eneg { -e } else { e }) + shift),
        Err(_) => format!("{sign}0.{digits}e{}{edigits}{shift:+}", if eneg { "-" } else { "" }),
    }
}

fn exact_floats(v: &Value) -> Value {
    match v {
        Value::Float(t) => Value::Float(exact(t)),
        Value::Array(a) => Value::Array(a.iter().map(exact_floats).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), exact_floats(v))).collect())
        }
        other => other.clone(),
    }
}

fn serde(data: &[u8], unbounded: bool) -> Result<serde_json::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(data);
    if unbounded {
        de.disable_recursion_limit();
    }
    let v = <serde_json::Value as serde::Deserialize>::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

fuzz_target!(|data: &[u8]| {
    let ours = read_value(data);
    // The tail check's question is the tree builder's, to the byte.
    assert_eq!(is_one_value(data), ours.is_ok(), "is_one_value disagrees");
    // The checked skip (load's) accepts exactly what builds and Python can hold.
    let checked = Reader::from_bytes(data).and_then(|mut r| {
        r.skip_value()?;
        r.finish()
    });
    match &ours {
        Ok((value, seen)) => {
            assert!(seen.depth <= MAX_DEPTH);
            assert_eq!(checked.is_ok(), !seen.unholdable_number, "skip_value disagrees");
            if let Value::Str(bytes, _) = value {
                assert_eq!(string_size(data), Ok(Some(bytes.len() as u64)));
            }
            // The reader's depth bounds serde's recursion here.
            match serde(data, true) {
                Ok(theirs) => {
                    assert_eq!(
                        exact_floats(&from_serde(&theirs)),
                        exact_floats(value),
                        "serde_json reads it otherwise"
                    )
                }
                // serde_json refuses lone surrogates; nothing else.
                Err(e) => assert!(seen.lone_surrogate, "serde_json refuses what we accept: {e}"),
            }
        }
        Err(_) => {
            assert!(checked.is_err());
            // Bounded recursion: a hostile `[[[[` must not blow serde's stack.
            if let Ok(theirs) = serde(data, false) {
                panic!("serde_json accepts what we refuse: {theirs:?}");
            }
        }
    }
});
