//! FIFO group keys. SQS serves one group in order and blocks it while any of
//! its messages is in flight, so the group is the unit of ordering: events of
//! one shop topic (or one sheet) take effect in arrival order, while
//! different groups proceed independently.

use crate::event::{SheetRow, ShopEvent, Topic};
use crate::sqs_token;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A `MessageGroupId`: SQS-valid and injective over the group's identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupKey(String);

impl GroupKey {
    /// The group of a shop's topic: all events of one mall and one topic.
    pub fn shop(mall_id: &str, topic: Topic) -> Self {
        Self(sqs_token::encode("gs", &[mall_id, &topic.to_string()]))
    }

    /// The group of one sheet: credential + spreadsheet + sheet gid.
    pub fn sheet(credential_id: &str, spreadsheet_id: &str, sheet_gid: u64) -> Self {
        Self(sqs_token::encode("gr", &[credential_id, spreadsheet_id, &sheet_gid.to_string()]))
    }

    /// A group id that arrived from outside (an SQS message, a request),
    /// checked against SQS's rule.
    pub fn parse(id: &str) -> Result<Self, sqs_token::InvalidToken> {
        sqs_token::check("MessageGroupId", id)?;
        Ok(Self(id.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a group is, in the words of the people who run it: kept beside the
/// group key (which may be encoded past reading) by the group ledger, so
/// that `sluice status` can name the mall or the credential behind a lag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GroupAbout {
    Shop { mall_id: String, topic: Topic },
    Sheet { credential_id: String, spreadsheet_id: String, sheet_gid: u64 },
}

impl ShopEvent {
    pub fn group_about(&self) -> GroupAbout {
        GroupAbout::Shop { mall_id: self.mall_id.clone(), topic: self.topic }
    }

    pub fn group_key(&self) -> GroupKey {
        GroupKey::shop(&self.mall_id, self.topic)
    }
}

impl SheetRow {
    pub fn group_about(&self) -> GroupAbout {
        GroupAbout::Sheet {
            credential_id: self.credential_id.clone(),
            spreadsheet_id: self.spreadsheet_id.clone(),
            sheet_gid: self.sheet_gid,
        }
    }

    pub fn group_key(&self) -> GroupKey {
        GroupKey::sheet(&self.credential_id, &self.spreadsheet_id, self.sheet_gid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shop_and_sheet_groups_never_meet() {
        assert_eq!(GroupKey::shop("acme", Topic(90001)).as_str(), "gs:acme:90001");
        assert_eq!(GroupKey::sheet("c", "s", 0).as_str(), "gr:c:s:0");
        // Pasting fields together would make these two equal.
        assert_ne!(GroupKey::sheet("a:b", "c", 1), GroupKey::sheet("a", "b:c", 1));
    }

    #[test]
    fn what_a_group_is_reads_back() {
        let about = GroupAbout::Sheet { credential_id: "c".into(), spreadsheet_id: "s".into(), sheet_gid: 7 };
        let text = serde_json::to_string(&about).unwrap();
        assert_eq!(text, r#"{"kind":"sheet","credential_id":"c","spreadsheet_id":"s","sheet_gid":7}"#);
        assert_eq!(serde_json::from_str::<GroupAbout>(&text).unwrap(), about);
    }

    #[test]
    fn long_identities_still_give_valid_group_ids() {
        let key = GroupKey::sheet(&"c".repeat(256), &"s".repeat(256), u64::MAX);
        assert!(sqs_token::is_valid(key.as_str()));
    }
}
