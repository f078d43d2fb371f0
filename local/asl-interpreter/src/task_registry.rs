//! The task handlers an execution calls: async Rust functions registered
//! by resource (after `${Name}` substitution), or by Lambda function name
//! for `arn:aws:states:::lambda:invoke` tasks and Lambda ARN resources.

use crate::lambda;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A handler's failure: the error name that `Retry`/`Catch` match, and a
/// cause for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct TaskError {
    pub error: String,
    pub cause: String,
}

impl TaskError {
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self { error: error.into(), cause: cause.into() }
    }
}

impl From<sluice_domain::StepError> for TaskError {
    fn from(e: sluice_domain::StepError) -> Self {
        Self::new(e.kind.name(), e.cause)
    }
}

/// What a handler returns.
pub type TaskFuture = Pin<Box<dyn Future<Output = Result<Value, TaskError>> + Send>>;

/// One task implementation. Any `Fn(Value) -> impl Future<Output =
/// Result<Value, TaskError>>` that is `Send + Sync` is one.
pub trait TaskHandler: Send + Sync {
    fn call(&self, input: Value) -> TaskFuture;
}

impl<F, Fut> TaskHandler for F
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, TaskError>> + Send + 'static,
{
    fn call(&self, input: Value) -> TaskFuture {
        Box::pin(self(input))
    }
}

/// Handlers by resource, and by Lambda function name.
#[derive(Clone, Default)]
pub struct TaskRegistry {
    by_key: HashMap<String, Arc<dyn TaskHandler>>,
    by_function_name: HashMap<String, Arc<dyn TaskHandler>>,
}

impl fmt::Debug for TaskRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<_> = self.by_key.keys().collect();
        keys.sort();
        f.debug_struct("TaskRegistry").field("resources", &keys).finish()
    }
}

impl TaskRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` for `key`: a Task `Resource` (such as
    /// `arn:aws:states:::sqs:sendMessage`), or a Lambda function given by
    /// name or ARN, which then also serves `lambda:invoke` tasks naming it
    /// and Resources that are its ARN.
    pub fn register(&mut self, key: impl Into<String>, handler: impl TaskHandler + 'static) -> &mut Self {
        let key = key.into();
        let handler: Arc<dyn TaskHandler> = Arc::new(handler);
        if let Some(name) = lambda::function_name(&key) {
            self.by_function_name.insert(name.to_owned(), handler.clone());
        }
        self.by_key.insert(key, handler);
        self
    }

    /// [`TaskRegistry::register`], by value.
    pub fn with(mut self, key: impl Into<String>, handler: impl TaskHandler + 'static) -> Self {
        self.register(key, handler);
        self
    }

    /// The handler for a Task `Resource` (or a function name or ARN).
    pub(crate) fn resolve(&self, key: &str) -> Option<&Arc<dyn TaskHandler>> {
        self.by_key.get(key).or_else(|| lambda::function_name(key).and_then(|name| self.by_function_name.get(name)))
    }

    /// Whether a handler would serve this key.
    pub fn handles(&self, key: &str) -> bool {
        self.resolve(key).is_some()
    }
}
