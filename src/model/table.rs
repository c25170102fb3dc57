//! What a resource table shows, independent of the DOM: the server's own
//! columns when it prints Tables (its `columnDefinitions`, priority 0 unless
//! the view is wide, cells as the server printed them except ages, which are
//! computed from the object so they keep ticking), the columns derived from
//! an object when the server gives plain lists, ages as kubectl prints them,
//! `kubectl top`'s usage columns in the pods and nodes tables (`model::top`),
//! and the sorted list of row keys kept up to date change by change (so a
//! frame costs O(changes · log n), not O(n)).

use std::sync::Arc;

use crate::api::resource_metrics::UsageList;
use crate::informer::{ColumnDefinition, KubeObject};
use crate::model::top::{top_cells, TopCell};
use deltascope_facts::time::{format_age, parse_rfc3339};
// objects are held as the informer's compact JSON documents
use crate::informer::JsonValue as Value;
use crate::informer::{JsonArray, JsonKind, JsonRef};

/// How a column's cells compare when the user sorts by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKind {
    /// Byte order of the cell text, with digit runs compared as numbers.
    Natural,
    /// By `metadata.creationTimestamp`, youngest first (what "sort by AGE" means).
    Age,
    /// By the number behind the cell (`kubectl top`'s usage: exact, not
    /// as rounded for print); cells without one first.
    Number,
}

/// Where a column's cells come from.
#[derive(Clone)]
pub enum CellSource {
    /// Computed by this crate (the columns kubectl prints for built-in kinds).
    Builtin(fn(&Value, i64) -> String),
    /// A CRD's `additionalPrinterColumns` entry, evaluated on each object.
    Printer(crate::model::printer_columns::PrinterColumn),
    /// Cell `n` of the object's Table row, as the server printed it.
    Server(usize),
    /// A `kubectl top` column, joined from the metrics API's last window.
    Top(TopCell),
}

/// One column: a header, how to read its cell from an object, how it sorts.
#[derive(Clone)]
pub struct Column {
    pub title: std::borrow::Cow<'static, str>,
    pub source: CellSource,
    pub sort: SortKind,
}

impl Column {
    /// The text of this column's cell for `object` (`now_unix` for ages).
    /// A server cell the object does not have (it came as plain JSON) is
    /// empty.
    pub fn cell(&self, object: &KubeObject, now_unix: i64) -> String {
        match &self.source {
            CellSource::Builtin(cell) => cell(&object.value, now_unix),
            CellSource::Printer(column) => column.cell(&object.value, now_unix),
            CellSource::Server(index) => object
                .cells
                .as_ref()
                .and_then(|cells| cells.get(*index))
                .unwrap_or_default()
                .to_string(),
            CellSource::Top(cell) => cell.text(object),
        }
    }

    /// The number a [`SortKind::Number`] column sorts `object` by: a usage
    /// column's exact figure, else the cell's leading digits.
    pub fn number(&self, object: &KubeObject, now_unix: i64) -> Option<i128> {
        match &self.source {
            CellSource::Top(cell) => cell.number(object),
            _ => {
                let text = self.cell(object, now_unix);
                let digits = text.bytes().take_while(u8::is_ascii_digit).count();
                text[..digits].parse().ok()
            }
        }
    }

    /// True for a `kubectl top` column (live usage, not the object's).
    pub fn is_top(&self) -> bool {
        matches!(self.source, CellSource::Top(_))
    }
}

/// `kubectl top`'s columns for `table` over the metrics API's `window`
/// (`wide`: with a pod's usage of its requests and limits), sorting as
/// numbers.
pub fn top_columns(
    table: crate::model::top::TopTable,
    window: &Arc<UsageList>,
    wide: bool,
) -> Vec<Column> {
    top_cells(table, window, wide)
        .into_iter()
        .map(|cell| Column {
            title: cell.title().into(),
            source: CellSource::Top(cell),
            sort: SortKind::Number,
        })
        .collect()
}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        self.title == other.title
    }
}

