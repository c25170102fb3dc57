//! History that survives a reload (ARCHITECTURE.md), in headless Chromium against
//! `serve --demo`, with eight resources kept (more than the browser's six
//! connections): the kept views come back after a reload from the
//! browser's database — shown at once and warm (`data-warm`), resumed with a
//! watch from the stored resourceVersion (no list), the history recorded
//! before the reload still held and continuing after it, every digest equal
//! to the cluster's; a compaction while the tab was closed makes the resume
//! relist and the timeline mark the gap; damaged or old-format data is
//! dropped with a message; two tabs have one writer; "Forget stored
//! history" forgets; a database of the previous layout (version 1, before
//! the usage charts' store) is upgraded in place, its records kept.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::live::{digests_converge, open_all, show, signed_in_demo, Cluster, Resource, SYNC};
use support::{devtools, Browser};

fn resource(route: &str, name: &str) -> Resource {
    Resource {
        route: route.to_string(),
        name: name.to_string(),
    }
}

/// Eight kept resources, pods last (shown).
fn eight() -> Vec<Resource> {
    vec![
        resource("#/apps/v1/deployments", "deployments.apps"),
        resource("#/core/v1/services", "services"),
        resource("#/core/v1/configmaps", "configmaps"),
        resource("#/apps/v1/replicasets", "replicasets.apps"),
        resource("#/core/v1/nodes", "nodes"),
        resource("#/core/v1/namespaces", "namespaces"),
        resource("#/core/v1/events", "events"),
        resource("#/core/v1/pods", "pods"),
    ]
}

/// Installed before each page load: every value `store-stats` takes, so a
/// short warm state is seen however briefly it lasts.
const STATS_RECORDER: &str = "window.__stats = [];\
    const record = () => { const e = document.querySelector('[data-testid=store-stats]'); if (!e) return;\
      const fresh = document.querySelector('[data-testid=freshness]');\
      const heads = Array.from(document.querySelectorAll('thead th')).map(h => h.textContent.trim());\
      const at = heads.findIndex(h => h.startsWith('STATUS'));\
      const statuses = Array.from(document.querySelectorAll('tbody tr[data-key]')).slice(0, 5).map(r => at < 0 ? '?' : (r.children[at] ? r.children[at].textContent : '')).join('|');\
      const s = [e.dataset.resource, e.dataset.count, e.dataset.synced, e.dataset.warm, e.dataset.state, fresh ? fresh.textContent : '', statuses];\
      const last = window.__stats[window.__stats.length - 1];\
      if (!last || last.join() !== s.join()) window.__stats.push(s); };\
    new MutationObserver(record).observe(document, {subtree: true, childList: true, attributes: true});";

/// The page's wasm as this load fetched it: (bytes transferred, encoded
/// body, decoded body), from the Resource Timing entry.
async fn wasm_download(browser: &Browser) -> (u64, u64, u64) {
    let entry = browser
        .script(
            "const e = performance.getEntriesByType('resource').find(r => r.name.endsWith('.wasm'));\
             return e ? [e.transferSize, e.encodedBodySize, e.decodedBodySize] : null;",
        )
        .await;
    let number = |i: usize| entry.get(i).and_then(Value::as_u64).unwrap_or(0);
    assert!(entry.is_array(), "a resource entry for the wasm: {entry}");
    (number(0), number(1), number(2))
}

async fn record_stats_on_load(browser: &Browser) {
    devtools(
        browser,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": STATS_RECORDER }),
    )
    .await;
}

/// (resource, count, synced, warm, state, freshness, the first rows'
/// STATUS cells joined by `|`) as recorded since the load.
async fn recorded_stats(browser: &Browser) -> Vec<Vec<String>> {
    serde_json::from_value(browser.script("return window.__stats || [];").await).unwrap_or_default()
}

/// Informers the page started by listing since it loaded (restored ones
/// leave no `list-start` mark).
async fn lists_started(browser: &Browser) -> u64 {
    browser
        .script("return performance.getEntriesByName('deltascope:list-start').length;")
        .await
        .as_u64()
        .unwrap_or(0)
}

/// (recorded, held) of the shown resource's history.
async fn history_counts(browser: &Browser) -> (u64, u64) {
    let read = |name: &'static str| async move {
        browser
            .attr("[data-testid=history-stats]", name)
            .await
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (read("data-deltas").await, read("data-held").await)
}

