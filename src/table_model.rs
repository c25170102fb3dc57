//! What a resource table shows, independent of the DOM: the columns derived
//! from an object when the server gives plain lists, ages as kubectl prints
//! them, and the sorted list of row keys kept up to date change by change
//! (so a frame costs O(changes · log n), not O(n)).

// objects are held as the informer's compact JSON, read with the same API
use crate::informer::JsonValue as Value;

/// How a column's cells compare when the user sorts by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKind {
    /// Byte order of the cell text, with digit runs compared as numbers.
    Natural,
    /// By `metadata.creationTimestamp`, youngest first (what "sort by AGE" means).
    Age,
}

/// Where a column's cells come from.
#[derive(Clone)]
pub enum CellSource {
    /// Computed by this crate (the columns kubectl prints for built-in kinds).
    Builtin(fn(&Value, i64) -> String),
    /// A CRD's `additionalPrinterColumns` entry, evaluated on each object.
    Printer(crate::printer_columns::PrinterColumn),
}

/// One column: a header, how to read its cell from an object, how it sorts.
#[derive(Clone)]
pub struct Column {
    pub title: std::borrow::Cow<'static, str>,
    pub source: CellSource,
    pub sort: SortKind,
}

impl Column {
    /// The text of this column's cell for `value` (`now_unix` for ages).
    pub fn cell(&self, value: &Value, now_unix: i64) -> String {
        match &self.source {
            CellSource::Builtin(cell) => cell(value, now_unix),
            CellSource::Printer(column) => column.cell(value, now_unix),
        }
    }
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        self.title == other.title
    }
}

fn text(value: &Value, pointer: &str) -> String {
    match value.pointer(pointer) {
        Some(Value::String(s)) => s.to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn name(v: &Value, _: i64) -> String {
    text(v, "/metadata/name")
}
fn namespace(v: &Value, _: i64) -> String {
    text(v, "/metadata/namespace")
}
fn age(v: &Value, now_unix: i64) -> String {
    match v
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
    {
        Some(created) => format_age(now_unix - created),
        None => String::new(),
    }
}
fn pod_ready(v: &Value, _: i64) -> String {
    let statuses = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array);
    let total = v
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, <[Value]>::len);
    let ready = statuses.map_or(0, |s| {
        s.iter()
            .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
            .count()
    });
    format!("{ready}/{total}")
}
fn pod_status(v: &Value, _: i64) -> String {
    if v.pointer("/metadata/deletionTimestamp").is_some() {
        return "Terminating".into();
    }
    let waiting = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .find_map(|c| c.pointer("/state/waiting/reason").and_then(Value::as_str))
        });
    waiting
        .map(str::to_string)
        .unwrap_or_else(|| text(v, "/status/phase"))
}
fn pod_restarts(v: &Value, _: i64) -> String {
    let restarts: u64 = v
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map_or(0, |s| {
            s.iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_u64))
                .sum()
        });
    restarts.to_string()
}
fn pod_node(v: &Value, _: i64) -> String {
    text(v, "/spec/nodeName")
}
fn replicas(v: &Value, _: i64) -> String {
    let ready = v
        .pointer("/status/readyReplicas")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let wanted = v
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    format!("{ready}/{wanted}")
}

fn natural(title: &'static str, cell: fn(&Value, i64) -> String) -> Column {
    Column {
        title: title.into(),
        source: CellSource::Builtin(cell),
        sort: SortKind::Natural,
    }
}

/// Columns for a resource when the server gives plain objects (no Table).
pub fn columns_for(resource: &str, namespaced: bool) -> Vec<Column> {
    let mut columns = Vec::new();
    if namespaced {
        columns.push(natural("NAMESPACE", namespace));
    }
    columns.push(natural("NAME", name));
    match resource {
        "pods" => columns.extend([
            natural("READY", pod_ready),
            natural("STATUS", pod_status),
            natural("RESTARTS", pod_restarts),
            natural("NODE", pod_node),
        ]),
        "deployments" | "replicasets" | "statefulsets" => columns.push(natural("READY", replicas)),
        _ => {}
    }
    columns.push(Column {
        title: "AGE".into(),
        source: CellSource::Builtin(age),
        sort: SortKind::Age,
    });
    columns
}

