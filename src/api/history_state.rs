//! A resource as serve's record holds it at a moment: the path of
//! `GET /_deltascope/history/state?resource=R&at=T[&namespace=NS]`
//! (ARCHITECTURE.md's History contracts; [`history_state_path`]), its
//! answer — `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":RV},"items":[…]}`
//! — read a few items at a time ([`StateBody`]: a body of many megabytes
//! parsed at once would hold the page's thread), and what serve's 409 says
//! ([`uncovered`]: the moment is in a gap of the record, before its start
//! or after what it knows complete). Strict where the page would show a
//! wrong table (a body that is no List, an item that is no object with a
//! name: refused, naming where), lenient about fields serve adds later.
//! When the page asks and what an answer means is
//! `crate::app::recorded_travel`.

use serde::Deserialize;

use crate::api::object_record::RecordGap;
use crate::informer::{JsonValue, KubeObject, ObjectRef};
use deltascope_facts::percent::encode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};
use deltascope_informer::json::skip::{string_end, value_end};

/// serve's past states of a resource.
pub const STATE_PATH: &str = "/_deltascope/history/state";

/// `GET /_deltascope/history/state` for `resource` (as in `data-resource`)
/// at `at_ms`, in `namespace` when given.
pub fn history_state_path(resource: &str, at_ms: i64, namespace: Option<&str>) -> String {
    let mut path = format!("{STATE_PATH}?resource={}", encode_query_value(resource));
    if let Some(at) = format_rfc3339_millis(at_ms) {
        path.push_str("&at=");
        path.push_str(&encode_query_value(&at));
    }
    if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
        path.push_str("&namespace=");
        path.push_str(&encode_query_value(namespace));
    }
    path
}

/// Why a body is not a state the page can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateBodyError {
    #[error("serve's state is not a List: {what} at byte {at}")]
    Malformed { at: usize, what: String },
    #[error("item {index} of serve's state is not an object the page can show: {message}")]
    BadItem { index: usize, message: String },
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Between the List's fields (`first`: none read yet).
    Fields {
        first: bool,
    },
    /// Inside `items`.
    Items {
        first: bool,
    },
    Done,
}

/// serve's answer, read a few items at a time: the List's fields are
/// passed over (its `metadata.resourceVersion` kept), each item of `items`
/// parsed into the informer's compact form on its own. The body is held
/// until the end, then dropped.
pub struct StateBody {
    body: Vec<u8>,
    at: usize,
    mode: Mode,
    resource_version: Option<String>,
    items: usize,
}

impl StateBody {
    /// Starts reading `body`; refused at once when it is no JSON object.
    pub fn open(body: Vec<u8>) -> Result<StateBody, StateBodyError> {
        let mut reader = StateBody {
            body,
            at: 0,
            mode: Mode::Fields { first: true },
            resource_version: None,
            items: 0,
        };
        reader.skip_space();
        reader.expect(b'{')?;
        Ok(reader)
    }

    /// The List's `metadata.resourceVersion`, once read (serve writes it
    /// before the items).
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// Items read so far.
    pub fn items(&self) -> usize {
        self.items
    }

    /// Reads on until about `budget` bytes more are read, handing each item
    /// to `each`; true once the whole List is read (then the body is
    /// dropped).
    pub fn read(
        &mut self,
        budget: usize,
        mut each: impl FnMut(ObjectRef),
    ) -> Result<bool, StateBodyError> {
        let start = self.at;
        loop {
            match self.mode {
                Mode::Done => return Ok(true),
                _ if self.at - start >= budget.max(1) => return Ok(false),
                Mode::Fields { first } => self.next_field(first)?,
                Mode::Items { first } => {
                    if let Some(object) = self.next_item(first)? {
                        each(object);
                    }
                }
            }
        }
    }

    fn malformed(&self, what: impl Into<String>) -> StateBodyError {
        StateBodyError::Malformed {
            at: self.at,
            what: what.into(),
        }
    }

