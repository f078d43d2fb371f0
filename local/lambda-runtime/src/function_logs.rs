//! Where a function's output goes, as Lambda sends it to CloudWatch Logs:
//! every line of its stdout and stderr appended to its log file (one per
//! function, like a log group), EMF lines added up as CloudWatch would
//! turn them into metrics ([`EmfTotals`]), and the last few lines of each
//! environment kept to explain a failure.

use crate::emf_totals::EmfTotals;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};

/// Lines of an environment kept for its failure report.
const TAIL_LINES: usize = 8;
/// A line longer than this is cut: a log tail explains, it does not archive.
const TAIL_LINE_BYTES: usize = 1024;

/// What every function's output feeds.
#[derive(Debug, Default)]
pub struct LogSink {
    /// `<dir>/<function name>.log`, appended to; `None` keeps only the tails.
    pub dir: Option<PathBuf>,
    pub metrics: Arc<EmfTotals>,
}

/// The last lines one environment printed.
#[derive(Debug, Default)]
pub(crate) struct LogTail(Mutex<VecDeque<String>>);

impl LogTail {
    fn push(&self, line: &str) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == TAIL_LINES {
            lines.pop_front();
        }
        let mut cut = line.len().min(TAIL_LINE_BYTES);
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        lines.push_back(line[..cut].to_owned());
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect()
    }
}

impl LogSink {
    /// Reads `stream` line by line until it closes, feeding the tail, the
    /// metrics and the function's log file.
    pub(crate) async fn drain(self: Arc<Self>, function: String, stream: impl AsyncRead + Unpin, tail: Arc<LogTail>) {
        let mut file = None;
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{function}.log"));
            match tokio::fs::OpenOptions::new().create(true).append(true).open(&path).await {
                Ok(opened) => file = Some(opened),
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot write a function's log"),
            }
        }
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tail.push(&line);
            self.metrics.add_line(&line);
            if let Some(out) = &mut file {
                // One write per line: O_APPEND keeps environments' lines whole.
                let _ = out.write_all(format!("{line}\n").as_bytes()).await;
            }
        }
        // A tokio file finishes its last write in the background; flushing waits for it.
        if let Some(out) = &mut file {
            let _ = out.flush().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_feeds_the_tail_the_metrics_and_the_file() {
        let dir = std::env::temp_dir().join(format!("sluice-logs-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let sink = Arc::new(LogSink { dir: Some(dir.clone()), metrics: Arc::default() });
        let emf = r#"{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Sluice","Dimensions":[["Stage","Function"]],"Metrics":[{"Name":"UpstreamCalls","Unit":"Count"}]}]},"Stage":"local","Function":"fetch","UpstreamCalls":3}"#;
        let text: String = (0..10).map(|i| format!("line {i}\n")).collect::<String>() + emf + "\n";
        let tail = Arc::new(LogTail::default());
        sink.clone().drain("sluice-local-fetch".into(), text.as_bytes(), tail.clone()).await;
        assert_eq!(tail.lines().len(), TAIL_LINES);
        assert_eq!(tail.lines().last().map(String::as_str), Some(emf));
        assert_eq!(sink.metrics.total("fetch", "UpstreamCalls"), 3.0);
        let written = std::fs::read_to_string(dir.join("sluice-local-fetch.log")).unwrap();
        assert_eq!(written, text);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
