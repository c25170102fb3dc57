//! wasm-bindgen tests in headless Chromium: the informer core compiled to
//! wasm32 computes what it computes natively (and holds values compactly),
//! and the status bar renders the
//! hooks the browser tests read (docs/contracts.md).
#![cfg(target_arch = "wasm32")]

use deltascope::address::route::Route;
use deltascope::informer::digest_of;
use deltascope::model::connection::ChannelWords;
use deltascope::ui::status_bar::{StatusBar, StatusProps};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn digest_in_wasm_matches_sha256sum() {
    // `printf 'default/a 1\ndefault/b 7\n' | sha256sum`; input order must not matter.
    let digest = digest_of([("default/b", "7"), ("default/a", "1")].into_iter());
    assert_eq!(
        digest,
        "ed8f567c075912d2cfedce0828676219e2533225ef43f1200585e333c7fc6eda"
    );
}

#[wasm_bindgen_test]
fn a_json_document_reads_back_in_wasm32() {
    // two boxed slices, a pointer and a length each: the tape and the
    // shared subtrees it names
    assert_eq!(std::mem::size_of::<deltascope::informer::JsonValue>(), 16);
    let text = r#"{"n":-3,"u":18446744073709551615,"f":2.5,"metadata":{"name":"web-1"}}"#;
    let value: deltascope::informer::JsonValue = serde_json::from_str(text).expect("JSON");
    assert!(value.compact_len() < text.len());
    assert_eq!(
        value.pointer("/metadata/name").and_then(|v| v.as_str()),
        Some("web-1")
    );
    assert_eq!(value.get("n").and_then(|v| v.as_i64()), Some(-3));
    assert_eq!(value.get("u").and_then(|v| v.as_u64()), Some(u64::MAX));
    assert_eq!(value.get("f").and_then(|v| v.as_f64()), Some(2.5));
}

#[wasm_bindgen_test]
fn a_document_with_shared_subtrees_reads_back_in_wasm32() {
    // addresses are 4 bytes here, held in the tape's 8
    let fields = serde_json::json!({
        "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}
    });
    let text = serde_json::json!({
        "metadata": {"name": "web-1", "managedFields": [{"manager": "m", "fieldsV1": fields}]},
        "spec": {"containers": [{"name": "web", "image": "registry.example/team/web:1.2.3",
                                 "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}]}
    });
    let plain = deltascope::informer::JsonValue::from(&text);
    let shared = plain.clone().with_shared_subtrees();
    assert!(shared.holds_shared());
    assert_eq!(shared.to_json(), text);
    assert_eq!(
        shared
            .pointer("/metadata/managedFields/0/fieldsV1")
            .map(|f| f.to_json()),
        Some(fields)
    );
    assert_eq!(&*shared.compact_bytes(), &*plain.compact_bytes());
}

#[wasm_bindgen_test]
fn routes_parse_in_the_browser() {
    let route = Route::parse("#/apps/v1/deployments?namespace=default").expect("valid route");
    assert_eq!(route.stats_name(), "deployments.apps");
}

#[wasm_bindgen_test]
async fn status_bar_renders_the_store_stats_hook() {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .expect("document");
    let root = document.create_element("div").expect("div");
    document
        .body()
        .expect("body")
        .append_child(&root)
        .expect("append");
    let props = StatusProps {
        cluster: String::new(),
        resource: "deployments.apps".into(),
        count: 3,
        synced: true,
        warm: false,
        state: "watching".into(),
        label: "watching",
        freshness: "disconnected since 12:04:31 — showing the last synced state".into(),
        detail: "watching for changes".into(),
        digest: "ab".repeat(32),
        deltas: 7,
        dropped: 1,
        held: 6,
        events: 9,
        relists: 0,
        channel: ChannelWords {
            state: "broken",
            words: "channel to deltascope serve broken since 12:04:31".into(),
        },
    };
    yew::Renderer::<StatusBar>::with_root_and_props(root.clone(), props).render();
    sleep_ms(50).await;
    let stats = root
        .query_selector("[data-testid=store-stats]")
        .expect("query")
        .expect("store-stats present");
    assert_eq!(
        stats.get_attribute("data-resource").as_deref(),
        Some("deployments.apps")
    );
    assert_eq!(stats.get_attribute("data-count").as_deref(), Some("3"));
    assert_eq!(stats.get_attribute("data-synced").as_deref(), Some("true"));
    assert_eq!(stats.get_attribute("data-warm").as_deref(), Some("false"));
    assert_eq!(
        stats.get_attribute("data-state").as_deref(),
        Some("watching")
    );
    assert_eq!(stats.get_attribute("data-digest"), Some("ab".repeat(32)));
    let history = root
        .query_selector("[data-testid=history-stats]")
        .expect("query")
        .expect("history-stats present");
    assert_eq!(history.get_attribute("data-deltas").as_deref(), Some("7"));
    assert_eq!(history.get_attribute("data-dropped").as_deref(), Some("1"));
    assert_eq!(history.get_attribute("data-held").as_deref(), Some("6"));
    let text = |css: &str| {
        root.query_selector(css)
            .expect("query")
            .and_then(|e| e.text_content())
            .unwrap_or_default()
    };
    assert_eq!(
        text("[data-testid=freshness]"),
        "disconnected since 12:04:31 — showing the last synced state",
        "the status line says what the page knows, not \"synced\""
    );
    let channel = root
        .query_selector("[data-testid=channel-state]")
        .expect("query")
        .expect("channel-state present");
    assert_eq!(
        channel.get_attribute("data-state").as_deref(),
        Some("broken")
    );
    assert!(text("[data-testid=channel-state]").contains("broken since 12:04:31"));
}

async fn sleep_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let window = web_sys::window().expect("window");
        window
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .expect("setTimeout");
    });
    wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .expect("timer");
}