fn text(value: &Value, pointer: &str) -> String {
    match value.pointer(pointer) {
        None => String::new(),
        Some(found) => match found.kind() {
            JsonKind::String(s) => s.to_string(),
            JsonKind::Null => String::new(),
            _ => found.to_string(),
        },
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
        .and_then(JsonRef::as_str)
        .and_then(parse_rfc3339)
    {
        Some(created) => format_age(now_unix - created),
        None => String::new(),
    }
}
fn pod_ready(v: &Value, _: i64) -> String {
    let statuses = v
        .pointer("/status/containerStatuses")
        .and_then(JsonRef::as_array);
    let total = v
        .pointer("/spec/containers")
        .and_then(JsonRef::as_array)
        .map_or(0, JsonArray::len);
    let ready = statuses.map_or(0, |s| {
        s.iter()
            .filter(|c| c.get("ready").and_then(JsonRef::as_bool) == Some(true))
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
        .and_then(JsonRef::as_array)
        .and_then(|s| {
            s.iter()
                .find_map(|c| c.pointer("/state/waiting/reason").and_then(JsonRef::as_str))
        });
    waiting
        .map(str::to_string)
        .unwrap_or_else(|| text(v, "/status/phase"))
}
/// As kubectl prints it: the containers' restarts, and how long ago the
/// last one ended (`3 (5m ago)`) when a container's last state says so.
fn pod_restarts(v: &Value, now_unix: i64) -> String {
    let statuses = v
        .pointer("/status/containerStatuses")
        .and_then(JsonRef::as_array);
    let restarts: u64 = statuses.map_or(0, |s| {
        s.iter()
            .filter_map(|c| c.get("restartCount").and_then(JsonRef::as_u64))
            .sum()
    });
    let last = statuses.and_then(|s| {
        s.iter()
            .filter_map(|c| {
                c.pointer("/lastState/terminated/finishedAt")
                    .and_then(JsonRef::as_str)
                    .and_then(parse_rfc3339)
            })
            .max()
    });
    match last {
        Some(at) if restarts > 0 => format!("{restarts} ({} ago)", format_age(now_unix - at)),
        _ => restarts.to_string(),
    }
}
fn replicas(v: &Value, _: i64) -> String {
    let ready = v
        .pointer("/status/readyReplicas")
        .and_then(JsonRef::as_u64)
        .unwrap_or(0);
    let wanted = v
        .pointer("/spec/replicas")
        .and_then(JsonRef::as_u64)
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
        // kubectl's default pod columns, as the server prints them.
        "pods" => columns.extend([
            natural("READY", pod_ready),
            natural("STATUS", pod_status),
            natural("RESTARTS", pod_restarts),
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
    printer: Vec<crate::model::printer_columns::PrinterColumn>,
    namespaced: bool,
) -> Vec<Column> {
    let mut columns = Vec::new();
    if namespaced {
        columns.push(natural("NAMESPACE", namespace));
    }
    columns.push(natural("NAME", name));
    columns.extend(printer.into_iter().map(|column| Column {
        title: column.name.to_ascii_uppercase().into(),
        sort: if column.is_creation_time() {
            SortKind::Age
        } else {
            SortKind::Natural
        },
        source: CellSource::Printer(column),
    }));
    columns
}

/// Columns from the server's Table `defs`: those of priority 0, or all of
/// them when `wide` (kubectl `-o wide`); NAMESPACE first when listing across
/// namespaces (the server's Table has none, kubectl `-A` adds it); titles in
/// capitals as kubectl prints them. The name and the age come from the
/// object (the age keeps ticking); a date column whose CRD printer column is
/// known (`printer`, matched by name) is evaluated on the object too; every
/// other cell is the server's. Number columns sort by the natural order,
/// which compares digit runs as numbers.
pub fn columns_from_server(
    defs: &[ColumnDefinition],
    wide: bool,
    all_namespaces: bool,
    printer: &[crate::model::printer_columns::PrinterColumn],
) -> Vec<Column> {
    let mut columns = Vec::new();
    if all_namespaces {
        columns.push(natural("NAMESPACE", namespace));
    }
    for (index, def) in defs.iter().enumerate() {
        if def.priority > 0 && !wide {
            continue;
        }
        let title = def.name.to_ascii_uppercase().into();
        let printed = def
            .is_date()
            .then(|| printer.iter().find(|p| p.name == def.name))
            .flatten();
        let (source, sort) = if let Some(column) = printed {
            let sort = if column.is_creation_time() {
                SortKind::Age
            } else {
                SortKind::Natural
            };
            (CellSource::Printer(column.clone()), sort)
        } else if def.is_name() {
            (CellSource::Builtin(name), SortKind::Natural)
        } else if def.is_creation_age() {
            (CellSource::Builtin(age), SortKind::Age)
        } else {
            (CellSource::Server(index), SortKind::Natural)
        };
        columns.push(Column {
            title,
            source,
            sort,
        });
    }
    columns
}

/// True when some of the server's columns show only in the wide view.
pub fn has_wide_columns(defs: &[ColumnDefinition]) -> bool {
    defs.iter().any(|d| d.priority > 0)
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

/// The order the rows are in, as the table's column titles show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SortOrder {
    /// The sorted column; `None` = by key.
    pub column: Option<usize>,
    pub descending: bool,
}

impl ViewSpec {
    /// The order this view sorts its rows in.
    pub fn sort_order(&self) -> SortOrder {
        SortOrder {
            column: self.sort_column,
            descending: self.descending,
        }
    }

    /// True when the rows are exactly the key-ordered store (no work to do).
    pub fn is_identity(&self) -> bool {
        self.filter.trim().is_empty() && self.sort_column.is_none() && !self.descending
    }
}

/// The text filter as rows are matched with it: trimmed, ASCII letters
/// lowercased. Matching folds ASCII case only (names, kinds, labels and the
/// server's cells are ASCII): Unicode case tables would add about 10 KB to
/// the page's download.
pub fn filter_needle(filter: &str) -> String {
    filter.trim().to_ascii_lowercase()
}

/// Rows in view order: filtered and stably sorted (ties keep key order).
/// `lookup` gives the object of a key.
pub fn view_order<'a>(
    keys: &SortedKeys,
    columns: &[Column],
    spec: &ViewSpec,
    now_unix: i64,
    lookup: impl Fn(&str) -> Option<&'a KubeObject>,
) -> Vec<Arc<str>> {
    let needle = filter_needle(&spec.filter);
    let mut rows: Vec<(&Arc<str>, Option<SortValue>)> = Vec::with_capacity(keys.len());
    for key in keys.iter() {
        let Some(object) = lookup(key) else { continue };
        if !needle.is_empty()
            && !key.to_ascii_lowercase().contains(&needle)
            && !columns.iter().any(|c| {
                c.cell(object, now_unix)
                    .to_ascii_lowercase()
                    .contains(&needle)
            })
        {
            continue;
        }
        let sort_value = spec
            .sort_column
            .and_then(|i| columns.get(i))
            .map(|column| SortValue::of(column, object, now_unix));
        rows.push((key, sort_value));
    }
    if spec.sort_column.and_then(|i| columns.get(i)).is_some() {
        rows.sort_by(|(_, a), (_, b)| match (a, b) {
            (Some(a), Some(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        });
    }
    if spec.descending {
        rows.reverse();
    }
    rows.into_iter().map(|(key, _)| key.clone()).collect()
}

/// What one row sorts by under its column's [`SortKind`].
enum SortValue {
    Natural(String),
    /// The creation timestamp.
    Age(String),
    Number(Option<i128>),
}

impl SortValue {
    fn of(column: &Column, object: &KubeObject, now_unix: i64) -> SortValue {
        match column.sort {
            SortKind::Natural => SortValue::Natural(column.cell(object, now_unix)),
            SortKind::Age => SortValue::Age(
                object
                    .value
                    .pointer("/metadata/creationTimestamp")
                    .and_then(JsonRef::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            SortKind::Number => SortValue::Number(column.number(object, now_unix)),
        }
    }

    /// Rows of one column hold values of one kind.
    fn cmp(&self, other: &SortValue) -> std::cmp::Ordering {
        match (self, other) {
            (SortValue::Natural(a), SortValue::Natural(b)) => natural_cmp(a, b),
            // Youngest first for AGE: a later timestamp sorts earlier.
            (SortValue::Age(a), SortValue::Age(b)) => b.cmp(a),
            (SortValue::Number(a), SortValue::Number(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        }
    }
}

/// From this many edits on, [`SortedKeys::apply`] merges.
const MERGE_FROM: usize = 32;

/// Row keys in byte order, maintained incrementally. Shared strings: a
/// view of 100k objects takes its keys from the store's own order (see
/// [`SortedKeys::from_sorted`]) without copying or sorting them.
#[derive(Debug, Default, Clone)]
pub struct SortedKeys {
    keys: Vec<Arc<str>>,
}

impl SortedKeys {
    pub fn from_keys(keys: impl IntoIterator<Item = String>) -> SortedKeys {
        let mut keys: Vec<Arc<str>> = keys.into_iter().map(Arc::from).collect();
        keys.sort_unstable();
        keys.dedup();
        SortedKeys { keys }
    }

    /// Keys already in byte order with no duplicates (a store's
    /// `keys_in_order`, a past state's keys).
    pub fn from_sorted(keys: Vec<Arc<str>>) -> SortedKeys {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys not sorted");
        SortedKeys { keys }
    }

    pub fn insert(&mut self, key: &str) {
        if let Err(at) = self.keys.binary_search_by(|k| (**k).cmp(key)) {
            self.keys.insert(at, Arc::from(key));
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Ok(at) = self.keys.binary_search_by(|k| (**k).cmp(key)) {
            self.keys.remove(at);
        }
    }

    /// Many edits at once, in order: `(key, true)` puts a key in,
    /// `(key, false)` takes it out, and a key's last edit wins. One edit
    /// at a time moves half the keys each (a restored or listed store of
    /// 100k keys arriving a thousand at a time spent ~0.5 s in it); a
    /// large batch is sorted and merged with the keys from its first one
    /// on, in one pass.
    pub fn apply(&mut self, mut edits: Vec<(String, bool)>) {
        if edits.len() < MERGE_FROM {
            for (key, present) in edits {
                if present {
                    self.insert(&key);
                } else {
                    self.remove(&key);
                }
            }
            return;
        }
        // A stable sort keeps each key's edits in order: its last one is
        // the last of its run.
        edits.sort_by(|a, b| a.0.cmp(&b.0));
        let mut last: Vec<(String, bool)> = Vec::with_capacity(edits.len());
        for edit in edits {
            match last.last_mut() {
                Some(previous) if previous.0 == edit.0 => *previous = edit,
                _ => last.push(edit),
            }
        }
        // Keys before the first edited one stay where they are.
        let Some((first, _)) = last.first() else {
            return;
        };
        let from = self.keys.partition_point(|key| **key < **first);
        let tail = self.keys.split_off(from);
        let merged = &mut self.keys;
        merged.reserve(tail.len() + last.len());
        // Each edit finds its place in what is left by a binary search;
        // the keys between two edits move as a run, with no comparison.
        let mut rest = tail.into_iter();
        for (edit, present) in last {
            let before = rest.as_slice().partition_point(|key| **key < *edit);
            merged.extend(rest.by_ref().take(before));
            let there = rest.as_slice().first().is_some_and(|key| **key == *edit);
            match (there, present) {
                (true, true) => merged.extend(rest.next()),
                (true, false) => {
                    rest.next();
                }
                (false, true) => merged.push(Arc::from(edit)),
                (false, false) => {}
            }
        }
        merged.extend(rest);
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn contains(&self, key: &str) -> bool {
        self.keys.binary_search_by(|k| (**k).cmp(key)).is_ok()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn window(&self, start: usize, count: usize) -> &[Arc<str>] {
        let start = start.min(self.keys.len());
        let end = start.saturating_add(count).min(self.keys.len());
        &self.keys[start..end]
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<str>> {
        self.keys.iter()
    }
}

/// One row of the table as the view shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RowData {
    pub key: String,
    pub resource_version: String,
    pub cells: Vec<String>,
    pub flash: bool,
    pub selected: bool,
    /// Deleted: shown fading out until it goes.
    pub deleted: bool,
    /// When the row's fade (deleted) or flash (changed) began, on the page's
    /// clock (ms): a row drawn by another element as the table scrolls
    /// carries its animation on from there, not from the start.
    pub animation_since: Option<f64>,
}

/// How one drawn row is marked besides its cells.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowMarks {
    pub selected: bool,
    /// Changed: flashing since then (the page's clock, ms).
    pub flashing_since: Option<f64>,
    /// Deleted: fading out since then (the page's clock, ms).
    pub deleted_at: Option<f64>,
}

impl RowData {
    /// The row `object` is drawn as under `columns` (ages as of `now_unix`).
    pub fn of(object: &KubeObject, columns: &[Column], now_unix: i64, marks: RowMarks) -> RowData {
        RowData {
            key: object.key.clone(),
            resource_version: object.resource_version.clone(),
            cells: columns.iter().map(|c| c.cell(object, now_unix)).collect(),
            flash: marks.flashing_since.is_some(),
            selected: marks.selected,
            deleted: marks.deleted_at.is_some(),
            animation_since: marks.deleted_at.or(marks.flashing_since),
        }
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
