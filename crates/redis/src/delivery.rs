//! Deliveries: what ingest remembers of each event id for the duplicate
//! window, so a sender's redelivery is answered `duplicate` and nothing is
//! accepted twice, while a request that dies half way never blocks the
//! sender's retry for longer than one lease.
//!
//! An attempt at accepting a delivery [`begin`](Deliveries::begin)s by
//! taking a lease (as long as one request may take); it
//! [`settle`](Deliveries::settle)s once the event is accepted, which makes
//! every later delivery of it a duplicate; a failure it can report
//! [`release`](Deliveries::release)s the lease at once. An attempt that dies
//! simply lets its lease end. The gate outlives the lease, so the next
//! attempt knows it [`follows`](Begun::Retry) one whose outcome is unknown.
//!
//! Key: `{prefix}{ev:<id>}:gate:ingest`, `accepted` or
//! `attempt:<nonce>:<lease end, ms>`, TTL = the duplicate window plus the
//! lease from the latest attempt, the duplicate window once accepted.
//! Scripts: `lua/delivery_begin.lua`, `lua/delivery_settle.lua`,
//! `lua/delivery_release.lua`. Beginning and settling can write the event's
//! trace entry in the same call ([`Deliveries::begin_traced`],
//! [`Deliveries::settle_traced`]): the gate and the trace share the event's
//! hash tag, and ingest pays one round trip for both.

use crate::error::Error;
use crate::gate::ttl_ms;
use crate::keyspace::{Keyspace, Tag};
use crate::scripts;
use crate::trace::{MAX_ENTRIES, TraceSlot};
use redis::Value;
use redis::aio::ConnectionLike;
use std::time::Duration;

/// A JSON object: a trace entry's detail.
type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The gate's name under the event's tag.
pub const DELIVERY_GATE: &str = "ingest";

/// How [`Deliveries::begin`] found the delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// The first attempt: nothing of this event can be in the queue.
    First(Attempt),
    /// An earlier attempt's lease ended before it settled: it may have
    /// reached the queue, or not.
    Retry(Attempt),
    /// An earlier attempt's lease runs for `ends_in` yet.
    InProgress { ends_in: Duration },
    /// The delivery was accepted already.
    Accepted,
}

/// One attempt's hold on its delivery: what it wrote in the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    value: String,
}

/// How long the gate is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryTimes {
    /// How long one attempt may take.
    pub lease: Duration,
    /// How long an accepted delivery is remembered (SQS's deduplication
    /// window: a redelivery let through later is one SQS would not drop).
    pub window: Duration,
}

#[derive(Debug, Clone)]
pub struct Deliveries<C> {
    conn: C,
    keyspace: Keyspace,
    times: DeliveryTimes,
}

impl<C: ConnectionLike + Clone + Send> Deliveries<C> {
    pub fn new(conn: C, keyspace: Keyspace, times: DeliveryTimes) -> Self {
        Self { conn, keyspace, times }
    }

    pub fn times(&self) -> DeliveryTimes {
        self.times
    }

    fn key(&self, event_id: &str) -> String {
        self.keyspace.key(&Tag::for_event(event_id), "gate", DELIVERY_GATE)
    }

    /// Starts an attempt at accepting `event_id`, unless one holds it or it
    /// was accepted already.
    pub async fn begin(&self, event_id: &str) -> Result<Begun, Error> {
        self.begin_with(event_id, None).await
    }

    /// [`begin`](Self::begin), writing the event's trace in the same call:
    /// `received` (its detail `received` plus `"retry"`: whether an earlier
    /// attempt's lease ended unsettled) for an attempt, `duplicate` when
    /// the delivery was accepted already, nothing while another attempt
    /// holds it.
    pub async fn begin_traced(&self, event_id: &str, trace: &TraceSlot, received: &JsonObject) -> Result<Begun, Error> {
        self.begin_with(event_id, Some((trace, received))).await
    }

    async fn begin_with(&self, event_id: &str, trace: Option<(&TraceSlot, &JsonObject)>) -> Result<Begun, Error> {
        let nonce = hex::encode(rand::random::<u128>().to_be_bytes());
        let kept = self.times.window.saturating_add(self.times.lease);
        let mut call = scripts::DELIVERY_BEGIN.key(self.key(event_id));
        call.arg(nonce).arg(ttl_ms(self.times.lease)?).arg(ttl_ms(kept)?);
        if let Some((slot, received)) = trace {
            let detail = |retry: bool| {
                let mut detail = received.clone();
                detail.insert("retry".into(), retry.into());
                serde_json::Value::Object(detail).to_string()
            };
            call.key(&slot.key).arg(slot.ttl_ms).arg(MAX_ENTRIES).arg(detail(false)).arg(detail(true));
        }
        let reply: Vec<Value> = call.invoke_async(&mut self.conn.clone()).await?;
        let attempt = |value: &Value| -> Result<Attempt, Error> {
            Ok(Attempt { value: redis::from_redis_value_ref(value).map_err(redis::RedisError::from)? })
        };
        match reply.as_slice() {
            [Value::Int(1), value] => Ok(Begun::First(attempt(value)?)),
            [Value::Int(3), value] => Ok(Begun::Retry(attempt(value)?)),
            [Value::Int(2), Value::Int(ms)] => {
                Ok(Begun::InProgress { ends_in: Duration::from_millis(u64::try_from(*ms).unwrap_or(0)) })
            }
            [Value::Int(0), _] => Ok(Begun::Accepted),
            other => Err(Error::UnexpectedReply { script: "delivery_begin.lua", reply: format!("{other:?}") }),
        }
    }

    /// The event is accepted (enqueued, or joined a pending fetch): every
    /// later delivery of it within the window is a duplicate.
    pub async fn settle(&self, event_id: &str) -> Result<(), Error> {
        let _: i64 = scripts::DELIVERY_SETTLE
            .key(self.key(event_id))
            .arg(ttl_ms(self.times.window)?)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// [`settle`](Self::settle), appending `stage` with `detail` to the
    /// event's trace in the same call.
    pub async fn settle_traced(
        &self,
        event_id: &str,
        trace: &TraceSlot,
        stage: &str,
        detail: &serde_json::Value,
    ) -> Result<(), Error> {
        let _: i64 = scripts::DELIVERY_SETTLE
            .key(self.key(event_id))
            .key(&trace.key)
            .arg(ttl_ms(self.times.window)?)
            .arg(stage)
            .arg(detail.to_string())
            .arg(trace.ttl_ms)
            .arg(MAX_ENTRIES)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Ends `attempt`'s lease after a failure its sender was told of, so the
    /// retry need not wait. False when another attempt replaced it.
    pub async fn release(&self, event_id: &str, attempt: &Attempt) -> Result<bool, Error> {
        let code: i64 = scripts::DELIVERY_RELEASE
            .key(self.key(event_id))
            .arg(&attempt.value)
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(code == 1)
    }
}
