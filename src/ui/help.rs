//! The `?` help: every key the page answers to (`KeyAction` in the app),
//! and the mouse gestures of the table.

use yew::prelude::*;

const KEYS: &[(&str, &str)] = &[
    (
        ":",
        "command: :pods, :deploy, :rs, :svc, :cm, :secrets, :nodes, :events, :ns NAME, :ns (all)",
    ),
    ("/", "filter the rows by text (key or any cell)"),
    ("j  k  ↓  ↑", "move the selection"),
    ("PageDown  PageUp", "move the selection 20 rows down / up"),
    ("g  G  Home  End", "first / last row"),
    (
        "Enter",
        "open the selected object (YAML, JSON, its history)",
    ),
    (
        "Esc",
        "back: close the object, the help, the command bar, or clear the filter",
    ),
    (
        "l",
        "logs of the selected pod, or of every pod of the selected workload",
    ),
    ("?", "this help"),
];

#[function_component(HelpOverlay)]
pub fn help_overlay() -> Html {
    html! {
        <aside class="help" role="dialog" aria-label="keyboard shortcuts" data-testid="help">
            <h2>{ "Keys" }</h2>
            <dl>{ for KEYS.iter().map(|(k, what)| html! { <><dt><kbd>{ *k }</kbd></dt><dd>{ *what }</dd></> }) }</dl>
            <p class="muted">{ "Click a column header to sort; double-click a row to open it. On the timeline: wheel zooms, drag pans, shift-drag selects a range, a click shows the table as it was then." }</p>
        </aside>
    }
}
