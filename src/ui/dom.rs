//! The browser's document and window as the views use them: the address
//! bar's hash, frames and timeouts, finding an element, offering a
//! download. Nothing here reads or changes the app state, and nothing here
//! knows a view (the table scrolls its own rows into view, `table.rs`).

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::address::object_route::ObjectRoute;
use crate::address::route::Route;
use crate::app::navigation::{CloseStep, ObjectVisit, OpenStep};

pub fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

thread_local! {
    /// Whether the object on screen was opened from this page (the page
    /// has one address bar, so one visit).
    static VISIT: std::cell::RefCell<ObjectVisit> = std::cell::RefCell::new(ObjectVisit::default());
}

/// Opens one object (`ObjectVisit::open` decides how): its address, pushed
/// so the back button returns to the table; in place of the object
/// already open (one entry per visit).
pub fn open_object(object: &ObjectRoute) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let location = window.location();
    // Another object opens on the tab the one before showed.
    let shown = ObjectRoute::parse(&current_hash()).and_then(|open| open.tab);
    let object = match (object.tab, shown) {
        (None, Some(tab)) => object.with_tab(tab),
        _ => object.clone(),
    };
    let hash = object.to_string();
    match VISIT.with(|visit| visit.borrow_mut().open(&current_hash())) {
        OpenStep::Replace => {
            let base = location.href().unwrap_or_default();
            let base = base.split_once('#').map_or(base.as_str(), |(base, _)| base);
            let _ = location.replace(&format!("{base}{hash}"));
        }
        OpenStep::Push => {
            let _ = location.set_hash(&hash);
        }
    }
}

/// The object on screen now shows `tab`: its address says so, in place
/// (no history entry, no navigation), so a reload or a shared link opens
/// the same tab.
pub fn show_object_tab(tab: crate::address::object_route::ObjectTab) {
    let Some(object) = ObjectRoute::parse(&current_hash()) else {
        return;
    };
    let next = object.with_tab(tab);
    if next == object {
        return;
    }
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let _ = history.replace_state_with_url(
            &wasm_bindgen::JsValue::NULL,
            "",
            Some(&next.to_string()),
        );
    }
}

/// Closes the object on screen: back to the table it was opened from, or
/// (an address opened directly) to `table`.
pub fn close_object(table: &Route) {
    if VISIT.with(|visit| visit.borrow_mut().close()) == CloseStep::Back {
        let window = web_sys::window();
        if let Some(history) = window.as_ref().and_then(|w| w.history().ok()) {
            let _ = history.back();
            return;
        }
    }
    set_hash(table);
}

/// The address no longer names an object (the back button, a link).
pub fn object_closed() {
    VISIT.with(|visit| visit.borrow_mut().closed());
}

pub fn set_hash(route: &Route) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_hash(&route.to_string());
    }
}

pub fn now_unix() -> i64 {
    (js_sys::Date::now() / 1000.0) as i64
}

/// Runs `f` on the next animation frame (or right away if there is no window).
pub fn on_next_frame(f: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return f();
    };
    let callback = Closure::once_into_js(f);
    let _ = window.request_animation_frame(callback.unchecked_ref());
}

pub fn after_ms(delay: i32, f: impl FnOnce() + 'static) {
    if let Some(window) = web_sys::window() {
        let callback = Closure::once_into_js(f);
        let _ = window
            .set_timeout_with_callback_and_timeout_and_arguments_0(callback.unchecked_ref(), delay);
    }
}

pub fn query(selector: &str) -> Option<web_sys::HtmlElement> {
    web_sys::window()?
        .document()?
        .query_selector(selector)
        .ok()??
        .dyn_into()
        .ok()
}

/// Offers `text` as a file download.
pub fn download(name: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/x-ndjson");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = web_sys::window().and_then(|w| w.document());
    if let Some(anchor) = document
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        anchor.set_href(&url);
        anchor.set_download(name);
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}