    fn skip_space(&mut self) {
        while self
            .body
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.body.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Result<(), StateBodyError> {
        if self.peek() != Some(byte) {
            return Err(self.malformed(format!("expected {:?}", byte as char)));
        }
        self.at += 1;
        Ok(())
    }

    /// The end of the value that starts here.
    fn value_end(&self) -> Result<usize, StateBodyError> {
        value_end(&self.body, self.at).ok_or_else(|| self.malformed("a value that does not end"))
    }

    /// One field of the List (or its end).
    fn next_field(&mut self, first: bool) -> Result<(), StateBodyError> {
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            self.skip_space();
            if self.at != self.body.len() {
                return Err(self.malformed("text after the List"));
            }
            if self.resource_version.is_none() {
                return Err(self.malformed("no metadata.resourceVersion"));
            }
            self.mode = Mode::Done;
            self.body = Vec::new();
            return Ok(());
        }
        if !first {
            self.expect(b',')?;
            self.skip_space();
        }
        let end = string_end(&self.body, self.at).ok_or_else(|| self.malformed("no field name"))?;
        let name: String = serde_json::from_slice(&self.body[self.at..end])
            .map_err(|e| self.malformed(e.to_string()))?;
        self.at = end;
        self.skip_space();
        self.expect(b':')?;
        self.skip_space();
        self.mode = Mode::Fields { first: false };
        if name == "items" && self.peek() == Some(b'[') {
            self.at += 1;
            self.mode = Mode::Items { first: true };
            return Ok(());
        }
        let end = self.value_end()?;
        let value = &self.body[self.at..end];
        match name.as_str() {
            "metadata" => {
                let meta: ListMeta =
                    serde_json::from_slice(value).map_err(|e| self.malformed(e.to_string()))?;
                self.resource_version = Some(meta.resource_version);
            }
            "kind" => {
                let kind: String =
                    serde_json::from_slice(value).map_err(|e| self.malformed(e.to_string()))?;
                if !kind.ends_with("List") {
                    return Err(self.malformed(format!("kind {kind:?}")));
                }
            }
            _ => {}
        }
        self.at = end;
        Ok(())
    }

    /// One item (or the end of `items`).
    fn next_item(&mut self, first: bool) -> Result<Option<ObjectRef>, StateBodyError> {
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            self.mode = Mode::Fields { first: false };
            return Ok(None);
        }
        if !first {
            self.expect(b',')?;
            self.skip_space();
        }
        let end = self.value_end()?;
        let index = self.items;
        let bad = |message: String| StateBodyError::BadItem { index, message };
        let value = JsonValue::parse(&self.body[self.at..end]).map_err(|e| bad(e.to_string()))?;
        let object = KubeObject::from_json(value).map_err(|e| bad(e.to_string()))?;
        self.at = end;
        self.items += 1;
        self.mode = Mode::Items { first: false };
        Ok(Some(object.into_ref()))
    }
}

/// What serve's 409 says about a moment its record does not cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Uncovered {
    /// The moment falls in a gap of the record.
    Gap(RecordGap),
    /// The record starts after the moment.
    Before { first_ms: i64 },
    /// The record is known complete only up to an earlier moment.
    After { through_ms: i64 },
    /// Anything else, in serve's words.
    Other(String),
}

