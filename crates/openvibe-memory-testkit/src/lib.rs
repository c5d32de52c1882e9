//! # openvibe-memory-testkit — the memory backend conformance suite
//!
//! What every implementation of the memory contract's store traits
//! ([`FactStore`](openvibe_protocols::FactStore),
//! [`EpisodicStore`](openvibe_protocols::EpisodicStore),
//! [`InsightStore`](openvibe_protocols::InsightStore)) must do, written once
//! against the traits and split by concern: [`facts`], [`episodes`],
//! [`insights`], [`access`] (tenant and project isolation, clearance,
//! ownership), [`working`] and [`semantic`] memory, with a plain reference
//! [`model`] to compare query results with. Factories configure the
//! knowledge store with the `HashEmbedder` of
//! [`semantic::DIMENSIONS`] dimensions (`openvibe_protocols::testing`).
//!
//! Each case is an async function taking a factory that returns fresh,
//! empty [`Stores`](openvibe_protocols::Stores). A backend runs the whole
//! suite with one macro call in an integration test (the test crate needs
//! `tokio` with the `macros` and `rt` features as a dev-dependency):
//!
//! ```ignore
//! openvibe_memory_testkit::conformance_tests!(|| async { my_backend::fresh_stores() });
//! ```
//!
//! which expands to one `#[tokio::test]` per case in [`CASES`]. A backend
//! that needs a server passes a guard that decides, per test, whether the
//! server is there (and records the test as skipped when it was explicitly
//! told to skip, see [`skip`]):
//!
//! ```ignore
//! openvibe_memory_testkit::conformance_tests!(
//!     guard = |_test: &str| openvibe_memory_testkit::skip::database_url().is_some(),
//!     factory = || async { my_backend::connect().await.stores() }
//! );
//! ```
//!
//! The cases fail by panicking (they are tests); that is why this crate,
//! unlike the others, uses `assert!` and `unwrap`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod access;
pub mod approval;
pub mod beliefs;
pub mod episodes;
pub mod erasure;
pub mod expiry;
pub mod facts;
pub mod goals;
pub mod governance;
pub mod inbox;
pub mod insights;
pub mod model;
pub mod proposals;
pub mod provenance;
pub mod raw;
pub mod semantic;
pub mod skip;
pub mod spaces;
mod support;
pub mod vectors;
pub mod working;

macro_rules! cases {
    ($d:tt; $($module:ident :: $name:ident;)*) => {
        /// The names of every case, in the order `conformance_tests!` expands them.
        pub const CASES: &[&str] = &[$(stringify!($name)),*];

        /// Expand to one `#[tokio::test]` per conformance case (see
        /// [`CASES`](crate::CASES)), each calling the case with `$factory`:
        /// an expression evaluating to a `Fn() -> impl Future<Output = Stores>`
        /// that returns fresh, empty stores. With `guard = ...`, a
        /// `Fn(&str) -> bool` called with the case's name first: `false`
        /// skips the case (the guard reports it).
        #[macro_export]
        macro_rules! conformance_tests {
            ($d factory:expr) => {
                $d crate::conformance_tests!(guard = |_test: &str| true, factory = $d factory);
            };
            (guard = $d guard:expr, factory = $d factory:expr) => {
                $(
                    #[tokio::test]
                    async fn $name() {
                        if ($d guard)(stringify!($name)) {
                            $d crate::$module::$name($d factory).await;
                        }
                    }
                )*
            };
        }
    };
}

