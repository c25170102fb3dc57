//! The timeline canvas's pointer gestures: wheel zooms around the pointer,
//! drag pans, shift-drag brushes a range, a click picks a moment. Kept
//! apart from the strip's layout (`super::timeline`) because it is the
//! part with state (the press in progress, the click a drag swallows) and
//! rules (the click slop, dragging right moves back in time); the layout
//! only attaches what [`use_timeline_gestures`] returns.

use std::cell::RefCell;
use std::rc::Rc;

use yew::prelude::*;

use crate::informer::Millis;
use crate::model::timeline::{TimelineData, Viewport};

/// Pointer travel (px) under which a press is a click, not a drag.
const CLICK_SLOP_PX: f64 = 3.0;

/// A press in progress: where it started and the range then.
#[derive(Clone, Copy)]
struct Press {
    x: f64,
    /// Where the press started, as a fraction of the width.
    origin: f64,
    brush: bool,
    moved: bool,
    range: (Millis, Millis),
}

fn fraction_of(canvas: &NodeRef, client_x: i32) -> Option<f64> {
    let element = canvas.cast::<web_sys::Element>()?;
    let rect = element.get_bounding_client_rect();
    Some(((f64::from(client_x) - rect.left()) / rect.width().max(1.0)).clamp(0.0, 1.0))
}

fn width_of(canvas: &NodeRef) -> f64 {
    canvas
        .cast::<web_sys::Element>()
        .map_or(1.0, |e| e.get_bounding_client_rect().width().max(1.0))
}

/// The canvas's handlers, to attach as they are named.
pub struct Gestures {
    pub onwheel: Callback<WheelEvent>,
    pub onpointerdown: Callback<PointerEvent>,
    pub onmousedown: Callback<MouseEvent>,
    pub onmousemove: Callback<MouseEvent>,
    pub onmouseup: Callback<MouseEvent>,
    pub onmouseleave: Callback<MouseEvent>,
    pub onclick: Callback<MouseEvent>,
}

/// What the gestures act on and whom they tell.
pub struct GestureTargets {
    /// The range drawn (the canvas's width spans it).
    pub data: Rc<TimelineData>,
    /// Now, on the same clock as the history.
    pub now: Millis,
    pub on_pick: Callback<Millis>,
    pub on_view: Callback<Viewport>,
    pub on_brush: Callback<Option<(Millis, Millis)>>,
    pub on_brushed: Callback<()>,
}

/// The handlers of the timeline's `canvas`, emitting the targets' callbacks.
#[hook]
pub fn use_timeline_gestures(canvas: &NodeRef, props: &GestureTargets) -> Gestures {
    let press: Rc<RefCell<Option<Press>>> = use_mut_ref(|| None);
    let range = (props.data.start, props.data.end);
    let now = props.now;
    let canvas = canvas.clone();
    let onwheel = on_wheel(&canvas, props.on_view.clone(), range, now);
    let onmousedown = {
        let (canvas, press) = (canvas.clone(), press.clone());
        Callback::from(move |event: MouseEvent| {
            event.prevent_default();
            let x = f64::from(event.client_x());
            if let Some(origin) = fraction_of(&canvas, event.client_x()) {
                *press.borrow_mut() = Some(Press {
                    x,
                    origin,
                    brush: event.shift_key(),
                    moved: false,
                    range,
                });
            }
        })
    };
    let onmousemove = on_move(&canvas, &press, props, now);
    // A press that dragged (pan or brush) swallows the click that follows it.
    let swallow_click = use_mut_ref(|| false);
    let finish = {
        let (press, swallow_click) = (press.clone(), swallow_click.clone());
        let on_brushed = props.on_brushed.clone();
        // On mouseup a click follows; on leaving the canvas none does.
        move |click_follows: bool| {
            let ended = press.borrow_mut().take();
            if let Some(current) = ended {
                *swallow_click.borrow_mut() = click_follows && (current.moved || current.brush);
                if current.brush && current.moved {
                    on_brushed.emit(());
                }
            }
        }
    };
    // While pressed, the pointer's events go to the canvas even off it, so a
    // drag that strays over the legend or the lane names goes on.
    let onpointerdown = {
        let canvas = canvas.clone();
        Callback::from(move |event: PointerEvent| {
            if let Some(element) = canvas.cast::<web_sys::Element>() {
                let _ = element.set_pointer_capture(event.pointer_id());
            }
        })
    };
    let onmouseup = {
        let finish = finish.clone();
        Callback::from(move |_: MouseEvent| finish(true))
    };
    let onmouseleave = Callback::from(move |_: MouseEvent| finish(false));
    let onclick = {
        let (canvas, data, on_pick) = (canvas.clone(), props.data.clone(), props.on_pick.clone());
        Callback::from(move |event: MouseEvent| {
            if std::mem::take(&mut *swallow_click.borrow_mut()) {
                return;
            }
            if let Some(fraction) = fraction_of(&canvas, event.client_x()) {
                on_pick.emit(data.time_at(fraction));
            }
        })
    };
    Gestures {
        onwheel,
        onpointerdown,
        onmousedown,
        onmousemove,
        onmouseup,
        onmouseleave,
        onclick,
    }
}

/// Wheel (and trackpad pinch, a wheel with ctrl held) zooms around the pointer.
fn on_wheel(
    canvas: &NodeRef,
    on_view: Callback<Viewport>,
    range: (Millis, Millis),
    now: Millis,
) -> Callback<WheelEvent> {
    let canvas = canvas.clone();
    Callback::from(move |event: WheelEvent| {
        event.prevent_default();
        let Some(anchor) = fraction_of(&canvas, event.client_x()) else {
            return;
        };
        let factor = (event.delta_y() * 0.002).exp();
        on_view.emit(Viewport::zoomed(range, factor, anchor, now));
    })
}

/// A press that moved past the slop pans (dragging right moves back in
/// time) or, with shift, brushes the range between its origin and here.
fn on_move(
    canvas: &NodeRef,
    press: &Rc<RefCell<Option<Press>>>,
    props: &GestureTargets,
    now: Millis,
) -> Callback<MouseEvent> {
    let (canvas, press) = (canvas.clone(), press.clone());
    let (on_view, on_brush) = (props.on_view.clone(), props.on_brush.clone());
    Callback::from(move |event: MouseEvent| {
        let Some(mut current) = *press.borrow() else {
            return;
        };
        let x = f64::from(event.client_x());
        if !current.moved && (x - current.x).abs() < CLICK_SLOP_PX {
            return;
        }
        current.moved = true;
        *press.borrow_mut() = Some(current);
        let (start, end) = current.range;
        if current.brush {
            let Some(here) = fraction_of(&canvas, event.client_x()) else {
                return;
            };
            let at = |fraction: f64| start + ((end - start) as f64 * fraction) as Millis;
            let (from, to) = (at(here.min(current.origin)), at(here.max(current.origin)));
            on_brush.emit(Some((from, to.max(from + 1))));
        } else {
            let fraction = -(x - current.x) / width_of(&canvas);
            on_view.emit(Viewport::panned(current.range, fraction, now));
        }
    })
}
