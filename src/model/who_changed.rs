//! Who changed an object, as the object view and the story say it: the
//! field managers of one update with the fields each of them changed —
//! "kube-controller-manager (Update, status) changed .status.readyReplicas
//! 3 → 4" — read exactly from `managedFields` by the informer core's
//! `field_managers::attribute`. Fields no manager of the update claims are
//! counted as unattributed, never guessed. It reads the two versions as
//! the history holds them (compact documents), converting nothing.

use serde_json::Value;

use crate::informer::field_managers::{attribute, FieldChange, ManagerChange};
use crate::informer::json::JsonRef;

/// The longest value text shown in a line (longer ones are cut with `…`).
const VALUE_CHARS: usize = 60;

/// Who made one update, ready to show.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WhoChanged {
    /// The field managers that wrote the update, in the object's order.
    pub managers: Vec<String>,
    /// One line per attributed field.
    pub lines: Vec<String>,
    /// The changed fields no manager of the update claims, by path
    /// (`.metadata.generation`: the API server's, nobody's field).
    pub unattributed: Vec<String>,
}

/// How many unclaimed fields a line names before it counts the rest.
const NAMED_UNCLAIMED: usize = 3;

impl WhoChanged {
    /// `data-managers`: the managers, comma-separated.
    pub fn managers_attr(&self) -> String {
        self.managers.join(",")
    }

    /// One line: who, and the first field they changed.
    pub fn summary(&self) -> String {
        let fields = self.lines.len() + self.unattributed.len();
        match (self.lines.first(), self.unattributed.as_slice(), fields) {
            (Some(first), _, 1) => first.clone(),
            (Some(first), _, n) => format!("{first} (+{} more)", n - 1),
            (None, _, 0) => "no field changed".to_string(),
            (None, [only], _) => format!("{only} changed, by no manager that says so"),
            (None, _, n) => format!("{n} fields changed, by no manager that says so"),
        }
    }

    /// `.metadata.generation changed, claimed by no manager of this update`:
    /// the fields nobody claims, the first few by path.
    pub fn unattributed_line(&self) -> Option<String> {
        let (named, rest) = self
            .unattributed
            .split_at(self.unattributed.len().min(NAMED_UNCLAIMED));
        let list = match rest.len() {
            0 => named.join(", "),
            n => format!("{} and {n} more", named.join(", ")),
        };
        (!named.is_empty()).then(|| format!("{list} changed, claimed by no manager of this update"))
    }
}

/// Who made the update `old` → `new`. An object whose `managedFields`
/// cannot be read has no managers (and says so in `lines`).
pub fn who_changed(old: JsonRef<'_>, new: JsonRef<'_>) -> WhoChanged {
    match attribute(old, new) {
        Ok(attribution) => WhoChanged {
            managers: attribution
                .managers
                .iter()
                .map(|m| m.manager.clone())
                .collect(),
            lines: attribution
                .managers
                .iter()
                .flat_map(|m| m.changes.iter().map(move |c| line(m, c)))
                .collect(),
            unattributed: attribution
                .unattributed
                .into_iter()
                .map(|change| change.path)
                .collect(),
        },
        Err(error) => WhoChanged {
            managers: Vec::new(),
            lines: vec![format!("managedFields unreadable: {error}")],
            unattributed: Vec::new(),
        },
    }
}

/// `ops-cli (Update, status) changed .spec.replicas 3 → 5`, written into
/// one string (a history's first read makes one for each changed field).
fn line(manager: &ManagerChange, change: &FieldChange) -> String {
    let mut out = String::with_capacity(96);
    out.push_str(&manager.manager);
    out.push_str(" (");
    out.push_str(&manager.operation);
    if !manager.subresource.is_empty() {
        out.push_str(", ");
        out.push_str(&manager.subresource);
    }
    out.push_str(") changed ");
    out.push_str(&change.path);
    match (&change.old, &change.new) {
        (Some(old), Some(new)) => {
            out.push(' ');
            push_short(&mut out, old);
            out.push_str(" → ");
            push_short(&mut out, new);
        }
        (None, Some(new)) => {
            out.push_str(" set to ");
            push_short(&mut out, new);
        }
        (Some(old), None) => {
            out.push_str(" removed (was ");
            push_short(&mut out, old);
            out.push(')');
        }
        (None, None) => {}
    }
    out
}

