//! What a running `sluice dev` tells the other commands: its Redis and key
//! prefix, in `.sluice/dev.json` of the directory it runs in, so that
//! `sluice trace ID` or `sluice tokens set …` in the same directory just
//! work. Written at start, removed at a clean stop; a file left by a killed
//! run is recognised as stale when its Redis does not answer.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the file lives, relative to the working directory.
pub(crate) const DEV_STATE_FILE: &str = ".sluice/dev.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DevState {
    pub(crate) redis_url: String,
    pub(crate) key_prefix: String,
    /// (what, URL) of everything it serves.
    pub(crate) urls: Vec<(String, String)>,
}

impl DevState {
    pub(crate) fn path() -> PathBuf {
        PathBuf::from(DEV_STATE_FILE)
    }

    pub(crate) fn write(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The state of a `sluice dev` run in this directory, if any.
    pub(crate) fn read(path: &Path) -> Option<Self> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }

    /// The URL it printed for `what` (e.g. "SQS endpoint", "Flush queue").
    pub(crate) fn url(&self, what: &str) -> Option<String> {
        self.urls.iter().find(|(w, _)| w == what).map(|(_, url)| url.clone())
    }
}
