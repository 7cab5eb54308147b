//! What both tracker digests print of a tracker's model and recording:
//! the unit tests' (`src/events_tests.rs`, a drained tracker against one
//! fed directly) and the replay test's (`tests/replay.rs`, pinned by
//! hash). Each file includes this one by `#[path]`, so the tests share it
//! without a public API; each keeps its own format around it (the replay
//! test's hash pins its string).

use super::Tracker;

/// The tracker's per-type model errors (`code:n:sum`, sorted) and its
/// recorded rows (`memtamer_tahoe::record::format_row`), as printed.
pub fn errs_and_rows(t: &Tracker) -> (Vec<String>, Vec<String>) {
    let mut errs: Vec<String> = t
        .errors()
        .iter()
        .map(|(c, e)| format!("{c:#x}:{}:{:.9}", e.n, e.sum))
        .collect();
    errs.sort();
    let rows: Vec<String> = t
        .recorded(|c| format!("{c:#x}"))
        .iter()
        .map(memtamer_tahoe::record::format_row)
        .collect();
    (errs, rows)
}
