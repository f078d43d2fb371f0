//! Flow control per mall (`sluice_redis::backlog`): the catch-up queue
//! and the threshold, read by ingest, fetch (its hand-overs) and the
//! catch-up function from this one definition, so they cannot disagree. And
//! flow control per sheet's threshold (`sluice_redis::sheet_flow`), read by
//! ingest only: the buffer step needs none of its settings.

use crate::variables::part;
use crate::{ConfigError, EnvSource, in_range};
use sluice_aws::SqsEndpoint;

part! {
    struct FlowVars {
        catch_up_queue_url: Option<String> = None, "the catch-up function; ingest and fetch: turn flow control on",
            "the SQS standard queue of \"catch up mall M\" requests (not FIFO: a request's wait is its DelaySeconds)";
        flow_max_queued: u32 = sluice_redis::FlowControl::default().max_queued, "no",
            "a mall's messages in the FIFO queue from which its webhooks go to its dirty set; the same for ingest and the catch-up function";
        sheet_max_queued: u32 = sluice_redis::SheetFlow::default().max_queued, "no",
            "ingest: a sheet's rows in the FIFO queue from which its rows are held in its overflow (flow control per sheet, always on)";
        sqs_endpoint: Option<String> = None, "no", "a local SQS endpoint instead of AWS (`sluice dev`)";
    }
}

/// Where "catch up mall M" requests go: an SQS standard queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUpQueue {
    pub url: String,
    pub endpoint: SqsEndpoint,
}

/// Flow control as the variables set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowSettings {
    /// `None`: flow control is off (ingest enqueues every webhook).
    pub queue: Option<CatchUpQueue>,
    /// The threshold, for `IngestConfig.flow_control` and the pipeline's
    /// `CatchUpConfig.flow` alike.
    pub max_queued: u32,
    /// Flow control per sheet's threshold, for `IngestConfig.sheet_flow`.
    pub sheet_max_queued: u32,
}

impl FlowSettings {
    pub fn from_source(source: &EnvSource) -> Result<Self, ConfigError> {
        let v: FlowVars = source.extract()?;
        in_range("flow_max_queued", v.flow_max_queued, 1, None)?;
        in_range("sheet_max_queued", v.sheet_max_queued, 1, None)?;
        let queue = match v.catch_up_queue_url {
            None => None,
            Some(url) if url.ends_with(".fifo") => {
                // SQS FIFO refuses a per-message DelaySeconds, which the chain's wait relies on.
                let problem = "a FIFO queue; catch-up requests need a standard queue (DelaySeconds)";
                return Err(ConfigError::invalid("catch_up_queue_url", problem));
            }
            Some(url) => {
                Some(CatchUpQueue { url, endpoint: v.sqs_endpoint.map_or(SqsEndpoint::Aws, SqsEndpoint::Local) })
            }
        };
        Ok(Self { queue, max_queued: v.flow_max_queued, sheet_max_queued: v.sheet_max_queued })
    }

    /// The queue, which the catch-up function cannot run without.
    pub fn required_queue(&self) -> Result<&CatchUpQueue, ConfigError> {
        self.queue.as_ref().ok_or_else(|| ConfigError::missing("catch_up_queue_url"))
    }

    /// `flow` with this threshold.
    pub fn apply(&self, flow: &mut sluice_redis::FlowControl) {
        flow.max_queued = self.max_queued;
    }

    /// `flow` (per sheet) with this threshold.
    pub fn apply_to_sheets(&self, flow: &mut sluice_redis::SheetFlow) {
        flow.max_queued = self.sheet_max_queued;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<FlowSettings, ConfigError> {
        FlowSettings::from_source(&EnvSource::from_pairs(pairs.iter().copied()))
    }

    #[test]
    fn unset_is_off_with_the_library_threshold() {
        let flow = read(&[]).unwrap();
        assert_eq!((flow.queue, flow.max_queued), (None, sluice_redis::FlowControl::default().max_queued));
        assert_eq!(flow.sheet_max_queued, sluice_redis::SheetFlow::default().max_queued);
        assert_eq!(read(&[]).unwrap().required_queue().unwrap_err().name(), "SLUICE_CATCH_UP_QUEUE_URL");
    }

    #[test]
    fn the_queue_and_threshold_are_read_and_bad_ones_named() {
        let flow = read(&[
            ("SLUICE_CATCH_UP_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/mall-drain"),
            ("SLUICE_FLOW_MAX_QUEUED", "7"),
            ("SLUICE_SHEET_MAX_QUEUED", "9"),
            ("SLUICE_SQS_ENDPOINT", "http://127.0.0.1:9324"),
        ])
        .unwrap();
        let queue = flow.required_queue().unwrap();
        assert_eq!(queue.endpoint, SqsEndpoint::Local("http://127.0.0.1:9324".into()));
        assert_eq!((flow.max_queued, flow.sheet_max_queued), (7, 9));
        for (name, value) in [
            ("SLUICE_FLOW_MAX_QUEUED", "0"),
            ("SLUICE_FLOW_MAX_QUEUED", "many"),
            ("SLUICE_SHEET_MAX_QUEUED", "0"),
            ("SLUICE_CATCH_UP_QUEUE_URL", "https://sqs.ap-northeast-2.amazonaws.com/1/mall-drain.fifo"),
        ] {
            let err = read(&[(name, value)]).unwrap_err();
            assert!(matches!(&err, ConfigError::Invalid { name: n, .. } if n == name), "{name}={value}: {err}");
        }
    }
}
