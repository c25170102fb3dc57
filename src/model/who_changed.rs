//! Who changed an object, as the object view and the story say it: the
//! field managers of one update with the fields each of them changed —
//! "kube-controller-manager (Update, status) changed .status.readyReplicas
//! 3 → 4" — read exactly from `managedFields` by the informer core's
//! `field_managers::attribute`. Fields no manager of the update claims are
//! counted as unattributed, never guessed.

use serde_json::Value;

use crate::informer::field_managers::{attribute, FieldChange, ManagerChange};

/// The longest value text shown in a line (longer ones are cut with `…`).
const VALUE_CHARS: usize = 60;

/// Who made one update, ready to show.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WhoChanged {
    /// The field managers that wrote the update, in the object's order.
    pub managers: Vec<String>,
    /// One line per attributed field.
    pub lines: Vec<String>,
    /// Changed fields no manager of the update claims.
    pub unattributed: usize,
}

impl WhoChanged {
    /// `data-managers`: the managers, comma-separated.
    pub fn managers_attr(&self) -> String {
        self.managers.join(",")
    }

    /// One line: who, and the first field they changed.
    pub fn summary(&self) -> String {
        let fields = self.lines.len() + self.unattributed;
        match (self.lines.first(), fields) {
            (Some(first), 1) => first.clone(),
            (Some(first), n) => format!("{first} (+{} more)", n - 1),
            (None, 0) => "no field changed".to_string(),
            (None, n) => format!("{n} fields changed, by no manager that says so"),
        }
    }
}

/// Who made the update `old` → `new`. An object whose `managedFields`
/// cannot be read has no managers (and says so in `lines`).
pub fn who_changed(old: &Value, new: &Value) -> WhoChanged {
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
            unattributed: attribution.unattributed.len(),
        },
        Err(error) => WhoChanged {
            managers: Vec::new(),
            lines: vec![format!("managedFields unreadable: {error}")],
            unattributed: 0,
        },
    }
}

fn line(manager: &ManagerChange, change: &FieldChange) -> String {
    let how = match manager.subresource.as_str() {
        "" => manager.operation.clone(),
        sub => format!("{}, {sub}", manager.operation),
    };
    let change_text = match (&change.old, &change.new) {
        (Some(old), Some(new)) => format!("{} → {}", short(old), short(new)),
        (None, Some(new)) => format!("set to {}", short(new)),
        (Some(old), None) => format!("removed (was {})", short(old)),
        (None, None) => String::new(),
    };
    format!(
        "{} ({how}) changed {} {change_text}",
        manager.manager, change.path
    )
    .trim_end()
    .to_string()
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= VALUE_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(VALUE_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let who = who_changed(&old, &new);
        assert_eq!(who.managers, ["ops-cli"]);
        assert_eq!(who.lines, ["ops-cli (Update) changed .spec.replicas 3 → 5"]);
        assert_eq!(who.unattributed, 0);
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
        let who = who_changed(&old, &new);
        assert!(who.managers.is_empty());
        assert_eq!(who.unattributed, 1);
        assert_eq!(who.managers_attr(), "");
        assert!(who.summary().contains("by no manager"), "{}", who.summary());
    }

    #[test]
    fn long_values_are_cut() {
        let long = Value::String("x".repeat(200));
        assert_eq!(short(&long).chars().count(), VALUE_CHARS);
        assert!(short(&long).ends_with('…'));
    }
}
