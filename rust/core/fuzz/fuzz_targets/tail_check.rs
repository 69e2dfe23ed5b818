//! The tail check, on a file of arbitrary bytes read in pieces of arbitrary
//! size: never panics, and its answer is the one the simplest reading of the
//! contract gives, with the reader (not the tail check's own scan) judging the
//! last two non-blank lines.
#![no_main]

use fuzzkit::{naive_lines, read_value, Trickle};
use libfuzzer_sys::fuzz_target;
use transcript_core::scan::{tail_scan, Tail};

fuzz_target!(|data: &[u8]| {
    let (step, file) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s % 64) + 1, rest),
        None => (1, data),
    };
    let src = Trickle { bytes: file, step: if step == 64 { usize::MAX } else { step } };
    let (tail, read) = match tail_scan(&src, file.len() as u64) {
        Ok(answer) => answer,
        Err(e) => panic!("tail_scan failed on bytes in memory: {e}"),
    };
    // It reads the tail, and the whole file at most a few times over.
    assert!(read <= 3 * file.len() as u64 + 1, "read {read} of {}", file.len());
    let (lines, _) = naive_lines(file);
    let whole = |(s, e, _): (usize, usize, u64)| read_value(&file[s..e]).is_ok();
    let want = match lines.last().copied() {
        None => Tail::Empty,
        Some(last) if whole(last) => Tail::Whole { missing_newline: file.last() != Some(&b'\n') },
        Some(last) if file[last.0] != b'{' => Tail::Damaged { line: last.2 },
        Some(last) => match lines.len().checked_sub(2).map(|i| lines[i]) {
            Some(prev) if !whole(prev) => Tail::Corrupt { line: prev.2 },
            _ => Tail::Torn {
                keep: last.0 as u64,
                line: last.2,
                removed: (file.len() - last.0) as u64,
            },
        },
    };
    assert_eq!(tail, want);
});
