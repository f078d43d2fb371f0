//! The pipeline's inputs as the state machine hands them to the steps.

use crate::now_ms;
use sluice_domain::{ErrorKind, ResourceKind, ResourceRef, ShopEvent, ShopWork, StepError, Topic, WorkItem};
use sluice_pipeline::flush_trigger::FlushTrigger;
use sluice_pipeline::sheet_io::FlushRequest;
use sluice_pipeline::step_io::{ItemKind, ItemPlan};
use sluice_pipeline::stored_token;
use sluice_redis::StoredToken;
use sluice_sandbox::Cafe24Sandbox;
use std::pin::Pin;
use std::time::Duration;

/// A work item of `mall`'s product `id` (topic 90002, a product update), as
/// `PlanBatch` puts it in its plan and the state machine passes it to each
/// step.
pub fn item_plan(mall: &str, id: &str, delivery: &str, receive_count: u32) -> ItemPlan {
    let resource = ResourceRef { kind: ResourceKind::Product, id: id.into() };
    let event = ShopEvent::new(mall, Topic(90002), resource, delivery).expect("a valid event");
    ItemPlan {
        item_id: format!("msg-{delivery}"),
        receive_count,
        last_receive: false,
        kind: ItemKind::Shop,
        work: Some(WorkItem::Shop(ShopWork::new(event, now_ms()))),
        invalid: None,
    }
}

/// A token pair the sandbox issues for `mall`, as the token step stores it.
pub fn sandbox_token(sandbox: &Cafe24Sandbox, mall: &str) -> StoredToken {
    stored_token(&crate::sandbox::grant(sandbox, mall), now_ms())
}

/// The flush trigger of a test stack that runs no flush queue: a sheet
/// service needs one, and a test that reaches it fails saying why.
#[derive(Debug, Default)]
pub struct NoFlushQueue;

impl FlushTrigger for NoFlushQueue {
    fn request(
        &self,
        _: &FlushRequest,
        _: Duration,
    ) -> Pin<Box<dyn Future<Output = Result<(), StepError>> + Send + '_>> {
        Box::pin(async { Err(StepError::new(ErrorKind::Internal, "this test stack has no flush queue")) })
    }
}
