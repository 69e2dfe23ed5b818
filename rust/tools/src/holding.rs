//! The lines of a file that hold one of a few words, found by one search
//! over each block read (the regex crate's search for a set of literals),
//! never a line at a time: a reader that wants the few lines of a big file
//! that say something (the usage a run records) decodes only those.
//!
//! The search is for anchors: a part of each word that other text seldom
//! holds. It stops wherever a pattern's first bytes occur, and a word's own
//! start ("mes" of "message-id") is in nearly every line of a transcript; a
//! line an anchor is found in is kept only if it holds a whole word, so the
//! answer is the words' whatever the anchors.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use memchr::{memchr, memchr_iter, memrchr};
use regex::bytes::Regex;

/// Where a line that holds a word is: its 1-based number (blank lines
/// counted), the offset of its first byte, and its length without the `\n`.
pub type Held = (u64, u64, u64);

/// Every line of `file`, from its start to its end as it is read, holding
/// one of `words`, in file order. Each word must hold one of `anchors` (a
/// line with no anchor is never looked at again: InvalidInput otherwise);
/// `block` bytes are read at a time (a line longer than a block is read whole).
pub fn lines_holding(
    file: &File,
    anchors: &[String],
    words: &[String],
    block: usize,
) -> io::Result<Vec<Held>> {
    let mut out = Vec::new();
    if words.is_empty() {
        return Ok(out);
    }
    if let Some(w) = words.iter().find(|w| !anchors.iter().any(|a| w.contains(a.as_str()))) {
        let why = format!("the word {w:?} holds none of the anchors");
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    }
    let any = |of: &[String]| {
        let escaped: Vec<String> = of.iter().map(|w| regex::escape(w)).collect();
        Regex::new(&escaped.join("|")).map_err(io::Error::other)
    };
    let (found, held) = (any(anchors)?, any(words)?);
    let block = block.max(1);
    // `buf[..kept]` holds the start of a line the reads so far have not ended,
    // then the block just read; `base` is its offset in the file, `number` the
    // lines ended before it. The buffer is zeroed once, when it grows.
    let (mut buf, mut kept, mut base, mut number) = (Vec::new(), 0usize, 0u64, 0u64);
    loop {
        if buf.len() < kept + block {
            buf.resize(kept + block, 0);
        }
        let read = read_at_most(file, &mut buf[kept..kept + block], base + kept as u64)?;
        let (filled, end) = (kept + read, read == 0);
        let whole = match memrchr(b'\n', &buf[..filled]) {
            _ if end => filled,
            Some(nl) => nl + 1,
            None => {
                kept = filled; // a line longer than the block: read on
                continue;
            }
        };
        let (lines, mut counted, mut at) = (&buf[..whole], 0, 0);
        while let Some(m) = found.find_at(lines, at) {
            let first = memrchr(b'\n', &lines[..m.start()]).map_or(0, |nl| nl + 1);
            let last = memchr(b'\n', &lines[m.start()..]).map_or(whole, |nl| m.start() + nl);
            if held.is_match(&lines[first..last]) {
                number += memchr_iter(b'\n', &lines[counted..first]).count() as u64;
                counted = first;
                out.push((number + 1, base + first as u64, (last - first) as u64));
            }
            if last >= whole {
                break;
            }
            at = last + 1;
        }
        number += memchr_iter(b'\n', &lines[counted..]).count() as u64;
        if end {
            return Ok(out);
        }
        buf.copy_within(whole..filled, 0);
        (kept, base) = (filled - whole, base + whole as u64);
    }
}

/// `buf` filled from `at` as far as the file goes, retried on `EINTR`.
fn read_at_most(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], at + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn finds_the_lines_a_line_at_a_time_reading_finds_at_every_block_size() {
        let data = b"usage\n\nx token_count y\nnothing\nfun_call\nusa\nge\nlast usage";
        let mut f = tempfile_with(data);
        f.flush().unwrap();
        let words = ["usage".to_string(), "token_count".to_string()];
        // "n_c" is in line 5 too, which holds no word.
        let anchors = ["usage".to_string(), "n_c".to_string()];
        let want: Vec<Held> = vec![(1, 0, 5), (3, 7, 15), (8, 47, 10)];
        for block in 1..=data.len() + 1 {
            assert_eq!(lines_holding(&f, &anchors, &words, block).unwrap(), want, "block {block}");
        }
    }

    fn tempfile_with(data: &[u8]) -> File {
        let path = std::env::temp_dir().join(format!("holding-{}", std::process::id()));
        let mut f =
            File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        f.write_all(data).unwrap();
        f
    }
}
