//! Working memory: sessions, plans, task and plan contexts, plan state,
//! served from the wire of their store traits.

use openvibe_api::dto::{AtomicAppend, AtomicIncrement, Deleted, DeletedCount, SetState};
use openvibe_api::endpoints::NoContent;
use openvibe_protocols::{
    NewPlan, NewSession, Page, Plan, PlanContext, PlanDeleted, PlanQuery, PlanUpdate, Session,
    SessionDeleted, SessionQuery, StateEntry, TaskContext,
};

use super::api::Api;

/// Every route of working memory.
pub(super) fn routes(api: Api) -> Api {
    state_ops(context_ops(plan_ops(session_ops(api))))
}

openvibe_api::store_wire!(SessionStore => super::api::serve_store);
openvibe_api::store_wire!(PlanStore => super::api::serve_store);
openvibe_api::store_wire!(ContextStore => super::api::serve_store);
openvibe_api::store_wire!(PlanStateStore => super::api::serve_store);
