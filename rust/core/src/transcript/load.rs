//! Loading: a file read in segments, parsed on every core and replayed in
//! file order; and peek, which indexes every line that parses.

use super::*;

/// Reads the non-blank lines of bytes `start..end` of `src`, in order, in
/// chunks (memory holds one chunk and the longest line, never the file), and
/// hands each to `each` with its offset and its line number counted from
/// `start` (1-based, blank lines counted). `start` must be where a line starts.
/// Returns how many lines it counted.
pub fn for_each_line<R, E, F>(src: &R, start: u64, end: u64, mut each: F) -> Result<u64, E>
where
    R: ReadAt + ?Sized,
    E: From<io::Error>,
    F: FnMut(&[u8], u64, u64) -> Result<(), E>,
{
    let mut each = |line: &[u8], offset, number, _utf8| each(line, offset, number);
    lines_within(src, start, end, u64::MAX, &mut each, &mut |_, _, _| Ok(()))
}

/// The read size of [`for_each_line`]; a longer line grows its buffer a
/// chunk at a time, up to [`LONG_LINE`].
pub(super) const CHUNK: usize = 256 << 10;

/// A line longer than this is measured before it is read: [`for_each_line`]
/// reads on to its end without keeping its bytes, then reads it whole into a
/// buffer of its own size (so a line costs its own size in memory, and one
/// too long to keep costs nothing).
pub(super) const LONG_LINE: usize = 4 << 20;

// Fills `buf` from `at` in `src`: a file that ends first shrank under the reader.
pub fn read_exact_at<R: ReadAt + ?Sized>(src: &R, buf: &mut [u8], at: u64) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = src.read_at(&mut buf[filled..], at + filled as u64)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            ));
        }
        filled += n;
    }
    Ok(())
}

/// [`for_each_line`], keeping no line longer than `max` bytes: each such
/// line goes to `too_long` as `(offset, length, number)`, measured without
/// being read into memory; and telling `each` whether its line is known to be
/// UTF-8: the lines of each read are checked at once (a check of 256 KiB is
/// a fraction of 1,000 checks of 256 bytes), and when that read is not all
/// UTF-8, or for a line read on its own, `each` is told false and checks.
pub(super) fn lines_within<R, E, F, G>(
    src: &R,
    start: u64,
    end: u64,
    max: u64,
    each: &mut F,
    too_long: &mut G,
) -> Result<u64, E>
where
    R: ReadAt + ?Sized,
    E: From<io::Error>,
    F: FnMut(&[u8], u64, u64, bool) -> Result<(), E>,
    G: FnMut(u64, u64, u64) -> Result<(), E>,
{
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(end - start).unwrap_or(CHUNK)).max(4096)];
    let mut have = 0; // buf[..have] holds the file from `buf_offset`
    let mut buf_offset = start;
    let mut read_to = start;
    let mut number = 0u64;
    let mut searched = 0usize;
    loop {
        if have == buf.len() {
            if have >= LONG_LINE || have as u64 > max {
                // One line fills the buffer, which holds no `\n`: find its end.
                let first = buf_offset;
                let mut stop = None;
                while read_to < end {
                    let want = usize::try_from(end - read_to).unwrap_or(usize::MAX).min(CHUNK);
                    read_exact_at(src, &mut buf[..want], read_to)?;
                    if let Some(i) = memchr::memchr(b'\n', &buf[..want]) {
                        stop = Some(read_to + i as u64);
                        break;
                    }
                    read_to += want as u64;
                }
                let line_end = stop.unwrap_or(end);
                let len = line_end - first;
                number += 1;
                if len > max {
                    too_long(first, len, number)?;
                } else {
                    let mut line = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
                    read_exact_at(src, &mut line, first)?;
                    if !is_blank(&line) {
                        each(&line, first, number, false)?;
                    }
                }
                if stop.is_none() {
                    return Ok(number);
                }
                buf.truncate(CHUNK.max(4096));
                buf.shrink_to_fit();
                have = 0;
                searched = 0;
                buf_offset = line_end + 1;
                read_to = buf_offset;
                continue;
            }
            // One line fills the buffer: make room for the rest of it, a chunk at a
            // time (doubling would zero, and so touch, up to twice the line's size).
            buf.resize(buf.len() + CHUNK, 0);
        }
        let want = usize::try_from(end - read_to).unwrap_or(usize::MAX).min(buf.len() - have);
        read_exact_at(src, &mut buf[have..have + want], read_to)?;
        have += want;
        read_to += want as u64;
        let mut at = 0;
        // What is left from the last round holds no `\n`: search only the new bytes,
        // so a line longer than the buffer is scanned once, not once per refill.
        let mut from = searched;
        // The whole lines of the buffer are UTF-8 (each line then is: a line
        // ends at a `\n`, which no character's encoding holds), or unknown.
        let whole = memchr::memrchr(b'\n', &buf[from..have]).map_or(0, |i| from + i);
        let utf8 = whole > 0 && simdutf8::basic::from_utf8(&buf[..whole]).is_ok();
        while let Some(i) = memchr::memchr(b'\n', &buf[from..have]) {
            number += 1;
            let nl = from + i;
            let line = &buf[at..nl];
            let line_at = buf_offset + at as u64;
            if line.len() as u64 > max {
                too_long(line_at, line.len() as u64, number)?;
            } else if !is_blank(line) {
                each(line, line_at, number, utf8)?;
            }
            at = nl + 1;
            from = at;
        }
        if want == 0 {
            // The end: a last line without its newline.
            if at < have {
                number += 1;
                let line = &buf[at..have];
                let line_at = buf_offset + at as u64;
                if line.len() as u64 > max {
                    too_long(line_at, line.len() as u64, number)?;
                } else if !is_blank(line) {
                    each(line, line_at, number, false)?;
                }
            }
            return Ok(number);
        }
        buf.copy_within(at..have, 0);
        have -= at;
        buf_offset += at as u64;
        searched = have;
    }
}

