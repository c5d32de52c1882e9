//! The wire format of the openvibe memory service (`openvibe-service`),
//! shared with its remote client (`openvibe-remote`): the [`endpoints`]
//! table (every route's method, path, types and idempotency, which drives
//! the service's router, its OpenAPI document and the client), the request
//! and response bodies ([`dto`]), the [`ErrorBody`] every failure answers
//! with, and the [`Caller`] a trusted runtime states per request.
//!
//! Record, query and working-memory bodies are the protocol types
//! themselves (`Fact`, `FactQuery`, `NewPlan`, …), serialized with serde;
//! their JSON Schemas (`schemars`) make up the service's OpenAPI document.
//!
//! ```
//! use openvibe_api::{ErrorBody, endpoints};
//! use openvibe_protocols::StoreError;
//!
//! let body = ErrorBody::from_store(&StoreError::invalid("content", "must not be empty"));
//! assert_eq!(body.status(), 400);
//! assert_eq!(body.into_store_error(), StoreError::invalid("content", "must not be empty"));
//! assert_eq!(endpoints::STORE_FACT.path, "/v1/memory/facts");
//! ```

mod caller;
pub mod dto;
pub mod endpoints;
mod error;

pub use caller::{CALLER_HEADER, Caller, WireGrant, WireGrants};
pub use error::{ApiError, ErrorBody, ErrorCode};

/// The header naming the project a request works in (`l9`): allowed when
/// the governance file grants the key that project (`projects`), refused
/// with a 403 otherwise; a trusted key's stated caller names its own.
pub const PROJECT_HEADER: &str = "x-openvibe-project";

/// The header carrying the request id (set by the server on every response;
/// a client may send its own).
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
