//! UndeltaStore (client-go `undelta_store.go`): a store that, after every
//! change, pushes the *whole* current list to a subscriber instead of the
//! change itself. It also works as an [`EventHandler`], so it can hang off
//! an informer.
//!
//! Nothing in deltascope uses it today — the page renders incrementally,
//! reading [`Informer::read_changes`](crate::informer::Informer::read_changes).
//! It is a library part of the informer core, kept with its tests for the
//! core's users (a view that re-renders a full list would use it), so the
//! core offers what client-go's `tools/cache` does.

use crate::delta_fifo::DeltaObject;
use crate::informer::EventHandler;
use crate::object::{KubeObject, ObjectRef};
use crate::store::Indexer;

/// Receives the full list (in key order) after every change.
pub type PushFunc = Box<dyn FnMut(&[ObjectRef])>;

pub struct UndeltaStore {
    store: Indexer,
    push: PushFunc,
}

impl std::fmt::Debug for UndeltaStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UndeltaStore")
            .field("store", &self.store)
            .finish()
    }
}

impl UndeltaStore {
    pub fn new(push: PushFunc) -> UndeltaStore {
        UndeltaStore {
            store: Indexer::without_indexes(),
            push,
        }
    }

    pub fn store(&self) -> &Indexer {
        &self.store
    }

    fn notify(&mut self) {
        let list: Vec<ObjectRef> = self.store.list().cloned().collect();
        (self.push)(&list);
    }

    pub fn add(&mut self, obj: ObjectRef) {
        self.store.add(obj);
        self.notify();
    }

    pub fn update(&mut self, obj: ObjectRef) {
        self.store.update(obj);
        self.notify();
    }

    pub fn delete(&mut self, obj: &KubeObject) {
        self.store.delete(obj);
        self.notify();
    }

    pub fn replace(&mut self, list: Vec<ObjectRef>) {
        self.store.replace(list);
        self.notify();
    }
}

impl EventHandler for UndeltaStore {
    fn on_add(&mut self, obj: &ObjectRef, _is_in_initial_list: bool) {
        self.add(obj.clone());
    }

    fn on_update(&mut self, _old: &ObjectRef, new: &ObjectRef) {
        self.update(new.clone());
    }

    fn on_delete(&mut self, obj: &DeltaObject) {
        if self.store.delete_key(obj.key()).is_some() {
            self.notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::Arc;

    fn obj(name: &str, rv: &str) -> ObjectRef {
        Arc::new(
            KubeObject::from_value(json!({"metadata":{"name":name,"resourceVersion":rv}})).unwrap(),
        )
    }

    #[test]
    fn pushes_full_list_after_every_change() {
        // client-go UndeltaStore: PushFunc gets the complete state on each mutation
        let seen: Rc<RefCell<Vec<Vec<String>>>> = Rc::default();
        let s2 = seen.clone();
        let mut u = UndeltaStore::new(Box::new(move |l| {
            s2.borrow_mut().push(
                l.iter()
                    .map(|o| format!("{}@{}", o.key, o.resource_version))
                    .collect(),
            )
        }));
        u.add(obj("b", "1"));
        u.add(obj("a", "2"));
        u.update(obj("b", "3"));
        u.delete(&obj("a", "2"));
        u.replace(vec![obj("c", "4")]);
        assert_eq!(
            *seen.borrow(),
            vec![
                vec!["b@1"],
                vec!["a@2", "b@1"],
                vec!["a@2", "b@3"],
                vec!["b@3"],
                vec!["c@4"],
            ]
        );
        // as a handler
        u.on_delete(&DeltaObject::Tombstone {
            key: "c".into(),
            last_known: obj("c", "4"),
        });
        assert_eq!(seen.borrow().last().unwrap().len(), 0);
        let n = seen.borrow().len();
        u.on_delete(&DeltaObject::Object(obj("zz", "1")));
        assert_eq!(seen.borrow().len(), n, "no push when nothing changed");
    }
}
