//! Sandboxes: stand-ins for the rate-limited upstream APIs sluice talks to,
//! served over real HTTP on 127.0.0.1. Each speaks its upstream's wire
//! format, enforces its limits exactly, injects faults on demand (seeded,
//! so runs repeat), and records every call so tests can check what sluice
//! did to it. Tests use them as a library; `sluice sandbox …` runs one as a
//! command; `sluice dev` and the demos embed them.
//!
//! Each sandbox keeps its own clock (`std::time::Instant`) for its limits;
//! nothing in a sandbox sleeps to synchronise (it sleeps only to inject
//! latency or hold a response, which is its job).
//!
//! # Layout
//!
//! - [`cafe24`]: the Cafe24 Admin API, its OAuth, buckets, webhooks and control plane.
//! - [`sheets`]: the Google Sheets API v4, Google's OAuth, its quotas, faults and control plane.
//! - [`fault`]: fault injection shared by every sandbox.
//! - `server`: serving a sandbox's router and stopping it, and how an answer leaves.
//! - `control_plane`: what the sandboxes' control planes share (JSON in and out, their errors).

pub mod cafe24;
mod control_plane;
pub mod fault;
mod server;
pub mod sheets;

pub use cafe24::{Cafe24Sandbox, SandboxConfig as Cafe24SandboxConfig};
pub use fault::{Fault, FaultConfig, TimeoutMode};
pub use sheets::{
    SandboxError as SheetsSandboxError, SheetsCall, SheetsFault, SheetsOp, SheetsSandbox, SheetsSandboxConfig,
};
