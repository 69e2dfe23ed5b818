"""The Session's tests, written against SPEC.md: only the public API and the file's bytes."""
