//! What deltascope serve does with the cluster's history, for the status
//! bar: [`use_serve_history`] asks serve's summary
//! (`crate::transport::serve_history`) at load, every 30 s and after the
//! channel reconnects — when, and what each answer means, is decided by
//! `crate::app::serve_history` — and hands what it learns to the app state
//! through the callback it is given (the `Action` that sets it). With no
//! serve in front of the page, or an older one, nothing is shown and no
//! error either.

use std::cell::Cell;
use std::rc::Rc;

use yew::prelude::*;

use crate::app::serve_history::{verdict, HistoryPoll, Verdict};
use crate::informer::Millis;
use crate::model::serve_history::ServeHistory;
use crate::transport::channel;

/// How often the schedule and the channel are looked at.
const POLL_MS: Millis = 1_000;

/// Asks serve about its history for the page's lifetime; `show` gets what
/// the status bar should say (`None`: nothing).
#[hook]
pub fn use_serve_history(show: Callback<Option<ServeHistory>>) {
    use_effect_with((), move |_| {
        let alive = Rc::new(Cell::new(true));
        super::spawn_after_this_task(run(alive.clone(), show));
        move || alive.set(false)
    });
}

async fn run(alive: Rc<Cell<bool>>, show: Callback<Option<ServeHistory>>) {
    let mut poll = HistoryPoll::new();
    let mut shown: Option<Option<ServeHistory>> = None;
    while alive.get() {
        let now = crate::transport::now();
        poll.channel_seen(&channel::status(), now);
        if poll.due(now) {
            poll.started();
            let answer = crate::transport::serve_history::summary().await;
            let verdict = verdict(
                answer
                    .as_ref()
                    .ok()
                    .map(|answer| (answer.status, answer.body.as_slice())),
            );
            poll.finished(&verdict, crate::transport::now());
            let next = match verdict {
                Verdict::Show(history) => Some(Some(history)),
                Verdict::Absent => Some(None),
                Verdict::Keep => None,
            };
            if let Some(next) = next.filter(|next| alive.get() && shown.as_ref() != Some(next)) {
                shown = Some(next.clone());
                show.emit(next);
            }
        }
        crate::transport::timer::sleep_ms(POLL_MS).await;
    }
}
