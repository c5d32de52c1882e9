//! The wire of the store traits, declared once each: [`store_wire!`]
//! hands a trait's entries to a callback macro, which expands them into
//! the endpoint rows and their list (here, `rows!`), the service's axum
//! handlers and routes (`serve_store!` in openvibe-service) and the remote
//! client's impl of the trait (`remote_store!` in openvibe-remote). A
//! path, method, body type, idempotency or the kind a 404 names is written
//! once, and the two ends cannot disagree.
//!
//! An entry:
//!
//! ```text
//! fn NAME(ARG: TYPE, ...) -> RET = ROW {
//!     METHOD "path" [PATH ARGS] (INPUT) -> OUTPUT;
//!     "operationId", "summary" [FLAGS];
//!     or_none "kind" (ID)?;                      // optional: a 404 naming kind is None
//!     server (|s, ctx[, input]| CALL [=> |x| WRAP]);
//!     client ([SENT] [=> |x| UNWRAP]);
//! }
//! ```
//!
//! `NAME(ARG: TYPE, ...) -> RET` is the trait method (the remote implements
//! it; `RET` without the `Result`). `METHOD` is `GET`, `POST`, `PUT` or
//! `DELETE`; `PATH ARGS` are the trait arguments that fill the path's
//! `{…}` segments in order (the service binds the same names); `INPUT` is
//! `none` or `body TYPE`. `FLAGS` are the row's flags without arguments
//! (`idempotent`). `or_none "kind"`: the row answers 404 naming `kind` when
//! the store found nothing (the service maps `None` to it, with `ID` or the
//! first path argument as its id; the remote maps it back to `None`).
//! `server` is expanded by the service only: `s` is its `AppState`, `ctx`
//! the caller from the key, `input` the checked body, `CALL` a future of
//! the store's answer, `WRAP` what the row answers made of it. `client` is
//! expanded by the remote only: `SENT` is what it sends (`&()` when absent),
//! `UNWRAP` the trait's answer made of the row's. Types resolve where a
//! callback is invoked (each invoking module imports them).

