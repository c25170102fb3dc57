//! Which stored objects a read sees: those of one namespace (or all), after
//! a `continue` key, in key order — as they are now, or as they were at a
//! past revision, rebuilt by undoing the logged events after it.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use super::object::{Event, Obj};
use crate::resources::ResIdx;

/// Is `key` in the namespace (if any) and after the `continue` key (if any)?
fn in_scope(key: &str, namespace: Option<&str>, after: Option<&str>) -> bool {
    if let Some(after) = after {
        if key <= after {
            return false;
        }
    }
    match namespace {
        Some(ns) => key
            .strip_prefix(ns)
            .is_some_and(|rest| rest.starts_with('/')),
        None => true,
    }
}

/// The objects of `map` in the scope, in key order, as they are.
pub(super) fn scoped_iter<'a>(
    map: &'a BTreeMap<String, Arc<Obj>>,
    namespace: Option<&'a str>,
    after: Option<&'a str>,
) -> impl Iterator<Item = &'a Arc<Obj>> + 'a {
    let lower = match (namespace, after) {
        (_, Some(a)) => Bound::Excluded(a.to_string()),
        (Some(ns), None) => Bound::Included(format!("{ns}/")),
        (None, None) => Bound::Unbounded,
    };
    map.range((lower, Bound::Unbounded))
        .take_while(move |(k, _)| {
            namespace.is_none_or(|ns| k.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
        })
        .map(|(_, v)| v)
}

/// The same, collected.
pub(super) fn scoped(
    map: &BTreeMap<String, Arc<Obj>>,
    namespace: Option<&str>,
    after: Option<&str>,
) -> Vec<Arc<Obj>> {
    let lower = match (namespace, after) {
        (_, Some(a)) => Bound::Excluded(a.to_string()),
        (Some(ns), None) => Bound::Included(format!("{ns}/")),
        (None, None) => Bound::Unbounded,
    };
    map.range((lower, Bound::Unbounded))
        .take_while(|(k, _)| {
            namespace.is_none_or(|ns| k.strip_prefix(ns).is_some_and(|r| r.starts_with('/')))
        })
        .filter(|(k, _)| in_scope(k, namespace, after))
        .map(|(_, v)| v.clone())
        .collect()
}

/// The objects of resource `res` in the scope as they were at revision `at`
/// (not compacted away): `now`, with the events of `log` after `at` undone,
/// newest first (the last undo of a key wins).
pub(super) fn past(
    now: &BTreeMap<String, Arc<Obj>>,
    log: &VecDeque<Arc<Event>>,
    res: ResIdx,
    at: u64,
    namespace: Option<&str>,
    after: Option<&str>,
) -> BTreeMap<String, Arc<Obj>> {
    let mut undo: BTreeMap<String, Option<Arc<Obj>>> = BTreeMap::new();
    for e in log.iter().rev() {
        if e.rev <= at {
            break;
        }
        if e.res != res {
            continue;
        }
        undo.insert(e.obj.key.clone(), e.prev.clone());
    }
    let mut view: BTreeMap<String, Arc<Obj>> = scoped(now, namespace, after)
        .into_iter()
        .map(|o| (o.key.clone(), o))
        .collect();
    for (key, prev) in undo {
        if !in_scope(&key, namespace, after) {
            continue;
        }
        match prev {
            Some(o) => view.insert(key, o),
            None => view.remove(&key),
        };
    }
    view
}
