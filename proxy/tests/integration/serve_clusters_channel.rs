//! One channel carries the streams of every cluster: with two named
//! upstreams (`--upstream one=URL --upstream two=URL`, stub upstreams
//! standing in for two proxies), a stream opened at `/clusters/two/…`
//! reaches the second stub as `/…`, the default paths reach the first,
//! the prefix changes none of the rules (exec refused, unknown names 404),
//! and `/_deltascope/clusters` lists both, the first as the default.

use crate::channel_support;
use crate::serve_support;

use channel_support::*;
use deltascope_proxy::clusters::{ClusterFlag, ClusterPlan};
use serve_support::*;

#[tokio::test]
async fn one_channel_carries_the_streams_of_every_cluster() {
    let (one, two) = (start_stub().await, start_stub().await);
    let mut config = config(Upstream::Clusters(ClusterPlan {
        flags: vec![
            ClusterFlag::upstream(&format!("one={}", one.url())),
            ClusterFlag::upstream(&format!("two={}", two.url())),
        ],
        kubeconfig: None,
    }));
    config.token = Some(TOKEN.into());
    let proxy = start_proxy(config).await;
    let addr = proxy.local_addr();

    let mut channel = ChannelClient::open(addr).await;
    let watch = "/clusters/two/api/v1/pods?watch=1&events=3&interval_ms=20";
    control(
        addr,
        &channel.id.clone(),
        &opens(&[
            (1, watch, None),
            (2, "/clusters/one/api/v1/namespaces", None),
            (3, "/api/v1/nodes", None),
            (4, "/clusters/nope/api/v1/pods", None),
            (5, "/clusters/two/api/v1/namespaces/x/pods/y/exec", None),
        ]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "every stream's end", |c| {
            (1..=5).all(|s| c.ended(s))
        })
        .await;
    assert_eq!(channel.stream(1).status(), Some(200));
    assert_eq!(channel.stream(1).events().len(), 3, "{}", channel.summary());
    assert_eq!(channel.stream(2).status(), Some(200));
    assert!(channel.stream(2).has("\"path\":\"/api/v1/namespaces\""));
    assert_eq!(channel.stream(3).status(), Some(200));
    assert_eq!(channel.stream(4).status(), Some(404));
    assert!(
        channel.stream(4).has("one, two"),
        "{}",
        channel.stream(4).text()
    );
    assert_eq!(channel.stream(5).status(), Some(403));

    let paths = |stub: &Stub| -> Vec<String> {
        stub.state
            .paths()
            .into_iter()
            .map(|p| p.split('?').next().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(paths(&one), ["/api/v1/namespaces", "/api/v1/nodes"]);
    assert_eq!(paths(&two), ["/api/v1/pods"]);

    // Plain requests route the same way.
    let plain = get(addr, "/clusters/two/apis/apps/v1/deployments", None).await;
    assert_eq!(plain.status, 200);
    assert_eq!(plain.json()["path"], "/apis/apps/v1/deployments");

    let listed = get(addr, "/_deltascope/clusters", None).await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert_eq!(listed.header("cache-control"), Some("no-store"));
    let listed = listed.json();
    let names: Vec<(&str, bool, &str)> = listed
        .as_array()
        .expect("an array")
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap_or_default();
            let default = c["default"].as_bool().unwrap_or_default();
            (name, default, c["source"].as_str().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        names,
        [("one", true, "upstream"), ("two", false, "upstream")]
    );
    let posted = send(addr, req("POST", "/_deltascope/clusters").bearer(TOKEN)).await;
    assert_eq!(posted.status, 405);
}
