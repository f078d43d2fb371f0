//! The sheet titles the client has learnt, per spreadsheet.
//!
//! sluice knows a sheet by its gid (stable across renames), but A1 ranges
//! name it by title, so every write would first need a `spreadsheets.get`,
//! a read against the same per-minute quota. The cache keeps the
//! gid → title map of each spreadsheet from its latest `spreadsheets.get`
//! and is told to forget a spreadsheet when Google no longer parses a
//! range with a cached title (renamed or deleted sheet) or no longer knows
//! the spreadsheet.
//!
//! Two calls that miss at once both ask Google; the later answer wins.
//! That costs a read, never a wrong title: both answers are Google's.
//! Entries are small (titles of the spreadsheets one deployment writes to),
//! so nothing is evicted.

use crate::values::Sheet;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Shared by the clones of one client.
#[derive(Debug, Clone, Default)]
pub(crate) struct TitleCache {
    spreadsheets: Arc<Mutex<HashMap<String, HashMap<u64, String>>>>,
}

impl TitleCache {
    pub(crate) fn title(&self, spreadsheet_id: &str, gid: u64) -> Option<String> {
        self.lock().get(spreadsheet_id)?.get(&gid).cloned()
    }

    /// Replaces what is known of `spreadsheet_id` with `sheets`, the whole
    /// answer of one `spreadsheets.get` (so deleted sheets drop out).
    pub(crate) fn remember(&self, spreadsheet_id: &str, sheets: &[Sheet]) {
        let titles = sheets.iter().map(|s| (s.properties.sheet_id, s.properties.title.clone())).collect();
        self.lock().insert(spreadsheet_id.to_owned(), titles);
    }

    pub(crate) fn forget(&self, spreadsheet_id: &str) {
        self.lock().remove(spreadsheet_id);
    }

    /// A panic elsewhere while holding the lock cannot leave the map half
    /// written (each change is one insert or remove), so a poisoned lock
    /// is still good.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<u64, String>>> {
        self.spreadsheets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::SheetProperties;

    fn sheet(gid: u64, title: &str) -> Sheet {
        Sheet { properties: SheetProperties { sheet_id: gid, title: title.into(), ..Default::default() } }
    }

    #[test]
    fn remembers_per_spreadsheet_replaces_and_forgets() {
        let cache = TitleCache::default();
        cache.remember("a", &[sheet(0, "Sheet1"), sheet(7, "Orders")]);
        cache.remember("b", &[sheet(0, "Other")]);
        let clone = cache.clone();
        assert_eq!(clone.title("a", 7).as_deref(), Some("Orders"));
        assert_eq!(clone.title("b", 0).as_deref(), Some("Other"));
        assert_eq!(clone.title("b", 7), None);
        cache.remember("a", &[sheet(0, "Renamed")]);
        assert_eq!((cache.title("a", 0).as_deref(), cache.title("a", 7)), (Some("Renamed"), None));
        cache.forget("a");
        assert_eq!(cache.title("a", 0), None);
        assert_eq!(cache.title("b", 0).as_deref(), Some("Other"));
    }
}
