//! Kubernetes facts written once. The page (wasm), the simulated cluster,
//! the auth proxy and the tests each need the same few facts about the
//! Kubernetes API, and when each wrote its own copy they drifted (the sim
//! and the page disagreed on negative ages, the digest was computed four
//! ways). Here each is defined once:
//!
//! - [`digest`]: the store digest (docs/contracts.md) that page and server compare;
//! - [`status`]: `metav1.Status`, the body of every API error;
//! - [`time`]: RFC 3339 timestamps and kubectl's short ages;
//! - [`resources`]: the built-in resource types (group, version, plural,
//!   kind, scope, short names) the command bar, the picker and the sim know;
//! - [`discovery`]: API discovery documents, read for the page's picker
//!   and the recorder alike;
//! - [`percent`]: query-value percent-encoding;
//! - [`quantity`]: resource quantities (`250m`, `128Mi`) read exactly, and
//!   kubectl's roundings.
//!
//! No web, HTTP or clock dependency: callers pass the time in.

pub mod digest;
pub mod discovery;
pub mod percent;
pub mod quantity;
pub mod resources;
pub mod status;
pub mod time;

pub use digest::{digest_of, digest_of_sorted, EMPTY_DIGEST};
pub use resources::{BuiltinResource, BUILTIN_RESOURCES};
pub use status::{Status, StatusCause, StatusDetails};
