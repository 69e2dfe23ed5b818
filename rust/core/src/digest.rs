//! `sha256:<hex>` digests, as the wire format writes them.

use sha2::{Digest, Sha256};

/// The prefix every digest in a transcript carries.
pub const PREFIX: &str = "sha256:";

/// `"sha256:" + lowercase hex` of the SHA-256 of `data`.
pub fn sha256_digest(data: &[u8]) -> String {
    let hash = Sha256::digest(data);
    let mut out = String::with_capacity(PREFIX.len() + 64);
    out.push_str(PREFIX);
    for byte in hash {
        out.push(hex_digit(byte >> 4));
        out.push(hex_digit(byte & 0x0f));
    }
    out
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}
