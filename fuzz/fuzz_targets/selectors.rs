//! Fuzz target: the simulated cluster's label and field selector parsers
//! never panic on any query string, and a parsed selector can be matched
//! against objects (with and without labels) without panicking. The parsers
//! have no Display, so there is no parse → print → parse round trip to check.
#![no_main]

use deltascope_sim::selectors::{extra_fields, FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let objects = [
        serde_json::json!({"metadata": {"name": "a", "namespace": "ns",
            "labels": {"app": "web", "tier": "", "x.io/y": "z"}},
            "status": {"phase": "Running"}, "spec": {"nodeName": "n1"}}),
        serde_json::json!({"metadata": {"name": "b"}}),
        serde_json::json!(null),
    ];
    if let Ok(sel) = LabelSelector::parse(s) {
        for o in &objects {
            let _ = sel.matches(o);
        }
        // parsing is deterministic and a selector is empty only if every
        // requirement was blank
        let again = LabelSelector::parse(s).map(|l| l.is_empty());
        assert_eq!(again, Ok(sel.is_empty()));
        if sel.is_empty() {
            assert!(
                s.split(',').all(|p| p.trim().is_empty()),
                "{s:?} parsed as empty"
            );
        }
    }
    for plural in ["pods", "events", "secrets", "deployments"] {
        if let Ok(sel) = FieldSelector::parse(s, plural, extra_fields(plural)) {
            for o in &objects {
                let _ = sel.matches(o);
            }
        }
    }
});