/// Columns for a custom resource from its CRD's printer columns (priority 0,
/// as `kubectl get` shows them): NAMESPACE when listing across namespaces,
/// NAME, then the printer columns in the CRD's order.
pub fn columns_from_printer(
    printer: Vec<crate::printer_columns::PrinterColumn>,
    namespaced: bool,
) -> Vec<Column> {
    let mut columns = Vec::new();
    if namespaced {
        columns.push(natural("NAMESPACE", namespace));
    }
    columns.push(natural("NAME", name));
    columns.extend(printer.into_iter().map(|column| Column {
        title: column.name.to_uppercase().into(),
        sort: if column.is_creation_time() {
            SortKind::Age
        } else {
            SortKind::Natural
        },
        source: CellSource::Printer(column),
    }));
    columns
}

/// Seconds since the Unix epoch for `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && (rest.starts_with('+') || rest.starts_with('-')) => {
            let hours = rest.get(1..3)?.parse::<i64>().ok()?;
            let minutes = rest.get(4..6)?.parse::<i64>().ok()?;
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    // Days from civil (proleptic Gregorian), after H. Hinnant's published algorithm.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// kubectl's short ages (its HumanDuration): `45s`, `3m12s`, `5h4m`, `12d`, `3y20d`.
pub fn format_age(seconds: i64) -> String {
    let s = seconds.max(0);
    let (minutes, hours, days) = (s / 60, s / 3600, s / 86_400);
    let pair = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    if s < 120 {
        format!("{s}s")
    } else if minutes < 10 {
        pair(minutes, "m", s % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        pair(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        pair(days, "d", hours % 24, "h")
    } else if days < 365 * 2 {
        format!("{days}d")
    } else if days < 365 * 8 {
        pair(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

/// Compares two cells as a person expects: digit runs as numbers
/// (`pod-9` < `pod-10`, `2/2` > `1/2`), everything else byte by byte.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (trim_zeros(&a[..da]), trim_zeros(&b[..db]));
                let by_number = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if by_number != Ordering::Equal {
                    return by_number;
                }
                a = &a[da..];
                b = &b[db..];
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                a = &a[1..];
                b = &b[1..];
            }
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&d| d == b'0').count();
    &digits[zeros.min(digits.len().saturating_sub(1))..]
}

/// The user's view over the store's rows: a text filter and a sort column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ViewSpec {
    /// Case-insensitive; a row matches when its key or any cell contains it.
    pub filter: String,
    /// Index into the columns; `None` = by key.
    pub sort_column: Option<usize>,
    pub descending: bool,
}

impl ViewSpec {
    /// True when the rows are exactly the key-ordered store (no work to do).
    pub fn is_identity(&self) -> bool {
        self.filter.trim().is_empty() && self.sort_column.is_none() && !self.descending
    }
}

/// Rows in view order: filtered and stably sorted (ties keep key order).
/// `lookup` gives the object of a key.
pub fn view_order<'a>(
    keys: &SortedKeys,
    columns: &[Column],
    spec: &ViewSpec,
    now_unix: i64,
    lookup: impl Fn(&str) -> Option<&'a Value>,
) -> Vec<String> {
    let needle = spec.filter.trim().to_lowercase();
    let mut rows: Vec<(&String, Option<String>)> = Vec::with_capacity(keys.len());
    for key in keys.iter() {
        let Some(value) = lookup(key) else { continue };
        if !needle.is_empty()
            && !key.to_lowercase().contains(&needle)
            && !columns
                .iter()
                .any(|c| c.cell(value, now_unix).to_lowercase().contains(&needle))
        {
            continue;
        }
        let sort_value =
            spec.sort_column
                .and_then(|i| columns.get(i))
                .map(|column| match column.sort {
                    SortKind::Natural => column.cell(value, now_unix),
                    SortKind::Age => value
                        .pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                });
        rows.push((key, sort_value));
    }
    if let Some(column) = spec.sort_column.and_then(|i| columns.get(i)) {
        let age = column.sort == SortKind::Age;
        rows.sort_by(|(_, a), (_, b)| {
            let (a, b) = (a.as_deref().unwrap_or(""), b.as_deref().unwrap_or(""));
            // Youngest first for AGE: a later timestamp sorts earlier.
            if age {
                b.cmp(a)
            } else {
                natural_cmp(a, b)
            }
        });
    }
    if spec.descending {
        rows.reverse();
    }
    rows.into_iter().map(|(key, _)| key.clone()).collect()
}

/// Row keys in byte order, maintained incrementally.
#[derive(Debug, Default, Clone)]
pub struct SortedKeys {
    keys: Vec<String>,
}

impl SortedKeys {
    pub fn from_keys(keys: impl IntoIterator<Item = String>) -> SortedKeys {
        let mut keys: Vec<String> = keys.into_iter().collect();
        keys.sort_unstable();
        keys.dedup();
        SortedKeys { keys }
    }

