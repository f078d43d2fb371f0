//! What a running `sluice dev` tells the other commands: its Redis and key
//! prefix, in `.sluice/dev.json` of the directory it runs in, so that
//! `sluice trace ID` or `sluice tokens set …` in the same directory just
//! work. Written at start, removed at a clean stop; a file left by a killed
//! run is recognised as stale when its Redis does not answer. Its Redis URL
//! may carry a password, so on Unix the file is its owner's alone (0600).

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sluice_aws::SqsEndpoint;
use std::path::{Path, PathBuf};

/// Where the file lives, relative to the working directory.
pub(crate) const DEV_STATE_FILE: &str = ".sluice/dev.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DevState {
    pub(crate) redis_url: String,
    /// The private CA its Redis's certificate is checked against
    /// (`SLUICE_REDIS_CA_FILE`), if set: without it a command run beside
    /// a `sluice dev` on such a Redis failed its TLS handshake.
    #[serde(default)]
    pub(crate) redis_ca_file: Option<PathBuf>,
    pub(crate) key_prefix: String,
    /// (what, URL) of everything it serves.
    pub(crate) urls: Vec<(String, String)>,
}

impl DevState {
    pub(crate) fn path() -> PathBuf {
        PathBuf::from(DEV_STATE_FILE)
    }

    /// Writes the file, readable and writable by its owner only on Unix
    /// (`redis_url` may hold a password): created 0600, and a file left
    /// wider by an earlier version narrowed before anything is written.
    pub(crate) fn write(&self, path: &Path) -> anyhow::Result<()> {
        use std::io::Write;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(self)?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
        #[cfg(unix)]
        file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .with_context(|| format!("cannot make {} private (chmod 600)", path.display()))?;
        file.write_all(json.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
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

/// The queue URLs an operator command reads: `given` (its flags, else the
/// environment) when any is, else those the running `sluice dev` printed
/// as `labels`; and the SQS endpoint: `endpoint`, else (nothing given) the
/// running `sluice dev`'s, else AWS.
pub(crate) fn queue_urls<const N: usize>(
    given: [Option<String>; N],
    endpoint: Option<String>,
    labels: [&str; N],
) -> ([Option<String>; N], SqsEndpoint) {
    let state = DevState::read(&DevState::path());
    let from_dev = |what: &str| state.as_ref().and_then(|s| s.url(what));
    let (urls, endpoint) = if given.iter().any(Option::is_some) {
        (given, endpoint)
    } else {
        (labels.map(from_dev), endpoint.or_else(|| from_dev("SQS endpoint")))
    };
    (urls, endpoint.filter(|e| !e.is_empty()).map_or(SqsEndpoint::Aws, SqsEndpoint::Local))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_file_is_kept_and_a_file_from_before_it_still_reads() {
        let dir = std::env::temp_dir().join(format!("sluice-dev-state-{}", std::process::id()));
        let path = dir.join("dev.json");
        let state = DevState {
            redis_url: "rediss://sluice:pw@127.0.0.1:7000/".into(),
            redis_ca_file: Some("/tmp/ca.pem".into()),
            key_prefix: "sluice:".into(),
            urls: vec![("Ingest".into(), "http://127.0.0.1:1/".into())],
        };
        state.write(&path).unwrap();
        assert_eq!(DevState::read(&path), Some(state));
        std::fs::write(&path, r#"{"redis_url": "redis://127.0.0.1:7000/", "key_prefix": "sluice:", "urls": []}"#)
            .unwrap();
        assert_eq!(DevState::read(&path).map(|s| s.redis_ca_file), Some(None));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Its Redis URL may carry a password: the file is created 0600, and
    /// one an earlier version left 0644 is narrowed when written again.
    #[cfg(unix)]
    #[test]
    fn the_file_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("sluice-dev-state-mode-{}", std::process::id()));
        let path = dir.join(".sluice/dev.json");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let state = DevState {
            redis_url: "redis://sluice:secret@127.0.0.1:7000/".into(),
            redis_ca_file: None,
            key_prefix: "sluice:".into(),
            urls: vec![],
        };
        state.write(&path).unwrap();
        assert_eq!(mode(&path), 0o600, "a new dev.json");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        state.write(&path).unwrap();
        assert_eq!(mode(&path), 0o600, "a dev.json left 0644 and written again");
        assert_eq!(DevState::read(&path), Some(state));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
