//! [`TemporalWorker`]: runs the activations of a runtime's roles.

use std::future::Future;
use std::sync::Arc;

use openvibe_roles::RoleRuntime;
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::workflow::{ActivationWorkflow, NodeRan, Observer, RoleActivities};
use crate::{Error, TemporalConfig};

/// A Temporal worker for a [`RoleRuntime`]'s roles: polls the configured
/// task queue and runs `openvibe.activation` workflows and their
/// activities. Run as many as you like, in as many processes as you like:
/// Temporal hands each task to one of them.
pub struct TemporalWorker {
    runtime: Arc<RoleRuntime>,
    config: TemporalConfig,
    observer: Option<Observer>,
}

impl TemporalWorker {
    /// A worker for `runtime`'s roles on `config`'s server and task queue.
    pub fn new(runtime: Arc<RoleRuntime>, config: TemporalConfig) -> Self {
        Self {
            runtime,
            config,
            observer: None,
        }
    }

    /// Call `observe` after every node (and reflection) this worker runs.
    #[must_use]
    pub fn on_node(mut self, observe: impl Fn(&NodeRan) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observe));
        self
    }

    /// Poll and run until `stop` resolves, then shut down gracefully: no
    /// new task is taken, and the running ones finish first.
    ///
    /// Fails when the server cannot be reached or the worker cannot start;
    /// a failing node is Temporal's to retry, not an error here.
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), Error> {
        let client = crate::connect(&self.config).await?;
        let runtime = Runtime::from_current_tokio(Default::default())
            .map_err(|e| Error::Worker(format!("cannot start the Temporal runtime: {e}")))?;
        let options = WorkerOptions::new(self.config.task_queue.clone())
            .register_workflow::<ActivationWorkflow>()
            .map_err(|e| Error::Worker(e.to_string()))?
            .register_activities(RoleActivities {
                runtime: self.runtime,
                observer: self.observer,
            })
            .build();
        let mut worker = Worker::new(&runtime, client, options)
            .map_err(|e| Error::Worker(format!("cannot create the worker: {e}")))?;
        let shutdown = worker.shutdown_handle();
        tracing::info!(
            url = %self.config.url,
            namespace = %self.config.namespace,
            task_queue = %self.config.task_queue,
            "temporal worker polling"
        );
        let run = worker.run();
        tokio::pin!(run);
        tokio::pin!(stop);
        let result = tokio::select! {
            result = &mut run => result,
            () = &mut stop => {
                tracing::info!("temporal worker shutting down");
                shutdown();
                run.await
            }
        };
        result.map_err(|e| Error::Worker(e.to_string()))
    }
}

impl std::fmt::Debug for TemporalWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalWorker")
            .field("config", &self.config)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}
