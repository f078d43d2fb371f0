//! One conformance suite for every form of the work queue (SQS FIFO,
//! `cases`) and of the delay queue (SQS standard, `delay_cases`): the
//! embedded queue in memory and in Redis, its SQS endpoint through the real
//! `sluice-aws` adapters (all three always), and any SQS endpoint named by
//! `SLUICE_SQS_ENDPOINT` (e.g. moto). A case a form is known to get wrong
//! is skipped for it with the reason printed, never deleted.

mod cases;
mod delay_cases;
mod forms;

use forms::Form;
use std::future::Future;
use std::time::Duration;

/// Every case finishes well within this, waits included.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

async fn run<F: Form, Fut: Future<Output = ()>>(test: &str, case: impl FnOnce(F) -> Fut) {
    let Some(form) = F::start(test).await else {
        println!("skipped {test}: SLUICE_SQS_ENDPOINT is not set");
        return;
    };
    let case_name = test.rsplit("::").next().unwrap_or(test);
    if let Some(why) = form.known_wrong(case_name) {
        println!("skipped {test}: known wrong on this endpoint: {why}");
        return;
    }
    tokio::time::timeout(CASE_TIMEOUT, case(form))
        .await
        .unwrap_or_else(|_| panic!("{test} took over {CASE_TIMEOUT:?}"));
}

macro_rules! conformance {
    ($form:ident, $module:ident) => {
        mod $module {
            use super::*;

            conformance!(@cases $form, $module:
                one_group_is_delivered_in_order,
                sequence_numbers_rise_within_a_group,
                a_duplicate_within_the_window_is_accepted_and_not_delivered,
                a_dedup_id_is_remembered_after_its_message_is_deleted,
                a_group_is_blocked_while_a_message_is_in_flight,
                a_receive_fills_its_batch_group_by_group,
                expired_messages_return_to_the_head_of_their_group_in_order,
                a_visibility_change_to_zero_releases_the_group_at_once,
                a_stale_receipt_deletes_nothing,
                attributes_count_waiting_and_in_flight_messages,
                too_many_receives_move_a_message_to_the_dlq_in_group_order,
                a_redrive_moves_dead_letters_back_in_order,
                a_deep_group_does_not_starve_the_others,
                per_entry_failures_are_reported_and_halt_their_group
            );
        }
    };
    (@cases $form:ident, $module:ident: $($case:ident),*) => {
        $(
            #[tokio::test]
            async fn $case() {
                let test = concat!(stringify!($module), "::", stringify!($case));
                run::<forms::$form, _>(test, |form| async move { cases::$case(&form).await }).await;
            }
        )*
    };
}

/// The delay queue's cases, in a module `delay` beside the work queue's.
macro_rules! delay_conformance {
    ($form:ident, $module:ident) => {
        mod $module {
            use super::*;

            delay_conformance!(@cases $form, $module:
                a_message_is_not_received_before_its_delay,
                a_message_naming_no_delay_takes_the_queue_s,
                messages_are_not_blocked_by_each_other,
                an_undeleted_message_is_received_again_with_its_count_one_higher,
                too_many_receives_move_a_message_to_the_dlq,
                a_long_poll_wakes_when_a_delayed_message_comes_due,
                a_send_of_the_other_kind_fails_with_a_clear_error
            );
        }
    };
    (@cases $form:ident, $module:ident: $($case:ident),*) => {
        $(
            #[tokio::test]
            async fn $case() {
                let test = concat!("delay::", stringify!($module), "::", stringify!($case));
                run::<forms::$form, _>(test, |form| async move { delay_cases::$case(&form).await }).await;
            }
        )*
    };
}

conformance!(Memory, memory);
conformance!(Redis, redis);
conformance!(Sqs, sqs_endpoint);
conformance!(External, external);

mod delay {
    use super::*;

    delay_conformance!(Memory, memory);
    delay_conformance!(Redis, redis);
    delay_conformance!(Sqs, sqs_endpoint);
    delay_conformance!(External, external);
}
