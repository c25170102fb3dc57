//! API discovery for the resource picker and the command bar: the parsing
//! of the discovery documents is Kubernetes facts shared with the
//! recorder (`deltascope_facts::discovery`); the page fetches them in
//! `transport`.

pub use deltascope_facts::discovery::{
    find, listable_resources, preferred_group_versions, ApiResource, DiscoveryError,
};
