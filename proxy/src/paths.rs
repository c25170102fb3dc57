//! Path normalisation and classification for `deltascope serve`.
//!
//! Every decision (auth, allowlist, read-only, redaction) is taken on the
//! normalised path, and exactly that normalised path is forwarded, so the proxy
//! and the upstream can never disagree about which resource a request names.
//! Normalisation percent-decodes every segment (so `%65xec` is `exec` and
//! `%2e%2e` is `..`), refuses encoded slashes and backslashes outright, drops
//! empty and `.` segments, resolves `..` (refusing to climb above the root) and
//! re-encodes each segment canonically.

use crate::history_api::HistoryRoute;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};

/// Bytes re-encoded when a normalised segment is written back into a path.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'/')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

/// Subresources that open a shell, a tunnel or a proxy into the cluster: never forwarded.
const FORBIDDEN_SUBRESOURCES: [&str; 4] = ["exec", "attach", "portforward", "proxy"];

/// Why a path cannot even be normalised (answered with 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("encoded slashes and backslashes are not accepted in paths")]
    EncodedSeparator,
    #[error("the path contains an invalid percent-encoding")]
    BadEncoding,
    #[error("the path climbs above the root with `..`")]
    AboveRoot,
    #[error("backslashes are not accepted in paths")]
    Backslash,
}

/// A normalised path: its decoded segments and its canonical encoded form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalPath {
    segments: Vec<String>,
    encoded: String,
}

impl NormalPath {
    /// The canonical, encoded form (what is forwarded), always starting with `/`.
    pub fn as_str(&self) -> &str {
        &self.encoded
    }

    /// The decoded segments, no empty ones.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }
}

impl std::fmt::Display for NormalPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.encoded)
    }
}

/// Normalises the path part of a request URI (no query).
pub fn normalise(raw: &str) -> Result<NormalPath, PathError> {
    if raw.contains('\\') {
        return Err(PathError::Backslash);
    }
    let mut segments: Vec<String> = Vec::new();
    for raw_segment in raw.split('/') {
        let decoded = decode_segment(raw_segment)?;
        match decoded.as_str() {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
            }
            _ => segments.push(decoded),
        }
    }
    Ok(from_segments(segments))
}

/// The path of decoded `segments` (none empty, `.` or `..`), encoded canonically.
fn from_segments(segments: Vec<String>) -> NormalPath {
    let mut encoded = String::new();
    for segment in &segments {
        encoded.push('/');
        encoded.extend(utf8_percent_encode(segment, SEGMENT));
    }
    if encoded.is_empty() {
        encoded.push('/');
    }
    NormalPath { segments, encoded }
}

/// `/clusters/{name}/rest…` → the cluster's name and `/rest…`, the path
/// that cluster is sent (`None` for any other path). Whether `rest` is an
/// API path is [`classify`]'s to say.
pub fn split_cluster(path: &NormalPath) -> Option<(&str, NormalPath)> {
    match path.segments() {
        [clusters, name, rest @ ..] if clusters == "clusters" && !rest.is_empty() => {
            Some((name.as_str(), from_segments(rest.to_vec())))
        }
        _ => None,
    }
}

fn decode_segment(segment: &str) -> Result<String, PathError> {
    // Validate every escape first: `percent_decode` silently keeps malformed ones.
    let bytes = segment.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or(PathError::BadEncoding)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(PathError::BadEncoding);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    let decoded = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| PathError::BadEncoding)?;
    if decoded.contains('/') || decoded.contains('\\') {
        return Err(PathError::EncodedSeparator);
    }
    if decoded.contains('\0') {
        return Err(PathError::BadEncoding);
    }
    Ok(decoded.into_owned())
}

/// What a normalised path is, for routing and policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/healthz`: no auth, no cluster data.
    Healthz,
    /// `/`: the page (and the sign-in link `?code=`, and the sign-in form).
    Index,
    /// Another file of the page.
    Asset,
    /// A Kubernetes API path on the allowlist.
    Api(ApiPath),
    /// `/_sim/*` in demo mode.
    Sim,
    /// `/_deltascope/channel` (open one: `None`) or `/_deltascope/channel/{id}`
    /// (control it): the page's multiplexed channel, see [`crate::channel`].
    Channel(Option<String>),
    /// `/_deltascope/sign-out`: ends the browser's session (see [`crate::auth`]).
    SignOut,
    /// `/_deltascope/signin?code=C`: the printed link's exchange under a path
    /// a proxy in front of serve forwards (`trunk serve` proxies `/_deltascope`,
    /// not `/`); its redirect to `/` lands on the proxy's page.
    SignIn,
    /// `/_deltascope/sign-in-link`: a new sign-in link, as JSON for a client
    /// with a session or the token, printed in serve's terminal for the
    /// sign-in page's button (see [`crate::auth`]).
    SignInLink,
    /// `/_deltascope/history`, `/history/state`, `/history/summary`,
    /// `/history/marks`, `/history/usage`: the
    /// recorded history (see [`crate::history_api`]).
    History(crate::history_api::HistoryRoute),
    /// `/_deltascope/clusters`: the clusters serve forwards to and their
    /// state (see [`crate::clusters`]).
    Clusters,
    /// Refused whatever the credentials or method (403).
    Forbidden(&'static str),
}

