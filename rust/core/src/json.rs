//! JSON reading (pull parser). Placeholder.
