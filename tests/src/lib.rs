//! Repository-wide checks and end-to-end tests; see `tests/`.
