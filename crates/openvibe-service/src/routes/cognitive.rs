//! The cognitive loop of the process that serves (`/v1/loop`): events
//! pushed over HTTP, and their traces, served from the wire of
//! [`EventInbox`](openvibe_protocols::EventInbox). A service without a loop
//! ([`Service::with_inbox`](crate::Service::with_inbox)) answers 404.

use openvibe_protocols::{Accepted, DecisionEvent, EventSource, LoopTrace};

openvibe_api::store_wire!(EventInbox => super::api::serve_store);
