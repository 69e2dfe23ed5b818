//! Line scanning and the tail check. Placeholder.
