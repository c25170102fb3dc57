//! The resources the page keeps live, as a row of chips above the timeline:
//! each names a kept informer (a link back to its view) with its state, and
//! a × stops it (its watch is aborted, its lane and history go). The one the
//! table shows cannot be stopped from here. Hooks: `[data-testid=kept-resources]`
//! with `data-count` and `data-capacity`, one `[data-testid=kept-resource]`
//! per informer with `data-resource` (its lane name), `data-state` and
//! `data-shown`, and its `[data-testid=stop-kept]` button.

use std::rc::Rc;

use yew::prelude::*;

pub use crate::model::kept_summary::KeptItem;

#[derive(Properties, PartialEq)]
pub struct KeptListProps {
    pub items: Rc<Vec<KeptItem>>,
    pub capacity: usize,
    pub on_stop: Callback<u64>,
}

#[function_component(KeptList)]
pub fn kept_list(props: &KeptListProps) -> Html {
    html! {
        <div class="kept" data-testid="kept-resources" data-count={props.items.len().to_string()}
            data-capacity={props.capacity.to_string()}
            title={format!("Resources opened in this page keep their watch and history (the {} most recent); the timeline draws a lane for each", props.capacity)}>
            <span class="muted">{ "kept live:" }</span>
            { for props.items.iter().map(|item| {
                let on_stop = {
                    let (on_stop, id) = (props.on_stop.clone(), item.id);
                    Callback::from(move |_: MouseEvent| on_stop.emit(id))
                };
                let stop_title = if item.shown {
                    "The table shows this resource; open another to stop it".to_string()
                } else {
                    format!("Stop watching {} and drop its history", item.label)
                };
                html! {
                    <span class={classes!("kept-chip", format!("state-{}", item.state), item.shown.then_some("shown"))}
                        data-testid="kept-resource" data-resource={item.label.clone()}
                        data-state={item.state.clone()} data-shown={item.shown.to_string()}
                        title={chip_title(item)}>
                        <a href={item.href.clone()} aria-current={item.shown.then_some("page")}>{ &item.label }</a>
                        <button class="stop" data-testid="stop-kept" onclick={on_stop} disabled={item.shown}
                            aria-label={format!("stop watching {}", item.label)} title={stop_title}>{ "×" }</button>
                    </span>
                }
            }) }
        </div>
    }
}

fn chip_title(item: &KeptItem) -> String {
    if item.state == "paused" {
        format!(
            "{}: paused: the browser's connection limit (serve offers no channel, so only a few \
             watches get a connection; open it to resume from where it stopped). {} deltas held",
            item.label, item.held
        )
    } else {
        format!("{}: {}, {} deltas held", item.label, item.state, item.held)
    }
}
