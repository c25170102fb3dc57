//! The change log's cursors (see `ChangeLog`): each reader at its own
//! pace, a lagging one told so, the capacity respected.

use super::*;

fn change(i: usize) -> StoreChange {
    StoreChange {
        key: format!("default/o{i}"),
        kind: ChangeKind::Added,
    }
}

fn read(log: &ChangeLog, cursor: &mut ChangeCursor) -> Option<Vec<String>> {
    match log.read(cursor) {
        ChangeRead::Changes(changes) => Some(changes.map(|c| c.key.clone()).collect()),
        ChangeRead::Lagged => None,
    }
}

#[test]
fn two_readers_each_see_every_change_at_their_own_pace() {
    let mut log = ChangeLog::new(100);
    let mut fast = ChangeCursor { next: log.end() };
    let mut slow = fast;
    for i in 0..3 {
        log.push(change(i));
    }
    assert_eq!(
        read(&log, &mut fast).unwrap(),
        ["default/o0", "default/o1", "default/o2"]
    );
    log.push(change(3));
    assert_eq!(read(&log, &mut fast).unwrap(), ["default/o3"]);
    assert_eq!(read(&log, &mut fast).unwrap(), Vec::<String>::new());
    assert_eq!(
        read(&log, &mut slow).unwrap(),
        ["default/o0", "default/o1", "default/o2", "default/o3"]
    );
}

#[test]
fn a_reader_that_falls_behind_is_told_it_lagged_and_can_resync() {
    let mut log = ChangeLog::new(4);
    let mut behind = ChangeCursor { next: log.end() };
    let mut current = behind;
    for i in 0..6 {
        log.push(change(i));
        assert_eq!(read(&log, &mut current).unwrap(), [format!("default/o{i}")]);
    }
    // o0 and o1 were dropped before `behind` read them: no partial list.
    assert_eq!(read(&log, &mut behind), None);
    // Resynced (from the store): it reads only what comes next.
    log.push(change(6));
    assert_eq!(read(&log, &mut behind).unwrap(), ["default/o6"]);
    // Exactly at the bound is not lagging.
    let mut at_bound = ChangeCursor { next: log.end() };
    for i in 7..11 {
        log.push(change(i));
    }
    assert_eq!(read(&log, &mut at_bound).unwrap().len(), 4);
}

#[test]
fn a_smaller_capacity_drops_the_oldest_and_zero_keeps_none() {
    let mut log = ChangeLog::new(10);
    let mut cursor = ChangeCursor { next: log.end() };
    for i in 0..5 {
        log.push(change(i));
    }
    log.set_capacity(0);
    assert_eq!(read(&log, &mut cursor), None);
    log.push(change(5));
    assert_eq!(read(&log, &mut cursor), None, "nothing is kept to read");
    log.set_capacity(10);
    log.push(change(6));
    assert_eq!(read(&log, &mut cursor).unwrap(), ["default/o6"]);
}

#[test]
fn a_cursor_from_another_log_lags_rather_than_reading_wrong_changes() {
    let mut long = ChangeLog::new(10);
    for i in 0..5 {
        long.push(change(i));
    }
    let mut foreign = ChangeCursor { next: long.end() };
    let short = ChangeLog::new(10);
    assert_eq!(read(&short, &mut foreign), None);
    assert_eq!(foreign, ChangeCursor { next: short.end() });
}