/// A line the fast scanner read: what replay needs of it, the id's key
/// worked out, nothing else kept (see [`crate::envelope::parse_line`]).
#[derive(Debug)]
pub(super) struct ScannedLine {
    pub(super) key: Keyed,
    pub(super) kind: EnvelopeType,
    pub(super) sticky: bool,
    // A tool message's call id, a dispatch's: where it is in the segment's
    // `calls` (no allocation a line).
    pub(super) call: Option<(u32, u32)>,
    // A settle's operation id: its key's index in the segment's `ops`, or
    // NO_OP.
    pub(super) op: u32,
}

// ScannedLine::op of a line that is not a settle (or whose op-id is not kept).
pub(super) const NO_OP: u32 = u32::MAX;

/// One envelope of a segment: scanned, or read by the strict reader.
#[derive(Debug)]
pub(super) enum Item {
    Scanned(ScannedLine),
    Full(Box<Envelope>),
}

/// One envelope read from a segment, and where it is.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) item: Item,
    pub(super) rec: LineRec,
}

/// One stretch of a file, parsed line by line.
pub(super) struct Segment {
    /// Each envelope read, with line numbers counted from the segment's start.
    pub(super) items: Vec<Row>,
    /// The call ids of its scanned lines, one after the other.
    pub(super) calls: Vec<u8>,
    /// The operation keys of its scanned settles.
    pub(super) ops: Vec<Keyed>,
    /// With `lenient`, `(line, why)` for each line skipped; otherwise the first
    /// bad line, where reading stopped.
    pub(super) bad: Vec<(u64, LineError)>,
    /// Bad lines past the first [`SKIPPED_KEPT`], counted, not kept.
    pub(super) bad_more: u64,
    /// Lines counted, blank ones included.
    pub(super) lines: u64,
}

/// How many skipped lines peek describes one by one; the rest are counted, so a
/// file of a million malformed lines costs a number, not a million messages.
pub const SKIPPED_KEPT: usize = 100;

