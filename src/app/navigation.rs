//! What the address names, and how the page moves between addresses: the
//! decisions behind the `ui::address` hook and the object view's open and
//! close, kept here with no web dependency so they are tested natively.
//!
//! - [`AddressResolver`] reads a hash: a logs view's address, a table's,
//!   or one object's — which shows its resource's table behind it (the
//!   table the user was on when it holds the object, else a kept view
//!   holding it, else the object's namespace;
//!   [`ObjectRoute::table_behind`]). It remembers across addresses: the
//!   last table shown, and the table resolved for the object open, kept
//!   while the same object stays open so the table does not change under
//!   it as kept views come and go.
//! - [`ObjectVisit`] remembers whether the object on screen was opened
//!   from this page's table: closing it is then the browser's back (which
//!   returns to the table where it was), else the table's address; opening
//!   an object over another replaces its address (one history entry per
//!   visit).

use crate::address::log_route::LogRoute;
use crate::address::object_route::ObjectRoute;
use crate::address::route::{Route, RouteError};

/// An address, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// A logs view's address (the logs view replaces the table).
    pub logs: Option<LogRoute>,
    /// One object's address (it opens over `table`).
    pub object: Option<ObjectRoute>,
    /// The table to show (for an object's address, the table behind it),
    /// or why the address names none.
    pub table: Result<Route, RouteError>,
}

/// Resolves addresses one after another (see the module doc).
#[derive(Debug, Default)]
pub struct AddressResolver {
    /// The table shown last.
    last_table: Option<Route>,
    /// The object open and the table resolved behind it.
    object_table: Option<(ObjectRoute, Route)>,
}

impl AddressResolver {
    /// What `hash` names. `holding` finds a kept view of the object's
    /// resource that holds it; it is asked only when the object is new.
    pub fn resolve(
        &mut self,
        hash: &str,
        holding: impl FnOnce(&ObjectRoute) -> Option<Route>,
    ) -> Resolved {
        let logs = LogRoute::parse(hash);
        let object = ObjectRoute::parse(hash);
        let table = match &object {
            Some(object) => {
                let known = self
                    .object_table
                    .as_ref()
                    .filter(|(open, _)| open == object)
                    .map(|(_, table)| table.clone());
                let behind = known.unwrap_or_else(|| {
                    object.table_behind(self.last_table.as_ref(), holding(object))
                });
                self.object_table = Some((object.clone(), behind.clone()));
                self.last_table = Some(behind.clone());
                Ok(behind)
            }
            None => {
                let route = Route::parse(hash);
                if let Ok(route) = &route {
                    self.last_table = Some(route.clone());
                }
                route
            }
        };
        Resolved {
            logs,
            object,
            table,
        }
    }
}

/// How to put an object's address in the address bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenStep {
    /// A new history entry (the back button returns to the table).
    Push,
    /// In place of the object already open.
    Replace,
}

/// How to close the object on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseStep {
    /// The browser's back: to the table it was opened from.
    Back,
    /// The address of the table behind it (an address opened directly).
    ShowTable,
}

/// Whether the object on screen was opened from this page (see the
/// module doc).
#[derive(Debug, Default)]
pub struct ObjectVisit {
    opened_in_page: bool,
}

impl ObjectVisit {
    /// An object opens while the address is `current_hash`.
    pub fn open(&mut self, current_hash: &str) -> OpenStep {
        if ObjectRoute::parse(current_hash).is_some() {
            OpenStep::Replace
        } else {
            self.opened_in_page = true;
            OpenStep::Push
        }
    }

    /// The user closes the object on screen.
    pub fn close(&mut self) -> CloseStep {
        if std::mem::take(&mut self.opened_in_page) {
            CloseStep::Back
        } else {
            CloseStep::ShowTable
        }
    }

    /// The address no longer names an object (the back button, a link).
    pub fn closed(&mut self) {
        self.opened_in_page = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(hash: &str) -> Route {
        Route::parse(hash).expect("a table's address")
    }

    #[test]
    fn a_table_address_is_the_table_and_is_remembered_for_an_object() {
        let mut resolver = AddressResolver::default();
        let shop = resolver.resolve("#/core/v1/pods?namespace=shop", |_| None);
        assert_eq!(shop.table, Ok(route("#/core/v1/pods?namespace=shop")));
        assert_eq!((shop.logs, shop.object), (None, None));
        // the table the user was on holds it: it wins over a kept view
        let kept = route("#/core/v1/pods?labelSelector=app%3Dweb");
        let object = resolver.resolve("#/core/v1/pods/shop/web-1", |_| Some(kept));
        assert_eq!(object.table, Ok(route("#/core/v1/pods?namespace=shop")));
        assert_eq!(
            object.object.map(|o| o.key()),
            Some("shop/web-1".to_string())
        );
    }

    #[test]
    fn an_object_keeps_its_table_while_it_stays_open() {
        let mut resolver = AddressResolver::default();
        let kept = route("#/core/v1/pods?labelSelector=app%3Dweb");
        let first = resolver.resolve("#/core/v1/pods/shop/web-1", |_| Some(kept.clone()));
        assert_eq!(first.table, Ok(kept.clone()));
        // the kept view went away: the same object keeps the table it had
        let again = resolver.resolve("#/core/v1/pods/shop/web-1", |_| None);
        assert_eq!(again.table, Ok(kept));
        // another object of another resource: its own namespace's table
        let node = resolver.resolve("#/core/v1/nodes/_/n1", |_| None);
        assert_eq!(node.table, Ok(route("#/core/v1/nodes")));
    }

    #[test]
    fn a_logs_address_names_no_table_and_a_bad_one_says_why() {
        let mut resolver = AddressResolver::default();
        let logs = resolver.resolve("#/core/v1/pods/shop/web-1/log", |_| None);
        assert_eq!(
            logs.logs.map(|l| l.title()),
            Some("pod shop/web-1".to_string())
        );
        assert_eq!(logs.object, None);
        assert!(matches!(logs.table, Err(RouteError::Shape(_))));
        let bad = resolver.resolve("#/core/v1/Pods", |_| None);
        assert!(matches!(bad.table, Err(RouteError::Name(..))));
        // neither is remembered as the table the user was on
        let object = resolver.resolve("#/core/v1/pods/shop/web-1", |_| None);
        assert_eq!(object.table, Ok(route("#/core/v1/pods?namespace=shop")));
    }

    #[test]
    fn an_object_opened_from_the_table_closes_with_back() {
        let mut visit = ObjectVisit::default();
        assert_eq!(visit.open("#/core/v1/pods"), OpenStep::Push);
        // another object over it replaces its address, and back still returns
        assert_eq!(visit.open("#/core/v1/pods/shop/web-1"), OpenStep::Replace);
        assert_eq!(visit.close(), CloseStep::Back);
        // the next close (no new open) goes to the table's address
        assert_eq!(visit.close(), CloseStep::ShowTable);
    }

    #[test]
    fn an_object_whose_address_was_opened_directly_closes_to_its_table() {
        let mut visit = ObjectVisit::default();
        assert_eq!(visit.open("#/core/v1/pods/shop/web-1"), OpenStep::Replace);
        assert_eq!(visit.close(), CloseStep::ShowTable);
        assert_eq!(visit.open(""), OpenStep::Push);
        visit.closed(); // the back button closed it
        assert_eq!(visit.close(), CloseStep::ShowTable);
    }
}
