//! Beliefs (L4): what a role holds true once a person approved it
//! (`/v1/memory/beliefs`), served from the wire of
//! [`BeliefStore`](openvibe_protocols::BeliefStore).

use openvibe_api::dto::{BeliefVerdict, RetireBelief};
use openvibe_memory::Decisions;
use openvibe_protocols::{Belief, BeliefQuery, Page};

openvibe_api::store_wire!(BeliefStore => super::api::serve_store);