// Why a strict read of a segment stopped early.
pub(super) enum Stop {
    Io(io::Error),
    BadLine,
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

/// What load and peek say of a line longer than [`MAX_LINE`].
pub fn too_long_error(len: u64) -> LineError {
    LineError::Invalid(format!(
        "a line of {len} bytes: longer than {MAX_LINE} bytes (4 GiB - 1), the longest an envelope may be"
    ))
}

/// Whether a line of `len` bytes (its `\n` left out) may be an envelope: at
/// most [`MAX_LINE`] bytes. Append asks before it writes; load and peek refuse
/// (or skip) a longer line with [`too_long_error`].
pub fn check_line_length(len: u64) -> Result<(), LineError> {
    if len > MAX_LINE {
        Err(too_long_error(len))
    } else {
        Ok(())
    }
}

// The row of `line` at `offset`, line `number`, added to `seg`: scanned when
// it can be (for replay, with `keyed`; for peek only its type and role are
// kept), else read by the strict reader. `utf8`: the line is known to be UTF-8.
pub(super) fn read_row(
    seg: &mut Segment,
    line: &[u8],
    offset: u64,
    number: u64,
    keyed: bool,
    utf8: bool,
) -> Result<(), LineError> {
    let len = u32::try_from(line.len()).unwrap_or(u32::MAX);
    let scanned =
        if utf8 { crate::envelope::scan_utf8_line(line) } else { crate::envelope::scan_line(line) };
    if let Ok(s) = scanned {
        let rec = LineRec { offset, len, number, kind: s.kind, role: s.role };
        let (mut call, mut op) = (None, NO_OP);
        if let (true, Some(id)) = (keyed, s.call) {
            if s.kind == EnvelopeType::ToolSettled {
                op = u32::try_from(seg.ops.len()).unwrap_or(NO_OP);
                seg.ops.push(Keyed::of(id));
            } else {
                // A segment's lines are under 4 GiB together, bar one line.
                let at = u32::try_from(seg.calls.len()).unwrap_or(u32::MAX);
                seg.calls.extend_from_slice(id);
                call = Some((at, u32::try_from(id.len()).unwrap_or(0)));
            }
        }
        let key = if keyed { Keyed::of(s.id) } else { Keyed::default() };
        let item = Item::Scanned(ScannedLine { key, kind: s.kind, sticky: s.sticky, call, op });
        seg.items.push(Row { item, rec });
        return Ok(());
    }
    let env = crate::envelope::parse_line_strict(line)?;
    let rec = LineRec::new(&env, offset, line.len(), number);
    seg.items.push(Row { item: Item::Full(Box::new(env)), rec });
    Ok(())
}

// A bad line of a segment: kept (the first SKIPPED_KEPT) or counted; a strict
// read stops there.
pub(super) fn bad_line(
    seg: &mut Segment,
    number: u64,
    e: LineError,
    lenient: bool,
) -> Result<(), Stop> {
    if seg.bad.len() >= SKIPPED_KEPT {
        seg.bad_more += 1;
        return Ok(());
    }
    seg.bad.push((number, e));
    if lenient {
        Ok(())
    } else {
        // Load stops at the first bad line: parsing on is wasted work.
        Err(Stop::BadLine)
    }
}

pub(super) fn parse_segment<R: ReadAt + ?Sized>(
    src: &R,
    start: u64,
    end: u64,
    lenient: bool,
    keyed: bool,
) -> io::Result<Segment> {
    // Sized for lines of 200 bytes or more: a stretch of small lines is not
    // copied from one doubling to the next.
    let rows = usize::try_from((end - start) / 200).unwrap_or(0) + 16;
    let seg = std::cell::RefCell::new(Segment {
        items: Vec::with_capacity(rows),
        calls: Vec::new(),
        ops: Vec::new(),
        bad: Vec::new(),
        bad_more: 0,
        lines: 0,
    });
    let counted = lines_within(
        src,
        start,
        end,
        MAX_LINE,
        &mut |line: &[u8], offset, number, utf8| {
            let mut seg = seg.borrow_mut();
            match read_row(&mut seg, line, offset, number, keyed, utf8) {
                Ok(()) => Ok(()),
                Err(e) => bad_line(&mut seg, number, e, lenient),
            }
        },
        &mut |_, len, number| bad_line(&mut seg.borrow_mut(), number, too_long_error(len), lenient),
    );
    let mut seg = seg.into_inner();
    match counted {
        Ok(lines) => seg.lines = lines,
        Err(Stop::BadLine) => {}
        Err(Stop::Io(e)) => return Err(e),
    }
    Ok(seg)
}

// Where to cut `0..size` into about `parts` stretches, each starting at a line.
pub(super) fn cut_points<R: ReadAt + ?Sized>(
    src: &R,
    size: u64,
    parts: u64,
) -> io::Result<Vec<u64>> {
    let mut cuts = vec![0];
    // On the heap: a thread with a small stack (threading.stack_size) may load.
    let mut probe = vec![0u8; 64 * 1024];
    for k in 1..parts {
        let mut at = (size * k / parts).max(*cuts.last().unwrap_or(&0));
        loop {
            let n = src.read_at(&mut probe, at)?;
            if n == 0 {
                at = size;
                break;
            }
            if let Some(i) = memchr::memchr(b'\n', &probe[..n]) {
                at += i as u64 + 1;
                break;
            }
            at += n as u64;
        }
        if at < size && at > *cuts.last().unwrap_or(&0) {
            cuts.push(at);
        }
    }
    cuts.push(size);
    Ok(cuts)
}

/// The bytes of one stretch parsed by one thread: small enough that the
/// envelopes of the stretches in flight are a few hundred KiB whatever the
/// file's size (memory follows the index, not the file), big enough that
/// handing one over is nothing beside its work.
pub(super) const STRETCH: u64 = 1 << 20;

// Parses `0..size` in stretches of about STRETCH bytes, on every core (up to
// 8): each parser thread takes every `cores`-th stretch and hands each one
// over as soon as this thread asks for it, so that this thread gets them in
// file order and hands each to `take` while the parsers read the next ones;
// no more than a stretch a parser, and the one being taken, are ever held.
// `take` returns false to stop (the parsers then stop after the stretch they
// are in), and `stop` is asked before each stretch (its error ends it all the
// same way: a Ctrl-C). A parser thread that cannot be started leaves its
// stretches to this thread.
pub(super) fn each_segment<R, E, F>(
    src: &R,
    size: u64,
    lenient: bool,
    keyed: bool,
    stop: crate::stop::Stop<'_>,
    mut take: F,
) -> Result<(), E>
where
    R: ReadAt + Sync + ?Sized,
    E: From<io::Error>,
    F: FnMut(Segment) -> Result<bool, E>,
{
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    let cuts = cut_points(src, size, (size / STRETCH).max(1))?;
    if cuts.len() == 2 {
        take(parse_segment(src, 0, size, lenient, keyed)?)?;
        return Ok(());
    }
    let stretches: Vec<(u64, u64)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let parsers = cores.min(stretches.len());
    std::thread::scope(|scope| {
        let mut from = Vec::with_capacity(parsers);
        let mut threads = Vec::with_capacity(parsers);
        for first in 0..parsers {
            // A rendezvous: a parsed stretch waits in its parser until asked for.
            let (give, get) = std::sync::mpsc::sync_channel::<io::Result<Segment>>(0);
            let mine = stretches.iter().skip(first).step_by(parsers).copied();
            let parser = move || {
                for (start, end) in mine {
                    let seg = parse_segment(src, start, end, lenient, keyed);
                    let failed = seg.is_err();
                    if give.send(seg).is_err() || failed {
                        return;
                    }
                }
            };
            match crate::threads::thread_builder().spawn_scoped(scope, parser) {
                Ok(h) => {
                    from.push(Some(get));
                    threads.push(h);
                }
                Err(_) => from.push(None),
            }
        }
        let result = (|| -> Result<(), E> {
            for (k, &(start, end)) in stretches.iter().enumerate() {
                stop()?;
                let seg = match from.get(k % parsers) {
                    Some(Some(get)) => get
                        .recv()
                        .unwrap_or_else(|_| Err(io::Error::other("a parser thread failed")))?,
                    _ => parse_segment(src, start, end, lenient, keyed)?,
                };
                if !take(seg)? {
                    break;
                }
            }
            Ok(())
        })();
        // The parsers still running find nobody to hand to, and stop.
        drop(from);
        for h in threads {
            // A parser that panicked has already said so through its channel.
            let _ = h.join();
        }
        result
    })
}

/// Loads the first `size` bytes of `src`: every line must be an envelope and
/// replay must accept it. The tail must already have been repaired. Lines are
/// parsed on every core; replay then runs over them in file order.
pub fn load<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Transcript, LoadError> {
    load_or_stop(src, size, &crate::stop::go_on)
}

/// [`load`], asking `stop` before each stretch of about a MiB (an error it
/// answers ends the load as [`LoadError::Io`]).
pub fn load_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    load_into(Transcript::default(), src, size, stop)
}

