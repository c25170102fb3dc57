//! The page's addresses: what a hash route names and how it is written.
//! A table (`route`: a resource with its namespace and selectors), one
//! object (`object_route`, with the table shown behind it) and a logs view
//! (`log_route`). Pure parsing and formatting, with no web dependency and
//! tested natively, so a view is a link and every layer that builds links
//! (the view models' related objects, the state's commands, the views) uses
//! the same code. Below `model`: the view models write addresses, and the
//! page's state and views read them.

pub mod log_route;
pub mod object_route;
pub mod route;