    pub fn insert(&mut self, key: &str) {
        if let Err(at) = self.keys.binary_search_by(|k| k.as_str().cmp(key)) {
            self.keys.insert(at, key.to_string());
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Ok(at) = self.keys.binary_search_by(|k| k.as_str().cmp(key)) {
            self.keys.remove(at);
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn window(&self, start: usize, count: usize) -> &[String] {
        let start = start.min(self.keys.len());
        let end = start.saturating_add(count).min(self.keys.len());
        &self.keys[start..end]
    }

    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.keys.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2024-02-29T12:00:00Z"), Some(1_709_208_000));
        assert_eq!(
            parse_rfc3339("2024-02-29T13:00:00.123+01:00"),
            Some(1_709_208_000)
        );
        assert_eq!(parse_rfc3339("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2024-02-29T13:00:00+0100"), None);
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(format_age(5), "5s");
        assert_eq!(format_age(192), "3m12s");
        assert_eq!(format_age(3600 * 5 + 240), "5h4m");
        assert_eq!(format_age(86_400 * 12), "12d");
        assert_eq!(format_age(-3), "0s");
    }

    #[test]
    fn pod_columns_read_status() {
        let pod: Value = json!({
            "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": "1970-01-01T00:00:00Z"},
            "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"ready": true, "restartCount": 2},
                {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}
        })
        .into();
        let cells: Vec<String> = columns_for("pods", true)
            .iter()
            .map(|c| c.cell(&pod, 65))
            .collect();
        assert_eq!(
            cells,
            [
                "default",
                "web-1",
                "1/2",
                "CrashLoopBackOff",
                "3",
                "node-1",
                "65s"
            ]
        );
    }

    #[test]
    fn natural_order_compares_numbers_as_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_cmp("pod-9", "pod-10"), Less);
        assert_eq!(natural_cmp("2/2", "1/2"), Greater);
        assert_eq!(natural_cmp("node-007", "node-7"), Equal);
        assert_eq!(natural_cmp("a", "ab"), Less);
        assert_eq!(natural_cmp("15", "3"), Greater);
    }

    fn pod(ns: &str, name: &str, restarts: u64, created: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
               "spec": {"containers": [{"name": "c"}]},
               "status": {"phase": "Running", "containerStatuses": [{"ready": true, "restartCount": restarts}]}})
        .into()
    }

    #[test]
    fn view_order_filters_and_sorts_stably() {
        let objects: std::collections::HashMap<String, Value> = [
            ("a/web-1", pod("a", "web-1", 10, "2024-01-01T00:00:00Z")),
            ("a/web-2", pod("a", "web-2", 2, "2024-01-03T00:00:00Z")),
            ("b/db-1", pod("b", "db-1", 2, "2024-01-02T00:00:00Z")),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let keys = SortedKeys::from_keys(objects.keys().cloned());
        let columns = columns_for("pods", true);
        let lookup = |k: &str| objects.get(k);
        let restarts = columns.iter().position(|c| c.title == "RESTARTS");
        let age = columns.iter().position(|c| c.title == "AGE");
        let by = |spec: ViewSpec| view_order(&keys, &columns, &spec, 0, lookup);
        assert_eq!(by(ViewSpec::default()), ["a/web-1", "a/web-2", "b/db-1"]);
        assert_eq!(
            by(ViewSpec {
                filter: "WEB".into(),
                ..Default::default()
            }),
            ["a/web-1", "a/web-2"]
        );
        // Ties (2 restarts) keep key order; 10 sorts after 2 numerically.
        assert_eq!(
            by(ViewSpec {
                sort_column: restarts,
                ..Default::default()
            }),
            ["a/web-2", "b/db-1", "a/web-1"]
        );
        assert_eq!(
            by(ViewSpec {
                sort_column: age,
                ..Default::default()
            }),
            ["a/web-2", "b/db-1", "a/web-1"]
        );
        assert_eq!(
            by(ViewSpec {
                sort_column: age,
                descending: true,
                ..Default::default()
            }),
            ["a/web-1", "b/db-1", "a/web-2"]
        );
        assert!(by(ViewSpec {
            filter: "nothing-matches".into(),
            ..Default::default()
        })
        .is_empty());
    }

    proptest! {
        #[test]
        fn sorted_keys_match_a_sorted_set(ops in proptest::collection::vec((any::<bool>(), "[a-c]{1,3}"), 0..200)) {
            let mut keys = SortedKeys::default();
            let mut model = std::collections::BTreeSet::new();
            for (add, key) in ops {
                if add { keys.insert(&key); model.insert(key); } else { keys.remove(&key); model.remove(&key); }
            }
            prop_assert_eq!(keys.iter().cloned().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
        }
    }
}
