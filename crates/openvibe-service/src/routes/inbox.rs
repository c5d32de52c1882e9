//! The durable event inbox of the roles' cognitive loops
//! (`/v1/memory/inbox`), served from the wire of
//! [`InboxStore`](openvibe_protocols::InboxStore).

use openvibe_protocols::{InboxEvent, InboxOutcome, InboxQuery, LeaseRequest, Page, Renewal};

openvibe_api::store_wire!(InboxStore => super::api::serve_store);