/// [`load`], keeping the [`History`] of what replay did: for a reader that shows
/// a transcript (what each compaction replaced, which settle settled a dispatch).
pub fn inspect<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Transcript, LoadError> {
    inspect_or_stop(src, size, &crate::stop::go_on)
}

/// [`inspect`], asking `stop` as [`load_or_stop`] does.
pub fn inspect_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    let t = Transcript { history: Some(History::default()), ..Transcript::default() };
    load_into(t, src, size, stop)
}

/// How many lines ahead replay asks for the id table's slots of a line: about
/// as many as it replays while memory answers.
pub(super) const AHEAD: usize = 8;

pub(super) fn load_into<R: ReadAt + Sync + ?Sized>(
    mut t: Transcript,
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Transcript, LoadError> {
    let mut before = 0; // lines in the segments already replayed
    each_segment(src, size, false, true, stop, |seg: Segment| {
        if before == 0 {
            t.reserve(estimated_lines(&seg, size));
        }
        let mut rows = seg.items.into_iter();
        while let Some(Row { item, mut rec }) = rows.next() {
            // The rows a parser thread wrote are in its core's cache, not this one's.
            if let Some(row) = rows.as_slice().get(2 * AHEAD) {
                prefetch(row);
            }
            if let Some(Row { item: Item::Scanned(s), .. }) = rows.as_slice().get(AHEAD) {
                t.ids.prefetch(s.key.hash);
                if let Some(op) = seg.ops.get(s.op as usize) {
                    t.ids.prefetch(op.hash);
                }
            }
            rec.number += before;
            let line = rec.number;
            match item {
                Item::Scanned(s) => t.push_scanned(s, rec, &seg.calls, &seg.ops),
                Item::Full(env) => t.push(*env, rec, false),
            }
            .map_err(|error| LoadError::Replay { line, error })?;
        }
        if let Some((line, error)) = seg.bad.into_iter().next() {
            return Err(LoadError::Line { line: before + line, error });
        }
        before += seg.lines;
        Ok(true)
    })?;
    if t.index.is_empty() {
        return Err(LoadError::Empty);
    }
    t.line_count = before;
    Ok(t)
}

// How many envelopes a file of `size` bytes holds, guessed from its first
// segment (a little over, so that the index is not grown again by doubling);
// 0 when that segment is too short to tell (one long line, a bad line).
pub(super) fn estimated_lines(first: &Segment, size: u64) -> usize {
    let Some(last) = first.items.last() else {
        return 0;
    };
    let read = last.rec.offset + u64::from(last.rec.len) + 1;
    if read < STRETCH / 2 {
        return 0;
    }
    let n = first.items.len() as u64;
    usize::try_from(size.saturating_mul(n) / read + n / 16 + 16).unwrap_or(0)
}

/// What peek makes of a file: the lines that parsed, and one warning per line
/// that did not.
#[derive(Debug, Default)]
pub struct Peeked {
    /// The envelopes that parsed, in file order.
    pub index: Index,
    /// `(line number, why)` for the first [`SKIPPED_KEPT`] lines skipped.
    pub skipped: Vec<(u64, String)>,
    /// How many more lines were skipped.
    pub skipped_more: u64,
    /// Lines in the bytes read, blank and skipped ones included.
    pub line_count: u64,
}

/// Reads the first `size` bytes of `src` as peek does: no replay, and a line
/// that is not an envelope is skipped and reported.
pub fn peek<R: ReadAt + Sync + ?Sized>(src: &R, size: u64) -> Result<Peeked, io::Error> {
    peek_or_stop(src, size, &crate::stop::go_on)
}

/// [`peek`], asking `stop` as [`load_or_stop`] does.
pub fn peek_or_stop<R: ReadAt + Sync + ?Sized>(
    src: &R,
    size: u64,
    stop: crate::stop::Stop<'_>,
) -> Result<Peeked, io::Error> {
    let mut p = Peeked::default();
    let mut before = 0;
    each_segment(src, size, true, false, stop, |seg: Segment| -> io::Result<bool> {
        if before == 0 {
            p.index.reserve(estimated_lines(&seg, size));
        }
        for Row { item, mut rec } in seg.items {
            rec.number += before;
            match item {
                Item::Scanned(_) => p.index.push_rec(rec),
                Item::Full(env) => p.index.push(rec, &env),
            }
        }
        for (n, e) in seg.bad {
            if p.skipped.len() < SKIPPED_KEPT {
                p.skipped.push((before + n, e.to_string()));
            } else {
                p.skipped_more += 1;
            }
        }
        p.skipped_more += seg.bad_more;
        before += seg.lines;
        Ok(true)
    })?;
    p.line_count = before;
    Ok(p)
}
