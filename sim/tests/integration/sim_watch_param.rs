//! The `watch` query parameter read as the apiserver reads it: Go's
//! `url.ParseQuery` (names and values percent-decoded, `+` a space, pairs
//! with `;` or a malformed escape dropped), then apimachinery's
//! `Convert_Slice_string_To_bool` on the *first* value — present means a
//! watch unless that value is `0` or `false` in any case. Every other
//! parameter reads its first value too.

use crate::support;

use std::time::Duration;

use support::*;

const WAIT: Duration = Duration::from_secs(5);

/// Whether `GET /api/v1/namespaces?{query}` is served as a watch (an
/// ADDED event line first, the stream open) or as a list (one
/// `NamespaceList` document, then the end).
async fn is_watch(t: &TestSim, query: &str) -> bool {
    let mut lines = t.watch(&format!("/api/v1/namespaces?{query}")).await;
    match lines.next(WAIT).await {
        Next::Line(v) if v["type"] == "ADDED" => true,
        Next::Line(v) if v["kind"] == "NamespaceList" => false,
        Next::End => false,
        Next::Line(v) => panic!("{query}: neither a watch nor a list: {v}"),
        _ => panic!("{query}: no answer"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_spelling_the_apiserver_watches_is_a_watch() {
    let t = start(quiet(5)).await;
    for query in [
        "watch=1",
        "watch=true",
        "watch",
        "watch=",
        "w%61tch=1",
        "%77atch=true",
        "watch=%31",
        "watch=tru%65",
        "watch=yes",
        "watch=TRUE",
        "watch=True",
        "watch=on",
        "watch=no",
        "watch=2",
        "watch=%FF",
        "wat%63h=%74",
        "watch=1&watch=0",
        "watch&watch=false",
        "limit=2&watch",
    ] {
        assert!(is_watch(&t, query).await, "{query:?} is a watch");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_apiserver_lists() {
    let t = start(quiet(5)).await;
    for query in [
        "",
        "watch=0",
        "watch=false",
        "watch=FALSE",
        "watch=fAlSe",
        "watch=%30",
        "watch=0&watch=1",
        "watch=false&watch=true",
        // dropped pairs: a malformed escape, a semicolon
        "watch=%zz",
        "watch=1;x=2",
        "w%zzatch=1",
        "watch%20=1",
        "nowatch=1",
    ] {
        assert!(!is_watch(&t, query).await, "{query:?} is a list");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_parameters_read_their_first_value_and_booleans_are_never_refused() {
    let t = start(quiet(5)).await;
    let (rv, all) = t.list_all("/api/v1/namespaces").await;
    assert!(all.len() > 2);
    let page = t.get_json("/api/v1/namespaces?limit=1&limit=100").await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1));
    assert!(page["metadata"]["continue"].is_string());
    // allowWatchBookmarks=yes is true, as the apiserver reads it
    let mut watch = t
        .watch(&format!(
            "/api/v1/namespaces?watch=1&allowWatchBookmarks=yes&resourceVersion={rv}"
        ))
        .await;
    let mut bookmark = false;
    for _ in 0..50 {
        match watch.next(WAIT).await {
            Next::Line(v) if v["type"] == "BOOKMARK" => {
                bookmark = true;
                break;
            }
            Next::Line(_) => {}
            _ => break,
        }
    }
    assert!(bookmark, "allowWatchBookmarks=yes asks for bookmarks");
}
