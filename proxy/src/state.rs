//! The state serve's layers and dispatcher share ([`AppState`]): the
//! sessions, the sign-in links, the names serve answers to, the clusters and their forwarders,
//! the channels, the page's files and the recorded history. `serve` builds
//! it and `layers` and `signin` read it; it lives apart from both so neither
//! the assembly nor a layer is imported back by the other.

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;

use crate::auth::Auth;
use crate::channel::Channels;
use crate::clusters::Clusters;
use crate::signin::SignInLinks;
use crate::upstreams::Upstreams;

/// What every layer and the dispatcher read, built once by `serve::bind`.
pub(crate) struct AppState {
    pub(crate) auth: Auth,
    /// The sign-in links' codes and printing.
    pub(crate) sign_in_links: SignInLinks,
    /// Lowercase `host:port` values accepted in `Host` (and, with `http://`, in `Origin`).
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allow_writes: bool,
    pub(crate) demo: bool,
    pub(crate) dist: Option<PathBuf>,
    /// The page's files compressed, by content (see [`crate::compress`]).
    pub(crate) compressed: crate::compress::Compressed,
    /// Every cluster's forwarder, by the path's `/clusters/{name}/` prefix.
    pub(crate) upstreams: Arc<Upstreams>,
    /// The clusters' state (`/_deltascope/clusters`).
    pub(crate) clusters: Arc<Clusters>,
    pub(crate) sim_control: Option<Router>,
    /// The page's channels; `None` with `--no-channel`.
    pub(crate) channels: Option<Arc<Channels>>,
    /// The recorded history the history routes read.
    pub(crate) history: crate::history_access::HistoryAccess,
}
