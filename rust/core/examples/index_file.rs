//! Indexes a transcript the way load does and prints what it found and how long
//! it took: `cargo run --release -p agent-transcript-core --example index_file FILE`.
//! For profiling the core without Python in the way.

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: index_file FILE")?;
    let file = std::fs::File::open(&path)?;
    let size = file.metadata()?.len();
    let start = Instant::now();
    let peeked = transcript_core::transcript::peek(&file, size)?;
    let peek_time = start.elapsed();
    let start = Instant::now();
    let loaded = transcript_core::transcript::load(&file, size);
    let load_time = start.elapsed();
    println!(
        "{path}: {size} bytes, {} envelopes ({} skipped) indexed in {peek_time:?}; load {} in {load_time:?}",
        peeked.index.len(),
        peeked.skipped.len(),
        match &loaded {
            Ok(t) => format!("ok, {} live messages", t.live.len()),
            Err(e) => format!("failed: {e:?}"),
        }
    );
    Ok(())
}
