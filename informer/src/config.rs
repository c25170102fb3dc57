//! What an informer is asked to do ([`InformerConfig`]: the cluster's API
//! root, the resource, namespace and selectors, paging, streaming lists,
//! backoffs, history retention, table mode) and what makes two informers the same
//! ([`InformerKey`], so views asking for the same data share one list and
//! watch).

use crate::backoff::BackoffConfig;
use crate::clock::Millis;
use crate::framer::DEFAULT_MAX_LINE;
use crate::history::HistoryConfig;
use crate::object::ResourceRef;

/// What makes two informers the same: views asking for an equal key should
/// share one informer (one list/watch) instead of opening their own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InformerKey {
    /// Where the cluster's API is ([`InformerConfig::api_root`]): two
    /// clusters' pods are two informers.
    pub api_root: String,
    pub group: String,
    pub version: String,
    pub plural: String,
    /// `None` for all namespaces and for cluster-scoped resources.
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// Table mode (rows carry the server's cells).
    pub server_table: bool,
}

/// Everything an informer needs to know: what to watch and how.
#[derive(Debug, Clone, PartialEq)]
pub struct InformerConfig {
    /// Where the cluster's API is mounted, before `/api/…` and `/apis/…`:
    /// `""` for the server's root, `/clusters/{name}` for one of the
    /// clusters deltascope serve forwards to.
    pub api_root: String,
    pub resource: ResourceRef,
    /// `None`: all namespaces (or a cluster-scoped resource).
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// `limit` of each list page.
    pub page_size: u32,
    /// Try a streaming list (`sendInitialEvents=true`) first; falls back to
    /// list + watch when the server does not support it.
    pub streaming_list: bool,
    /// Periodic resync (Sync deltas for every object); `None` disables it.
    pub resync_period: Option<Millis>,
    pub backoff: BackoffConfig,
    /// The backoff after a 403 Forbidden: slower, as access is rarely
    /// granted within seconds (5 s doubling to 5 min by default).
    pub forbidden_backoff: BackoffConfig,
    pub history: HistoryConfig,
    /// Seed for jitter and watch timeouts.
    pub seed: u64,
    /// Longest accepted watch line (one event).
    pub max_line_bytes: usize,
    /// How long a streaming list may go without its `initial-events-end`
    /// bookmark before the reflector decides the server ignores it.
    pub streaming_fallback_after: Millis,
    /// Server-side table mode: ask for `meta.k8s.io/v1` Tables (list and
    /// watch, `includeObject=Object`) so every object carries the cells the
    /// server printed and the informer knows the server's columns. A server
    /// that answers plain lists is used as it is (no cells, no columns).
    pub server_table: bool,
}

impl InformerConfig {
    /// Defaults: all namespaces, no selectors, pages of 500, streaming list
    /// on, no resync, backoff 800 ms → 30 s, default history retention.
    pub fn new(resource: ResourceRef) -> Self {
        InformerConfig {
            api_root: String::new(),
            resource,
            namespace: None,
            label_selector: None,
            field_selector: None,
            page_size: 500,
            streaming_list: true,
            resync_period: None,
            backoff: BackoffConfig::default(),
            forbidden_backoff: BackoffConfig {
                initial: 5_000,
                max: 300_000,
                factor: 2.0,
                jitter: 0.25,
                reset_after: 600_000,
            },
            history: HistoryConfig::default(),
            seed: 0x5eed_de17_a5c0_9e01,
            max_line_bytes: DEFAULT_MAX_LINE,
            streaming_fallback_after: 10_000,
            server_table: false,
        }
    }

    /// The sharing key: resource, namespace and selectors, with empty
    /// strings and namespaces of cluster-scoped resources normalised away.
    pub fn share_key(&self) -> InformerKey {
        let norm = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        InformerKey {
            api_root: self.api_root.trim_end_matches('/').to_owned(),
            group: self.resource.group.clone(),
            version: self.resource.version.clone(),
            plural: self.resource.plural.clone(),
            namespace: if self.resource.namespaced {
                norm(&self.namespace)
            } else {
                None
            },
            label_selector: norm(&self.label_selector),
            field_selector: norm(&self.field_selector),
            server_table: self.server_table,
        }
    }

    /// The cluster's API under `root` (see [`InformerConfig::api_root`]).
    pub fn api_root(mut self, root: impl Into<String>) -> Self {
        self.api_root = root.into();
        self
    }

    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    pub fn streaming_list(mut self, on: bool) -> Self {
        self.streaming_list = on;
        self
    }

    pub fn resync(mut self, period: Option<Millis>) -> Self {
        self.resync_period = period;
        self
    }

    /// Server-side table mode on or off (see [`InformerConfig::server_table`]).
    pub fn server_table(mut self, on: bool) -> Self {
        self.server_table = on;
        self
    }

    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}
