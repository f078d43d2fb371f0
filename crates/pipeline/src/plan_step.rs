//! The plan step: splits the pipe's batch into its FIFO groups, items in
//! arrival order, so the state machine can run groups side by side and
//! each group's items one after another, stopping at the first failure.
//! A pipe batch may mix groups and kinds (one pipe reads the whole queue);
//! a body that is not a work item becomes an `invalid` item, which fails,
//! is retried, and ends in the dead-letter queue with its reason traced.

use crate::service_core::ServiceCore;
use crate::step_io::{GroupPlan, ItemFailure, ItemPlan, PlanInput, PlanOutput};
use crate::step_metrics::StepMetrics;
use redis::aio::ConnectionLike;
use serde_json::json;
use sluice_domain::StepError;

impl<C: ConnectionLike + Clone + Send + Sync> ServiceCore<C> {
    pub async fn plan_batch(&self, input: PlanInput) -> Result<PlanOutput, StepError> {
        let mut groups: Vec<GroupPlan> = Vec::new();
        for message in input.messages {
            let group = message.attributes.message_group_id.clone();
            let item = ItemPlan::of(message, self.config.max_receive_count);
            let detail = json!({"message_id": item.item_id, "receive_count": item.receive_count, "group": group});
            self.trace(&item.trace_id(), "dequeued", detail).await;
            match groups.iter_mut().find(|g| g.group == group) {
                Some(plan) => plan.items.push(item),
                None => groups.push(GroupPlan { group, items: vec![item], ..GroupPlan::default() }),
            }
        }
        let messages: usize = groups.iter().map(|g| g.items.len()).sum();
        let redelivered = groups.iter().flat_map(|g| &g.items).filter(|i| i.receive_count > 1).count();
        StepMetrics::add(&self.metrics.batch_messages, messages as u64);
        StepMetrics::add(&self.metrics.batch_groups, groups.len() as u64);
        StepMetrics::add(&self.metrics.redelivered, redelivered as u64);
        for plan in &mut groups {
            plan.count = plan.items.len();
            plan.remaining = (0..plan.count)
                .map(|i| {
                    plan.items[i..].iter().map(|item| ItemFailure { item_identifier: item.item_id.clone() }).collect()
                })
                .collect();
        }
        Ok(PlanOutput { max_concurrency: self.config.map_max_concurrency, groups })
    }
}
