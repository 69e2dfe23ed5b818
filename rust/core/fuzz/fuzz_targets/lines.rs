//! Line splitting: `transcript::for_each_line` (a file read in chunks, here in
//! short reads of arbitrary size) gives the non-blank lines, their offsets and
//! numbers, exactly as a plain split does.
#![no_main]

use fuzzkit::{naive_lines, Trickle};
use libfuzzer_sys::fuzz_target;
use transcript_core::scan::is_blank;
use transcript_core::transcript::for_each_line;

fuzz_target!(|data: &[u8]| {
    let (step, buf) = match data.split_first() {
        Some((&s, rest)) => (usize::from(s) * 37 + 1, rest),
        None => (1, data),
    };
    let (want, count) = naive_lines(buf);
    for &(s, e, _) in &want {
        assert!(!is_blank(&buf[s..e]));
        assert!(!buf[s..e].contains(&b'\n'));
    }
    let src = Trickle { bytes: buf, step };
    let mut seen = Vec::new();
    let counted = for_each_line(&src, 0, buf.len() as u64, |line, offset, number| {
        let s = offset as usize;
        assert_eq!(&buf[s..s + line.len()], line);
        seen.push((s, s + line.len(), number));
        Ok::<(), std::io::Error>(())
    });
    match counted {
        Ok(n) => assert_eq!(n, count, "for_each_line's count"),
        Err(e) => panic!("for_each_line failed on bytes in memory: {e}"),
    }
    assert_eq!(seen, want, "for_each_line");
    // From a line start in the middle: the same lines, renumbered.
    if let Some(&(mid, _, before)) = want.get(want.len() / 2) {
        let mut tail = Vec::new();
        let _ = for_each_line(&src, mid as u64, buf.len() as u64, |line, offset, number| {
            tail.push((offset as usize, offset as usize + line.len(), number + before - 1));
            Ok::<(), std::io::Error>(())
        });
        assert_eq!(tail, want[want.len() / 2..].to_vec(), "for_each_line from a line start");
    }
});
