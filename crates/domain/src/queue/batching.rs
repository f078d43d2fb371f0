//! The batching rule, implemented once for every queue: check each entry,
//! pack the valid ones into calls of at most ten entries and 1 MiB, send the
//! calls in order, and report one outcome per entry in input order.
//!
//! A failure halts its group for the rest of the send. SQS enqueues a
//! batch's messages in order, so if message 3 of a group fails and message
//! 4 of the same group is sent anyway, a retry of 3 lands behind 4 and the
//! group's order is broken (the same reason a FIFO Lambda must fail every
//! later message of a group after the first failure). So every later entry
//! of a failed entry's group is reported failed with
//! [`codes::GROUP_HALTED`](super::rules::codes::GROUP_HALTED) and not sent;
//! other groups go on. One case is beyond any client: SQS failing an entry
//! while accepting a later entry of the same group *in the same call*. The
//! SQS adapter retries the failed entry, and the outcome still says exactly
//! what was accepted.

use super::WorkQueue;
use super::message::{OutgoingMessage, SendFailure, SendOutcome};
use super::rules::{self, MAX_BATCH_ENTRIES, MAX_PAYLOAD_BYTES, codes};
use crate::GroupKey;
use std::collections::HashMap;

/// Sends `entries` through `queue` by the rule above. Returns exactly one
/// outcome per entry, in input order.
pub async fn send_batch<Q: WorkQueue + ?Sized>(queue: &Q, entries: &[OutgoingMessage]) -> Vec<SendOutcome> {
    let mut send = Sending { entries, outcomes: vec![None; entries.len()], halted: HashMap::new() };
    let mut call: Vec<usize> = Vec::with_capacity(MAX_BATCH_ENTRIES);
    let mut call_bytes = 0;
    for (i, entry) in entries.iter().enumerate() {
        if send.refuse_if_halted(i) {
            continue;
        }
        if let Err(violation) = rules::check_message(entry) {
            send.fail(i, violation.into());
            continue;
        }
        if call.len() == MAX_BATCH_ENTRIES || call_bytes + entry.body.len() > MAX_PAYLOAD_BYTES {
            send.call(queue, &call).await;
            call.clear();
            call_bytes = 0;
            // The call just made may have halted this entry's group.
            if send.refuse_if_halted(i) {
                continue;
            }
        }
        call.push(i);
        call_bytes += entry.body.len();
    }
    if !call.is_empty() {
        send.call(queue, &call).await;
    }
    send.outcomes
        .into_iter()
        .map(|outcome| {
            // Every index is either refused, failed or part of a call, so
            // this is unreachable; should it ever happen, it must not read
            // as accepted.
            outcome.unwrap_or_else(|| {
                SendOutcome::Failed(SendFailure::new(codes::CALL_FAILED, "entry was not attempted", false))
            })
        })
        .collect()
}

struct Sending<'a> {
    entries: &'a [OutgoingMessage],
    outcomes: Vec<Option<SendOutcome>>,
    /// Group → index of the entry whose failure halted it.
    halted: HashMap<&'a GroupKey, usize>,
}

impl<'a> Sending<'a> {
    fn refuse_if_halted(&mut self, i: usize) -> bool {
        let group = &self.entries[i].group;
        let Some(&first) = self.halted.get(group) else { return false };
        self.outcomes[i] = Some(SendOutcome::Failed(SendFailure::new(
            codes::GROUP_HALTED,
            format!(
                "not sent: entry {first} of the same group ({group}) failed earlier in this send, and this message \
                 must not overtake it"
            ),
            false,
        )));
        true
    }

    fn fail(&mut self, i: usize, failure: SendFailure) {
        self.halted.entry(&self.entries[i].group).or_insert(i);
        self.outcomes[i] = Some(SendOutcome::Failed(failure));
    }

