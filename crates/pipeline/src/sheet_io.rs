//! The JSON of the sheet path: what the buffer step takes and gives, what
//! a flush request carries (the body of the delayed trigger message, and
//! the flush function's input), and a row as it waits in the buffer.

use serde::{Deserialize, Serialize};
pub use sluice_domain::BufferedRow;
use sluice_domain::SheetRow;

/// The buffer step's input: one item of the batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferInput {
    pub item: crate::step_io::ItemPlan,
}

/// What the buffer step did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferOutput {
    /// False for a row buffered before (a redelivery).
    pub buffered: bool,
    pub buffer_len: u64,
    /// Rows that joined the buffer from the sheet's overflow behind this
    /// one (flow control per sheet).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub moved_from_overflow: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// "Flush this sheet": the trigger message and the flush's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlushRequest {
    /// The sheet's FIFO group key: its identity everywhere in sluice.
    pub sheet: String,
    pub credential_id: String,
    pub spreadsheet_id: String,
    pub sheet_gid: u64,
    /// The value the requester put in the sheet's flush gate, so this
    /// flush clears that request and no later one.
    pub token: String,
}

impl FlushRequest {
    pub fn for_row(row: &SheetRow, token: String) -> Self {
        Self {
            sheet: row.group_key().as_str().to_owned(),
            credential_id: row.credential_id.clone(),
            spreadsheet_id: row.spreadsheet_id.clone(),
            sheet_gid: row.sheet_gid,
            token,
        }
    }

    /// The sheet without a token, as a credential's set of sheets holds it.
    pub fn to_member(&self) -> String {
        serde_json::to_string(&self.with_token(String::new())).unwrap_or_default()
    }

    pub fn from_member(member: &str) -> Option<Self> {
        serde_json::from_str(member).ok()
    }

    /// The same sheet, asked for under another token.
    pub fn with_token(&self, token: String) -> Self {
        Self { token, ..self.clone() }
    }
}

/// What a flush did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlushOutput {
    /// Rows appended to the sheet by this flush.
    pub appended_rows: u64,
    /// API calls it made (appends, and reads to verify).
    pub calls: u64,
    pub next: FlushNext,
    /// For `later`: when the next flush is scheduled.
    pub wait_seconds: u64,
    /// Why the rows are parked, for `parked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<String>,
}

/// What happens to the sheet after a flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushNext {
    /// The buffer is empty.
    Idle,
    /// More to do: a flush is scheduled after `wait_seconds`.
    Later,
    /// Another flush holds the sheet.
    Busy,
    /// The rows wait for a person (credential or sheet).
    Parked,
}

impl std::fmt::Display for FlushNext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Idle => "idle",
            Self::Later => "later",
            Self::Busy => "busy",
            Self::Parked => "parked",
        })
    }
}
