//! Fuzz target: decoding a watch line, a list body and an error Status from
//! arbitrary bytes never panics, and a decoded object always has a key.
#![no_main]

use deltascope_informer::{decode_event, decode_list, Status, WatchEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)) =
        decode_event(data)
    {
        assert!(!o.key.is_empty(), "an object decoded without a key");
    }
    if let Ok(page) = decode_list(data) {
        assert!(page.items.iter().all(|o| !o.key.is_empty()));
        assert!(page.continue_token.as_deref() != Some(""));
    }
    let _ = Status::from_body(data);
});
