//! The history store's tests on both engines (SQLite, and PostgreSQL when
//! `DELTASCOPE_TEST_POSTGRES` names a server), one module per area, built as
//! one test binary (`support` compiled and linked once).

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod database;
mod marks;
mod retention;
mod storage;
mod usage;
