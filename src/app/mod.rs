//! The page's own state and decisions, with no web dependency (tested
//! natively): the hash route, the `:` commands, which resources are kept
//! live (`kept_set`), retention settings, and when API discovery runs
//! again (`discovery_schedule`), and the UI state with the actions that
//! change it (`state`), and the logs view's address (`log_route`) and
//! display state (`log_ui`).

pub mod command;
pub mod discovery_schedule;
pub mod kept_set;
pub mod log_route;
pub mod log_ui;
pub mod object_route;
pub mod retention;
pub mod route;
pub mod state;
