//! The app state in a yew context: [`StateContext`] wraps the reducer over
//! [`AppState`] (its transitions are in `crate::app::state`, tested
//! natively); [`ServiceContext`] hands the informers service and the frame
//! it read to the views. A view reads both with `use_context` and changes
//! things only by dispatching an [`Action`] or calling a service command.

use std::rc::Rc;

use yew::prelude::*;

use crate::app::state::{Action, AppState};
use crate::service::{Frame, Informers};

/// [`AppState`] as a yew reducer.
#[derive(Default, PartialEq)]
pub struct StateCell(pub AppState);

impl Reducible for StateCell {
    type Action = Action;

    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        let next = self.0.clone().reduce(action);
        if next == self.0 {
            self
        } else {
            Rc::new(StateCell(next))
        }
    }
}

pub type StateContext = UseReducerHandle<StateCell>;

/// The informers service and this render's frame (a new frame number makes
/// every reader render again).
#[derive(Clone)]
pub struct ServiceContext {
    pub informers: Rc<Informers>,
    pub frame: Rc<Frame>,
    pub number: u64,
}

impl PartialEq for ServiceContext {
    fn eq(&self, other: &Self) -> bool {
        self.number == other.number && Rc::ptr_eq(&self.informers, &other.informers)
    }
}

/// A callback that dispatches `make(value)`.
pub fn dispatcher<T: 'static>(state: &StateContext, make: fn(T) -> Action) -> Callback<T> {
    let state = state.clone();
    Callback::from(move |value| state.dispatch(make(value)))
}

/// A callback that runs `command` on the informers service.
pub fn command<T: 'static, R: 'static>(
    informers: &Rc<Informers>,
    command: impl Fn(&Informers, T) -> R + 'static,
) -> Callback<T, R> {
    let informers = informers.clone();
    Callback::from(move |value| command(&informers, value))
}
