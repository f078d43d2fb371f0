//! `sluice tokens enrol|withdraw MALL` and `sluice credentials
//! enrol|withdraw CREDENTIAL`: whether ingest takes a tenant's work
//! (`sluice_redis::enrolment`). Storing a token enrols its tenant, so
//! `enrol` is for tokens stored by a sluice older than enrolment (which
//! ingest would refuse until then); `withdraw` makes ingest refuse a
//! tenant's webhooks or rows from now on (within a minute, for an ingest
//! that saw it lately), keeping its token and whatever is already queued.

use crate::redis_target::StateRedis;
use crate::usage;
use sluice_redis::{Enrolments, Tag, TokenStore};
use std::process::ExitCode;

/// Which tenant: how the commands name it, and where its token is.
pub(crate) struct Tenant<'a> {
    /// "mall acme", "credential form-1".
    pub(crate) name: String,
    pub(crate) tag: Tag,
    pub(crate) token: &'a str,
    /// The command that stores (and so enrols) its token.
    pub(crate) set: String,
}

/// Enrols `tenant`, whose token must be stored already.
pub(crate) async fn enrol(who: &'static str, tenant: &Tenant<'_>) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let conn = redis.connection().await?;
    let stored = TokenStore::new(conn.clone(), redis.keyspace.clone()).get(&tenant.tag, tenant.token).await?;
    if stored.is_none() {
        let problem = format!("{} has no stored token; `{}` stores one and enrols it", tenant.name, tenant.set);
        return Err(usage(who, problem));
    }
    let enrolments = Enrolments::new(conn, redis.keyspace.clone());
    if enrolments.enrol(&tenant.tag, tenant.token, super::tokens::now_ms()).await? {
        println!("Enrolled {}: ingest takes its work from now on.", tenant.name);
    } else {
        println!("{} was enrolled already.", capitalised(&tenant.name));
    }
    Ok(ExitCode::SUCCESS)
}

/// Withdraws `tenant`: ingest refuses its work from now on.
pub(crate) async fn withdraw(tenant: &Tenant<'_>) -> anyhow::Result<ExitCode> {
    let redis = StateRedis::locate("sluice")?;
    let enrolments = Enrolments::new(redis.connection().await?, redis.keyspace.clone());
    if enrolments.withdraw(&tenant.tag, tenant.token).await? {
        println!(
            "Withdrew {}: ingest answers its work 422 unknown_tenant (within a minute); its token and queued work stay.",
            tenant.name
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} was not enrolled.", capitalised(&tenant.name));
        Ok(ExitCode::FAILURE)
    }
}

/// Whether `tenant` is enrolled, as `show` prints it.
pub(crate) async fn describe(redis: &StateRedis, tenant: &Tenant<'_>) -> anyhow::Result<String> {
    let enrolments = Enrolments::new(redis.connection().await?, redis.keyspace.clone());
    Ok(if enrolments.is_enrolled(&tenant.tag, tenant.token).await? {
        format!("{}: enrolled (ingest takes its work)", tenant.name)
    } else {
        format!("{}: NOT enrolled (ingest refuses its work: `{}`)", tenant.name, tenant.set)
    })
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
