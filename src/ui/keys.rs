//! Keys follow k9s: `:` command, `/` filter, `j`/`k` move, Enter open,
//! Esc back, `?` help, `l` the selected pod's logs. One document listener for the app's lifetime
//! ([`use_keys`]) calls whatever handler the latest render installed
//! ([`Keys`]): the table's, which acts on that render's rows, or the logs
//! view's, where Esc only leaves the search or goes back.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::context::StateContext;
use super::dom::{close_object, open_object, query};
use super::table::scroll_row_into_view;
use crate::address::log_route::LogRoute;
use crate::address::object_route::ObjectRoute;
use crate::address::route::Route;
use crate::app::state::Action;
use crate::service::Frame;

/// What a key press does, decided with this render's state.
#[derive(Clone, Copy)]
pub enum KeyAction {
    FocusFilter,
    OpenCommand,
    Move(isize),
    Top,
    Bottom,
    Open,
    Back,
    Help,
    Logs,
}

pub fn key_action(key: &str) -> Option<KeyAction> {
    Some(match key {
        "/" => KeyAction::FocusFilter,
        ":" => KeyAction::OpenCommand,
        "j" | "ArrowDown" => KeyAction::Move(1),
        "k" | "ArrowUp" => KeyAction::Move(-1),
        "PageDown" => KeyAction::Move(20),
        "PageUp" => KeyAction::Move(-20),
        "g" | "Home" => KeyAction::Top,
        "G" | "End" => KeyAction::Bottom,
        "Enter" => KeyAction::Open,
        "Escape" => KeyAction::Back,
        "?" => KeyAction::Help,
        "l" => KeyAction::Logs,
        _ => return None,
    })
}

/// Listens for keys on the document while the app lives; inputs keep their
/// keys except Escape. Returns the slot each render puts its handler in.
#[hook]
pub fn use_keys() -> Keys {
    let key_handler: Rc<RefCell<Option<Callback<KeyAction>>>> = use_mut_ref(|| None);
    {
        let key_handler = key_handler.clone();
        use_effect_with((), move |_| {
            let listener = Closure::<dyn Fn(web_sys::KeyboardEvent)>::new(
                move |event: web_sys::KeyboardEvent| {
                    if event.ctrl_key() || event.meta_key() || event.alt_key() {
                        return;
                    }
                    let in_input = event
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .is_some_and(|e| {
                            matches!(e.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA")
                        });
                    let key = event.key();
                    if in_input && key != "Escape" {
                        return;
                    }
                    let (Some(action), Some(handler)) =
                        (key_action(&key), key_handler.borrow().clone())
                    else {
                        return;
                    };
                    event.prevent_default();
                    handler.emit(action);
                },
            );
            let document = web_sys::window().and_then(|w| w.document());
            if let Some(document) = &document {
                let _ = document
                    .add_event_listener_with_callback("keydown", listener.as_ref().unchecked_ref());
            }
            move || {
                if let Some(document) = document {
                    let _ = document.remove_event_listener_with_callback(
                        "keydown",
                        listener.as_ref().unchecked_ref(),
                    );
                }
            }
        });
    }
    Keys(key_handler)
}

/// The slot for the handler of the keys (see [`use_keys`]).
pub struct Keys(Rc<RefCell<Option<Callback<KeyAction>>>>);

impl Keys {
    /// The keys do nothing (the address names no view).
    pub fn off(&self) {
        *self.0.borrow_mut() = None;
    }

    /// The logs view: Esc leaves a field (the search), else goes back to
    /// where the logs were opened from.
    pub fn logs(&self) {
        *self.0.borrow_mut() = Some(Callback::from(|action: KeyAction| {
            if !matches!(action, KeyAction::Back) {
                return;
            }
            let window = web_sys::window();
            let field = window
                .as_ref()
                .and_then(|w| w.document())
                .and_then(|d| d.active_element())
                .filter(|e| matches!(e.tag_name().as_str(), "INPUT" | "SELECT"))
                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
            match field {
                Some(field) => {
                    let _ = field.blur();
                }
                None => {
                    if let Some(history) = window.and_then(|w| w.history().ok()) {
                        let _ = history.back();
                    }
                }
            }
        }));
    }

    /// The table at `route`: what the keys do with this render's rows.
    pub fn table(&self, state: &StateContext, frame: &Frame, route: &Route) {
        *self.0.borrow_mut() = Some(table_keys(state, frame, route));
    }
}

/// What the keys do with this render's rows of the table at `route`.
fn table_keys(state: &StateContext, frame: &Frame, route: &Route) -> Callback<KeyAction> {
    let state = state.clone();
    let route = route.clone();
    let (total, selected) = (frame.total, frame.selected);
    let selected_key = frame.selected_key.clone();
    Callback::from(move |action: KeyAction| {
        let last = total.saturating_sub(1);
        let move_to = |index: usize| {
            state.dispatch(Action::Select(index));
            scroll_row_into_view(index);
        };
        match action {
            KeyAction::FocusFilter => {
                if let Some(input) = query("[data-testid=text-filter]") {
                    let _ = input.focus();
                }
            }
            KeyAction::OpenCommand => state.dispatch(Action::ToggleCommand(true)),
            KeyAction::Move(delta) => move_to(selected.saturating_add_signed(delta).min(last)),
            KeyAction::Top => move_to(0),
            KeyAction::Bottom => move_to(last),
            KeyAction::Open => {
                if let Some(key) = &selected_key {
                    open_object(&ObjectRoute::in_table(&route, key));
                }
            }
            KeyAction::Help => state.dispatch(Action::ToggleHelp),
            KeyAction::Logs => {
                if let Some(logs) = selected_key
                    .as_deref()
                    .and_then(|key| LogRoute::of_key(&route, key))
                {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().set_hash(&logs.to_string());
                    }
                }
            }
            KeyAction::Back => {
                if let Some(element) = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = element.blur();
                }
                let ui = &state.0;
                let innermost_is_object = ui.open_object.is_some()
                    && !(ui.command_open || ui.help_open || ui.settings_open);
                if innermost_is_object {
                    close_object(&route);
                } else {
                    state.dispatch(Action::Back);
                }
            }
        }
    })
}
