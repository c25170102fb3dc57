//! The settings panel: history retention per kept resource — the most
//! deltas and the most MiB of history each may hold — validated as typed
//! (`crate::app::retention`), saved in `localStorage`, applied at once to every
//! live informer (lower limits evict now). It also shows what each kept
//! resource holds and how many deltas retention has evicted from it.
//! Hooks: `[data-testid=settings-panel]`, inputs `retention-max-deltas` and
//! `retention-max-mb`, `retention-apply`, `settings-error` (a bad input, in
//! words), `settings-saved`, and one `[data-testid=retention-usage]` row per
//! kept resource with `data-resource`, `data-held`, `data-bytes`, `data-dropped`.

use std::rc::Rc;

use yew::prelude::*;

use crate::app::retention::{parse, to_inputs, total_bound, MAX_MIB, MIN_DELTAS, MIN_MIB};
use crate::informer::HistoryConfig;
use crate::model::decimal::{fixed, short};
pub use crate::model::kept_summary::Usage;

#[derive(Properties, PartialEq)]
pub struct SettingsProps {
    pub current: HistoryConfig,
    pub usage: Rc<Vec<Usage>>,
    /// Resources kept live at most (for the page-wide bound).
    pub capacity: usize,
    /// Accepted limits; `Err` when they apply but could not be saved.
    pub on_apply: Callback<HistoryConfig, Result<(), String>>,
    pub on_close: Callback<()>,
    /// More sections (how many resources are kept live).
    #[prop_or_default]
    pub children: Html,
}

#[function_component(Settings)]
pub fn settings(props: &SettingsProps) -> Html {
    let typed = use_state(|| to_inputs(&props.current));
    // (is an error, message)
    let message = use_state(|| None::<(bool, String)>);
    let on_deltas = {
        let typed = typed.clone();
        Callback::from(move |event: InputEvent| {
            if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
                typed.set((input.value(), typed.1.clone()));
            }
        })
    };
    let on_mib = {
        let typed = typed.clone();
        Callback::from(move |event: InputEvent| {
            if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
                typed.set((typed.0.clone(), input.value()));
            }
        })
    };
    let apply = {
        let (typed, message, on_apply) = (typed.clone(), message.clone(), props.on_apply.clone());
        move || match parse(&typed.0, &typed.1) {
            Ok(config) => {
                let (deltas, mib) = to_inputs(&config);
                let saved = on_apply.emit(config);
                typed.set((deltas.clone(), mib.clone()));
                message.set(Some(match saved {
                    Ok(()) => (
                        false,
                        format!(
                            "Saved: at most {deltas} deltas and {mib} MiB of history per resource."
                        ),
                    ),
                    Err(why) => (true, format!("Applied, but not saved: {why}")),
                }));
            }
            Err(error) => message.set(Some((true, error.to_string()))),
        }
    };
    let onsubmit = {
        let apply = apply.clone();
        Callback::from(move |event: SubmitEvent| {
            event.prevent_default();
            apply();
        })
    };
    let on_defaults = {
        let typed = typed.clone();
        Callback::from(move |_: MouseEvent| typed.set(to_inputs(&HistoryConfig::default())))
    };
    let on_close = {
        let on_close = props.on_close.clone();
        Callback::from(move |_: MouseEvent| on_close.emit(()))
    };
    let mib = |bytes: usize| fixed(bytes as f64 / (1024.0 * 1024.0), 1).to_string();
    html! {
        <aside class="settings" role="dialog" aria-label="settings" data-testid="settings-panel">
            <h2>{ "History retention" }</h2>
            <p class="muted">{ total_bound(&props.current, props.capacity) }</p>
            <form {onsubmit}>
                <label>{ "max deltas per resource " }
                    <input type="text" inputmode="numeric" value={typed.0.clone()} oninput={on_deltas}
                        data-testid="retention-max-deltas" aria-describedby="retention-message"
                        placeholder={format!("at least {MIN_DELTAS}")} />
                </label>
                <label>{ "max MiB per resource " }
                    <input type="text" inputmode="decimal" value={typed.1.clone()} oninput={on_mib}
                        data-testid="retention-max-mb" aria-describedby="retention-message"
                        placeholder={format!("{} to {}", short(MIN_MIB), short(MAX_MIB))} />
                </label>
                <button type="submit" data-testid="retention-apply">{ "Apply" }</button>
                <button type="button" onclick={on_defaults} data-testid="retention-defaults"
                    title="Fill in the defaults (50000 deltas, 64 MiB); Apply to use them">{ "Defaults" }</button>
            </form>
            if let Some((error, text)) = (*message).clone() {
                if error {
                    <p class="error" role="alert" id="retention-message" data-testid="settings-error">{ text }</p>
                } else {
                    <p class="ok" role="status" id="retention-message" data-testid="settings-saved">{ text }</p>
                }
            }
            <table class="usage">
                <thead><tr><th>{ "resource" }</th><th>{ "deltas held" }</th><th>{ "MiB" }</th><th>{ "evicted" }</th></tr></thead>
                <tbody>
                    { for props.usage.iter().map(|u| html! {
                        <tr data-testid="retention-usage" data-resource={u.label.clone()} data-held={u.held.to_string()}
                            data-bytes={u.bytes.to_string()} data-dropped={u.dropped.to_string()}>
                            <td>{ &u.label }</td>
                            <td>{ format!("{} of {} seen", u.held, u.recorded) }</td>
                            <td>{ mib(u.bytes) }</td>
                            <td>{ u.dropped }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
            { props.children.clone() }
            <button onclick={on_close} data-testid="settings-close">{ "Close" }</button>
        </aside>
    }
}
