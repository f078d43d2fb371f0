//! `sluice demo …`: live runs against a real Redis, each checking what it shows.

mod primitives;
mod sheet_report;
mod sheets;
mod shop_report;
mod shops;
mod stored_view;

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum Demo {
    /// Many concurrent callers share one sliding-window limit, one lock and
    /// one gate; prints what each got and checks the limit held exactly.
    Primitives(primitives::Args),
    /// The shop pipeline end to end: 20 sandbox malls, 2,000 webhooks from
    /// 100 clients, then a report that checks every invariant.
    Shops(shops::Args),
    /// The sheet path end to end: 1,000 submissions from 100 clients to one
    /// sandbox Google Sheet, 1,000 more over five sheets; checks every row
    /// landed exactly once within Google's quotas.
    Sheets(sheets::Args),
}

pub(crate) async fn run(demo: Demo) -> anyhow::Result<ExitCode> {
    match demo {
        Demo::Primitives(args) => primitives::run(args).await,
        Demo::Shops(args) => shops::run(args).await,
        Demo::Sheets(args) => sheets::run(args).await,
    }
}
