//! What `sluice demo sheets` checks and prints: per sheet, the header
//! once and every row exactly once (from the sandbox's contents), and the
//! calls used against Google's quotas (from the sandbox's record).

use super::sheets::SPREADSHEET;
use serde_json::Value;
use sluice_sandbox::{SheetsOp, SheetsSandbox};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// One phase's sheets, as found.
#[derive(Debug)]
pub(crate) struct SheetCheck {
    /// gid → (expected rows, rows found once, missing, found twice or more,
    /// header rows, rows not sent by the demo).
    sheets: BTreeMap<u64, Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    expected: usize,
    once: usize,
    missing: usize,
    duplicated: usize,
    headers: usize,
    unknown: usize,
}

impl SheetCheck {
    pub(crate) fn gather(sandbox: &SheetsSandbox, rows: &[(String, u64)]) -> Self {
        let mut wanted: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for (id, gid) in rows {
            wanted.entry(*gid).or_default().push(id);
        }
        let sheets = wanted
            .into_iter()
            .map(|(gid, ids)| {
                let values = sandbox.sheet_values(SPREADSHEET, gid).unwrap_or_default();
                let mut seen: HashMap<String, usize> = HashMap::new();
                let mut counts = Counts { expected: ids.len(), ..Counts::default() };
                for row in &values {
                    let id = cell(row.first());
                    if id == "row_id" {
                        counts.headers += 1;
                    } else {
                        *seen.entry(id).or_default() += 1;
                    }
                }
                for id in &ids {
                    match seen.remove(*id) {
                        None => counts.missing += 1,
                        Some(1) => counts.once += 1,
                        Some(_) => counts.duplicated += 1,
                    }
                }
                counts.unknown = seen.len();
                (gid, counts)
            })
            .collect();
        Self { sheets }
    }

    /// Everything sent is there (possibly wrongly: `ok` tells).
    pub(crate) fn complete(&self) -> bool {
        self.sheets.values().all(|c| c.missing == 0)
    }

    pub(crate) fn ok(&self) -> bool {
        self.sheets
            .values()
            .all(|c| c.once == c.expected && c.missing == 0 && c.duplicated == 0 && c.headers == 1 && c.unknown == 0)
    }

    pub(crate) fn print(&self) {
        for (gid, c) in &self.sheets {
            let verdict = if c.once == c.expected && c.duplicated == 0 && c.headers == 1 { "ok" } else { "WRONG" };
            println!(
                "   sheet {gid}: header {}x, {} of {} rows exactly once, {} missing, {} twice  [{verdict}]",
                c.headers, c.once, c.expected, c.missing, c.duplicated
            );
        }
    }
}

fn cell(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.trim_start_matches('\'').to_owned(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// Prints the calls the demo made and whether the quotas held. False when
/// Google's sandbox ever answered 429 or a quota was exceeded.
pub(crate) fn print_calls(sandbox: &SheetsSandbox, user: &str) -> bool {
    let calls = sandbox.calls();
    let count = |op: SheetsOp| calls.iter().filter(|c| c.op == op).count();
    let throttled = calls.iter().filter(|c| c.status == 429).count();
    let appended: usize = calls.iter().filter(|c| c.op == SheetsOp::ValuesAppend && c.applied).map(|c| c.rows).sum();
    let minute = Duration::from_secs(60);
    let max_user = sandbox.max_accepted_writes_in(minute, Some(user));
    let max_all = sandbox.max_accepted_writes_in(minute, None);
    println!("\nCalls to Google Sheets:");
    println!(
        "   appends {}, reads {}, token refreshes {}; {} rows appended ({:.1} rows per append)",
        count(SheetsOp::ValuesAppend),
        count(SheetsOp::ValuesGet) + count(SheetsOp::SpreadsheetGet),
        count(SheetsOp::Token),
        appended,
        appended as f64 / count(SheetsOp::ValuesAppend).max(1) as f64
    );
    println!(
        "   most writes in any 60 s window: {max_user} for the credential (limit 60), {max_all} for the project (limit 300)"
    );
    println!("   answered 429: {throttled}");
    throttled == 0 && max_user <= 60 && max_all <= 300
}
