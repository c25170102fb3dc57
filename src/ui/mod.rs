//! The yew views. `app` lays them out, from a few hooks of its own: `frames`
//! (when to render, and the frame each render reads from the informers
//! service), `address` (what the address names, and the service showing it),
//! `discovery` (what API discovery knows), `keys` (the keyboard); the UI state
//! lives in a reducer shared through a context (`context`); `virtual_rows` is
//! the virtual scrolling of every long list; `dom` is the browser's document as
//! the views use it. Every other module is one view, which reads the state and
//! the frame and dispatches actions — none touches an informer or the
//! transport.

mod address;
mod app;
mod cluster_picker;
mod command_bar;
mod context;
mod delta_list;
mod discovery;
mod dom;
mod frames;
mod header;
mod help;
mod keep_live;
mod kept_list;
mod keys;
mod log_view;
mod notices;
mod object_story_view;
mod object_view;
mod serve_history;
mod settings;
pub mod status_bar;
mod stored_history;
mod table;
mod timeline;
mod timeline_bar;
mod timeline_canvas;
mod timeline_gestures;
mod usage_chart;
mod virtual_rows;

/// Mounts the app into `<body>`, in a task of its own: the wasm module's
/// start-up (instantiation, `main`) and the first render with the effects
/// it runs were one task of 60–90 ms, the only long task of a 100k-pod
/// open on a quiet machine.
pub fn start() {
    crate::metrics::install();
    dom::after_ms(0, || {
        yew::Renderer::<app::App>::new().render();
    });
}
