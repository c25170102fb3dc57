//! The object view's story tabs: its events (expired ones still listed,
//! marked), the objects related to it as links to their own object views,
//! "this object and everything it owns" as one history with who made each
//! change, and the who-changed lines of one version. What they show is
//! computed in `crate::model::object_story`; these only lay it out.

use yew::prelude::*;

use crate::model::object_related::RelatedLink;
use crate::model::object_story::{EventRow, StoryRow};
use crate::model::object_versions::VersionSource;
use crate::model::who_changed::WhoChanged;

/// The object's events, newest first.
pub fn events_list(events: &[EventRow], events_kept: bool, events_synced: bool) -> Html {
    html! {
        <div class="object-events" data-testid="object-events" data-count={events.len().to_string()}>
            if events.is_empty() {
                <p class="muted" data-testid="object-events-empty" data-loading={(events_kept && !events_synced).to_string()}>{
                    match (events_kept, events_synced) {
                        (true, true) => "No events about this object (none in the cluster, none seen since the page opened).",
                        (true, false) => "Reading the cluster's events…",
                        (false, _) => "Events are not watched for a recording.",
                    }
                }</p>
            }
            <table class="events">
                if !events.is_empty() {
                    <thead><tr>
                        <th>{ "type" }</th><th>{ "reason" }</th><th>{ "message" }</th>
                        <th>{ "count" }</th><th>{ "first seen" }</th><th>{ "last seen" }</th><th>{ "from" }</th>
                    </tr></thead>
                }
                <tbody>
                { for events.iter().map(|row| {
                    let e = &row.event;
                    html! {
                        <tr data-testid="object-event" data-type={e.event_type.clone()} data-reason={e.reason.clone()}
                            data-expired={row.expired.to_string()}
                            data-source={if row.recorded { "recorder" } else { "page" }}
                            class={classes!("event", e.is_warning().then_some("warning"), row.expired.then_some("expired"))}>
                            <td class="type">{ &e.event_type }</td>
                            <td class="reason">{ &e.reason }</td>
                            <td class="message">{ &e.message }
                                if row.expired {
                                    <span class="badge" title="The cluster deleted this event (its TTL passed); deltascope kept it.">
                                        { " expired from the cluster" }
                                    </span>
                                }
                            </td>
                            <td class="count">{ e.count }</td>
                            <td class="when">{ &row.first_seen }</td>
                            <td class="when">{ &row.last_seen }</td>
                            <td class="reporter">{ &e.reporter }</td>
                        </tr>
                    }
                }) }
                </tbody>
            </table>
        </div>
    }
}

/// The related objects, grouped by how they relate.
pub fn related_list(links: &[RelatedLink]) -> Html {
    if links.is_empty() {
        return html! {
            <p class="muted" data-testid="related-none">
                { "No related objects among the resources the page keeps (owners, owned objects, node, services and volumes show here once their resources are kept)." }
            </p>
        };
    }
    html! {
        <ul class="related">
            { for links.iter().map(|link| {
                let label = format!("{} {}", link.kind, link.key);
                html! {
                    <li class="related-item" data-relation={link.relation}>
                        <span class="relation">{ link.relation }</span>
                        {
                            match &link.href {
                                Some(href) => html! {
                                    <a data-testid="related-link" href={href.clone()} data-resource={link.resource.clone()}
                                        data-key={link.key.clone()}>{ label }</a>
                                },
                                None => html! { <span>{ label }</span> },
                            }
                        }
                        if !link.held {
                            <span class="muted" title="Its resource is not kept live, so the page has not seen it">{ " (not kept)" }</span>
                        }
                    </li>
                }
            }) }
        </ul>
    }
}

/// This object and everything it owns, with their events, newest first.
/// `family`: serve's record of what the object owns, as read (its state
/// and why it failed).
pub fn story_list(rows: &[StoryRow], family: Option<&(&'static str, Option<String>)>) -> Html {
    let family_state = family.map(|(state, _)| *state);
    let family_words = family.and_then(|(_, words)| words.clone());
    html! {
        <div class="story" data-testid="object-story" data-count={rows.len().to_string()}
            data-family={family_state}>
            if let Some(words) = family_words {
                <p class="muted" data-testid="story-family-note">{ words }</p>
            }
            if rows.is_empty() {
                <p class="muted">{ "Nothing held yet." }</p>
            }
            <ol class="story-rows">
                { for rows.iter().map(|row| html! {
                    <li data-testid="story-row" data-resource={row.resource.clone()} data-key={row.key.clone()}
                        data-what={row.what.clone()} data-managers={row.who.managers_attr()}
                        data-expired={row.expired.to_string()} data-source={row.source.as_str()}
                        class={classes!("story-row", format!("what-{}", row.what.to_ascii_lowercase()))}>
                        <span class="when">{ &row.when }</span>
                        <span class="what">{ &row.what }</span>
                        <span class="subject">{ format!("{} {}", row.kind, row.key) }</span>
                        <span class="summary">{ &row.summary }</span>
                        if row.expired {
                            <span class="badge">{ "expired from the cluster" }</span>
                        }
                        if row.source == VersionSource::Recorder {
                            <span class="badge recorded">{ "recorded by serve" }</span>
                        }
                    </li>
                }) }
            </ol>
        </div>
    }
}

/// Who made one version: the managers and the fields each changed.
pub fn who_lines(who: &WhoChanged) -> Html {
    let unclaimed = who.unattributed_line();
    if who.managers.is_empty() && who.lines.is_empty() && unclaimed.is_none() {
        return html! {};
    }
    html! {
        <div class="who">
            if !who.managers.is_empty() {
                <span class="by">{ format!("by {}", who.managers.join(", ")) }</span>
            }
            <ul class="who-lines">
                { for who.lines.iter().map(|line| html! { <li>{ line }</li> }) }
                if let Some(unclaimed) = unclaimed {
                    <li class="muted" data-testid="who-unclaimed">{ unclaimed }</li>
                }
            </ul>
        </div>
    }
}
