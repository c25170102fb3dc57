//! Driving the timeline as a person does, for the browser tests that reach
//! into serve's record: a wheel over its right edge (zoom out, now kept at
//! the end), a click at a fraction of its width (travel to that moment),
//! and the range it shows (`data-start`, `data-end`).

use std::time::Duration;

use super::Browser;

/// Opens the pods table at `origin` (`http://ADDR`), waits until it is
/// synced and serve's summary says it records pods (`history-stats`
/// `data-recorded-from` set).
pub async fn open_recorded_pods(browser: &Browser, origin: &str, wait: Duration) {
    browser
        .client
        .goto(&format!("{origin}/#/core/v1/pods"))
        .await
        .expect("pods");
    browser.wait_synced("pods", wait).await;
    browser
        .wait_for("serve's summary: pods recorded", wait, || async {
            let from = browser
                .attr("[data-testid=history-stats]", "data-recorded-from")
                .await?;
            (!from.is_empty()).then_some(())
        })
        .await;
}

/// A wheel of `delta_y` over the timeline's right edge (1500: about 20×).
pub async fn zoom_out(browser: &Browser, delta_y: u32) {
    browser
        .script(&format!(
            "const c = document.querySelector('[data-testid=timeline] canvas');\
             const r = c.getBoundingClientRect();\
             c.dispatchEvent(new WheelEvent('wheel', {{deltaY: {delta_y}, clientX: r.right - 1,\
               clientY: r.top + 5, bubbles: true, cancelable: true}}));"
        ))
        .await;
}

/// A click at `fraction` (0..1) of the timeline's width.
pub async fn click_at(browser: &Browser, fraction: f64) {
    browser
        .script(&format!(
            "const c = document.querySelector('[data-testid=timeline] canvas');\
             const r = c.getBoundingClientRect();\
             c.dispatchEvent(new MouseEvent('click', {{clientX: r.left + r.width * {fraction},\
               clientY: r.top + 5, bubbles: true}}));"
        ))
        .await;
}

/// The range shown (ms since the Unix epoch).
pub async fn range(browser: &Browser) -> Option<(i64, i64)> {
    let timeline = "[data-testid=timeline]";
    let start = browser.attr(timeline, "data-start").await?.parse().ok()?;
    let end = browser.attr(timeline, "data-end").await?.parse().ok()?;
    Some((start, end))
}

/// A lane's `data-recorded`, `data-recorded-gaps` and title; the lane is
/// the first whose name starts with `lane`.
pub async fn recorded_lane(browser: &Browser, lane: &str) -> Option<(u64, u64, String)> {
    let value = browser
        .script(&format!(
            "const l = document.querySelector('[data-testid=timeline-lane][data-lane^=\"{lane}\"]');\
             return l ? [Number(l.dataset.recorded), Number(l.dataset.recordedGaps), l.title] : null;"
        ))
        .await;
    let (recorded, gaps, title): (u64, u64, String) = serde_json::from_value(value).ok()?;
    Some((recorded, gaps, title))
}
