//! Replaying a recording offline: the informer's requests are answered from
//! the file instead of the network — its list with an empty page, its watch
//! with the recorded events, paced by their times at the chosen speed — so a
//! recording goes through the same reflector, DeltaFIFO and store as live data.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use super::{feed, timer, DriverState};
use crate::informer::{Input, RequestId};
use crate::time_travel::{watch_line, RecordedEvent};

/// The recorded events and how fast to play them.
pub(crate) struct ReplaySource {
    pub(crate) events: Rc<Vec<RecordedEvent>>,
    pub(crate) speed: f64,
    pub(crate) watch_started: bool,
}

const EMPTY_LIST: &[u8] =
    br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"0"},"items":[]}"#;

/// Answers a list request: one empty page (the recording's first events add the objects).
pub(crate) async fn answer_list(state: Weak<RefCell<DriverState>>, id: RequestId) {
    if feed(
        &state,
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
    ) {
        feed(
            &state,
            Input::BodyChunk {
                id,
                bytes: EMPTY_LIST,
            },
        );
        feed(&state, Input::BodyEnd { id });
    }
}

/// Answers the watch with every recorded event at its time ÷ speed; the stream then stays open.
pub(crate) async fn play(
    state: Weak<RefCell<DriverState>>,
    id: RequestId,
    events: Rc<Vec<RecordedEvent>>,
    speed: f64,
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
    let started = super::now();
    let speed = speed.max(0.01);
    for event in events.iter() {
        let due = started + (event.at as f64 / speed) as u64;
        let now = super::now();
        if due > now {
            timer::sleep_ms(due - now).await;
        }
        if !feed(
            &state,
            Input::BodyChunk {
                id,
                bytes: watch_line(event).as_bytes(),
            },
        ) {
            return;
        }
    }
}
