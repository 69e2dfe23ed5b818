//! Replay and the id table, from lines in memory.

use super::*;

// splitmix64's finaliser undone: what a hostile writer computes to aim ids
// at one slot of an unseeded table.
fn unmix(mut z: u64) -> u64 {
    const INV2: u64 = 0x319642B2D24D8EC3; // 0x94D049BB133111EB^-1 mod 2^64
    const INV1: u64 = 0x96DE1B173F119089; // 0xBF58476D1CE4E5B9^-1 mod 2^64
    z ^= (z >> 31) ^ (z >> 62);
    z = z.wrapping_mul(INV2);
    z ^= (z >> 27) ^ (z >> 54);
    z = z.wrapping_mul(INV1);
    z ^ (z >> 30) ^ (z >> 60)
}

#[test]
fn ids_aimed_at_one_slot_of_an_unseeded_hash_spread() {
    let n = 20_000u64;
    let inner = mix(0);
    let mut table = IdTable::default();
    let mut homes = HashMap::default();
    let key_of = |i: u64| {
        let a = unmix(0x5EED << 32 | (i + 1)) ^ inner;
        // The premise: unseeded, every one of them has one high half.
        assert_eq!(mix(a ^ inner) >> 32, 0x5EED);
        Keyed::of(format!("{:016x}0000000000000000", a.swap_bytes()).as_bytes())
    };
    for i in 0..n {
        let key = key_of(i);
        assert_eq!(key.form, HEX32);
        table.push(key, i as u32);
    }
    for i in 0..n {
        let key = key_of(i);
        assert_eq!(table.find(&key), Some(i as u32));
        *homes.entry(table.home(key.hash)).or_insert(0u32) += 1;
    }
    // Seeded, they share slots as random ids do: a few at most.
    let most = homes.values().copied().max().unwrap_or(0);
    assert!(most < 12, "{most} ids share one slot");
}

use crate::envelope::parse_line;

pub(crate) fn line(id: &str, kind: &str, payload: &str) -> String {
    format!(
        r#"{{"id":"{id}","payload":{payload},"ts":"2026-01-01T00:00:00.000000Z","type":"{kind}","v":1}}"#
    )
}

