//! One row of `bench/chaos.md` per chaos run.
//!
//! Each chaos test (`make chaos`) ends by calling [`ChaosRow::record`], which
//! writes its row to `<dir>/<scenario>.row`; `scripts/chaos-table.sh` puts
//! the rows of the last run together under the table's header. A file per
//! scenario rather than one shared file: the tests run as separate
//! processes, possibly at once, and a rerun of one scenario replaces only
//! its own row.
//!
//! Tests pass `env!("CARGO_TARGET_TMPDIR")` joined with `chaos` as the
//! directory (Cargo sets it for integration tests only, so the crate cannot
//! read it itself); the script reads the same place.

use std::path::Path;
use std::time::Duration;

/// The figures every scenario reports, as the table's columns.
#[derive(Debug, Clone, Default)]
pub struct ChaosRow {
    /// What was broken, e.g. "kill -9 mid-ingest (shop path)".
    pub scenario: String,
    /// Seeded runs (or kills) the figures add up.
    pub runs: usize,
    /// Events or rows sent (by the test's senders, retries not counted).
    pub sent: usize,
    /// Accepted but never stored or written.
    pub lost: usize,
    /// Stored or written more than once.
    pub duplicated: usize,
    /// The longest time from the fault's end to the pipeline working again
    /// (first accept, or drained), when the scenario measures one.
    pub recovered_in: Option<Duration>,
    /// Anything else worth a reader's eye: 429s, alerts, RSS.
    pub notes: String,
}

impl ChaosRow {
    /// The row as Markdown, in the table's column order.
    pub fn markdown(&self) -> String {
        let recovered = self.recovered_in.map_or("-".to_owned(), |d| format!("{:.1} s", d.as_secs_f64()));
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&self.scenario),
            self.runs,
            self.sent,
            self.lost,
            self.duplicated,
            recovered,
            cell(&self.notes)
        )
    }

    /// Writes the row to `<dir>/<file_stem>.row`, replacing an earlier run's.
    /// A failure to write is printed, not raised: the figures are already in
    /// the test's output and the test's verdict does not depend on them.
    pub fn record(&self, dir: &Path, file_stem: &str) {
        let path = dir.join(format!("{file_stem}.row"));
        let written = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, self.markdown() + "\n"));
        match written {
            Ok(()) => println!("chaos row ({}): {}", path.display(), self.markdown()),
            Err(e) => println!("could not write the chaos row to {}: {e}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_escapes_pipes_and_newlines_and_writes_a_dash_without_a_recovery_time() {
        let row = ChaosRow { scenario: "a | b".into(), runs: 2, sent: 10, notes: "x\ny".into(), ..ChaosRow::default() };
        assert_eq!(row.markdown(), "| a \\| b | 2 | 10 | 0 | 0 | - | x y |");
        let timed = ChaosRow { recovered_in: Some(Duration::from_millis(1500)), ..row };
        assert!(timed.markdown().contains("| 1.5 s |"), "{}", timed.markdown());
    }

    #[test]
    fn recording_twice_keeps_only_the_last_row() {
        let dir = std::env::temp_dir().join(format!("sluice-chaos-row-{}", std::process::id()));
        let mut row = ChaosRow { scenario: "s".into(), runs: 1, ..ChaosRow::default() };
        row.record(&dir, "s");
        row.runs = 5;
        row.record(&dir, "s");
        let text = std::fs::read_to_string(dir.join("s.row")).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("| s | 5 |"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
