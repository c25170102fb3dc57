//! The hook that keeps the app state told what deltascope serve does with
//! the cluster's history: [`use_serve_history`] runs the service's
//! `follow_serve_history` for the page's lifetime and dispatches what it
//! learns.

use std::cell::Cell;
use std::rc::Rc;

use yew::prelude::*;

use crate::model::serve_history::ServeHistories;
use crate::service::serve_history::follow_serve_history;
use crate::service::spawn_after_this_task;

/// Asks serve about its history for the page's lifetime; `show` gets what
/// the status bar should say (`None`: nothing).
#[hook]
pub fn use_serve_history(show: Callback<Option<ServeHistories>>) {
    use_effect_with((), move |_| {
        let alive = Rc::new(Cell::new(true));
        spawn_after_this_task(follow_serve_history(alive.clone(), move |next| {
            show.emit(next)
        }));
        move || alive.set(false)
    });
}
