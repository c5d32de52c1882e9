//! [`TemporalWorker`]: runs the activations of a runtime's roles.

use std::future::Future;
use std::sync::Arc;

use openvibe_protocols::Proposal;
use openvibe_roles::RoleRuntime;
use temporalio_client::errors::WorkflowStartError;
use temporalio_client::{
    Client, WorkflowIdConflictPolicy, WorkflowIdReusePolicy, WorkflowStartOptions,
};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};

use crate::workflow::{
    ActivationWorkflow, LoopActivities, LoopEventWorkflow, NodeRan, Observer, PROPOSAL_WORKFLOW,
    ProposalActivities, ProposalRun, ProposalWorkflow, RoleActivities,
};
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
    /// When the runtime's roles file proposals, the worker also looks for
    /// approved ones every `RoleRuntime::proposal_poll` and starts one
    /// `openvibe.proposal` workflow for each (its workflow id is the
    /// proposal's, [`proposal_workflow_id`], never reused: one run per
    /// proposal however many workers look), whose activity claims, runs and finishes it durably; overdue
    /// pending proposals are recorded expired.
    ///
    /// Fails when the server cannot be reached or the worker cannot start;
    /// a failing node is Temporal's to retry, not an error here.
    pub async fn run(self, stop: impl Future<Output = ()>) -> Result<(), Error> {
        let client = crate::connect(&self.config).await?;
        let starter = client.clone();
        let runtime = Runtime::from_current_tokio(Default::default())
            .map_err(|e| Error::Worker(format!("cannot start the Temporal runtime: {e}")))?;
        let options = WorkerOptions::new(self.config.task_queue.clone())
            .register_workflow::<ActivationWorkflow>()
            .map_err(|e| Error::Worker(e.to_string()))?
            .register_workflow::<ProposalWorkflow>()
            .map_err(|e| Error::Worker(e.to_string()))?
            .register_workflow::<LoopEventWorkflow>()
            .map_err(|e| Error::Worker(e.to_string()))?
            .register_activities(RoleActivities {
                runtime: self.runtime.clone(),
                observer: self.observer,
            })
            .register_activities(ProposalActivities {
                runtime: self.runtime.clone(),
            })
            .register_activities(LoopActivities {
                runtime: self.runtime.clone(),
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
        // Roles in a space: the requests routed to them start their loop's
        // workflows on this queue.
        self.runtime
            .join_space()
            .await
            .map_err(|e| Error::Worker(e.to_string()))?;
        let (feed_stop, feed_stopped) = tokio::sync::watch::channel(false);
        let feeds = futures::future::join_all(
            self.runtime
                .list_roles()
                .into_iter()
                .filter(|role| role.space().is_some())
                .map(|role| feed_space(&starter, &self.config, role, feed_stopped.clone())),
        );
        tokio::pin!(feeds);
        let mut fed = false;
        let run = worker.run();
        tokio::pin!(run);
        tokio::pin!(stop);
        let watch = self.runtime.has_proposals();
        let mut poll = tokio::time::interval(self.runtime.proposal_poll());
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let result = loop {
            tokio::select! {
                result = &mut run => break result,
                () = &mut stop => {
                    tracing::info!("temporal worker shutting down");
                    let _ = feed_stop.send(true);
                    if !fed {
                        (&mut feeds).await;
                    }
                    shutdown();
                    break run.await;
                }
                _ = &mut feeds, if !fed => { fed = true; }
                _ = poll.tick(), if watch => {
                    if let Err(e) = start_approved(&starter, &self.runtime, &self.config).await {
                        tracing::warn!(error = %e, "starting approved proposals failed");
                    }
                }
            }
        };
        result.map_err(|e| Error::Worker(e.to_string()))
    }
}

/// The workflow id of a proposal's run: one per proposal record (its
/// tenant, id and creation instant: a record made again with an old id,
/// after the first expired, is another proposal), never reused.
pub fn proposal_workflow_id(proposal: &Proposal) -> String {
    format!(
        "{PROPOSAL_WORKFLOW}/{}/{}/{}",
        proposal.meta.tenant_id,
        proposal.id,
        proposal.meta.created_at.timestamp_micros()
    )
}

/// Start an `openvibe.proposal` workflow for every approved, unclaimed
/// proposal of `runtime`'s roles (one that was started already is left to
/// its run); record overdue ones expired. How many it started.
async fn start_approved(
    client: &Client,
    runtime: &RoleRuntime,
    config: &TemporalConfig,
) -> Result<usize, String> {
    let mut started = 0;
    for role in runtime
        .list_roles()
        .into_iter()
        .filter(|r| r.proposals().is_some())
    {
        role.expire_overdue_proposals()
            .await
            .map_err(|e| e.to_string())?;
        for p in role.approved_proposals().await.map_err(|e| e.to_string())? {
            if p.claimed_by.is_some() {
                continue;
            }
            let options =
                WorkflowStartOptions::new(config.task_queue.clone(), proposal_workflow_id(&p))
                    .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
                    .id_conflict_policy(WorkflowIdConflictPolicy::Fail)
                    .build();
            let run = ProposalRun::new(role.role_id(), p.id.clone(), config);
            match client
                .start_workflow(ProposalWorkflow::run, run, options)
                .await
            {
                Ok(_) => {
                    tracing::info!(role = %role.role_id(), proposal = %p.id, "proposal run started");
                    started += 1;
                }
                Err(WorkflowStartError::AlreadyStarted { .. }) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }
    Ok(started)
}

impl std::fmt::Debug for TemporalWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporalWorker")
            .field("config", &self.config)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

/// Feed the requests routed to `role` in its space into its loop on
/// Temporal until `stop` turns true ([`openvibe_roles::feed_requests`]):
/// each request starts its event's `openvibe.loop.event` workflow (its id
/// the event's, so a request started twice, by this worker after a restart
/// or by another worker of the role, runs once) before the cursor moves
/// past it. An event the loop would refuse is logged and skipped; a server
/// that cannot be reached is retried.
async fn feed_space(
    client: &Client,
    config: &TemporalConfig,
    role: &openvibe_roles::Role,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let learning = openvibe_roles::Learning::default();
    openvibe_roles::feed_requests(role, stop, |event| {
        let learning = &learning;
        async move {
            let request = event.id.clone();
            let started = crate::scheduler::start_loop_event(
                client,
                config,
                role.role_id(),
                event,
                openvibe_roles::EventSource::Space,
                learning,
            )
            .await;
            match started {
                Ok(accepted) => {
                    tracing::info!(role = %role.role_id(), workflow = %accepted.run_id, duplicate = accepted.duplicate, "delegated request started");
                    Ok(())
                }
                // A refused event would be refused again: skip it.
                Err(crate::Error::Workflow { message, .. }) if !message.starts_with("cannot start") => {
                    tracing::warn!(role = %role.role_id(), %request, %message, "a delegated request was not started");
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await;
}
