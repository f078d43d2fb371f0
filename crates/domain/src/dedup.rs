//! Deduplication ids. SQS FIFO drops a message whose deduplication id it has
//! seen in the last five minutes, so the id must be a function of the event's
//! own identity and nothing else:
//!
//! - two different events never share one (or SQS silently drops the second,
//!   and the order it carried is lost without an error anywhere);
//! - a redelivery of the same event always has the same one (or SQS cannot
//!   drop the duplicate).
//!
//! Both directions are property-tested in `tests/dedup_properties.rs`.

use crate::event::{SheetRow, ShopEvent};
use crate::sqs_token;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A `MessageDeduplicationId`: SQS-valid, at most 128 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DedupId(String);

impl DedupId {
    /// A deduplication id that arrived from outside (an SQS message, a
    /// request), checked against SQS's rule.
    pub fn parse(id: &str) -> Result<Self, sqs_token::InvalidToken> {
        sqs_token::check("MessageDeduplicationId", id)?;
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DedupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl ShopEvent {
    /// Identity: mall, topic, resource kind and id, and the delivery id.
    pub fn dedup_id(&self) -> DedupId {
        DedupId(sqs_token::encode(
            "s",
            &[
                &self.mall_id,
                &self.topic.to_string(),
                self.resource.kind.as_str(),
                &self.resource.id,
                &self.delivery_id,
            ],
        ))
    }
}

impl SheetRow {
    /// Identity: the sheet (credential, spreadsheet, gid), the submission and
    /// the row id. Cell values are content, not identity.
    pub fn dedup_id(&self) -> DedupId {
        DedupId(sqs_token::encode(
            "r",
            &[
                &self.credential_id,
                &self.spreadsheet_id,
                &self.sheet_gid.to_string(),
                &self.submission_id,
                &self.row_id,
            ],
        ))
    }
}
