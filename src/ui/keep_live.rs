//! How many resources the page keeps live, in the settings panel: the number
//! (saved in `localStorage`, applied at once: the least recently shown
//! beyond it stop), and "keep everything live", which starts an informer for
//! every listable resource discovery found, so the timeline shows the whole
//! cluster. Also says how the watches reach the cluster (the channel, or the
//! connection budget without one). Hooks: `[data-testid=kept-capacity]`,
//! `kept-capacity-apply`, `keep-everything`, `kept-capacity-message`.

use yew::prelude::*;

use crate::app::kept_set::parse_capacity;

#[derive(Properties, PartialEq)]
pub struct KeepLiveProps {
    pub capacity: usize,
    pub kept: usize,
    /// Listable resources discovery found (0 until it arrives).
    pub discovered: usize,
    /// How the watches travel, in words (see `channel_words`).
    pub transport: String,
    pub on_capacity: Callback<usize, Result<(), String>>,
    pub on_keep_everything: Callback<()>,
}

#[function_component(KeepLive)]
pub fn keep_live(props: &KeepLiveProps) -> Html {
    let typed = use_state(|| props.capacity.to_string());
    let message = use_state(|| None::<(bool, String)>);
    let on_input = {
        let typed = typed.clone();
        Callback::from(move |event: InputEvent| {
            if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
                typed.set(input.value());
            }
        })
    };
    let onsubmit = {
        let (typed, message, on_capacity) =
            (typed.clone(), message.clone(), props.on_capacity.clone());
        Callback::from(move |event: SubmitEvent| {
            event.prevent_default();
            message.set(Some(match parse_capacity(&typed) {
                Ok(n) => match on_capacity.emit(n) {
                    Ok(()) => (false, format!("Saved: {n} resources kept live at most.")),
                    Err(why) => (true, format!("Applied, but not saved: {why}")),
                },
                Err(hint) => (true, hint),
            }))
        })
    };
    let on_everything = {
        let on_keep_everything = props.on_keep_everything.clone();
        Callback::from(move |_: MouseEvent| on_keep_everything.emit(()))
    };
    html! {
        <section class="keep-live">
            <h2>{ "Resources kept live" }</h2>
            <p class="muted">{ format!(
                "{} of at most {} kept live. {}",
                props.kept, props.capacity, props.transport
            ) }</p>
            <form {onsubmit}>
                <label>{ "keep live at most " }
                    <input type="text" inputmode="numeric" value={(*typed).clone()} oninput={on_input}
                        data-testid="kept-capacity" aria-describedby="kept-capacity-message" />
                </label>
                <button type="submit" data-testid="kept-capacity-apply">{ "Apply" }</button>
                <button type="button" onclick={on_everything} data-testid="keep-everything"
                    disabled={props.discovered == 0}
                    title="Watch every resource the cluster lists, so the timeline shows the whole cluster">
                    { format!("Keep everything live ({} resources)", props.discovered) }
                </button>
            </form>
            if let Some((error, text)) = (*message).clone() {
                <p class={if error { "error" } else { "ok" }} id="kept-capacity-message"
                    data-testid="kept-capacity-message">{ text }</p>
            }
        </section>
    }
}
