//! The yew views. `app` lays them out and reads one frame per animation
//! frame from the informers service; the UI state lives in a reducer shared
//! through a context (`context`); every other module is one view, which
//! reads the state and the frame and dispatches actions — none touches an
//! informer or the transport.

mod app;
mod command_bar;
mod context;
mod delta_list;
mod dom;
mod header;
mod help;
mod keep_live;
mod kept_list;
mod keys;
mod log_view;
mod notices;
mod object_story_view;
mod object_view;
mod settings;
pub mod status_bar;
mod table;
mod timeline;
mod timeline_bar;
mod virtual_rows;

/// Mounts the app into `<body>`.
pub fn start() {
    crate::metrics::install();
    yew::Renderer::<app::App>::new().render();
}