/// Hand the wire of a store trait to `$callback!` as
/// `$callback! { Trait ops_fn; <entries> }` (the module documentation of
/// `openvibe_api::endpoints` gives the grammar).
#[doc(hidden)]
#[macro_export]
macro_rules! store_wire {
    (ProposalStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { ProposalStore proposal_ops; { $($($extra)*)? } [
        fn create(proposal: Proposal) -> Proposal = CREATE_PROPOSAL {
            POST "/v1/memory/proposals" [] (body Proposal) -> Proposal;
            "createProposal", "Create a pending proposal (the same id and request again: the existing one). Refused 422 naming the field, by rules between fields: a proposal to act carries its action; its decision is the proposing role's; `openvibe.adopt_belief` is reserved to a belief's own proposal (`bp_<belief id>`)" [idempotent];
            server (|s, ctx, p| s.stores.proposals.create(&ctx, p));
            client (&proposal);
        }
        fn get(id: &str) -> Option<Proposal> = GET_PROPOSAL {
            GET "/v1/memory/proposals/{id}" [id] (none) -> Proposal;
            "getProposal", "A proposal the caller may read (its status as of now)" [];
            or_none "proposal";
            server (|s, ctx| s.stores.proposals.get(&ctx, &id));
            client ();
        }
        fn list(query: &ProposalQuery) -> Page<Proposal> = QUERY_PROPOSALS {
            POST "/v1/memory/proposals/query" [] (body ProposalQuery) -> Page<Proposal>;
            "queryProposals", "A page of proposals, newest first" [idempotent];
            server (|s, ctx, q| s.stores.proposals.list(&ctx, &q));
            client (query);
        }
        fn decide(id: &str, verdict: &Verdict) -> Proposal = DECIDE_PROPOSAL {
            POST "/v1/memory/proposals/{id}/decide" [id] (body Verdict) -> Proposal;
            "decideProposal", "Approve or reject a pending proposal (needs the approve right, never on a proposal of one's own; an escalation is approved with the action to take; of racing callers one wins, the others get 409)" [];
            // A belief's proposal decides its belief with it.
            server (|s, ctx, v| s.stores.decide_proposal(&ctx, &id, &v));
            client (verdict);
        }
        fn claim(id: &str) -> Proposal = CLAIM_PROPOSAL {
            POST "/v1/memory/proposals/{id}/claim" [id] (none) -> Proposal;
            "claimProposal", "Claim an approved proposal's one execution (409 when claimed already)" [];
            server (|s, ctx| s.stores.proposals.claim(&ctx, &id));
            client ();
        }
        fn finish(id: &str, outcome: Result<Value, String>) -> Proposal = FINISH_PROPOSAL {
            POST "/v1/memory/proposals/{id}/finish" [id] (body FinishProposal) -> Proposal;
            "finishProposal", "Record how a claimed proposal's action went" [];
            server (|s, ctx, f| async move { s.stores.proposals.finish(&ctx, &id, f.outcome()?).await });
            client (&FinishProposal::of(outcome));
        }
        fn expire_due(limit: usize) -> u64 = EXPIRE_PROPOSALS {
            POST "/v1/memory/proposals/expire" [] (body ExpireProposals) -> ExpiredCount;
            "expireProposals", "Mark pending proposals past their deadline expired" [idempotent];
            server (|s, ctx, e| s.stores.proposals.expire_due(&ctx, e.limit) => |expired| ExpiredCount { expired });
            client (&ExpireProposals { limit } => |count| count.expired);
        }
    ] [] } };
    (InboxStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { InboxStore inbox_ops; { $($($extra)*)? } [
        fn push(event: InboxEvent) -> InboxEvent = PUSH_INBOX_EVENT {
            POST "/v1/memory/inbox" [] (body InboxEvent) -> InboxEvent;
            "pushInboxEvent", "Hold an event for a role's cognitive loop until a loop process works it (its id is the role's and event's; the same event again: the one held; another event under its id: 409)" [idempotent];
            server (|s, ctx, e| s.stores.inbox.push(&ctx, e));
            client (&event);
        }
        fn get(id: &str) -> Option<InboxEvent> = GET_INBOX_EVENT {
            GET "/v1/memory/inbox/{id}" [id] (none) -> InboxEvent;
            "getInboxEvent", "An inbox event the caller may read" [];
            or_none "inbox_event";
            server (|s, ctx| s.stores.inbox.get(&ctx, &id));
            client ();
        }
        fn list(query: &InboxQuery) -> Page<InboxEvent> = QUERY_INBOX {
            POST "/v1/memory/inbox/query" [] (body InboxQuery) -> Page<InboxEvent>;
            "queryInbox", "A page of inbox events, newest first" [idempotent];
            server (|s, ctx, q| s.stores.inbox.list(&ctx, &q));
            client (query);
        }
        fn lease(request: &LeaseRequest) -> Vec<InboxEvent> = LEASE_INBOX {
            POST "/v1/memory/inbox/lease" [] (body LeaseRequest) -> Vec<InboxEvent>;
            "leaseInbox", "Lease the oldest free events of some roles to a loop process for a while (pending ones, and those whose lease lapsed: another process resumes them); each event to one process" [];
            server (|s, ctx, r| s.stores.inbox.lease(&ctx, &r));
            client (request);
        }
        fn renew(id: &str, renewal: &Renewal) -> InboxEvent = RENEW_INBOX_EVENT {
            POST "/v1/memory/inbox/{id}/renew" [id] (body Renewal) -> InboxEvent;
            "renewInboxEvent", "Renew a lease (its holder only; 409 when another process took the event over or it is finished)" [idempotent];
            server (|s, ctx, r| s.stores.inbox.renew(&ctx, &id, &r));
            client (renewal);
        }
        fn finish(id: &str, outcome: &InboxOutcome) -> InboxEvent = FINISH_INBOX_EVENT {
            POST "/v1/memory/inbox/{id}/finish" [id] (body InboxOutcome) -> InboxEvent;
            "finishInboxEvent", "Finish a leased event, done or failed (its holder only, once: 409 otherwise)" [];
            server (|s, ctx, o| s.stores.inbox.finish(&ctx, &id, &o));
            client (outcome);
        }
    ] [] } };
    (SpaceStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { SpaceStore space_ops; { $($($extra)*)? } [
        fn create(space: Space) -> Space = CREATE_SPACE {
            POST "/v1/memory/spaces" [] (body Space) -> Space;
            "createSpace", "Create a space, the caller an admin member (the same id and title again: the existing one)" [idempotent];
            server (|s, ctx, sp| s.stores.spaces.create(&ctx, sp));
            client (&space);
        }
        fn get(id: &str) -> Option<Space> = GET_SPACE {
            GET "/v1/memory/spaces/{id}" [id] (none) -> Space;
            "getSpace", "A space the caller is a member of" [];
            or_none "space";
            server (|s, ctx| s.stores.spaces.get(&ctx, &id));
            client ();
        }
        fn list(query: &SpaceQuery) -> Page<Space> = QUERY_SPACES {
            POST "/v1/memory/spaces/query" [] (body SpaceQuery) -> Page<Space>;
            "querySpaces", "A page of the caller's spaces, newest first" [idempotent];
            server (|s, ctx, q| s.stores.spaces.list(&ctx, &q));
            client (query);
        }
        fn add_member(space_id: &str, member: openvibe_protocols::Member) -> Space = ADD_SPACE_MEMBER {
            POST "/v1/memory/spaces/{id}/members" [space_id] (body openvibe_protocols::Member) -> Space;
            "addSpaceMember", "Add a member (or replace its admin flag and domains; needs a space admin or the manage right)" [idempotent];
            server (|s, ctx, m| s.stores.spaces.add_member(&ctx, &space_id, m));
            client (&member);
        }
        fn remove_member(space_id: &str, principal: &str) -> Space = REMOVE_SPACE_MEMBER {
            DELETE "/v1/memory/spaces/{id}/members/{principal}" [space_id, principal] (none) -> Space;
            "removeSpaceMember", "Remove a member (the last admin stays)" [];
            server (|s, ctx| s.stores.spaces.remove_member(&ctx, &space_id, &principal));
            client ();
        }
        fn post_all(space_id: &str, messages: Vec<SpaceMessage>) -> Vec<SpaceMessage> = POST_MESSAGES {
            POST "/v1/memory/spaces/{id}/messages" [space_id] (body PostMessages) -> Vec<SpaceMessage>;
            "postMessages", "Append messages in order, as the caller (a member with the write right); an id already posted returns the stored message" [idempotent];
            server (|s, ctx, p| s.stores.spaces.post_all(&ctx, &space_id, p.messages));
            // Ids chosen here make a retried request the same post.
            client (&PostMessages { messages: with_ids(messages) });
        }
        fn messages(space_id: &str, query: &openvibe_protocols::MessageQuery) -> Vec<SpaceMessage> = READ_MESSAGES {
            POST "/v1/memory/spaces/{id}/messages/query" [space_id] (body openvibe_protocols::MessageQuery) -> Vec<SpaceMessage>;
            "readMessages", "Messages after a seq, in order; waits up to `wait_ms` (at most 30,000 ms) for the next one when none follows, so a client's timeout must be longer than that" [idempotent];
            // A long poll answers before the request's time limit.
            server (|s, ctx, q| s.stores.spaces.messages(&ctx, &space_id, &s.bounded_wait(q)));
            client (query);
        }
        fn ack(space_id: &str, seq: u64) -> u64 = ACK_MESSAGES {
            POST "/v1/memory/spaces/{id}/ack" [space_id] (body Ack) -> Cursor;
            "ackMessages", "Move the caller's cursor forward (never back, never past the head)" [idempotent];
            server (|s, ctx, a| s.stores.spaces.ack(&ctx, &space_id, a.seq) => |cursor| Cursor { cursor });
            client (&Ack { seq } => |c| c.cursor);
        }
        fn cursor(space_id: &str) -> u64 = SPACE_CURSOR {
            GET "/v1/memory/spaces/{id}/cursor" [space_id] (none) -> Cursor;
            "spaceCursor", "The caller's cursor in the space" [];
            server (|s, ctx| s.stores.spaces.cursor(&ctx, &space_id) => |cursor| Cursor { cursor });
            client (=> |c| c.cursor);
        }
    ] [] } };
    (GoalStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { GoalStore goal_ops; { $($($extra)*)? } [
        fn put(goal: Goal) -> Goal = PUT_GOAL {
            POST "/v1/memory/goals" [] (body Goal) -> Goal;
            "putGoal", "Put an objective: create its goal, or revise it (a new version when it changed; the same objective again changes nothing). Refused 422 naming the field, by rules between fields: key results have distinct ids and metrics, each one's target differs from its baseline, and none is due after the objective" [idempotent];
            server (|s, ctx, g| s.stores.goals.put(&ctx, g));
            client (&goal);
        }
        fn get(id: &str) -> Option<Goal> = GET_GOAL {
            GET "/v1/memory/goals/{id}" [id] (none) -> Goal;
            "getGoal", "A goal the caller may read" [];
            or_none "goal";
            server (|s, ctx| s.stores.goals.get(&ctx, &id));
            client ();
        }
        fn list(query: &GoalQuery) -> Page<Goal> = QUERY_GOALS {
            POST "/v1/memory/goals/query" [] (body GoalQuery) -> Page<Goal>;
            "queryGoals", "A page of goals, in id order" [idempotent];
            server (|s, ctx, q| s.stores.goals.list(&ctx, &q));
            client (query);
        }
        fn decompose(id: &str, fingerprint: &str, initiatives: Vec<Initiative>) -> Goal = DECOMPOSE_GOAL {
            POST "/v1/memory/goals/{id}/decompose" [id] (body Decompose) -> Goal;
            "decomposeGoal", "Store a goal's initiatives (the first decomposition of an objective stays; 409 when the objective changed since the fingerprint; 422 naming the field when an initiative names a key result the objective does not have)" [idempotent];
            server (|s, ctx, d| s.stores.goals.decompose(&ctx, &id, &d.fingerprint, d.initiatives));
            client (&Decompose { fingerprint: fingerprint.to_owned(), initiatives });
        }
        fn update_initiative(id: &str, initiative: &str, update: InitiativeUpdate) -> Goal = UPDATE_INITIATIVE {
            POST "/v1/memory/goals/{id}/initiatives/{initiative}" [id, initiative] (body InitiativeUpdate) -> Goal;
            "updateInitiative", "Move an initiative of a goal to a status (open, working, delegated, done, blocked, dropped) with a note; the same update again changes nothing; 404 for an initiative the goal does not have; 409 for a done or dropped one unless reopened (status open)" [idempotent];
            server (|s, ctx, u| s.stores.goals.update_initiative(&ctx, &id, &initiative, u));
            client (&update);
        }
        fn progress(id: &str) -> Option<GoalProgress> = GOAL_PROGRESS {
            GET "/v1/memory/goals/{id}/progress" [id] (none) -> GoalProgress;
            "goalProgress", "Where a goal stands: each key result's value and progress, computed from its metric reports" [];
            or_none "goal";
            server (|s, ctx| s.stores.goals.progress(&ctx, &id));
            client ();
        }
        fn put_priorities(priorities: Priorities) -> Priorities = PUT_PRIORITIES {
            POST "/v1/memory/priorities" [] (body Priorities) -> Priorities;
            "putPriorities", "Put a role's priorities of a day (replacing that day's)" [idempotent];
            server (|s, ctx, p| s.stores.goals.put_priorities(&ctx, p));
            client (&priorities);
        }
        fn priorities(role_id: &str, day: NaiveDate) -> Option<Priorities> = GET_PRIORITIES {
            POST "/v1/memory/priorities/query" [] (body PrioritiesOf) -> Priorities;
            "getPriorities", "A role's latest priorities on or before a day (404 when none)" [idempotent];
            or_none "priorities" (Priorities::id_of(&q.role_id, q.day));
            server (|s, ctx, q| s.stores.goals.priorities(&ctx, &q.role_id, q.day));
            client (&PrioritiesOf { role_id: role_id.to_owned(), day });
        }
        fn report(report: MetricReport) -> MetricReport = REPORT_METRIC {
            POST "/v1/memory/metrics" [] (body MetricReport) -> MetricReport;
            "reportMetric", "Report a metric of a role (`add` or `set`); a report with the id of an earlier one counts once" [idempotent];
            server (|s, ctx, r| s.stores.goals.report(&ctx, r));
            // The id is chosen here, so a retry of a report that may have
            // arrived counts once.
            client (&with_id(report));
        }
        fn reports(query: &ReportQuery) -> Page<MetricReport> = QUERY_REPORTS {
            POST "/v1/memory/metrics/query" [] (body ReportQuery) -> Page<MetricReport>;
            "queryMetricReports", "A page of a role's metric reports, oldest first (each with its stream's total after it): the history of a key result" [idempotent];
            server (|s, ctx, q| s.stores.goals.reports(&ctx, &q));
            client (query);
        }
    ] [] } };
    (BeliefStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { BeliefStore belief_ops; { $($($extra)*)? } [
        fn propose(belief: Belief) -> Belief = PROPOSE_BELIEF {
            POST "/v1/memory/beliefs" [] (body Belief) -> Belief;
            "proposeBelief", "Propose a belief (the same id and request again: the existing one; 422 naming the field when it supersedes itself)" [idempotent];
            server (|s, ctx, b| s.stores.beliefs.propose(&ctx, b));
            client (&belief);
        }
        fn get(id: &str) -> Option<Belief> = GET_BELIEF {
            GET "/v1/memory/beliefs/{id}" [id] (none) -> Belief;
            "getBelief", "A belief the caller may read" [];
            or_none "belief";
            server (|s, ctx| s.stores.beliefs.get(&ctx, &id));
            client ();
        }
        fn list(query: &BeliefQuery) -> Page<Belief> = QUERY_BELIEFS {
            POST "/v1/memory/beliefs/query" [] (body BeliefQuery) -> Page<Belief>;
            "queryBeliefs", "A page of beliefs, newest first" [idempotent];
            server (|s, ctx, q| s.stores.beliefs.list(&ctx, &q));
            client (query);
        }
        fn decide(id: &str, verdict: &Verdict) -> Belief = DECIDE_BELIEF {
            POST "/v1/memory/beliefs/{id}/decide" [id] (body BeliefVerdict) -> Belief;
            "decideBelief", "Approve or reject a proposed belief (needs the approve right, never on a belief of one's own; a verdict on a belief takes no action; approving one that supersedes an active belief retires it; of racing callers one wins, the others get 409)" [];
            // A belief decides its proposal in the inbox with it.
            server (|s, ctx, v| s.stores.decide_belief(&ctx, &id, &v.into()));
            client (&BeliefVerdict::of(verdict)?);
        }
        fn retire(id: &str, reason: &str) -> Belief = RETIRE_BELIEF {
            POST "/v1/memory/beliefs/{id}/retire" [id] (body RetireBelief) -> Belief;
            "retireBelief", "Retire an active belief, with a reason (needs the approve right)" [];
            server (|s, ctx, r| s.stores.beliefs.retire(&ctx, &id, &r.reason));
            client (&RetireBelief { reason: reason.to_owned() });
        }
    ] [] } };
    (AuditLog => $callback:path $({ $($extra:tt)* })?) => { $callback! { AuditLog audit_ops; { $($($extra)*)? } [
        fn append(entry: AuditEntry) -> () = APPEND_AUDIT {
            POST "/v1/memory/audit" [] (body AuditEntry) -> NoContent;
            "appendAudit", "Append an audit entry for an operation composed above the stores" [];
            server (|s, ctx, entry| s.stores.audit.append(&ctx, entry) => |_done| NoContent);
            client (&entry => |_done| ());
        }
        fn query(query: &AuditQuery) -> Vec<AuditEntry> = QUERY_AUDIT {
            POST "/v1/memory/audit/query" [] (body AuditQuery) -> Vec<AuditEntry>;
            "queryAudit", "Audit entries, newest first in the order the trail was written (its chain), a page at a time (a non-privileged caller sees its own)" [idempotent];
            server (|s, ctx, q| s.stores.audit.query(&ctx, &q));
            client (query);
        }
        fn verify(request: &VerifyChain) -> ChainReport = VERIFY_AUDIT {
            POST "/v1/memory/audit/verify" [] (body VerifyChain) -> ChainReport;
            "verifyAuditChain", "Walk the tenant's audit chain and report the first entry that does not hold (privileged)" [idempotent];
            server (|s, ctx, v| s.stores.audit.verify(&ctx, &v));
            client (request);
        }
        fn anchor() -> ChainHead = AUDIT_ANCHOR {
            GET "/v1/memory/audit/anchor" [] (none) -> ChainHead;
            "auditAnchor", "The head of the tenant's audit chain (its last entry's number and hash), to keep elsewhere (privileged)" [];
            server (|s, ctx| s.stores.audit.anchor(&ctx));
            client ();
        }
        fn redact(subject: &ErasureSubject, dry_run: bool) -> u64 = REDACT_AUDIT {
            POST "/v1/memory/audit/redact" [] (body RedactAudit) -> Redacted;
            "redactAudit", "Redact the tenant's audit entries that quote a subject (their filters and reason), with a redaction entry in the chain so that verification still passes (privileged)" [idempotent];
            server (|s, ctx, r| s.stores.audit.redact(&ctx, &r.subject, r.dry_run) => |redacted| Redacted { redacted });
            client (&RedactAudit { subject: subject.clone(), dry_run } => |r| r.redacted);
        }
    ] [
        // Any key may ask for a flush (it reveals nothing): the remote's
        // `flush` takes no caller.
        fn flush() -> () = FLUSH_AUDIT {
            POST "/v1/memory/audit/flush" [] (none) -> NoContent;
            "flushAudit", "Write batched audit entries now" [idempotent];
            server (|s, _ctx| s.stores.audit.flush() => |_done| NoContent);
            client ();
        }
    ] } };
    (NamespaceAdmin => $callback:path $({ $($extra:tt)* })?) => { $callback! { NamespaceAdmin admin_ops; { $($($extra)*)? } [
        fn namespace_counts() -> Vec<NamespaceCount> = NAMESPACE_COUNTS {
            GET "/v1/memory/namespaces" [] (none) -> Vec<NamespaceCount>;
            "namespaceCounts", "Records per kind and namespace (privileged)" [];
            server (|s, ctx| s.stores.admin.namespace_counts(&ctx));
            client ();
        }
        fn move_namespace(kind: &str, from: &str, to: &str, batch: usize) -> u64 = MOVE_NAMESPACE {
            POST "/v1/memory/namespaces/move" [] (body MoveNamespace) -> Moved;
            "moveNamespace", "Move one kind's records to another namespace (privileged, batched, audited)" [idempotent];
            server (|s, ctx, m| s.stores.admin.move_namespace(&ctx, &m.kind, &m.from, &m.to, m.batch) => |moved| Moved { moved });
            client (&MoveNamespace { kind: kind.to_owned(), from: from.to_owned(), to: to.to_owned(), batch } => |m| m.moved);
        }
        fn delete_expired(batch: usize) -> u64 = DELETE_EXPIRED {
            POST "/v1/memory/expired/delete" [] (body DeleteExpired) -> DeletedCount;
            "deleteExpired", "Delete one batch of expired records, whoever owns them, where the caller manages the namespace (or everywhere when privileged); each deletion is audited" [idempotent];
            server (|s, ctx, d| s.stores.admin.delete_expired(&ctx, d.batch) => |deleted_count| DeletedCount { deleted_count });
            client (&DeleteExpired { batch } => |d| d.deleted_count);
        }
        fn erasure_counts(subject: &ErasureSubject) -> Vec<ErasureCount> = ERASURE_COUNTS {
            POST "/v1/memory/erasure/count" [] (body ErasureSubject) -> Vec<ErasureCount>;
            "erasureCounts", "Records about a subject (an entity, an owner or a namespace) per kind, expired ones included, then the vectors and postings left without their record (privileged)" [idempotent];
            server (|s, ctx, subject| s.stores.admin.erasure_counts(&ctx, &subject));
            client (subject);
        }
        fn erase(subject: &ErasureSubject, batch: usize) -> Vec<ErasureCount> = ERASE {
            POST "/v1/memory/erasure/erase" [] (body Erase) -> Vec<ErasureCount>;
            "erase", "Delete one batch of the records about a subject with their vectors, postings and dependent rows, each audited; the kinds that lost records, none when nothing is left (privileged)" [idempotent];
            server (|s, ctx, e| s.stores.admin.erase(&ctx, &e.subject, e.batch));
            client (&Erase { subject: subject.clone(), batch });
        }
    ] [] } };
    (RecordVectors => $callback:path $({ $($extra:tt)* })?) => { $callback! { RecordVectors vector_ops; { $($($extra)*)? } [
        fn vectors(model: &str, kind: &str, ids: &[String]) -> Vec<RecordVector> = RECORD_VECTORS {
            POST "/v1/memory/vectors" [] (body VectorLookup) -> Vec<RecordVector>;
            "recordVectors", "The current vectors of a model for records the caller may read (the others are left out)" [idempotent];
            server (|s, ctx, l| s.stores.vectors.vectors(&ctx, &l.model, &l.kind, &l.ids));
            client (&VectorLookup { model: model.to_owned(), kind: kind.to_owned(), ids: ids.to_vec() });
        }
        fn vector_status() -> VectorStatus = VECTOR_STATUS {
            GET "/v1/memory/vectors/status" [] (none) -> VectorStatus;
            "vectorStatus", "The store's embedding model and, per kind, records with a current vector and records waiting (privileged)" [];
            server (|s, ctx| s.stores.vectors.vector_status(&ctx));
            client ();
        }
        fn embed_pending(batch: usize) -> u64 = EMBED_PENDING {
            POST "/v1/memory/vectors/embed" [] (body EmbedPending) -> Embedded;
            "embedPending", "Embed one batch of records waiting for a vector, without rewriting them (privileged)" [idempotent];
            server (|s, ctx, e| s.stores.vectors.embed_pending(&ctx, e.batch) => |embedded| Embedded { embedded });
            client (&EmbedPending { batch } => |e| e.embedded);
        }
    ] [] } };
    (RawLogStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { RawLogStore raw_ops; { $($($extra)*)? } [
        fn append(calls: Vec<RawCall>) -> Vec<RawCall> = APPEND_RAW_CALLS {
            POST "/v1/memory/raw" [] (body AppendRaw) -> Vec<RawCall>;
            "appendRawCalls", "Append LLM calls to the raw log, all or none" [];
            server (|s, ctx, b| s.stores.raw.append(&ctx, b.calls));
            client (&AppendRaw { calls });
        }
        fn get(id: &str) -> Option<RawCall> = GET_RAW_CALL {
            GET "/v1/memory/raw/{id}" [id] (none) -> RawCall;
            "getRawCall", "A raw call the caller may read" [];
            or_none "raw_call";
            server (|s, ctx| s.stores.raw.get(&ctx, &id));
            client ();
        }
        fn query(query: &RawCallQuery) -> Page<RawCall> = QUERY_RAW_CALLS {
            POST "/v1/memory/raw/query" [] (body RawCallQuery) -> Page<RawCall>;
            "queryRawCalls", "A page of raw calls, newest first" [idempotent];
            server (|s, ctx, q| s.stores.raw.query(&ctx, &q));
            client (query);
        }
        fn prune(agent_id: &str, retention: &RawRetention) -> u64 = PRUNE_RAW_CALLS {
            POST "/v1/memory/raw/prune" [] (body PruneRaw) -> DeletedCount;
            "pruneRawCalls", "Delete an agent's raw calls beyond a retention" [idempotent];
            server (|s, ctx, b| s.stores.raw.prune(&ctx, &b.agent_id, &b.retention) => |deleted_count| DeletedCount { deleted_count });
            client (&PruneRaw { agent_id: agent_id.to_owned(), retention: *retention } => |d| d.deleted_count);
        }
    ] [] } };
    (InsightStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { InsightStore insight_ops; { $($($extra)*)? } [
        fn find_similar(agent_id: &str, content: &str) -> Option<Insight> = SIMILAR_INSIGHT {
            POST "/v1/memory/insights/similar" [] (body SimilarInsight) -> MaybeInsight;
            "similarInsight", "The agent's insight most similar to a text" [idempotent];
            server (|s, ctx, q| s.stores.insights.find_similar(&ctx, &q.agent_id, &q.content) => |insight| MaybeInsight { insight });
            client (&SimilarInsight { agent_id: agent_id.to_owned(), content: content.to_owned() } => |m| m.insight);
        }
        fn strengthen(id: &str, episode_ids: &[String]) -> Insight = STRENGTHEN_INSIGHT {
            POST "/v1/memory/insights/{id}/strengthen" [id] (body Strengthen) -> Insight;
            "strengthenInsight", "Observe an insight again, atomically (confidence +0.1 up to 1, evidence +1)" [];
            server (|s, ctx, b| s.stores.insights.strengthen(&ctx, &id, &b.episode_ids));
            client (&Strengthen { episode_ids: episode_ids.to_vec() });
        }
        fn observe(insight: Insight) -> Observed = OBSERVE_INSIGHT {
            POST "/v1/memory/insights/observe" [] (body Insight) -> Observed;
            "observeInsight", "Create the pattern an insight names by its id, or strengthen it when it exists, atomically" [];
            server (|s, ctx, i| s.stores.insights.observe(&ctx, i));
            client (&insight);
        }
    ] [] } };
    (EventInbox => $callback:path $({ $($extra:tt)* })?) => { $callback! { EventInbox loop_ops; { $($($extra)*)? } [
        // The server records the event as coming over HTTP: the edge
        // says where an event came from, never the body.
        fn push(role_id: &str, event: DecisionEvent, _source: EventSource) -> Accepted = PUSH_EVENT {
            POST "/v1/loop/{role}/events" [role_id] (body DecisionEvent) -> Accepted;
            "pushEvent", "Push an event into a role's cognitive loop (an event id seen before runs once; a full queue is 503, retry later)" [];
            server (|s, ctx, event| async move {
                s.inbox_of(&role_id)?.push(&ctx, &role_id, event, EventSource::Http).await
            });
            client (&event);
        }
        fn trace(role_id: &str, event_id: &str) -> Option<LoopTrace> = EVENT_TRACE {
            GET "/v1/loop/{role}/events/{id}" [role_id, event_id] (none) -> LoopTrace;
            "eventTrace", "An event's path through the loop's stages so far" [];
            or_none "event" (event_id);
            server (|s, ctx| async move { s.inbox_of(&role_id)?.trace(&ctx, &role_id, &event_id).await });
            client ();
        }
    ] [] } };
    (KnowledgeStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { KnowledgeStore knowledge_ops; { $($($extra)*)? } [
        // An upsert: the same body twice leaves one record.
        fn store_knowledge(knowledge: NewKnowledge) -> Knowledge = STORE_KNOWLEDGE {
            POST "/v1/memory/semantic" [] (body NewKnowledge) -> Knowledge;
            "storeKnowledge", "Store knowledge, upserting on external_id or on the content hash" [idempotent];
            server (|s, ctx, k| s.stores.knowledge.store_knowledge(&ctx, k));
            client (&knowledge);
        }
        fn query_knowledge(query: &KnowledgeQuery) -> Vec<KnowledgeHit> = QUERY_KNOWLEDGE {
            POST "/v1/memory/semantic/query" [] (body KnowledgeQuery) -> Vec<KnowledgeHit>;
            "queryKnowledge", "Search knowledge (private to the caller plus public)" [idempotent];
            server (|s, ctx, q| s.stores.knowledge.query_knowledge(&ctx, &q));
            client (query);
        }
        fn get_knowledge(id: &str) -> Option<Knowledge> = GET_KNOWLEDGE {
            GET "/v1/memory/semantic/{id}" [id] (none) -> Knowledge;
            "getKnowledge", "Knowledge the caller may read" [];
            or_none "knowledge";
            server (|s, ctx| s.stores.knowledge.get_knowledge(&ctx, &id));
            client ();
        }
        fn delete_knowledge(id: &str) -> () = DELETE_KNOWLEDGE {
            DELETE "/v1/memory/semantic/{id}" [id] (none) -> NoContent;
            "deleteKnowledge", "Delete knowledge" [];
            server (|s, ctx| s.stores.knowledge.delete_knowledge(&ctx, &id) => |_done| NoContent);
            client (=> |_done| ());
        }
    ] [
        fn search_knowledge() -> () = SEARCH_KNOWLEDGE {
            POST "/v1/memory/semantic/search" [] (body KnowledgeQuery) -> Vec<KnowledgeHit>;
            "searchKnowledge", "The seed's name for queryKnowledge" [idempotent];
            server (|s, ctx, q| s.stores.knowledge.query_knowledge(&ctx, &q));
            client ();
        }
        // The remote knows its model from the connection.
        fn embedding_model() -> () = EMBEDDING_MODEL {
            GET "/v1/memory/semantic/model" [] (none) -> EmbeddingModel;
            "embeddingModel", "The embedding model semantic knowledge uses" [];
            server (|s, _ctx| s.embedding_model());
            client ();
        }
    ] } };
    (SessionStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { SessionStore session_ops; { $($($extra)*)? } [
        fn create_session(session: NewSession) -> Session = CREATE_SESSION {
            POST "/v1/memory/sessions" [] (body NewSession) -> Session;
            "createSession", "Create a session" [];
            server (|s, ctx, b| s.stores.working.create_session(&ctx, b));
            client (&session);
        }
        fn list_sessions(query: &SessionQuery) -> Page<Session> = LIST_SESSIONS {
            GET "/v1/memory/sessions" [] (query SessionQuery) -> Page<Session>;
            "listSessions", "Sessions, newest first, a page at a time" [];
            server (|s, ctx, q| s.stores.working.list_sessions(&ctx, &q));
            client (query);
        }
        fn get_session(id: &str) -> Option<Session> = GET_SESSION {
            GET "/v1/memory/sessions/{id}" [id] (none) -> Session;
            "getSession", "A session" [];
            or_none "session";
            server (|s, ctx| s.stores.working.get_session(&ctx, &id));
            client ();
        }
        fn delete_session(id: &str) -> SessionDeleted = DELETE_SESSION {
            DELETE "/v1/memory/sessions/{id}" [id] (none) -> SessionDeleted;
            "deleteSession", "Delete a session; its plans stay, detached" [];
            server (|s, ctx| s.stores.working.delete_session(&ctx, &id));
            client ();
        }
    ] [] } };
    (PlanStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { PlanStore plan_ops; { $($($extra)*)? } [
        fn create_plan(plan: NewPlan) -> Plan = CREATE_PLAN {
            POST "/v1/memory/plans" [] (body NewPlan) -> Plan;
            "createPlan", "Create a plan" [];
            server (|s, ctx, b| s.stores.working.create_plan(&ctx, b));
            client (&plan);
        }
        fn list_plans(query: &PlanQuery) -> Page<Plan> = LIST_PLANS {
            GET "/v1/memory/plans" [] (query PlanQuery) -> Page<Plan>;
            "listPlans", "Plans, newest first, filtered by status and session, a page at a time" [];
            server (|s, ctx, q| s.stores.working.list_plans(&ctx, &q));
            client (query);
        }
        fn get_plan(id: &str) -> Option<Plan> = GET_PLAN {
            GET "/v1/memory/plans/{id}" [id] (none) -> Plan;
            "getPlan", "A plan" [];
            or_none "plan";
            server (|s, ctx| s.stores.working.get_plan(&ctx, &id));
            client ();
        }
        fn update_plan(id: &str, update: PlanUpdate) -> Plan = UPDATE_PLAN {
            PUT "/v1/memory/plans/{id}" [id] (body PlanUpdate) -> Plan;
            "updatePlan", "Change a plan's status, goal data or response event" [];
            server (|s, ctx, b| s.stores.working.update_plan(&ctx, &id, b));
            client (&update);
        }
        fn delete_plan(id: &str) -> PlanDeleted = DELETE_PLAN {
            DELETE "/v1/memory/plans/{id}" [id] (none) -> PlanDeleted;
            "deletePlan", "Delete a plan with its context and state; sub-plans stay, detached" [];
            server (|s, ctx| s.stores.working.delete_plan(&ctx, &id));
            client ();
        }
    ] [] } };
    (ContextStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { ContextStore context_ops; { $($($extra)*)? } [
        fn store_task_context(task: TaskContext) -> TaskContext = STORE_TASK_CONTEXT {
            POST "/v1/memory/task-context" [] (body TaskContext) -> TaskContext;
            "storeTaskContext", "Store a task's context (a worker that delegated sub-tasks)" [idempotent];
            server (|s, ctx, b| s.stores.working.store_task_context(&ctx, b));
            client (&task);
        }
        fn get_task_context(task_id: &str) -> Option<TaskContext> = GET_TASK_CONTEXT {
            GET "/v1/memory/task-context/{id}" [task_id] (none) -> TaskContext;
            "getTaskContext", "A task's context" [];
            or_none "task_context";
            server (|s, ctx| s.stores.working.get_task_context(&ctx, &task_id));
            client ();
        }
        fn delete_task_context(task_id: &str) -> bool = DELETE_TASK_CONTEXT {
            DELETE "/v1/memory/task-context/{id}" [task_id] (none) -> Deleted;
            "deleteTaskContext", "Delete a task's context" [];
            server (|s, ctx| s.stores.working.delete_task_context(&ctx, &task_id) => |deleted| Deleted { deleted });
            client (=> |d| d.deleted);
        }
        fn get_task_by_subtask(sub_task_id: &str) -> Option<TaskContext> = GET_TASK_BY_SUBTASK {
            GET "/v1/memory/task-context/by-subtask/{id}" [sub_task_id] (none) -> TaskContext;
            "getTaskBySubtask", "The task that delegated a sub-task" [];
            or_none "task_context";
            server (|s, ctx| s.stores.working.get_task_by_subtask(&ctx, &sub_task_id));
            client ();
        }
        // A replace, unless it expects a version (then a second send after
        // the first was received would conflict): the remote retries only
        // the first.
        fn store_plan_context(context: PlanContext) -> PlanContext = STORE_PLAN_CONTEXT {
            POST "/v1/memory/plan-context" [] (body PlanContext) -> PlanContext;
            "storePlanContext", "Store a plan's context (a planner's state machine)" [idempotent];
            server (|s, ctx, b| s.stores.working.store_plan_context(&ctx, b));
            client (via store_plan_context);
        }
        fn get_plan_context(plan_id: &str) -> Option<PlanContext> = GET_PLAN_CONTEXT {
            GET "/v1/memory/plan-context/{id}" [plan_id] (none) -> PlanContext;
            "getPlanContext", "A plan's context" [];
            or_none "plan_context";
            server (|s, ctx| s.stores.working.get_plan_context(&ctx, &plan_id));
            client ();
        }
        fn get_plan_by_correlation(correlation_id: &str) -> Option<PlanContext> = GET_PLAN_BY_CORRELATION {
            GET "/v1/memory/plan-context/by-correlation/{id}" [correlation_id] (none) -> PlanContext;
            "getPlanByCorrelation", "The plan context waiting for a correlation id" [];
            or_none "plan_context";
            server (|s, ctx| s.stores.working.get_plan_by_correlation(&ctx, &correlation_id));
            client ();
        }
    ] [] } };
    (PlanStateStore => $callback:path $({ $($extra:tt)* })?) => { $callback! { PlanStateStore state_ops; { $($($extra)*)? } [
        fn list_state(plan_id: &str) -> Vec<StateEntry> = LIST_PLAN_STATE {
            GET "/v1/memory/working/{plan_id}" [plan_id] (none) -> Vec<StateEntry>;
            "listPlanState", "Every key of a plan's working memory" [];
            server (|s, ctx| s.stores.working.list_state(&ctx, &plan_id));
            client ();
        }
        fn clear_state(plan_id: &str) -> u64 = DELETE_PLAN_STATE {
            DELETE "/v1/memory/working/{plan_id}" [plan_id] (none) -> DeletedCount;
            "deletePlanState", "Delete every key of a plan's working memory" [];
            server (|s, ctx| s.stores.working.clear_state(&ctx, &plan_id) => |deleted_count| DeletedCount { deleted_count });
            client (=> |d| d.deleted_count);
        }
        // Idempotent only when it is a plain overwrite: the remote retries
        // only then.
        fn set_state(plan_id: &str, key: &str, value: Value, expect: Expect) -> StateEntry = SET_PLAN_STATE {
            PUT "/v1/memory/working/{plan_id}/{key}" [plan_id, key] (body SetState) -> StateEntry;
            "setPlanState", "Set one key (optimistic locking with expect)" [];
            server (|s, ctx, b| s.stores.working.set_state(&ctx, &plan_id, &key, b.value, b.expect));
            client (via set_state);
        }
        fn get_state(plan_id: &str, key: &str) -> Option<StateEntry> = GET_PLAN_STATE {
            GET "/v1/memory/working/{plan_id}/{key}" [plan_id, key] (none) -> StateEntry;
            "getPlanState", "One key" [];
            or_none "state" (key);
            server (|s, ctx| s.stores.working.get_state(&ctx, &plan_id, &key));
            client ();
        }
        fn delete_state(plan_id: &str, key: &str) -> bool = DELETE_PLAN_STATE_KEY {
            DELETE "/v1/memory/working/{plan_id}/{key}" [plan_id, key] (none) -> Deleted;
            "deletePlanStateKey", "Delete one key" [];
            server (|s, ctx| s.stores.working.delete_state(&ctx, &plan_id, &key) => |deleted| Deleted { deleted });
            client (=> |d| d.deleted);
        }
        fn append_state(plan_id: &str, key: &str, item: Value) -> () = ATOMIC_APPEND {
            POST "/v1/memory/atomic/append" [] (body AtomicAppend) -> NoContent;
            "atomicAppend", "Append to a list, atomically (no lost update)" [];
            server (|s, ctx, b| s.stores.working.append_state(&ctx, &b.plan_id, &b.key, b.value) => |_done| NoContent);
            client (&AtomicAppend { plan_id: plan_id.to_owned(), key: key.to_owned(), value: item } => |_done| ());
        }
        fn increment_state(plan_id: &str, key: &str, by: i64) -> StateEntry = ATOMIC_INCREMENT {
            POST "/v1/memory/atomic/increment" [] (body AtomicIncrement) -> StateEntry;
            "atomicIncrement", "Add to a counter, atomically (no lost update)" [];
            server (|s, ctx, b| s.stores.working.increment_state(&ctx, &b.plan_id, &b.key, b.by));
            client (&AtomicIncrement { plan_id: plan_id.to_owned(), key: key.to_owned(), by });
        }
    ] [] } };
}
