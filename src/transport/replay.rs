//! Replaying a recording offline: the informer's requests are answered from
//! the file instead of the network by a [`ReplayScript`] — lists with the
//! recording's relists (so they come out as Replaced deltas again), the
//! watch with the recorded events, paced by their times at the chosen speed,
//! and ended with a 410 where the live session relisted — so a recording goes
//! through the same reflector, DeltaFIFO and store as live data.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::{feed, timer, DriverState};
use crate::api::recording::ReplayScript;
use crate::informer::{Input, Millis, RequestId};

/// The recording being played and how fast.
pub(crate) struct ReplaySource {
    pub(crate) script: Rc<RefCell<ReplayScript>>,
    pub(crate) speed: f64,
    /// Page time the replay began at.
    pub(crate) started: Millis,
}

/// Answers a list request with the pending relist (or an empty list).
pub(crate) async fn answer_list(
    state: Weak<RefCell<DriverState>>,
    id: RequestId,
    script: Rc<RefCell<ReplayScript>>,
) {
    if feed(
        &state,
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
    ) {
        let body = script.borrow_mut().answer_list();
        feed(
            &state,
            Input::BodyChunk {
                id,
                bytes: body.as_bytes(),
            },
        );
        feed(&state, Input::BodyEnd { id });
    }
}

/// Answers a watch: the recorded events from where the last watch stopped,
/// each at its time ÷ speed, until the recording relists (the watch then
/// ends with a 410) or ends (the stream then stays open).
pub(crate) async fn play(
    state: Weak<RefCell<DriverState>>,
    id: RequestId,
    script: Rc<RefCell<ReplayScript>>,
    speed: f64,
    started: Millis,
) {
    if !feed(
        &state,
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
    ) {
        return;
    }
    let speed = speed.max(0.01);
    loop {
        let Some(item) = script.borrow().next_watch_item() else {
            return;
        };
        let due = started + (item.at as f64 / speed) as Millis;
        let now = super::now();
        if due > now {
            timer::sleep_ms(due - now).await;
        }
        if !feed(
            &state,
            Input::BodyChunk {
                id,
                bytes: item.line.as_bytes(),
            },
        ) || item.ends_watch
        {
            return;
        }
        script.borrow_mut().sent();
    }
}
