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
    (ProposalStore => $callback:path) => { $callback! { ProposalStore proposal_ops;
        fn create(proposal: Proposal) -> Proposal = CREATE_PROPOSAL {
            POST "/v1/memory/proposals" [] (body Proposal) -> Proposal;
            "createProposal", "Create a pending proposal (the same id and request again: the existing one)" [idempotent];
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
            "decideProposal", "Approve or reject a pending proposal (needs the approve right; of racing callers one wins, the others get 409)" [];
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
    } };
    (SpaceStore => $callback:path) => { $callback! { SpaceStore space_ops;
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
            "readMessages", "Messages after a seq, in order; waits up to `wait_ms` for the next one when none follows" [idempotent];
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
    } };
    (GoalStore => $callback:path) => { $callback! { GoalStore goal_ops;
        fn put(goal: Goal) -> Goal = PUT_GOAL {
            POST "/v1/memory/goals" [] (body Goal) -> Goal;
            "putGoal", "Put an objective: create its goal, or revise it (a new version when it changed; the same objective again changes nothing)" [idempotent];
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
            "decomposeGoal", "Store a goal's initiatives (the first decomposition of an objective stays; 409 when the objective changed since the fingerprint)" [idempotent];
            server (|s, ctx, d| s.stores.goals.decompose(&ctx, &id, &d.fingerprint, d.initiatives));
            client (&Decompose { fingerprint: fingerprint.to_owned(), initiatives });
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
    } };
    (BeliefStore => $callback:path) => { $callback! { BeliefStore belief_ops;
        fn propose(belief: Belief) -> Belief = PROPOSE_BELIEF {
            POST "/v1/memory/beliefs" [] (body Belief) -> Belief;
            "proposeBelief", "Propose a belief (the same id and request again: the existing one)" [idempotent];
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
            POST "/v1/memory/beliefs/{id}/decide" [id] (body Verdict) -> Belief;
            "decideBelief", "Approve or reject a proposed belief (needs the approve right; approving one that supersedes an active belief retires it; of racing callers one wins, the others get 409)" [];
            // A belief decides its proposal in the inbox with it.
            server (|s, ctx, v| s.stores.decide_belief(&ctx, &id, &v));
            client (verdict);
        }
        fn retire(id: &str, reason: &str) -> Belief = RETIRE_BELIEF {
            POST "/v1/memory/beliefs/{id}/retire" [id] (body RetireBelief) -> Belief;
            "retireBelief", "Retire an active belief, with a reason (needs the approve right)" [];
            server (|s, ctx, r| s.stores.beliefs.retire(&ctx, &id, &r.reason));
            client (&RetireBelief { reason: reason.to_owned() });
        }
    } };
}
