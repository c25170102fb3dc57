//! Helpers for the logs view's browser tests: opening more than six
//! resources first (so log streams share the channel with watches), and
//! reading the `[data-testid=log-view]` hook.

use super::live::{open_all, Cluster};
use super::Browser;

/// Opens eight of the cluster's resources, each synced, ending on pods.
pub async fn open_more_than_six(browser: &Browser, base: &str, cluster: &Cluster) {
    let discovered = cluster.discovered();
    let mut resources: Vec<_> = discovered
        .iter()
        .filter(|r| r.name != "pods")
        .take(7)
        .cloned()
        .collect();
    assert_eq!(resources.len(), 7, "seven other resources: {discovered:?}");
    let pods = discovered
        .into_iter()
        .find(|r| r.name == "pods")
        .expect("discovery lists pods");
    resources.push(pods);
    open_all(browser, base, &resources).await;
}

/// An attribute of `[data-testid=log-view]`.
pub async fn log_attr(browser: &Browser, name: &str) -> Option<String> {
    browser.attr("[data-testid=log-view]", name).await
}
