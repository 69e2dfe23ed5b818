//! Canonical JSON text: the bytes of Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! (Owned by the canonical-writer work; this is a placeholder until it lands.)
