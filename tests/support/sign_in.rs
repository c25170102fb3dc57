//! Signing in to a `deltascope serve` a test started: the token it gives
//! serve, and sign-in links (a link's one-time code signs in one browser,
//! once; a browser after the first needs a new link).

use std::io::Read;
use std::net::SocketAddr;

use serde_json::Value;

use super::http;

/// 256 random bits, hex: a session token for a serve a test starts.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sign-in link `link` (`http://ADDR/?code=…`) opened through `base`
/// (`http://RELAY/`, a relay or proxy in front of serve) instead.
pub fn link_through(base: &str, link: &str) -> String {
    let query = link
        .find('?')
        .map(|at| &link[at..])
        .unwrap_or_else(|| panic!("a sign-in link with a query: {link}"));
    format!("{base}{query}")
}

/// A new sign-in link of the serve at `addr`, asked for with its token
/// (`POST /_deltascope/sign-in-link`).
pub fn new_sign_in_link(addr: SocketAddr, token: &str) -> String {
    let (status, body) = http(
        addr,
        "POST",
        "/_deltascope/sign-in-link",
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "a new sign-in link: {text}");
    let value: Value = serde_json::from_slice(&body).expect("the link as JSON");
    value["url"].as_str().expect("url").to_string()
}