/// Facts about an allowlisted API path that the policy and the forwarder need.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiPath {
    /// The resource (plural) named by the path, if any, e.g. `pods`, `secrets`.
    pub resource: Option<String>,
    /// The path uses the legacy `/watch/` prefix.
    pub watch_prefix: bool,
    /// The subresource named after the object, if any, e.g. `log`, `status`.
    pub subresource: Option<String>,
}

impl ApiPath {
    /// Responses may carry Secret values.
    pub fn is_secrets(&self) -> bool {
        self.resource.as_deref() == Some("secrets")
    }
}

/// The normalised path of a request and what it names; set by serve's
/// `normalise` layer, read by every layer after it and the dispatcher.
#[derive(Debug, Clone)]
pub struct Classified {
    pub path: NormalPath,
    pub route: Route,
}

/// Classifies a normalised path. `demo` enables `/_sim/*`.
pub fn classify(path: &NormalPath, demo: bool) -> Route {
    let segs = path.segments();
    let Some(first) = segs.first() else {
        return Route::Index;
    };
    match first.as_str() {
        "healthz" if segs.len() == 1 => Route::Healthz,
        "index.html" if segs.len() == 1 => Route::Index,
        "_sim" => {
            if demo {
                Route::Sim
            } else {
                Route::Forbidden("/_sim exists only with `deltascope serve --demo`")
            }
        }
        "_deltascope" => match segs {
            [_, channel] if channel == "channel" => Route::Channel(None),
            [_, channel, id] if channel == "channel" => Route::Channel(Some(id.clone())),
            [_, sign_out] if sign_out == "sign-out" => Route::SignOut,
            [_, sign_in] if sign_in == "signin" => Route::SignIn,
            [_, link] if link == "sign-in-link" => Route::SignInLink,
            [_, clusters] if clusters == "clusters" => Route::Clusters,
            [_, history] if history == "history" => Route::History(HistoryRoute::Lines),
            [_, history, which] if history == "history" => match which.as_str() {
                "state" => Route::History(HistoryRoute::State),
                "summary" => Route::History(HistoryRoute::Summary),
                "marks" => Route::History(HistoryRoute::Marks),
                "usage" => Route::History(HistoryRoute::Usage),
                _ => Route::Forbidden("no such deltascope endpoint"),
            },
            _ => Route::Forbidden("no such deltascope endpoint"),
        },
        // `/clusters/{name}/api/…`: one of several clusters, by name,
        // under the same rules as the default cluster's `/api/…`.
        "clusters" => segs
            .get(2..)
            .and_then(classify_api)
            .unwrap_or(Route::Forbidden(
                "under /clusters/NAME/ deltascope forwards the Kubernetes API only \
                 (/clusters/NAME/api/…, /clusters/NAME/apis/…, /clusters/NAME/version)",
            )),
        _ => classify_api(segs).unwrap_or(Route::Asset),
    }
}

/// A Kubernetes API path (`segs` not empty), or `None`.
fn classify_api(segs: &[String]) -> Option<Route> {
    Some(match segs.first()?.as_str() {
        "version" | "openapi" => Route::Api(ApiPath::default()),
        "api" => classify_resource(&segs[1..], 1),
        "apis" => classify_resource(&segs[1..], 2),
        _ => return None,
    })
}

