//! What `sluice dev`'s drain wrote to PostgreSQL, read the way the crash
//! tests read the snapshot streams when no drain runs: each product's row
//! against the sandbox's state, and which events the drained snapshots
//! answer. With a drain the streams are trimmed below what it committed,
//! so PostgreSQL is the only place left to look.

use super::stack::{Stale, get};
use sqlx::PgPool;
use std::collections::HashMap;

/// The products whose row in `sluice.snapshots` is missing or differs from
/// the sandbox's body: (index in `products`, what the row holds, sandbox
/// version).
pub(crate) async fn stale_rows(
    http: &reqwest::Client,
    cafe24: &str,
    pool: &PgPool,
    products: &[(String, String)],
) -> Stale {
    let rows: Vec<(String, String, Option<serde_json::Value>)> =
        sqlx::query_as("SELECT mall_id, resource_id, body FROM sluice.snapshots WHERE kind = 'product'")
            .fetch_all(pool)
            .await
            .unwrap_or_default();
    let rows: HashMap<(String, String), Option<serde_json::Value>> =
        rows.into_iter().map(|(mall, id, body)| ((mall, id), body)).collect();
    let mut stale = Vec::new();
    for (i, (mall, id)) in products.iter().enumerate() {
        let truth = get(http, &format!("{cafe24}/sandbox/malls/{mall}/resources/products/{id}")).await;
        let version = truth["version"].as_u64().expect("sandbox version");
        match rows.get(&(mall.clone(), id.clone())) {
            Some(Some(body)) if *body == truth["body"] => {}
            Some(body) => stale.push((i, Some(format!("a row whose body differs: {body:?}")), version)),
            None => stale.push((i, None, version)),
        }
    }
    stale
}

/// Snapshots the drain recorded, and per event how many of them answer it
/// (`written` or `superseded` rows of `sluice.events`: every drained
/// snapshot records one per event it answers, in the transaction that
/// writes its row).
pub(crate) async fn drained_answers(pool: &PgPool) -> (usize, HashMap<String, usize>) {
    let drained = "outcome IN ('written', 'superseded')";
    let distinct =
        format!("SELECT count(DISTINCT (detail->>'mall_id', detail->>'entry_id')) FROM sluice.events WHERE {drained}");
    let snapshots: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(distinct)).fetch_one(pool).await.unwrap_or(0);
    let answered = format!("SELECT event_id, count(*) FROM sluice.events WHERE {drained} GROUP BY event_id");
    let answered: Vec<(String, i64)> =
        sqlx::query_as(sqlx::AssertSqlSafe(answered)).fetch_all(pool).await.unwrap_or_default();
    (snapshots as usize, answered.into_iter().map(|(event, n)| (event, n as usize)).collect())
}
