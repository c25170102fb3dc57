//! Keys follow k9s: `:` command, `/` filter, `j`/`k` move, Enter open,
//! Esc back, `?` help, `l` the selected pod's logs. One document listener for the app's lifetime
//! ([`use_keys`]) calls whatever handler the latest render installed.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use yew::prelude::*;

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
pub fn use_keys() -> Rc<RefCell<Option<Callback<KeyAction>>>> {
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
    key_handler
}
