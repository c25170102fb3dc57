//! Fuzz target: the proxy's path normaliser never panics; a normalised path
//! starts with `/`, has no empty, `.` or `..` segment, normalises to itself
//! (idempotent), and classifying it never panics.
#![no_main]

use deltascope_proxy::paths::{classify, normalise};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(p) = normalise(raw) else {
        return;
    };
    let s = p.as_str();
    assert!(s.starts_with('/'), "{raw:?} → {s:?}");
    assert!(
        p.segments()
            .iter()
            .all(|seg| !seg.is_empty() && seg != "." && seg != ".."),
        "{raw:?} → segments {:?}",
        p.segments()
    );
    assert!(
        !s.split('/').skip(1).any(|seg| seg == ".." || seg == "."),
        "{raw:?} → {s:?} keeps a dot segment"
    );
    match normalise(s) {
        Ok(again) => assert_eq!(again, p, "not idempotent: {raw:?} → {s:?} → {again:?}"),
        Err(e) => panic!("{raw:?} → {s:?}, which does not normalise again: {e}"),
    }
    let _ = classify(&p, false);
    let _ = classify(&p, true);
});
