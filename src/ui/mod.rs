//! The yew views: the app shell, resource tables and status bar; views only read the informer state.

pub fn start() {}