/// Reads serve's 409 message (`proxy/src/history_api.rs`: "the record of
/// pods has a gap from T to T (not-running): …", "… starts at T", "… is
/// known complete up to T"); anything else is kept as it is.
pub fn uncovered(message: &str) -> Uncovered {
    let time = |text: &str| parse_rfc3339_millis(text.trim());
    let gap = || {
        let (_, rest) = message.split_once(" has a gap from ")?;
        let (from, rest) = rest.split_once(" to ")?;
        let (to, rest) = rest.split_once(" (")?;
        let (reason, _) = rest.split_once(')')?;
        Some(RecordGap {
            from_ms: time(from)?,
            to_ms: time(to)?,
            reason: reason.to_string(),
        })
    };
    if let Some(gap) = gap() {
        return Uncovered::Gap(gap);
    }
    if let Some(first_ms) = message.split_once(" starts at ").and_then(|(_, t)| time(t)) {
        return Uncovered::Before { first_ms };
    }
    if let Some(through_ms) = message
        .split_once(" is known complete up to ")
        .and_then(|(_, t)| time(t))
    {
        return Uncovered::After { through_ms };
    }
    Uncovered::Other(message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::decode_list;

    /// serve's answer as `send_state` writes it (objects cut short), with
    /// strings that hold brackets, quotes and escapes.
    const STATE: &str = concat!(
        r#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"812"},"items":["#,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"shop","resourceVersion":"40","labels":{"x":"]}{["}},"spec":{"c":[1,2,{"d":"\"\\"}]}},"#,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"shop","resourceVersion":"811"},"status":{"phase":"Running","n":-1.5e3,"ok":true,"z":null}}"#,
        "]}\n",
    );

    fn read_all(body: &[u8], budget: usize) -> Result<(String, Vec<ObjectRef>), StateBodyError> {
        let mut reader = StateBody::open(body.to_vec())?;
        let mut objects = Vec::new();
        let mut steps = 0;
        while !reader.read(budget, |o| objects.push(o))? {
            steps += 1;
            assert!(steps < 10_000, "it ends");
        }
        let rv = reader.resource_version().unwrap_or_default().to_string();
        Ok((rv, objects))
    }

    #[test]
    fn reads_the_list_as_decode_list_does_at_any_budget() {
        let whole = decode_list(STATE.as_bytes()).expect("a list");
        for budget in [1, 7, 64, 1 << 20] {
            let (rv, objects) = read_all(STATE.as_bytes(), budget).expect("a state");
            assert_eq!(rv, "812");
            assert_eq!(objects.len(), 2);
            for (mine, theirs) in objects.iter().zip(&whole.items) {
                assert_eq!(mine.key, theirs.key);
                assert_eq!(mine.resource_version, theirs.resource_version);
                assert_eq!(mine.value, theirs.value, "the same compact tape");
            }
        }
        let empty =
            br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}"#;
        let (rv, objects) = read_all(empty, 3).expect("empty");
        assert!(rv == "5" && objects.is_empty());
        // Fields in another order, and one serve may add later.
        let later = br#"{ "items" : [ {"metadata":{"name":"n1","resourceVersion":"3"}} ] , "extra":{"a":[1]}, "metadata" : {"resourceVersion":"9"} }"#;
        let (rv, objects) = read_all(later, 5).expect("a state");
        assert_eq!((rv.as_str(), objects[0].key.as_str()), ("9", "n1"));
    }

    #[test]
    fn what_is_no_state_is_refused_saying_where() {
        let html = b"<!DOCTYPE html><html></html>";
        assert!(matches!(
            StateBody::open(html.to_vec()),
            Err(StateBodyError::Malformed { at: 0, .. })
        ));
        let cut = &STATE.as_bytes()[..STATE.len() - 60];
        assert!(matches!(
            read_all(cut, 1 << 20),
            Err(StateBodyError::Malformed { .. })
        ));
        let no_name = br#"{"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}},{"metadata":{}}]}"#;
        assert!(matches!(
            read_all(no_name, 1 << 20),
            Err(StateBodyError::BadItem { index: 1, .. })
        ));
        let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"message":"no"}"#;
        assert!(read_all(status, 1 << 20).is_err());
        let no_rv = br#"{"kind":"List","items":[]}"#;
        assert!(read_all(no_rv, 1 << 20).is_err());
        let trailing = br#"{"metadata":{"resourceVersion":"1"},"items":[]} x"#;
        assert!(read_all(trailing, 1 << 20).is_err());
    }

    #[test]
    fn the_path_names_the_resource_the_moment_and_the_namespace() {
        assert_eq!(
            history_state_path("pods", 1_795_828_528_336, None),
            "/_deltascope/history/state?resource=pods&at=2026-11-28T01%3A15%3A28.336Z"
        );
        assert_eq!(
            history_state_path("deployments.apps", 1_795_828_528_000, Some("shop")),
            "/_deltascope/history/state?resource=deployments.apps&at=2026-11-28T01%3A15%3A28.000Z&namespace=shop"
        );
    }

    #[test]
    fn serve_s_409_is_read_into_a_gap_or_the_record_s_ends() {
        let gap = "the record of pods has a gap from 2026-11-28T01:16:00.000Z to 2026-11-28T01:16:05.500Z (not-running): changes then may be missing";
        assert_eq!(
            uncovered(gap),
            Uncovered::Gap(RecordGap {
                from_ms: 1_795_828_560_000,
                to_ms: 1_795_828_565_500,
                reason: "not-running".into()
            })
        );
        assert_eq!(
            uncovered("the record of pods starts at 2026-11-28T01:16:00.000Z"),
            Uncovered::Before {
                first_ms: 1_795_828_560_000
            }
        );
        assert_eq!(
            uncovered("the record of pods is known complete up to 2026-11-28T01:16:00.000Z"),
            Uncovered::After {
                through_ms: 1_795_828_560_000
            }
        );
        assert_eq!(
            uncovered("nothing of pods is recorded"),
            Uncovered::Other("nothing of pods is recorded".into())
        );
    }
}
