//! What the server printed: the column definitions of its Tables, learned
//! from a list (paginated or streamed) and kept until the next list says
//! otherwise. A server that answers plain objects to a Table request does
//! not print Tables; one whose Tables carry no columns keeps the last known.

use std::sync::Arc;

use crate::table::ColumnDefinition;

/// The server's columns as the informer knows them.
#[derive(Debug, Default)]
pub(crate) struct ServerColumns {
    current: Option<Arc<[ColumnDefinition]>>,
}

impl ServerColumns {
    pub(crate) fn get(&self) -> Option<&Arc<[ColumnDefinition]>> {
        self.current.as_ref()
    }

    /// The first columns ever seen, adopted at once so the first list shows
    /// them while it is still arriving (later lists change them only when
    /// they are complete).
    pub(crate) fn adopt_if_unknown(&mut self, defs: &[ColumnDefinition]) {
        if self.current.is_none() && !defs.is_empty() {
            self.current = Some(defs.into());
        }
    }

    /// Adopts `defs` unless the same columns are already known (so callers
    /// comparing with `Arc::ptr_eq` see no change).
    fn adopt(&mut self, defs: Vec<ColumnDefinition>) {
        if self.current.as_deref() != Some(defs.as_slice()) {
            self.current = Some(defs.into());
        }
    }
}

/// What the responses of one list (its pages, or a streaming list's initial
/// events) printed so far.
#[derive(Debug, Default)]
pub(crate) struct PrintedSoFar {
    /// The first non-empty column definitions.
    columns: Option<Vec<ColumnDefinition>>,
    /// Some response carried Table rows.
    saw_table: bool,
    /// Some response carried plain objects.
    saw_plain: bool,
}

impl PrintedSoFar {
    /// A response arrived: a Table (`table`) with `columns`, or plain
    /// objects. The first columns are shown at once if none are known yet.
    pub(crate) fn saw(
        &mut self,
        table: bool,
        columns: Option<Vec<ColumnDefinition>>,
        server: &mut ServerColumns,
    ) {
        if table {
            self.saw_table = true;
        } else {
            self.saw_plain = true;
        }
        if self.columns.is_none() {
            self.columns = columns.filter(|defs| !defs.is_empty());
            if let Some(defs) = &self.columns {
                server.adopt_if_unknown(defs);
            }
        }
    }

    /// Only columns, no row (a streaming list's event without an object
    /// row, e.g. a bookmark of a Table watch).
    pub(crate) fn saw_columns(
        &mut self,
        columns: Option<Vec<ColumnDefinition>>,
        server: &mut ServerColumns,
    ) {
        if self.columns.is_none() {
            self.columns = columns.filter(|defs| !defs.is_empty());
            if let Some(defs) = &self.columns {
                server.adopt_if_unknown(defs);
            }
        }
    }

    /// The list is complete: Tables with columns set them; plain objects
    /// only mean the server does not print Tables; otherwise nothing is
    /// learned.
    pub(crate) fn finish(self, server: &mut ServerColumns) {
        match (self.columns, self.saw_table, self.saw_plain) {
            (Some(defs), _, false) => server.adopt(defs),
            (_, false, true) => server.current = None,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str) -> ColumnDefinition {
        ColumnDefinition {
            name: name.into(),
            ..ColumnDefinition::default()
        }
    }

    #[test]
    fn the_first_columns_show_while_the_first_list_arrives() {
        let mut server = ServerColumns::default();
        let mut list = PrintedSoFar::default();
        list.saw(true, Some(vec![column("NAME")]), &mut server);
        assert_eq!(server.get().map(|c| c.len()), Some(1));
        list.finish(&mut server);
        let first = server.get().cloned();

        // a later list with the same columns keeps the same Arc
        let mut again = PrintedSoFar::default();
        again.saw(true, Some(vec![column("NAME")]), &mut server);
        again.finish(&mut server);
        assert!(matches!((first, server.get()), (Some(a), Some(b)) if Arc::ptr_eq(&a, b)));
    }

    #[test]
    fn plain_objects_mean_no_tables_and_empty_tables_keep_what_is_known() {
        let mut server = ServerColumns::default();
        let mut list = PrintedSoFar::default();
        list.saw(true, Some(vec![column("NAME")]), &mut server);
        list.finish(&mut server);

        let mut empty = PrintedSoFar::default();
        empty.saw(true, Some(Vec::new()), &mut server);
        empty.finish(&mut server);
        assert!(server.get().is_some(), "columns kept");

        let mut plain = PrintedSoFar::default();
        plain.saw(false, None, &mut server);
        plain.finish(&mut server);
        assert!(server.get().is_none(), "the server stopped printing Tables");
    }
}
