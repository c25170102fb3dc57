//! Each cluster's browser database, as the page keeps them: the default
//! cluster's store from load (its stored views restored at once), another
//! cluster's from when its first view is shown (that cluster's stored views
//! restored then), each a `run` task of its own with its own database
//! (keyed by the cluster's identity), writer lock, restores and writes.
//! When another cluster answers behind a name, that name's task starts a
//! store of the new cluster, on its own database.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{run, Handles, Persistence, ServedStore, StoredSummary, UsageStore};
use crate::service::kept_informers::KeptInformers;
use crate::service::spawn_after_this_task;

/// The page's stores, one per cluster shown.
pub struct Stores {
    kept: Rc<RefCell<KeptInformers>>,
    on_change: Rc<dyn Fn()>,
    /// Grows when a store opens or ends its database (see `Handles`).
    changed: Rc<Cell<u64>>,
    default: Rc<RefCell<Persistence>>,
    /// Another cluster's, by serve's name, in the order first shown.
    others: RefCell<Vec<(String, Rc<RefCell<Persistence>>)>>,
}

impl Stores {
    /// Starts the default cluster's store: until its database has said
    /// what it holds, new views of the default cluster wait.
    pub fn start(kept: Rc<RefCell<KeptInformers>>, on_change: Rc<dyn Fn()>) -> Stores {
        let default = Rc::new(RefCell::new(Persistence::new(None)));
        kept.borrow_mut().held.insert(None);
        let stores = Stores {
            kept,
            on_change,
            changed: Rc::default(),
            default,
            others: RefCell::default(),
        };
        spawn_after_this_task(run(stores.default_handles()));
        stores
    }

    /// A view of `cluster` is about to open: another cluster's store starts
    /// the first time, and its new views wait until its database has said
    /// what it holds.
    pub fn showing(&self, cluster: Option<&str>) {
        let Some(name) = cluster else {
            return;
        };
        let mut others = self.others.borrow_mut();
        if others.iter().any(|(n, _)| n == name) {
            return;
        }
        let store = Rc::new(RefCell::new(Persistence::new(Some(name.to_string()))));
        // held before the view's informer is made, so that it waits
        self.kept.borrow_mut().held.insert(Some(name.to_string()));
        spawn_after_this_task(run(self.handles_of(Some(name), store.clone())));
        others.push((name.to_string(), store));
    }

    fn handles_of(&self, cluster: Option<&str>, persistence: Rc<RefCell<Persistence>>) -> Handles {
        Handles {
            kept: self.kept.clone(),
            persistence,
            on_change: self.on_change.clone(),
            cluster: cluster.map(str::to_string),
            stores_changed: self.changed.clone(),
        }
    }

    /// The store of `cluster` (`None`: the default one), if it runs.
    fn store_of(&self, cluster: Option<&str>) -> Option<Rc<RefCell<Persistence>>> {
        let Some(name) = cluster else {
            return Some(self.default.clone());
        };
        let others = self.others.borrow();
        let found = others.iter().find(|(n, _)| n == name);
        found.map(|(_, store)| store.clone())
    }

    /// The handles of every running store, the default one's first.
    pub fn all_handles(&self) -> Vec<Handles> {
        let mut all = vec![self.handles_of(None, self.default.clone())];
        for (name, store) in self.others.borrow().iter() {
            all.push(self.handles_of(Some(name), store.clone()));
        }
        all
    }

    /// The default cluster's handles (its settings' "forget" of another
    /// database).
    pub fn default_handles(&self) -> Handles {
        self.handles_of(None, self.default.clone())
    }

    /// Where `cluster`'s objects' usage series are kept, once its database
    /// is open.
    pub fn usage_store(&self, cluster: Option<&str>) -> Option<UsageStore> {
        self.store_of(cluster)?.borrow().usage_store()
    }

    /// "the cluster behind NAME changed …", after a page started anew on
    /// another default cluster.
    pub fn cluster_changed(&self) -> Option<String> {
        self.default.borrow().cluster_changed()
    }

    /// What the settings show: the default cluster's store, each other
    /// running store's cluster and views, and the other databases this
    /// browser holds (those no store of this page has open).
    pub fn summary(&self, kept: &KeptInformers) -> StoredSummary {
        let mut summary = self.default.borrow().summary(kept);
        let mut open: Vec<String> = Vec::new();
        for (_, store) in self.others.borrow().iter() {
            let theirs = store.borrow().summary(kept);
            if let Some(cluster) = theirs.cluster {
                open.push(cluster.database.clone());
                summary.served.push(ServedStore {
                    cluster,
                    state: theirs.state,
                    items: theirs.items,
                });
            }
            summary.notices.extend(theirs.notices);
        }
        summary
            .others
            .retain(|other| !open.contains(&other.database));
        summary
    }
}
