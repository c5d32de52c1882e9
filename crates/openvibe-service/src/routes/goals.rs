//! Goals: objectives, their decomposition, daily priorities and metric
//! reports (`/v1/memory/goals`, `/v1/memory/priorities`,
//! `/v1/memory/metrics`), served from the wire of
//! [`GoalStore`](openvibe_protocols::GoalStore). A CRM webhook reports a
//! metric with a key whose policy grants `write` in the goal's namespace.

use openvibe_api::dto::{Decompose, PrioritiesOf};
use openvibe_protocols::{
    Goal, GoalProgress, GoalQuery, InitiativeUpdate, MetricReport, Page, Priorities, ReportQuery,
};

openvibe_api::store_wire!(GoalStore => super::api::serve_store);