/// Opens the settings and waits until the stored deltas of `resource`
/// equal what its history holds (everything is written); (objects, deltas).
async fn wait_stored(browser: &Browser, resource: &str, held: u64) -> (u64, u64) {
    if browser
        .attr("[data-testid=stored-history]", "data-items")
        .await
        .is_none()
    {
        browser.click("[data-testid=settings]").await;
    }
    let found = browser
        .wait_for(&format!("{resource}'s {held} deltas to be stored"), SYNC, || async {
            let item = browser
                .script(&format!(
                    "const i = Array.from(document.querySelectorAll('[data-testid=stored-item]')).find(i => i.dataset.resource === '{resource}');\
                     return i ? [Number(i.dataset.objects), Number(i.dataset.deltas)] : null;"
                ))
                .await;
            let pair: (u64, u64) = serde_json::from_value(item).ok()?;
            (pair.1 == held).then_some(pair)
        })
        .await;
    browser.click("[data-testid=settings-close]").await;
    found
}

/// The churn is stopped and the page has caught up with it: (count, digest).
async fn quiet(browser: &Browser, cluster: &Cluster, name: &str) -> (String, String) {
    cluster.post("/_sim/churn", json!({"events_per_sec": 0}));
    browser
        .wait_for(&format!("{name} to equal the cluster"), SYNC, || async {
            let server = cluster.digest(name);
            let (count, synced, _, digest) = browser.store_stats().await?;
            (synced == "true" && digest == server).then_some((count, digest))
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_reload_and_the_table_comes_back_warm_without_a_list() {
    let (_server, browser, cluster, base) = signed_in_demo(&[]).await;
    let kept = eight();
    open_all(&browser, &base, &kept).await;
    cluster.post("/_sim/churn", json!({"events_per_sec": 40}));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (count, digest) = quiet(&browser, &cluster, "pods").await;
    let (recorded, held) = history_counts(&browser).await;
    assert!(held > 50, "the churn was recorded: {held}");
    let (objects, _) = wait_stored(&browser, "pods", held).await;
    assert!(
        objects > 0,
        "a snapshot of the table is stored ({count} rows shown)"
    );

    // The page's wasm came compressed (the build's brotli).
    let (transferred, encoded, decoded) = wasm_download(&browser).await;
    assert!(
        encoded * 3 < decoded && transferred >= encoded,
        "the wasm came compressed: {encoded} bytes for {decoded}"
    );

    record_stats_on_load(&browser).await;
    browser.client.refresh().await.expect("reload");
    browser.wait_synced("pods", SYNC).await;
    // The reload revalidated the wasm by its ETag: no body came again.
    let (transferred, _, decoded) = wasm_download(&browser).await;
    assert!(
        transferred < 4096 && decoded > 0,
        "the reload fetched the {decoded}-byte wasm again ({transferred} bytes)"
    );
    let seen = recorded_stats(&browser).await;
    assert!(
        seen.iter()
            .any(|s| s[0] == "pods" && s[1] == count && s[2] == "false" && s[3] == "true"),
        "the stored table shows at once, warm and not yet synced: {seen:?}"
    );
    assert!(
        seen.iter().any(|s| s[0] == "pods"
            && s[1] != "0"
            && s[3] == "true"
            && s[5].starts_with("as of")
            && s[5].contains("restoring")),
        "the stored rows' face showed first, as of its snapshot, while the rest was read: {seen:?}"
    );
    let face_rows: Vec<&Vec<String>> = seen
        .iter()
        .filter(|s| s[0] == "pods" && s[5].contains("restoring") && !s[6].is_empty())
        .collect();
    assert!(
        !face_rows.is_empty()
            && face_rows
                .iter()
                .all(|s| s[6].split('|').all(|status| !status.is_empty())),
        "the face's rows show the server's cells (a STATUS in each), not columns computed from a face: {seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s[3] == "false" && s[2] == "false" && s[0] == "pods" && s[1] != "0"),
        "no cold table was shown in between: {seen:?}"
    );
    assert_eq!(
        lists_started(&browser).await,
        0,
        "no kept resource was listed again"
    );
    let (recorded_after, held_after) = history_counts(&browser).await;
    assert!(
        recorded_after >= recorded,
        "the history goes on from {recorded}: {recorded_after}"
    );
    assert!(
        held_after >= held,
        "what was held is still held: {held} → {held_after}"
    );
    assert_eq!(
        browser
            .attr("[data-testid=store-stats]", "data-digest")
            .await
            .as_deref(),
        Some(cluster.digest("pods").as_str()),
        "caught up with the cluster (stored digest {digest})"
    );
    let chips = support::live::kept_states(&browser).await;
    assert_eq!(
        chips.len(),
        kept.len(),
        "every kept view came back: {chips:?}"
    );

    // The delta list still lists the deltas recorded before the reload.
    browser.click("[data-testid=toggle-deltas]").await;
    let total: u64 = browser
        .wait_for("the delta list", SYNC, || async {
            browser
                .attr("[data-testid=delta-list]", "data-total")
                .await?
                .parse()
                .ok()
        })
        .await;
    assert!(total >= held, "the delta list holds {total} of {held}");

    // Changes after the reload arrive as ordinary deltas; every view converges.
    cluster.post("/_sim/churn", json!({"events_per_sec": 40}));
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.post("/_sim/churn", json!({"events_per_sec": 0}));
    digests_converge(&browser, &base, &cluster, &kept).await;
    let (recorded_later, _) = history_counts(&browser).await;
    assert!(recorded_later > recorded_after, "the history continued");
    browser.screenshot("persist-after-reload").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_while_closed_relists_on_return_and_the_timeline_marks_the_gap() {
    let (_server, browser, cluster, base) = signed_in_demo(&[]).await;
    let kept = eight();
    open_all(&browser, &base, &kept).await;
    let (_, _) = quiet(&browser, &cluster, "pods").await;
    let (_, held) = history_counts(&browser).await;
    wait_stored(&browser, "pods", held).await;

    // The tab closes; the cluster changes and compacts its history meanwhile.
    browser.client.goto("about:blank").await.expect("leave");
    cluster.post("/_sim/churn", json!({"events_per_sec": 40}));
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.post("/_sim/churn", json!({"events_per_sec": 0}));
    cluster.post("/_sim/fault", json!({"kind": "compact"}));

    record_stats_on_load(&browser).await;
    show(&browser, &base, &resource("#/core/v1/pods", "pods")).await;
    browser.wait_synced("pods", SYNC).await;
    browser
        .wait_for("pods to equal the cluster", SYNC, || async {
            let (_, _, _, digest) = browser.store_stats().await?;
            (digest == cluster.digest("pods")).then_some(())
        })
        .await;
    let seen = recorded_stats(&browser).await;
    assert!(
        seen.iter().any(|s| s[0] == "pods" && s[3] == "true"),
        "the stored table showed first: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|s| s[0] == "pods" && s[4] == "listing" && s[1] != "0"),
        "then relisted, the stored rows still shown: {seen:?}"
    );
    let relists = browser
        .script("return document.querySelector('[data-testid=store-stats]').closest('footer').textContent;")
        .await;
    let footer = relists.as_str().unwrap_or_default();
    assert!(
        footer.contains("relist") && !footer.contains(" 0 relists"),
        "the status bar counts the relist: {footer}"
    );
    let gaps: u64 = browser
        .wait_for("the pods lane to mark the gap", SYNC, || async {
            browser
                .attr("[data-testid=timeline-lane][data-lane=pods]", "data-gaps")
                .await?
                .parse()
                .ok()
                .filter(|gaps| *gaps > 0)
        })
        .await;
    assert_eq!(gaps, 1);
    let title = browser
        .attr("[data-testid=timeline-lane][data-lane=pods]", "title")
        .await
        .unwrap_or_default();
    assert!(title.contains("not watching from"), "{title}");
    let (_, held_after) = history_counts(&browser).await;
    assert!(
        held_after > held,
        "the history before the gap is kept, and the relist added to it"
    );
    digests_converge(&browser, &base, &cluster, &kept).await;
    browser.screenshot("persist-gap").await;
}

/// Installed before a page load, so it runs before the app opens the
/// database (and so before it could write over the damage): overwrites the
/// pods' base chunks with garbage (their face is left whole: the rows show,
/// the watch resumes ahead of the chunks, then the damage is found),
/// deletes the configmaps' chunks and makes the services' meta record
/// another format's; `window.__damaged` says how it went.
const DAMAGE: &str = "window.__damaged = 'pending';\
    const open = indexedDB.open('deltascope');\
    open.onsuccess = () => { const db = open.result; const tx = db.transaction(['meta', 'chunks'], 'readwrite');\
      const chunks = tx.objectStore('chunks');\
      tx.objectStore('meta').get('#/core/v1/pods').onsuccess = (m) => { const base = JSON.parse(m.target.result).base_chunks;\
        chunks.openCursor(IDBKeyRange.bound(['#/core/v1/pods'], ['#/core/v1/pods', []])).onsuccess = (e) => {\
          const c = e.target.result; if (c) { if (c.key[2] < base) c.update(new Uint8Array([1, 2, 3, 4, 5])); c.continue(); } }; };\
      chunks.openCursor(IDBKeyRange.bound(['#/core/v1/configmaps'], ['#/core/v1/configmaps', []])).onsuccess = (e) => {\
        const c = e.target.result; if (c) { c.delete(); c.continue(); } };\
      const meta = tx.objectStore('meta');\
      meta.get('#/core/v1/services').onsuccess = (e) => { const m = JSON.parse(e.target.result); m.format = 99; meta.put(JSON.stringify(m), '#/core/v1/services'); };\
      tx.oncomplete = () => { db.close(); window.__damaged = true; }; tx.onerror = () => { window.__damaged = String(tx.error); }; };\
    open.onerror = () => { window.__damaged = String(open.error); };";

/// Leaves the page and loads the pods table again with `script` run first
/// (before the app opens its database); waits until the script's
/// `window[flag]` is no longer `'pending'` and returns it, the script
/// removed again for later loads.
async fn load_after(browser: &Browser, base: &str, script: &str, flag: &str) -> Value {
    browser.client.goto("about:blank").await.expect("leave");
    let installed = devtools(
        browser,
        "Page.addScriptToEvaluateOnNewDocument",
        json!({ "source": script }),
    )
    .await;
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .expect("load");
    let said = browser
        .wait_for(
            &format!("the script before the page ({flag})"),
            SYNC,
            || async {
                let value = browser.script(&format!("return window.{flag};")).await;
                (value != json!("pending")).then_some(value)
            },
        )
        .await;
    devtools(
        browser,
        "Page.removeScriptToEvaluateOnNewDocument",
        json!({ "identifier": installed["identifier"] }),
    )
    .await;
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_or_old_format_data_is_dropped_with_a_message_and_forget_forgets() {
    let (_server, browser, cluster, base) = signed_in_demo(&[]).await;
    let kept = eight();
    open_all(&browser, &base, &kept).await;
    quiet(&browser, &cluster, "pods").await;
    let (_, held) = history_counts(&browser).await;
    wait_stored(&browser, "pods", held).await;
    show(&browser, &base, &resource("#/core/v1/services", "services")).await;
    browser.wait_synced("services", SYNC).await;
    let (_, services_held) = history_counts(&browser).await;
    wait_stored(&browser, "services", services_held).await;
    show(
        &browser,
        &base,
        &resource("#/core/v1/configmaps", "configmaps"),
    )
    .await;
    browser.wait_synced("configmaps", SYNC).await;
    let (_, configmaps_held) = history_counts(&browser).await;
    wait_stored(&browser, "configmaps", configmaps_held).await;
    show(&browser, &base, &resource("#/core/v1/pods", "pods")).await;
    browser.wait_synced("pods", SYNC).await;

    let damaged = load_after(&browser, &base, DAMAGE, "__damaged").await;
    assert_eq!(damaged, Value::Bool(true), "{damaged}");
    browser.wait_synced("pods", SYNC).await;
    assert_eq!(
        browser
            .attr("[data-testid=store-stats]", "data-digest")
            .await
            .as_deref(),
        Some(cluster.digest("pods").as_str()),
        "the damaged view started cold and synced"
    );
    browser.click("[data-testid=settings]").await;
    let notices: Vec<String> = browser
        .wait_for("the notices", SYNC, || async {
            let value = browser
                .script("return Array.from(document.querySelectorAll('[data-testid=stored-notice]')).map(n => n.textContent);")
                .await;
            let notices: Vec<String> = serde_json::from_value(value).ok()?;
            (notices.len() >= 3).then_some(notices)
        })
        .await;
    assert!(
        notices.iter().any(|n| n.contains("#/core/v1/pods")
            && n.contains("dropped")
            && n.contains("damaged")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.contains("#/core/v1/services") && n.contains("another version")),
        "{notices:?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.contains("#/core/v1/configmaps") && n.contains("not all there")),
        "{notices:?}"
    );
    browser.screenshot("persist-dropped").await;

    // Forget: after a reload only what came after is there.
    browser.click("[data-testid=forget-stored]").await;
    browser
        .wait_for("the forget notice", SYNC, || async {
            let text = browser
                .script(
                    "return document.querySelector('[data-testid=stored-history]').textContent;",
                )
                .await;
            text.as_str()?.contains("forgotten").then_some(())
        })
        .await;
    browser.click("[data-testid=settings-close]").await;
    let (_, held_before) = history_counts(&browser).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    browser.client.refresh().await.expect("reload");
    browser.wait_synced("pods", SYNC).await;
    let (_, held_after) = history_counts(&browser).await;
    assert!(
        held_after < held_before,
        "the history stored before Forget is gone: {held_before} → {held_after}"
    );
}

/// The settings' words on who stores.
/// Waits until the settings' `stored-state` line contains `words`.
async fn wait_stored_state(browser: &Browser, what: &str, words: &str) {
    browser
        .wait_for(what, SYNC, || async {
            browser
                .script("return document.querySelector('[data-testid=stored-state]')?.textContent || '';")
                .await
                .as_str()?
                .contains(words)
                .then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tabs_have_one_writer_and_the_second_takes_over() {
    let (_server, browser, cluster, base) = signed_in_demo(&[]).await;
    open_all(&browser, &base, &eight()).await;
    quiet(&browser, &cluster, "pods").await;
    let first = browser.client.window().await.expect("this tab");
    let second = browser.client.new_window(true).await.expect("a second tab");
    browser
        .client
        .switch_to_window(second.handle)
        .await
        .expect("to it");
    browser
        .client
        .goto(&format!("{base}#/core/v1/pods"))
        .await
        .expect("open");
    browser.wait_synced("pods", SYNC).await;
    browser.click("[data-testid=settings]").await;
    wait_stored_state(
        &browser,
        "the second tab to say another tab stores",
        "another tab",
    )
    .await;
    browser.client.switch_to_window(first).await.expect("back");
    browser
        .client
        .close_window()
        .await
        .expect("close the writer");
    let handles = browser.client.windows().await.expect("windows");
    browser
        .client
        .switch_to_window(handles[0].clone())
        .await
        .expect("to the second");
    wait_stored_state(&browser, "the second tab to take over", "this tab stores").await;
    let (_, held) = history_counts(&browser).await;
    browser.click("[data-testid=settings-close]").await;
    wait_stored(&browser, "pods", held).await;
}

/// Installed before a page load: replaces the page's database with one of
/// layout version 1 (three stores, before `usage`) holding one chunk of a
/// view no meta record names; `window.__v1` says how it went.
const VERSION_ONE: &str = "window.__v1 = 'pending';\
    indexedDB.deleteDatabase('deltascope');\
    const open = indexedDB.open('deltascope', 1);\
    open.onupgradeneeded = () => { const db = open.result;\
      for (const name of ['meta', 'chunks', 'log']) db.createObjectStore(name);\
      open.transaction.objectStore('chunks').put(new Uint8Array([7, 7, 7]), ['#/kept/by/v1', 0, 0]); };\
    open.onsuccess = () => { open.result.close(); window.__v1 = true; };\
    open.onerror = () => { window.__v1 = String(open.error); };";

/// The page's database now: its version, its stores, and the v1 chunk.
const READ_LAYOUT: &str = "const done = arguments[arguments.length - 1];\
    const open = indexedDB.open('deltascope');\
    open.onsuccess = () => { const db = open.result;\
      const stores = Array.from(db.objectStoreNames);\
      db.transaction('chunks').objectStore('chunks').get(['#/kept/by/v1', 0, 0]).onsuccess = (e) => {\
        const kept = e.target.result ? Array.from(e.target.result) : null;\
        db.close(); done({version: db.version, stores, kept}); }; };\
    open.onerror = () => done({error: String(open.error)});";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_of_the_previous_layout_is_upgraded_in_place() {
    let (_server, browser, _cluster, base) = signed_in_demo(&[]).await;
    let made = load_after(&browser, &base, VERSION_ONE, "__v1").await;
    assert_eq!(made, Value::Bool(true), "{made}");
    browser.wait_synced("pods", SYNC).await;
    let layout = browser
        .wait_for("the page's database at version 2", SYNC, || async {
            let layout = browser
                .client
                .execute_async(READ_LAYOUT, vec![])
                .await
                .ok()?;
            (layout["version"] == json!(2)).then_some(layout)
        })
        .await;
    let mut stores: Vec<String> =
        serde_json::from_value(layout["stores"].clone()).expect("store names");
    stores.sort();
    assert_eq!(stores, ["chunks", "log", "meta", "usage"], "{layout}");
    assert_eq!(
        layout["kept"],
        json!([7, 7, 7]),
        "version 1's records kept: {layout}"
    );
}