pub(crate) fn msg(id: &str, role: &str, extra: &str) -> String {
    line(id, "message", &format!(r#"{{"content":"{id}","role":"{role}"{extra}}}"#))
}

pub(crate) fn meta() -> String {
    line("meta", "session-meta", "{}")
}

fn dispatched(id: &str, call: &str) -> String {
    line(id, "tool-dispatched", &format!(r#"{{"call-id":"{call}","tool":"t"}}"#))
}

pub(super) fn load_str(lines: &[String]) -> Result<Transcript, LoadError> {
    let text = lines.join("\n") + "\n";
    load(text.as_bytes(), text.len() as u64)
}

#[test]
fn a_message_accepted_from_what_its_writer_knows_is_the_one_its_line_reads_as() {
    // Two transcripts fed the same lines: one accepts each message from
    // what its writer knows, the other from the line read back. They must
    // end up the same, line records, roles, live list and the pending
    // operation the tool message answers included.
    let head = [meta(), dispatched("op1", "c1")];
    let mut t = load_str(&head).unwrap();
    let mut twin = load_str(&head).unwrap();
    let mut ids = IdGen::new();
    let ms = crate::stamp::Instant::now().millis();
    let cases: [(&str, &str, bool, Option<&[u8]>); 7] = [
        ("user", "", false, None),
        ("assistant", r#","sticky":true"#, true, None),
        ("system", r#","sysprompt":true"#, true, None),
        ("user", r#","depth":0"#, true, None),
        // Only a tool message answers a call.
        ("assistant", r#","tool_call_id":"c1""#, false, Some(b"c1")),
        ("tool", r#","tool_call_id":"c1""#, false, Some(b"c1")),
        ("developer", "", false, None),
    ];
    for (role, extra, sticky, call) in cases {
        let fresh = t.fresh_id(&mut ids, ms);
        assert_eq!(fresh.key, Keyed::of(fresh.digits()));
        assert!(t.resolve(fresh.as_str()).is_none());
        let text = msg(fresh.as_str(), role, extra);
        let known = t.accept_message(&fresh, role, sticky, call).unwrap();
        let parsed = twin.accept(parse_line(text.as_bytes()).unwrap(), true).unwrap();
        let number = t.line_count + 1;
        let rec = known.line_rec(0, text.len(), number);
        assert_eq!(rec, parsed.line_rec(0, text.len(), number), "{text}");
        t.push_accepted(known, rec);
        twin.push_accepted(parsed, rec);
        assert!(t.is_live(fresh.as_str()));
    }
    assert_eq!(t.live.len(), cases.len());
    assert_eq!(t.live, twin.live);
    assert_eq!(t.pending, twin.pending);
    assert_eq!(t.awaiting, twin.awaiting);
    assert!(t.pending.values().all(|op| op.result.is_some()));
    for i in 0..t.index.len() {
        assert_eq!(t.index.get(i), twin.index.get(i));
        assert_eq!(t.index.role(i), twin.index.role(i));
    }
    // A fresh id is never one the transcript has: not once it is added,
    // whether or not other lines came after it was drawn.
    for lines_between in [0, 1] {
        let taken = t.fresh_id(&mut ids, ms);
        let again = t.fresh_id(&mut ids, ms);
        let again = FreshId { id: taken.id, key: taken.key.clone(), drawn_at: again.drawn_at };
        let first = t.accept_message(&taken, "user", false, None).unwrap();
        let rec = first.line_rec(0, 1, t.line_count + 1);
        t.push_accepted(first, rec);
        for _ in 0..lines_between {
            let other = t.fresh_id(&mut ids, ms);
            let accepted = t.accept_message(&other, "user", false, None).unwrap();
            let rec = accepted.line_rec(0, 1, t.line_count + 1);
            t.push_accepted(accepted, rec);
        }
        assert!(matches!(
            t.accept_message(&again, "user", false, None),
            Err(ReplayError::DuplicateId(_))
        ));
        assert_ne!(t.fresh_id(&mut ids, ms).id, taken.id);
    }
}

#[test]
fn ids_are_unpacked_as_a_digit_at_a_time_would() {
    // Byte by byte, as the table's reader did before the vector one.
    fn one_at_a_time(digits: &[u8]) -> Option<[u8; 16]> {
        let value = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        if digits.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (o, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
            *o = value(pair[0])? << 4 | value(pair[1])?;
        }
        Some(out)
    }
    let base = *b"0123456789abcdef0123456789abcdef";
    assert_eq!(unhex(&base), one_at_a_time(&base));
    assert!(unhex(&base).is_some());
    // Every byte value at every position: the digits and letters, their
    // neighbours ('/', ':', '`', 'g'), capitals, and bytes >= 0x80.
    for at in 0..32 {
        for b in 0..=255u8 {
            let mut id = base;
            id[at] = b;
            assert_eq!(unhex(&id), one_at_a_time(&id), "byte {b:#x} at {at}");
        }
    }
    let mut z = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..2000 {
        let mut id = [0u8; 32];
        for d in id.iter_mut() {
            z = mix(z.wrapping_add(1));
            *d = b"0123456789abcdef"[(z % 16) as usize];
        }
        assert_eq!(unhex(&id), one_at_a_time(&id));
    }
    assert_eq!(unhex(&base[..31]), None);
}

#[test]
fn the_id_table_finds_every_form_of_id_and_only_those_it_holds() {
    let mut ids: Vec<Vec<u8>> = vec![
        b"0123456789abcdef0123456789abcdef".to_vec(),
        b"0123456789ABCDEF0123456789abcdef".to_vec(), // uppercase: another id
        b"01234567-89ab-cdef-0123-456789abcdef".to_vec(),
        b"0123456789abcdef0123456789abcdeg".to_vec(), // not hex
        b"01234567x89ab-cdef-0123-456789abcdef".to_vec(),
        b"".to_vec(),
        b"m1".to_vec(),
        vec![0xed, 0xa0, 0x80], // a lone surrogate, WTF-8
    ];
    for i in 0..5000u32 {
        ids.push(format!("{:032x}", u128::from(i) * 0x9e37_79b9_7f4a_7c15).into_bytes());
        ids.push(format!("id-{i}").into_bytes());
    }
    let mut table = IdTable::default();
    for (line, id) in ids.iter().enumerate() {
        assert_eq!(table.get(id), None);
        table.push(Keyed::of(id), line as u32);
    }
    for (line, id) in ids.iter().enumerate() {
        assert_eq!(table.get(id), Some(line as u32), "{:?}", String::from_utf8_lossy(id));
    }
    for absent in [
        &b"0123456789abcdef0123456789abcdee"[..],
        b"01234567-89ab-cdef-0123-456789abcdee",
        b"0123456789abcdef0123456789abcde",
        b"m2",
        b"0123456789abcdef0123456789abcdef ",
    ] {
        assert_eq!(table.get(absent), None);
    }
    // The packed forms never meet: 32 hex digits and the UUID of the same
    // digits are two ids.
    assert_eq!(table.get(b"01234567-89ab-cdef-0123-456789abcdef"), Some(2));
}
