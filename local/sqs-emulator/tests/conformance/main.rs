//! One conformance suite for every form of the work queue (SQS FIFO,
//! `cases`) and of the delay queue (SQS standard, `delay_cases`): the
//! embedded queue in memory and in Redis, its SQS endpoint through the real
//! `sluice-aws` adapters (all three always), and any SQS endpoint named by
//! `SLUICE_SQS_ENDPOINT` (e.g. moto).
//!
//! A case that cannot run is never a pass: every case of that last form is
//! `#[ignore]`d with the reason (nextest lists it as skipped), and run with
//! `--run-ignored` it fails at once when `SLUICE_SQS_ENDPOINT` is unset.
//! `make check-aws` runs them against moto (`scripts/sqs-conformance.sh`).
//! A case moto is known to get wrong is listed with why, and generated
//! into `external_known_wrong_on_moto`, ignored with that reason: run
//! against SQS itself or LocalStack it should pass; never deleted.

mod cases;
mod delay_cases;
mod forms;

use forms::Form;
use std::future::Future;
use std::time::Duration;

/// Every case finishes well within this, waits included.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

async fn run<F: Form, Fut: Future<Output = ()>>(test: &str, case: impl FnOnce(F) -> Fut) {
    let form = F::start(test).await;
    tokio::time::timeout(CASE_TIMEOUT, case(form))
        .await
        .unwrap_or_else(|_| panic!("{test} took over {CASE_TIMEOUT:?}"));
}

/// The work queue's cases, each a function of `cases`, with why moto gets
/// it wrong where it does (checked against moto 5 `moto_server`): calls
/// `$then!` with the list after `$args`.
macro_rules! work_cases {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*;
            one_group_is_delivered_in_order,
            sequence_numbers_rise_within_a_group
                [moto: "known wrong on moto: it draws random sequence numbers; SQS's keep rising within a message group"],
            a_duplicate_within_the_window_is_accepted_and_not_delivered,
            a_dedup_id_is_remembered_after_its_message_is_deleted
                [moto: "known wrong on moto: it forgets a deduplication id when its message is deleted; SQS remembers it for 5 minutes"],
            a_group_is_blocked_while_a_message_is_in_flight,
            a_receive_fills_its_batch_group_by_group
                [moto: "known wrong on moto: it fills a batch in arrival order across groups; SQS returns as many messages of one group as it can first"],
            expired_messages_return_to_the_head_of_their_group_in_order
                [moto: "known wrong on moto: it does not return expired messages to the head of their group (it answered g-1, g-2 without g-0)"],
            a_visibility_change_to_zero_releases_the_group_at_once,
            a_stale_receipt_deletes_nothing
                [moto: "known wrong on moto: it deletes with any receipt handle of a message; SQS deletes only with the latest receipt's"],
            attributes_count_waiting_and_in_flight_messages,
            too_many_receives_move_a_message_to_the_dlq_in_group_order
                [moto: "known wrong on moto: it delivers a message beyond maxReceiveCount instead of moving it on that receive"],
            a_redrive_moves_dead_letters_back_in_order
                [moto: "known wrong on moto: it does not implement StartMessageMoveTask (HTTP 500)"],
            groups_come_in_the_order_of_their_oldest_message,
            a_deep_group_sent_first_is_served_first,
            per_entry_failures_are_reported_and_halt_their_group
        );
    };
}

/// The delay queue's cases, each a function of `delay_cases`, with why
/// moto answers one otherwise where it does.
macro_rules! delay_cases {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*;
            a_message_is_not_received_before_its_delay,
            a_message_naming_no_delay_takes_the_queue_s,
            messages_are_not_blocked_by_each_other,
            an_undeleted_message_is_received_again_with_its_count_one_higher,
            too_many_receives_move_a_message_to_the_dlq,
            a_long_poll_wakes_when_a_delayed_message_comes_due,
            a_send_of_the_other_kind_fails_with_a_clear_error
                [moto: "known wrong on moto: it refuses a FIFO send without MessageGroupId as a whole call (MissingParameter), not entry by entry; the sluice-aws adapter then reports a retryable call failure"]
        );
    };
}

/// One test per case of `$suite` against `$form`, in a module `$module`;
/// the test's name (`$prefix$module::case`) also names its queues.
macro_rules! always {
    ($suite:ident, $prefix:literal, $form:ident, $module:ident; $($case:ident $([moto: $why:literal])?),* $(,)?) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test]
                async fn $case() {
                    let test = concat!($prefix, stringify!($module), "::", stringify!($case));
                    run::<forms::$form, _>(test, |form| async move { $suite::$case(&form).await }).await;
                }
            )*
        }
    };
}

/// The cases of `$suite` against `SLUICE_SQS_ENDPOINT`, all ignored: in
/// `external` those moto passes, in `external_known_wrong_on_moto` the
/// others, each ignored with its reason. Sorts the list one case at a time.
macro_rules! external {
    (@sorted $suite:ident, $prefix:literal, [$($ok:ident)*], [$($wrong:ident $why:literal)*];) => {
        mod external {
            use super::*;
            $(
                #[tokio::test]
                #[ignore = "needs SLUICE_SQS_ENDPOINT (moto_server or LocalStack); make check-aws runs them against moto"]
                async fn $ok() {
                    let test = concat!($prefix, "external::", stringify!($ok));
                    run::<forms::External, _>(test, |form| async move { $suite::$ok(&form).await }).await;
                }
            )*
        }
        mod external_known_wrong_on_moto {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[tokio::test]
                #[ignore = $why]
                async fn $wrong() {
                    let test = concat!($prefix, "external-wrong::", stringify!($wrong));
                    run::<forms::External, _>(test, |form| async move { $suite::$wrong(&form).await }).await;
                }
            )*
        }
    };
    (@sorted $suite:ident, $prefix:literal, [$($ok:ident)*], [$($wrong:tt)*];
        $case:ident [moto: $why:literal] $(, $($rest:tt)*)?) => {
        external!(@sorted $suite, $prefix, [$($ok)*], [$($wrong)* $case $why]; $($($rest)*)?);
    };
    (@sorted $suite:ident, $prefix:literal, [$($ok:ident)*], [$($wrong:tt)*]; $case:ident $(, $($rest:tt)*)?) => {
        external!(@sorted $suite, $prefix, [$($ok)* $case], [$($wrong)*]; $($($rest)*)?);
    };
    ($suite:ident, $prefix:literal; $($cases:tt)*) => {
        external!(@sorted $suite, $prefix, [], []; $($cases)*);
    };
}

work_cases!(always!(cases, "", Memory, memory));
work_cases!(always!(cases, "", Redis, redis));
work_cases!(always!(cases, "", Sqs, sqs_endpoint));
work_cases!(external!(cases, ""));

/// The delay queue's cases, in a module `delay` beside the work queue's.
mod delay {
    use super::*;

    delay_cases!(always!(delay_cases, "delay::", Memory, memory));
    delay_cases!(always!(delay_cases, "delay::", Redis, redis));
    delay_cases!(always!(delay_cases, "delay::", Sqs, sqs_endpoint));
    delay_cases!(external!(delay_cases, "delay::"));
}
