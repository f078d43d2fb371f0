//! Handing a fetch over to the mall's drain: with flow control, a pipe
//! never waits for one mall's bucket. A pipe carries one batch at a time
//! for every mall (four by default, `PipeCount`), and one mall's FIFO group
//! keeps one batch in flight: a flooding mall whose items each wait for a
//! unit of its bucket (2 calls a second at Cafe24) would hold a pipe per
//! group, three of four for a mall flooding products, orders and
//! customers. So once the mall is under flow control (it has a backlog,
//! and has given up its groups' order for it), an item its mall's bucket
//! cannot serve now joins the mall's dirty set instead (`lua/dirty_hand_over.lua`), its message is
//! done, and the mall's catch-up runs, on their own queue and concurrency,
//! fetch it at the bucket's rate.

use super::{Backlogs, Chain};
use crate::error::Error;
use crate::gate::ttl_ms;
use crate::keyspace::Tag;
use crate::scripts;
use redis::Value;
use redis::aio::ConnectionLike;
use sluice_domain::{CatchUpRequest, CatchUpRequests, StepError};
use std::time::Duration;

impl<C: ConnectionLike + Clone + Send> Backlogs<C> {
    /// Puts `resource` in the mall's dirty set answering `events` (the
    /// fetch's own and those coalesced into it) and stops counting
    /// `owner`'s message. Returns who drains it and since when (ms) the
    /// resource is dirty.
    pub async fn hand_over(
        &self,
        tag: &Tag,
        resource: &str,
        owner: &str,
        events: &[String],
        lease: Duration,
    ) -> Result<(Chain, u64), Error> {
        let mut script = scripts::DIRTY_HAND_OVER.key(self.key(tag, "queued", ""));
        script
            .key(self.key(tag, "dirty", ""))
            .key(self.key(tag, "dirtyq", ""))
            .key(self.key(tag, "chain", "drain"))
            .arg(owner)
            .arg(ttl_ms(lease)?)
            .arg(ttl_ms(self.flow.retention)?)
            .arg(self.flow.events_per_resource)
            .arg(resource);
        for event in events {
            script.arg(event);
        }
        let reply: Vec<Value> = script.invoke_async(&mut self.conn.clone()).await?;
        match reply.as_slice() {
            [Value::Int(chain), Value::Int(since)] => Ok((super::chain_of(*chain), u64::try_from(*since).unwrap_or(0))),
            other => Err(Error::UnexpectedReply { script: "dirty_hand_over.lua", reply: format!("{other:?}") }),
        }
    }

    /// Makes sure a catch-up request will see what `token` just put in the
    /// mall's dirty set: nothing to do under a confirmed chain; otherwise
    /// queue a request (and confirm the chain when `token` took its lease).
    /// A request that cannot be queued gives the lease back, so the next
    /// deferral starts a chain at once, and is an error: the caller's
    /// work is retried and puts the resource in the set again.
    pub async fn request_catch_up(
        &self,
        requests: &dyn CatchUpRequests,
        mall: &str,
        token: &str,
        chain: Chain,
    ) -> Result<(), StepError> {
        if chain == Chain::Confirmed {
            return Ok(());
        }
        let tag = Tag::for_mall(mall);
        if let Err(e) = requests.request(&CatchUpRequest::new(mall, token), Duration::ZERO).await {
            if chain == Chain::Took
                && let Err(e) = self.release_chain(&tag, token).await
            {
                tracing::warn!(token, error = %e, "could not release the catch-up chain's lease; it ends on its own");
            }
            return Err(e);
        }
        if chain == Chain::Took
            && let Err(e) = self.confirm_chain(&tag, token).await
        {
            // The request is queued; its run carries the chain anyway.
            tracing::warn!(token, error = %e, "could not confirm the catch-up chain");
        }
        Ok(())
    }
}
