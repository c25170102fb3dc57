//! The informer's last error in plain words for the page: what went wrong and
//! what the user can do, one short line each (401 → sign in again, 403 → which
//! role is missing, upstream down → is kubectl proxy running?, 400 → fix the
//! selector, 404 → pick a resource). Pure Rust,
//! tested natively; the full technical text stays in the status bar.

use crate::informer::{Op, ReflectorError};

/// A problem the page shows above the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainError {
    /// A stable name for tests and styling: `session`, `forbidden`,
    /// `bad-request`, `not-found`, `upstream`, `throttled`, `server`.
    pub kind: &'static str,
    pub title: String,
    pub advice: String,
}

/// Where the view lists: a namespace, or all of them (or the cluster for
/// cluster-scoped resources).
pub fn scope_words(namespace: Option<&str>, namespaced: bool) -> String {
    match (namespace, namespaced) {
        (Some(ns), _) => format!("namespace {ns}"),
        (None, true) => "any namespace".to_string(),
        (None, false) => "the cluster".to_string(),
    }
}

fn verb(op: Op) -> &'static str {
    match op {
        Op::List => "list",
        Op::Watch => "watch",
    }
}

/// The plain words for `error` while viewing `resource` (plural, `.group`
/// suffix for non-core) in `scope` (see [`scope_words`]); `None` when the
/// technical text in the status bar is all there is to say.
pub fn plain_words(error: &ReflectorError, resource: &str, scope: &str) -> Option<PlainError> {
    let (op, status, message) = match error {
        ReflectorError::Http {
            op,
            status,
            message,
            ..
        } => (*op, *status, message.as_str()),
        ReflectorError::WatchEvent { code, message, .. } => (Op::Watch, *code, message.as_str()),
        ReflectorError::Network { .. } => {
            return Some(PlainError {
                kind: "upstream",
                title: "Cannot reach the deltascope server".to_string(),
                advice: "Is the deltascope command still running? The page retries on its own."
                    .to_string(),
            })
        }
        _ => return None,
    };
    let detail = if message.is_empty() {
        String::new()
    } else {
        format!(" The server said: {message}")
    };
    Some(match status {
        401 => PlainError {
            kind: "session",
            title: "Session expired".to_string(),
            advice: "Reload this page to sign in again: deltascope serve's sign-in page has it print a new one-time link (it ends in ?code=…) in its terminal, or takes the token.".to_string(),
        },
        403 => PlainError {
            kind: "forbidden",
            // "list" whichever request failed: a streaming list is a watch on the wire,
            // but what the user cannot do is read the table.
            title: format!("Your cluster role cannot list {resource} in {scope}"),
            advice: format!(
                "Ask for list and watch permission on {resource}, or pick a namespace you may read. deltascope tries again every few minutes; press Retry now once access is granted.{detail}"
            ),
        },
        400 | 422 => PlainError {
            kind: "bad-request",
            title: format!("The server rejected the request for {resource}"),
            advice: format!(
                "Fix the label or field selector above (or show the view without them); deltascope does not send a request the server called invalid again.{detail}"
            ),
        },
        404 => PlainError {
            kind: "not-found",
            title: format!("The cluster does not serve {resource}"),
            advice: format!("Pick a resource from the list above (or type : and a name); check the API group and version, or whether its CRD is installed.{detail}"),
        },
        502 | 504 => PlainError {
            kind: "upstream",
            title: "Cannot reach the Kubernetes API: is kubectl proxy running?".to_string(),
            advice: format!("Start it with `kubectl proxy --port 8001` (or the address given to --upstream); the page retries on its own.{detail}"),
        },
        429 => PlainError {
            kind: "throttled",
            title: "The cluster is throttling requests".to_string(),
            advice: "deltascope waits as the server asks, then goes on.".to_string(),
        },
        500..=599 => PlainError {
            kind: "server",
            title: format!("The Kubernetes API failed while {}ing {resource}", verb(op)),
            advice: format!("deltascope retries with backoff.{detail}"),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(op: Op, status: u16, message: &str) -> ReflectorError {
        ReflectorError::Http {
            op,
            resource: "pods".into(),
            status,
            reason: String::new(),
            message: message.into(),
        }
    }

    #[test]
    fn forbidden_names_the_verb_resource_and_scope() {
        let error = http(
            Op::List,
            403,
            "pods is forbidden: User \"u\" cannot list resource \"pods\"",
        );
        let words = plain_words(&error, "pods", &scope_words(Some("shop"), true)).expect("words");
        assert_eq!(words.kind, "forbidden");
        assert_eq!(
            words.title,
            "Your cluster role cannot list pods in namespace shop"
        );
        assert!(words.advice.contains("cannot list resource \"pods\""));
        let watch = plain_words(
            &http(Op::Watch, 403, ""),
            "nodes",
            &scope_words(None, false),
        )
        .expect("words");
        assert_eq!(
            watch.title,
            "Your cluster role cannot list nodes in the cluster"
        );
        assert_eq!(scope_words(None, true), "any namespace");
    }

    #[test]
    fn session_upstream_and_others() {
        let scope = scope_words(None, true);
        let kind = |error: ReflectorError| plain_words(&error, "pods", &scope).map(|w| w.kind);
        assert_eq!(kind(http(Op::List, 401, "")), Some("session"));
        assert_eq!(kind(http(Op::List, 502, "")), Some("upstream"));
        assert_eq!(kind(http(Op::List, 404, "")), Some("not-found"));
        assert_eq!(kind(http(Op::Watch, 503, "")), Some("server"));
        assert_eq!(kind(http(Op::List, 429, "")), Some("throttled"));
        assert_eq!(kind(http(Op::List, 400, "")), Some("bad-request"));
        assert_eq!(kind(http(Op::List, 418, "")), None);
        let bad = plain_words(
            &http(Op::List, 400, "unable to parse requirement"),
            "pods",
            &scope,
        )
        .expect("words");
        assert!(bad.advice.contains("selector"), "{}", bad.advice);
        assert!(bad.advice.contains("unable to parse requirement"));
        let upstream = plain_words(&http(Op::List, 502, ""), "pods", &scope).expect("words");
        assert!(upstream.title.contains("is kubectl proxy running?"));
        let session = plain_words(&http(Op::List, 401, ""), "pods", &scope).expect("words");
        assert!(
            session.advice.contains("one-time link"),
            "{}",
            session.advice
        );
    }
}
