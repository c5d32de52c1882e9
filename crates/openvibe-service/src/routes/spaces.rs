//! Spaces: members, ordered message logs, cursors (`/v1/memory/spaces`),
//! served from the wire of [`SpaceStore`](openvibe_protocols::SpaceStore).
//! The author of a message is the caller (its key), never the body.

use openvibe_api::dto::{Ack, Cursor, PostMessages};
use openvibe_protocols::{Page, Space, SpaceMessage, SpaceQuery};

openvibe_api::store_wire!(SpaceStore => super::api::serve_store);