/// Appends `value` as JSON, cut with `…` past [`VALUE_CHARS`] characters.
fn push_short(out: &mut String, value: &Value) {
    use std::fmt::Write;
    let start = out.len();
    // Writing into a String cannot fail.
    let _ = write!(out, "{value}");
    let mut chars = out[start..].char_indices();
    if let Some((cut_at, _)) = chars.nth(VALUE_CHARS - 1) {
        if chars.next().is_some() {
            out.truncate(start + cut_at);
            out.push('…');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::json::JsonValue;
    use serde_json::json;

    /// [`who_changed`] of two versions written as `serde_json` values.
    fn who_changed_values(old: &Value, new: &Value) -> WhoChanged {
        who_changed(JsonValue::from(old).root(), JsonValue::from(new).root())
    }

    fn deployment(replicas: u64, managers: Value) -> Value {
        json!({"metadata": {"name": "web", "managedFields": managers}, "spec": {"replicas": replicas}})
    }

    #[test]
    fn an_update_names_the_manager_and_the_field_it_changed() {
        let entry = |time: &str| {
            json!([{"manager": "ops-cli", "operation": "Update", "apiVersion": "apps/v1",
                    "time": time, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:replicas": {}}}}])
        };
        let old = deployment(3, entry("2026-01-01T00:00:00Z"));
        let new = deployment(5, entry("2026-01-01T00:01:00Z"));
        let who = who_changed_values(&old, &new);
        assert_eq!(who.managers, ["ops-cli"]);
        assert_eq!(who.lines, ["ops-cli (Update) changed .spec.replicas 3 → 5"]);
        assert!(who.unattributed.is_empty());
        assert_eq!(who.unattributed_line(), None);
        assert_eq!(who.managers_attr(), "ops-cli");
        assert_eq!(
            who.summary(),
            "ops-cli (Update) changed .spec.replicas 3 → 5"
        );
    }

    #[test]
    fn a_field_no_manager_claims_is_counted_not_guessed() {
        let old = deployment(3, json!([]));
        let new = deployment(4, json!([]));
        let who = who_changed_values(&old, &new);
        assert!(who.managers.is_empty());
        assert_eq!(who.unattributed, [".spec.replicas"]);
        assert_eq!(who.managers_attr(), "");
        assert_eq!(
            who.summary(),
            ".spec.replicas changed, by no manager that says so"
        );
        assert_eq!(
            who.unattributed_line().as_deref(),
            Some(".spec.replicas changed, claimed by no manager of this update")
        );
        let many = WhoChanged {
            unattributed: [".a", ".b", ".c", ".d", ".e"].map(String::from).to_vec(),
            ..WhoChanged::default()
        };
        assert_eq!(
            many.summary(),
            "5 fields changed, by no manager that says so"
        );
        assert_eq!(
            many.unattributed_line().as_deref(),
            Some(".a, .b, .c and 2 more changed, claimed by no manager of this update")
        );
    }

    #[test]
    fn long_values_are_cut() {
        let short = |value: &Value| {
            let mut out = String::new();
            push_short(&mut out, value);
            out
        };
        let long = Value::String("é".repeat(200));
        assert_eq!(short(&long).chars().count(), VALUE_CHARS);
        assert!(short(&long).ends_with('…'));
        let fits = Value::String("é".repeat(VALUE_CHARS - 2)); // and its two quotes
        assert_eq!(short(&fits), fits.to_string());
        let one_more = Value::String("é".repeat(VALUE_CHARS - 1));
        assert_eq!(short(&one_more).chars().count(), VALUE_CHARS);
        assert!(short(&one_more).ends_with("é…"));
    }
}
