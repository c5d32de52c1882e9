//! Proposals: what waits for a person (`/v1/memory/proposals`), served
//! from the wire of [`ProposalStore`](openvibe_protocols::ProposalStore).

use openvibe_api::dto::{ExpireProposals, ExpiredCount, FinishProposal};
use openvibe_memory::Decisions;
use openvibe_protocols::{Page, Proposal, ProposalQuery, Verdict};

openvibe_api::store_wire!(ProposalStore => super::api::serve_store);