cases! {
    $;
    facts::fact_store_then_get;
    facts::fact_get_missing_is_none;
    facts::fact_empty_id_is_generated;
    facts::fact_invalid_input_is_rejected;
    facts::fact_filter_entity;
    facts::fact_filter_general;
    facts::fact_filter_domain;
    facts::fact_filter_tags_any;
    facts::fact_filter_text_every_term;
    facts::fact_filter_min_confidence;
    facts::records_page_by_cursor_in_query_order;
    facts::fact_filter_since;
    facts::fact_filters_combine;
    facts::fact_order_confidence_recency_id;
    facts::fact_order_relevance_first_with_text;
    facts::fact_limit;
    facts::fact_access_tracking_is_persisted;
    facts::fact_update_replaces_and_keeps_store_fields;
    facts::fact_update_missing_is_not_found;
    facts::fact_store_twice_is_an_upsert;
    facts::fact_delete_then_not_found;
    facts::fact_queries_match_the_reference_model;
    insights::insight_strengthen_is_atomic;
    insights::insight_observe_creates_each_pattern_once;
    facts::record_limits_hold_at_the_boundary;
    working::working_sessions;
    working::working_plans;
    working::working_bad_input_writes_nothing;
    working::working_task_context;
    working::working_plan_context;
    working::working_state_keys;
    working::working_state_versions_and_atomic_updates;
    working::working_concurrent_appends_lose_nothing;
    working::working_worker_delegates_and_resumes;
    working::working_planner_sessions_and_plans;
    working::working_json_limits_hold_at_the_boundary;
    semantic::semantic_upsert_without_duplicates;
    semantic::semantic_privacy;
    semantic::semantic_identity_comes_from_the_caller;
    semantic::semantic_query_filters_and_order;
    semantic::semantic_hybrid_retrieval;
    semantic::semantic_bad_input_writes_nothing;
    episodes::episode_store_then_get;
    episodes::episode_filters;
    episodes::episode_order_newest_first;
    episodes::episode_limit;
    episodes::episode_delete_then_not_found;
    insights::insight_filter_general;
    insights::insight_store_then_get;
    insights::insight_filters;
    insights::insight_order_confidence_recency_id;
    insights::insight_limit;
    insights::insight_delete_then_not_found;
    insights::insight_find_similar;
    insights::insight_access_tracking_is_persisted;
    access::fact_owner_tenant_and_project_come_from_the_caller;
    access::fact_tenant_isolation;
    access::fact_clearance_inside_the_query;
    access::fact_owner_reads_own_records;
    access::fact_project_isolation;
    access::fact_changes_need_ownership;
    access::fact_store_over_a_foreign_record_is_refused;
    access::episode_tenant_isolation;
    access::episode_clearance_inside_the_query;
    access::insight_tenant_isolation;
    access::insight_clearance_inside_the_query;
    access::insight_update_and_ownership;
    governance::governance_seed_003_access_matrix;
    governance::governance_changes_need_the_right;
    governance::governance_working_and_semantic_records;
    governance::governance_randomized_leak_check;
    governance::governance_hybrid_search_leak_check;
    governance::governance_audit_trail;
    governance::governance_audit_filters_and_pages;
    governance::governance_audit_chain_holds;
    erasure::erasure_forgets_an_entity_everywhere;
    erasure::erasure_is_privileged_and_scoped;
    erasure::erasure_needs_privilege_and_nothing_else;
    erasure::erasure_takes_a_metrics_total_with_its_reports;
    governance::governance_promotion;
    governance::governance_namespace_migration;
    expiry::expiry_hides_records_from_that_instant;
    expiry::expiry_retention_and_cleanup;
    raw::raw_append_then_get;
    raw::raw_pages_newest_first_and_filters;
    raw::raw_governance;
    raw::raw_bad_input_writes_nothing;
    raw::raw_retention;
    vectors::vectors_embedded_on_write;
    provenance::provenance_source_is_stamped_from_the_caller;
    provenance::provenance_fact_metadata_round_trips_and_is_bounded;
    provenance::provenance_merged_recall_is_one_per_lineage;
    provenance::provenance_plan_context_versions;
    proposals::proposals_are_created_pending_and_idempotently;
    proposals::proposals_are_decided_by_people_once;
    proposals::proposals_race_to_one_approval_and_one_execution;
    proposals::proposals_expire_at_their_deadline;
    proposals::proposals_list_newest_first_by_page;
    proposals::proposals_are_governed_and_audited;
    approval::approval_is_never_ones_own_even_privileged;
    approval::approval_is_not_granted_by_privilege;
    goals::goals_are_put_and_revised_by_version;
    goals::goals_decompose_once_per_objective;
    goals::goals_initiatives_move_by_status;
    goals::goals_metric_reports_roll_up_exactly;
    goals::goals_priorities_by_day;
    goals::goals_are_governed_and_audited;
    goals::goals_move_with_their_namespace;
    goals::goals_report_history_pages_oldest_first;
    goals::goals_report_history_is_in_the_order_applied;
    beliefs::beliefs_are_proposed_idempotently;
    beliefs::beliefs_are_approved_once_by_people;
    beliefs::beliefs_supersede_atomically;
    beliefs::beliefs_refine_or_supersede_as_the_person_chooses;
    beliefs::beliefs_list_newest_first_by_page;
    beliefs::beliefs_are_governed_and_audited;
    beliefs::belief_provenance_reaches_the_raw_calls;
    spaces::spaces_are_created_with_members_idempotently;
    spaces::spaces_log_messages_in_order_once;
    spaces::spaces_order_racing_posts_totally;
    spaces::spaces_wake_waiting_readers_and_keep_cursors;
    spaces::spaces_are_governed_and_audited;
    inbox::inbox_events_are_pushed_once;
    inbox::inbox_leases_each_event_to_one_holder;
    inbox::inbox_leases_lapse_and_are_taken_over;
    inbox::inbox_is_governed;
    inbox::inbox_keeps_the_loop_trace_under_the_lease;
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