    async fn call<Q: WorkQueue + ?Sized>(&mut self, queue: &Q, call: &[usize]) {
        let batch: Vec<&OutgoingMessage> = call.iter().map(|&i| &self.entries[i]).collect();
        let message = match queue.send_call(&batch).await {
            Ok(outcomes) if outcomes.len() == call.len() => {
                for (&i, outcome) in call.iter().zip(outcomes) {
                    match outcome {
                        SendOutcome::Failed(failure) => self.fail(i, failure),
                        accepted => self.outcomes[i] = Some(accepted),
                    }
                }
                return;
            }
            Ok(outcomes) => {
                let (answered, sent) = (outcomes.len(), call.len());
                format!("the queue answered {answered} outcomes for {sent} entries; treating all as failed")
            }
            Err(error) => format!("the send call failed: {error}"),
        };
        for &i in call {
            self.fail(i, SendFailure::new(codes::CALL_FAILED, message.clone(), false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::recorder::{Recorder, now};
    use crate::{DedupId, GroupKey};

    fn message(group: &str, body: &str) -> OutgoingMessage {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dedup = format!("d{}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        OutgoingMessage::new(GroupKey::parse(group).unwrap(), DedupId::parse(&dedup).unwrap(), body)
    }

    fn run(queue: &Recorder, entries: &[OutgoingMessage]) -> Vec<SendOutcome> {
        now(queue.send_batch(entries))
    }

    fn codes_of(outcomes: &[SendOutcome]) -> Vec<&str> {
        outcomes
            .iter()
            .map(|o| match o {
                SendOutcome::Accepted(_) => "ok",
                SendOutcome::Failed(f) => f.code.as_str(),
            })
            .collect()
    }

    #[test]
    fn twenty_five_messages_go_out_in_calls_of_ten_in_order() {
        let queue = Recorder::default();
        let entries: Vec<_> = (0..25).map(|i| message(&format!("g{}", i % 3), &format!("m{i}"))).collect();
        let outcomes = run(&queue, &entries);
        let calls = queue.bodies();
        assert_eq!(calls.iter().map(Vec::len).collect::<Vec<_>>(), [10, 10, 5]);
        let sent: Vec<String> = calls.concat();
        assert_eq!(sent, entries.iter().map(|e| e.body.clone()).collect::<Vec<_>>());
        for (entry, outcome) in entries.iter().zip(&outcomes) {
            let SendOutcome::Accepted(a) = outcome else { panic!("{outcome:?}") };
            assert_eq!(a.message_id.as_str(), format!("id-{}", entry.body));
        }
    }

    #[test]
    fn calls_are_also_cut_at_one_mib() {
        let queue = Recorder::default();
        let big = "x".repeat(MAX_PAYLOAD_BYTES / 2);
        let entries: Vec<_> = (0..3).map(|i| message("g", &format!("{i}{big}"))).collect();
        let outcomes = run(&queue, &entries);
        assert_eq!(queue.bodies().iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
        assert!(outcomes.iter().all(SendOutcome::is_accepted));
    }

    #[test]
    fn a_failure_halts_only_its_own_group_for_the_rest_of_the_send() {
        let queue = Recorder::default();
        // The first call: a0, fail-a1 and eight of group b.
        let mut entries = vec![message("a", "a0"), message("a", "fail-a1")];
        entries.extend((0..8).map(|i| message("b", &format!("b{i}"))));
        // The second call: a and b alternating.
        entries.extend((0..6).map(|i| message(if i % 2 == 0 { "a" } else { "b" }, &format!("x{i}"))));
        let outcomes = run(&queue, &entries);
        let codes = codes_of(&outcomes);
        assert_eq!(&codes[..2], ["ok", "InternalError"]);
        for (entry, code) in entries.iter().zip(&codes).skip(2) {
            let expected = if entry.group.as_str() == "a" { codes::GROUP_HALTED } else { "ok" };
            assert_eq!(*code, expected, "{}", entry.body);
        }
        // Halted entries were never sent.
        let calls = queue.bodies();
        assert_eq!(calls[1], ["x1", "x3", "x5"]);
    }

    #[test]
    fn invalid_entries_fail_before_sending_and_halt_their_group() {
        let queue = Recorder::default();
        let entries = vec![message("a", "ok"), message("a", "bad\u{0}"), message("a", "later"), message("b", "fine")];
        let outcomes = run(&queue, &entries);
        assert_eq!(codes_of(&outcomes), ["ok", "InvalidMessageContents", codes::GROUP_HALTED, "ok"]);
        let SendOutcome::Failed(f) = &outcomes[1] else { unreachable!() };
        assert!(f.sender_fault && f.message.contains("U+0000"), "{f:?}");
        assert_eq!(queue.bodies().concat(), ["ok", "fine"]);
    }

    #[test]
    fn a_failed_call_reports_each_of_its_entries_and_later_calls_still_run() {
        let queue = Recorder::default();
        let mut entries: Vec<_> = (0..9).map(|i| message(&format!("g{i}"), &format!("m{i}"))).collect();
        entries.push(message("g9", "down"));
        entries.push(message("g0", "after-g0"));
        entries.push(message("other", "after-other"));
        let outcomes = run(&queue, &entries);
        let codes = codes_of(&outcomes);
        assert!(codes[..10].iter().all(|c| *c == codes::CALL_FAILED), "{codes:?}");
        assert_eq!(&codes[10..], [codes::GROUP_HALTED, "ok"]);
        let SendOutcome::Failed(f) = &outcomes[0] else { unreachable!() };
        assert!(f.message.contains("queue unreachable") && !f.sender_fault, "{f:?}");
    }

    #[test]
    fn an_empty_send_makes_no_call() {
        let queue = Recorder::default();
        assert!(run(&queue, &[]).is_empty());
        assert!(queue.bodies().is_empty());
    }
}
