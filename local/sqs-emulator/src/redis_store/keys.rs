//! The Redis store's key names (the layout is documented in the crate
//! root). Every key of a store shares one hash tag, so the scripts that
//! touch a queue and its dead-letter queue together run on a cluster.

use sluice_redis::{Keyspace, Tag};

/// The keys of one store: a keyspace and a realm (the hash tag).
#[derive(Debug, Clone)]
pub(super) struct StoreKeys {
    keyspace: Keyspace,
    tag: Tag,
}

/// The keys of one queue.
#[derive(Debug, Clone)]
pub(super) struct QueueKeys {
    pub(super) cfg: String,
    pub(super) body: String,
    pub(super) meta: String,
    pub(super) order: String,
    pub(super) arrival: String,
    pub(super) ready: String,
    pub(super) gstate: String,
    pub(super) blocked: String,
    pub(super) dedup: String,
    pub(super) dedupx: String,
    /// What each recent receive attempt took, and the attempts by expiry:
    /// asked again with the same id (its answer lost), a receive answers
    /// the same messages instead of hiding more.
    pub(super) rx: String,
    pub(super) rxx: String,
}

impl StoreKeys {
    pub(super) fn new(keyspace: Keyspace, realm: &str) -> Self {
        Self { keyspace, tag: Tag::new(realm) }
    }

    /// The SET of every queue's name.
    pub(super) fn registry(&self) -> String {
        self.keyspace.key(&self.tag, "queues", "names")
    }

    /// The consumer lease (see `lease.rs`).
    pub(super) fn lease(&self) -> String {
        self.keyspace.key(&self.tag, "consumer", "lease")
    }

    pub(super) fn queue(&self, name: &str) -> QueueKeys {
        // Queue names are letters, digits, '-', '_' and '.fifo': no ':'.
        let key = |part: &str| self.keyspace.key(&self.tag, "q", &format!("{name}:{part}"));
        QueueKeys {
            cfg: key("cfg"),
            body: key("body"),
            meta: key("meta"),
            order: key("order"),
            arrival: key("arrival"),
            ready: key("ready"),
            gstate: key("gstate"),
            blocked: key("blocked"),
            dedup: key("dedup"),
            dedupx: key("dedupx"),
            rx: key("rx"),
            rxx: key("rxx"),
        }
    }
}

impl QueueKeys {
    /// The keys that hold messages (everything but cfg and the dedup
    /// memory), in the scripts' order.
    pub(super) fn message_keys(&self) -> [&str; 7] {
        [&self.body, &self.meta, &self.order, &self.arrival, &self.ready, &self.gstate, &self.blocked]
    }

    /// cfg, then the message keys: KEYS[1..8] of receive, receipt, move.
    pub(super) fn core(&self) -> [&str; 8] {
        let [b, m, o, a, r, g, bl] = self.message_keys();
        [&self.cfg, b, m, o, a, r, g, bl]
    }

    /// What a queue receives messages into: cfg, body, meta, order,
    /// arrival, ready, gstate (a dead-letter queue's or redrive target's).
    pub(super) fn inbox(&self) -> [&str; 7] {
        [&self.cfg, &self.body, &self.meta, &self.order, &self.arrival, &self.ready, &self.gstate]
    }

    pub(super) fn all(&self) -> Vec<&str> {
        let mut all = self.core().to_vec();
        all.extend([self.dedup.as_str(), self.dedupx.as_str(), self.rx.as_str(), self.rxx.as_str()]);
        all
    }
}
