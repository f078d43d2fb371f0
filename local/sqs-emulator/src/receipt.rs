//! Receipt handles. A handle names one receipt of one message: the queue's
//! incarnation (a random id drawn when the queue was created, so a handle
//! never matches a message of an older queue of the same name), the
//! message's sequence number, and its receive count at that receipt (so a
//! handle from an earlier receipt is recognised as stale). It is opaque to
//! clients, like SQS's.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A decoded receipt handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Receipt {
    pub(crate) incarnation: u64,
    pub(crate) seq: u64,
    pub(crate) receive_count: u32,
}

impl Receipt {
    pub(crate) fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("sluice1 {:016x} {} {}", self.incarnation, self.seq, self.receive_count))
    }

    pub(crate) fn decode(handle: &str) -> Option<Self> {
        let raw = URL_SAFE_NO_PAD.decode(handle).ok()?;
        let text = std::str::from_utf8(&raw).ok()?;
        let mut parts = text.split(' ');
        if parts.next()? != "sluice1" {
            return None;
        }
        let incarnation = u64::from_str_radix(parts.next()?, 16).ok()?;
        let seq = parts.next()?.parse().ok()?;
        let receive_count = parts.next()?.parse().ok()?;
        if parts.next().is_some() {
            return None;
        }
        Some(Self { incarnation, seq, receive_count })
    }
}

/// The SQS-style sequence number of a message: 20 decimal digits, so that
/// string order is numeric order.
pub(crate) fn sequence_number(seq: u64) -> String {
    format!("{seq:020}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_garbage_is_refused() {
        let r = Receipt { incarnation: u64::MAX, seq: 42, receive_count: 3 };
        assert_eq!(Receipt::decode(&r.encode()), Some(r));
        assert_eq!(Receipt::decode("not-a-handle"), None);
        assert_eq!(Receipt::decode(&URL_SAFE_NO_PAD.encode("sluice1 zz 1 1")), None);
        assert_eq!(Receipt::decode(&URL_SAFE_NO_PAD.encode("sluice1 01 1 1 extra")), None);
    }
}
