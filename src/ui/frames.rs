//! The frame scheduler: when the app renders, and the frame each render
//! reads. [`use_frames`] creates the informers service with a change
//! callback that asks for one render on the next animation frame however
//! many events arrive (at most one pending), renders once a second even
//! when nothing arrives (ages tick, backoffs count down), and stops every
//! informer when the app goes. [`Frames::read`] reads one frame for the
//! table on screen, with the rows the table and the delta list will draw
//! for their scroll positions, and asks for a follow-up render 300 ms later
//! while the frame says something is still changing. Frames are numbered
//! ([`Frames::next_number`]): a new number makes every reader of the
//! service context render again.
//!
//! Why in one place: every render of the page is asked for here, so how
//! often the page works, and how much each time, is decided here and
//! nowhere else — the views never schedule renders of their own.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use yew::prelude::*;

use super::delta_list::DELTA_ROWS;
use super::dom::{after_ms, now_unix, on_next_frame};
use super::table::TABLE_ROWS;
use crate::address::route::Route;
use crate::app::state::AppState;
use crate::service::{Frame, FrameInput, Informers};

/// The informers service and the app's render schedule.
pub struct Frames {
    pub informers: Rc<Informers>,
    redraw: UseForceUpdateHandle,
    number: Rc<RefCell<u64>>,
    follow_up_pending: Rc<RefCell<bool>>,
}

/// The informers service, its renders batched per animation frame, and a
/// render a second (see the module doc).
#[hook]
pub fn use_frames() -> Frames {
    let redraw = use_force_update();
    let number = use_mut_ref(|| 0_u64);
    let frame_pending = use_mut_ref(|| false);
    let follow_up_pending = use_mut_ref(|| false);

    // The informers tell the app through this; renders are batched per animation frame.
    let informers: Rc<Informers> = {
        let (redraw, frame_pending) = (redraw.clone(), frame_pending.clone());
        (*use_memo((), move |_| {
            let on_change: Rc<dyn Fn()> = Rc::new(move || {
                if !*frame_pending.borrow() {
                    *frame_pending.borrow_mut() = true;
                    let frame_pending = frame_pending.clone();
                    let redraw = redraw.clone();
                    on_next_frame(move || {
                        *frame_pending.borrow_mut() = false;
                        redraw.force_update();
                    });
                }
            });
            Rc::new(Informers::new(on_change))
        }))
        .clone()
    };

    use_ticks(redraw.clone());
    {
        let informers = informers.clone();
        use_effect_with((), move |_| move || informers.stop_all());
    }
    Frames {
        informers,
        redraw,
        number,
        follow_up_pending,
    }
}

impl Frames {
    /// The next frame's number.
    pub fn next_number(&self) -> u64 {
        let mut number = self.number.borrow_mut();
        *number += 1;
        *number
    }

    /// This render's frame of the table at `route` (`None` until the
    /// service shows a view): the table's and the delta list's rows in
    /// their scroll windows.
    pub fn read(&self, route: &Route, state: &AppState) -> Option<Frame> {
        let frame = self.informers.frame(&FrameInput {
            route,
            state,
            rows: TABLE_ROWS.rows(state.table_scroll),
            delta_rows: DELTA_ROWS.rows(state.delta_scroll),
            now_unix: now_unix(),
        })?;
        if frame.still_changing && !*self.follow_up_pending.borrow() {
            *self.follow_up_pending.borrow_mut() = true;
            let (follow_up_pending, redraw) = (self.follow_up_pending.clone(), self.redraw.clone());
            after_ms(300, move || {
                *follow_up_pending.borrow_mut() = false;
                redraw.force_update();
            });
        }
        if frame.status.synced && frame.status.state == "watching" {
            // The first synced render of a live table (what the page-open benchmark waits for).
            crate::metrics::table_synced_once();
        }
        Some(frame)
    }
}

/// Ages tick and backoff counts down even when nothing arrives: a render a second.
#[hook]
fn use_ticks(redraw: UseForceUpdateHandle) {
    use_effect_with((), move |_| {
        let alive = Rc::new(Cell::new(true));
        fn tick(alive: Rc<Cell<bool>>, redraw: UseForceUpdateHandle) {
            after_ms(1000, move || {
                if alive.get() {
                    redraw.force_update();
                    tick(alive, redraw);
                }
            });
        }
        tick(alive.clone(), redraw);
        move || alive.set(false)
    });
}