/// `after_root` is the path after `/api` or `/apis`; `gv_len` the number of
/// group-version segments (1 for `v1`, 2 for `apps/v1`).
fn classify_resource(after_root: &[String], gv_len: usize) -> Route {
    if after_root.len() <= gv_len {
        // Discovery: `/api`, `/api/v1`, `/apis`, `/apis/apps`, `/apis/apps/v1`.
        return Route::Api(ApiPath::default());
    }
    let mut parts = &after_root[gv_len..];
    let mut watch_prefix = false;
    if parts.first().map(String::as_str) == Some("watch") {
        watch_prefix = true;
        parts = &parts[1..];
    }
    // As the apiserver does: `namespaces/NS/...` names a namespaced resource
    // unless what follows is a subresource of the namespace itself.
    if parts.len() > 2
        && parts[0] == "namespaces"
        && !matches!(parts[2].as_str(), "status" | "finalize")
    {
        parts = &parts[2..];
    }
    let forbidden = |s: &String| FORBIDDEN_SUBRESOURCES.contains(&s.as_str());
    if parts.first().is_some_and(forbidden) || parts.iter().skip(2).any(forbidden) {
        return Route::Forbidden(
            "exec, attach, portforward and proxy subresources are never forwarded by deltascope",
        );
    }
    Route::Api(ApiPath {
        resource: parts.first().cloned(),
        watch_prefix,
        subresource: parts.get(2).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> Result<String, PathError> {
        normalise(s).map(|p| p.as_str().to_owned())
    }

    #[test]
    fn normalises_dots_and_slashes() {
        assert_eq!(norm("/api/../_sim/fault").as_deref(), Ok("/_sim/fault"));
        assert_eq!(norm("//api//v1/./pods/").as_deref(), Ok("/api/v1/pods"));
        assert_eq!(norm("/api/%2e%2e/_sim").as_deref(), Ok("/_sim"));
        assert_eq!(
            norm("/api/v1/pods/%65xec").as_deref(),
            Ok("/api/v1/pods/exec")
        );
        assert_eq!(norm("/").as_deref(), Ok("/"));
        assert_eq!(norm("/a%20b").as_deref(), Ok("/a%20b"));
        assert_eq!(norm("/.."), Err(PathError::AboveRoot));
        assert_eq!(norm("/api%2fv1"), Err(PathError::EncodedSeparator));
        assert_eq!(norm("/api%2Fv1"), Err(PathError::EncodedSeparator));
        assert_eq!(norm("/api%5cv1"), Err(PathError::EncodedSeparator));
        assert_eq!(norm("/api%zz"), Err(PathError::BadEncoding));
        assert_eq!(norm("/api%2"), Err(PathError::BadEncoding));
    }

    #[test]
    fn classifies() {
        let c = |s: &str, demo| classify(&normalise(s).unwrap(), demo);
        assert!(matches!(
            c("/api/v1/namespaces/x/pods/y/exec", false),
            Route::Forbidden(_)
        ));
        assert!(matches!(
            c("/api/v1/namespaces/x/pods/y/proxy/z", false),
            Route::Forbidden(_)
        ));
        assert!(matches!(
            c("/api/v1/proxy/nodes/n", false),
            Route::Forbidden(_)
        ));
        assert!(matches!(
            c("/api/v1/nodes/n/proxy", false),
            Route::Forbidden(_)
        ));
        assert!(matches!(
            c("/apis/apps/v1/namespaces/x/deployments/exec", false),
            Route::Api(_)
        ));
        assert!(matches!(c("/_sim/fault", false), Route::Forbidden(_)));
        assert_eq!(c("/_sim/fault", true), Route::Sim);
        assert_eq!(c("/healthz", false), Route::Healthz);
        assert_eq!(c("/_deltascope/channel", false), Route::Channel(None));
        assert_eq!(
            c("/_deltascope/channel/ab12", false),
            Route::Channel(Some("ab12".into()))
        );
        assert!(matches!(
            c("/_deltascope/other", false),
            Route::Forbidden(_)
        ));
        assert_eq!(c("/_deltascope/sign-out", false), Route::SignOut);
        assert_eq!(c("/_deltascope/signin", false), Route::SignIn);
        assert_eq!(c("/_deltascope/sign-in-link", false), Route::SignInLink);
        assert_eq!(
            c("/_deltascope/history", false),
            Route::History(HistoryRoute::Lines)
        );
        assert_eq!(
            c("/_deltascope/history/state", false),
            Route::History(HistoryRoute::State)
        );
        assert_eq!(
            c("/_deltascope/history/summary", false),
            Route::History(HistoryRoute::Summary)
        );
        assert_eq!(
            c("/_deltascope/history/marks", false),
            Route::History(HistoryRoute::Marks)
        );
        assert_eq!(
            c("/_deltascope/history/usage", false),
            Route::History(HistoryRoute::Usage)
        );
        assert!(matches!(
            c("/_deltascope/history/other", false),
            Route::Forbidden(_)
        ));
        match c("/api/v1/namespaces/x/pods/y/log", false) {
            Route::Api(p) => assert_eq!(p.subresource.as_deref(), Some("log")),
            other => panic!("{other:?}"),
        }
        assert_eq!(c("/_deltascope/clusters", false), Route::Clusters);
        match c("/clusters/a/api/v1/watch/namespaces/x/secrets", false) {
            Route::Api(p) => assert!(p.is_secrets() && p.watch_prefix),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            c("/clusters/a/api/v1/namespaces/x/pods/y/exec", false),
            Route::Forbidden(_)
        ));
        for refused in [
            "/clusters",
            "/clusters/a",
            "/clusters/a/_sim/fault",
            "/clusters/a/x",
        ] {
            assert!(matches!(c(refused, true), Route::Forbidden(_)), "{refused}");
        }
        let path = normalise("/clusters/b%20c/apis/apps/v1/deployments").unwrap();
        let (name, rest) = split_cluster(&path).unwrap();
        assert_eq!((name, rest.as_str()), ("b c", "/apis/apps/v1/deployments"));
        assert!(split_cluster(&normalise("/api/v1/pods").unwrap()).is_none());
        assert_eq!(c("/", false), Route::Index);
        assert_eq!(c("/app.wasm", false), Route::Asset);
        match c("/api/v1/watch/namespaces/x/secrets", false) {
            Route::Api(p) => assert!(p.is_secrets() && p.watch_prefix),
            other => panic!("{other:?}"),
        }
        match c("/api/v1/secrets", false) {
            Route::Api(p) => assert!(p.is_secrets()),
            other => panic!("{other:?}"),
        }
        match c("/api/v1/namespaces/secrets", false) {
            Route::Api(p) => assert!(!p.is_secrets()),
            other => panic!("{other:?}"),
        }
    }
}
