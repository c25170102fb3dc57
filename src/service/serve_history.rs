//! What deltascope serve does with the cluster's history, for the status
//! bar: [`follow_serve_history`] asks serve's summary
//! (`crate::transport::serve_history`) at load, every 30 s and after the
//! channel reconnects — when, and what each answer means, is decided by
//! `crate::app::serve_history` — and hands what it learns to `show` (the
//! app state's `Action`, through the `use_serve_history` hook in
//! `crate::ui`). With no serve in front of the page, or an older one,
//! nothing is shown and no error either.

use std::cell::Cell;
use std::rc::Rc;

use crate::app::serve_history::{verdict, HistoryPoll, Verdict};
use crate::informer::Millis;
use crate::model::serve_history::ServeHistories;
use crate::transport::channel;

/// How often the schedule and the channel are looked at.
const POLL_MS: Millis = 1_000;

/// Asks serve about its history while `alive` holds; `show` gets what the
/// status bar should say (`None`: nothing), each time it changes.
pub async fn follow_serve_history(alive: Rc<Cell<bool>>, show: impl Fn(Option<ServeHistories>)) {
    let mut poll = HistoryPoll::new();
    let mut shown: Option<Option<ServeHistories>> = None;
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
                show(next);
            }
        }
        crate::transport::timer::sleep_ms(POLL_MS).await;
    }
}
