//! The informers service: the only page code that touches `transport`.
//! It owns every informer the page runs — the kept resource views'
//! (`kept_informers`), a recording's replay, the CRD watch behind API
//! discovery (`api_discovery`) — and gives the views read-only snapshots
//! and view models (`resource_view`); views change them only through its
//! methods (start, keep, stop, retry, retention, capacity).

pub mod api_discovery;
pub mod kept_informers;
pub mod resource_view;
