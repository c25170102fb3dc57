//! A patch against a chain's full applied on the full's *text*: each
//! operation's place is found by passing over the text (strings and
//! containers skipped by `deltascope_informer::json::skip`, nothing parsed
//! into a document), and the new values
//! — the patch's own bytes — are spliced in. Reading a past state is then
//! mostly copying bytes: parsing each full into a document and writing the
//! patched document back out as text had been most of a state's cost.
//!
//! It takes the patches the recorder writes: `replace` of a member or an
//! element, `add` of an object's member (set when it is there, put last when
//! not, as the tape puts it), `remove` of a member. Anything else — an
//! insertion into an array, the whole document, two operations where one
//! is inside the other, more than one of a container's members added or
//! removed — gives `None`, and the caller applies the patch on the tape.
//! The full must be JSON (a zstd full's checksum proves it is the text that
//! was written); the result is then JSON too: whole values are cut out and
//! the patch's values, parsed as JSON, put in their place.

use deltascope_informer::json::skip::{skip_space, string_end, value_end};

use crate::compose::operations;

/// One change to the text: the bytes `start..end` become `with`.
struct Edit<'p> {
    start: usize,
    end: usize,
    with: Replacement<'p>,
    /// The object a member is added to or removed from (its `{`), which
    /// must not see another such change.
    members_of: Option<usize>,
}

/// What goes in an edit's place.
enum Replacement<'p> {
    Value(&'p [u8]),
    Member {
        comma: bool,
        key: String,
        value: &'p [u8],
    },
    Nothing,
}

/// `full` with `patch` applied, or `None` when this patch is not one the
/// text takes (see the module doc).
pub fn splice(full: &[u8], patch: &[u8]) -> Option<Vec<u8>> {
    let operations = operations(patch).ok()?;
    let mut edits = Vec::with_capacity(operations.len());
    let root = skip_space(full, 0);
    let mut scan = Scan {
        full,
        objects: Vec::new(),
    };
    for operation in &operations {
        if operation.path.is_empty() {
            return None;
        }
        let tokens: Vec<String> = operation.path[1..].split('/').map(unescape).collect();
        let (last, parents) = tokens.split_last()?;
        let mut at = root;
        for token in parents {
            at = scan.child(at, token)?.value.0;
        }
        let value = operation.value.map(|v| v.get().as_bytes());
        edits.push(match operation.op.as_str() {
            "replace" => {
                let (start, end) = scan.child(at, last)?.value;
                Edit {
                    start,
                    end,
                    with: Replacement::Value(value?),
                    members_of: None,
                }
            }
            "add" => add(&mut scan, at, last, value?)?,
            "remove" => remove(&mut scan, at, last)?,
            _ => return None,
        });
    }
    edits.sort_by_key(|edit| (edit.start, edit.end));
    let mut parents: Vec<usize> = edits.iter().filter_map(|e| e.members_of).collect();
    parents.sort_unstable();
    if parents.windows(2).any(|pair| pair[0] == pair[1])
        || edits.windows(2).any(|pair| pair[1].start < pair[0].end)
    {
        return None;
    }
    let mut out = Vec::with_capacity(full.len() + patch.len());
    let mut copied = 0;
    for edit in &edits {
        out.extend_from_slice(full.get(copied..edit.start)?);
        match &edit.with {
            Replacement::Value(value) => out.extend_from_slice(value),
            Replacement::Member { comma, key, value } => {
                if *comma {
                    out.push(b',');
                }
                out.extend_from_slice(key.as_bytes());
                out.push(b':');
                out.extend_from_slice(value);
            }
            Replacement::Nothing => {}
        }
        copied = edit.end;
    }
    out.extend_from_slice(full.get(copied..)?);
    Some(out)
}

/// An `add` at `token` of the container at `at`: an object's member set
/// where it is, or put last.
fn add<'p>(scan: &mut Scan<'_>, at: usize, token: &str, value: &'p [u8]) -> Option<Edit<'p>> {
    let full = scan.full;
    let object = scan.object(at)?;
    if let Some(member) = object.members.iter().find(|m| m.is(full, token)) {
        let (start, end) = member.value;
        return Some(Edit {
            start,
            end,
            with: Replacement::Value(value),
            members_of: None,
        });
    }
    let key = serde_json::to_string(token).ok()?;
    let comma = !object.members.is_empty();
    let with = Replacement::Member { comma, key, value };
    Some(Edit {
        start: object.close,
        end: object.close,
        with,
        members_of: Some(at),
    })
}

/// A `remove` of the member `token` of the object at `at`, with the comma
/// that joined it to the others.
fn remove(scan: &mut Scan<'_>, at: usize, token: &str) -> Option<Edit<'static>> {
    let full = scan.full;
    let object = scan.object(at)?;
    let index = object.members.iter().position(|m| m.is(full, token))?;
    let member = &object.members[index];
    let (start, end) = match (index.checked_sub(1), object.members.get(index + 1)) {
        (Some(before), _) => (object.members[before].value.1, member.value.1),
        (None, Some(next)) => (member.key.0, next.key.0),
        (None, None) => (member.key.0, member.value.1),
    };
    Some(Edit {
        start,
        end,
        with: Replacement::Nothing,
        members_of: Some(at),
    })
}

/// A member (its key's and its value's byte ranges) or an element (its
/// value's).
#[derive(Clone)]
struct Member {
    key: (usize, usize),
    value: (usize, usize),
}

impl Member {
    /// Whether its key is `token`.
    fn is(&self, full: &[u8], token: &str) -> bool {
        let quoted = &full[self.key.0..self.key.1];
        let raw = &quoted[1..quoted.len() - 1];
        if !raw.contains(&b'\\') {
            return raw == token.as_bytes();
        }
        serde_json::from_slice::<String>(quoted).is_ok_and(|key| key == token)
    }
}

/// An object's members and where it closes (its `}`).
struct Object {
    members: Vec<Member>,
    close: usize,
}

/// The text being spliced, with the objects on the operations' paths read
/// once: operations under one object (`/status/...`) pass over the members
/// before it once, not each time.
struct Scan<'t> {
    full: &'t [u8],
    objects: Vec<(usize, Object)>,
}

impl Scan<'_> {
    /// The members of the object at `at` (`None`: not an object).
    fn object(&mut self, at: usize) -> Option<&Object> {
        if *self.full.get(at)? != b'{' {
            return None;
        }
        let index = match self.objects.iter().position(|(start, _)| *start == at) {
            Some(index) => index,
            None => {
                self.objects.push((at, members(self.full, at)?));
                self.objects.len() - 1
            }
        };
        self.objects.get(index).map(|(_, object)| object)
    }

    /// The member `token` of the object, or element `token` of the array,
    /// at `at`.
    fn child(&mut self, at: usize, token: &str) -> Option<Member> {
        let full = self.full;
        match full.get(at)? {
            b'{' => self
                .object(at)?
                .members
                .iter()
                .find(|m| m.is(full, token))
                .cloned(),
            b'[' => {
                let index = element_index(token)?;
                let value = elements(full, at)?.into_iter().nth(index)?;
                Some(Member { key: (0, 0), value })
            }
            _ => None,
        }
    }
}

/// An array index token: digits, no leading zero (`-` is not an element).
fn element_index(token: &str) -> Option<usize> {
    let leading_zero = token.len() > 1 && token.starts_with('0');
    if leading_zero || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

/// The members of the object whose `{` is at `at`.
fn members(full: &[u8], at: usize) -> Option<Object> {
    let mut members = Vec::new();
    let mut i = skip_space(full, at + 1);
    if *full.get(i)? == b'}' {
        return Some(Object { members, close: i });
    }
    loop {
        let key_end = string_end(full, i)?;
        let colon = skip_space(full, key_end);
        if *full.get(colon)? != b':' {
            return None;
        }
        let value_start = skip_space(full, colon + 1);
        let value_end = value_end(full, value_start)?;
        members.push(Member {
            key: (i, key_end),
            value: (value_start, value_end),
        });
        let next = skip_space(full, value_end);
        match full.get(next)? {
            b',' => i = skip_space(full, next + 1),
            b'}' => {
                return Some(Object {
                    members,
                    close: next,
                })
            }
            _ => return None,
        }
    }
}

/// The elements of the array whose `[` is at `at`.
fn elements(full: &[u8], at: usize) -> Option<Vec<(usize, usize)>> {
    let mut elements = Vec::new();
    let mut i = skip_space(full, at + 1);
    if *full.get(i)? == b']' {
        return Some(elements);
    }
    loop {
        let end = value_end(full, i)?;
        elements.push((i, end));
        let next = skip_space(full, end);
        match full.get(next)? {
            b',' => i = skip_space(full, next + 1),
            b']' => return Some(elements),
            _ => return None,
        }
    }
}

/// A JSON Pointer token as the key or index it names (`~1` is `/`, `~0`
/// is `~`).
fn unescape(token: &str) -> String {
    if token.contains('~') {
        token.replace("~1", "/").replace("~0", "~")
    } else {
        token.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_json::{json_value, patch_between};
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn spliced(full: &str, patch: Value) -> Option<Value> {
        let text = splice(full.as_bytes(), patch.to_string().as_bytes())?;
        Some(serde_json::from_slice(&text).expect("the result is JSON"))
    }

    #[test]
    fn replace_add_and_remove_splice_into_the_text() {
        let full = r#"{"a": 1, "b": {"c": [1, "x", {"d": null}]}, "e": "f\"g"}"#;
        let patch = json!([
            {"op": "replace", "path": "/b/c/2/d", "value": {"z": 1}},
            {"op": "add", "path": "/b/new", "value": [1]},
            {"op": "remove", "path": "/a"},
        ]);
        assert_eq!(
            spliced(full, patch),
            Some(json!({"b": {"c": [1, "x", {"d": {"z": 1}}], "new": [1]}, "e": "f\"g"}))
        );
        // the unchanged parts are the full's own bytes
        let text = splice(
            full.as_bytes(),
            br#"[{"op":"replace","path":"/a","value":2}]"#,
        );
        assert_eq!(
            String::from_utf8(text.unwrap()).unwrap(),
            r#"{"a": 2, "b": {"c": [1, "x", {"d": null}]}, "e": "f\"g"}"#
        );
        // removing the only member, an existing member added, a key escaped
        assert_eq!(
            spliced(r#"{"a":1}"#, json!([{"op": "remove", "path": "/a"}])),
            Some(json!({}))
        );
        assert_eq!(
            spliced(
                r#"{"a":1,"b":2}"#,
                json!([{"op": "add", "path": "/a", "value": 3}])
            ),
            Some(json!({"a": 3, "b": 2}))
        );
        assert_eq!(
            spliced(
                r#"{"a/b~":1,"q\"":2}"#,
                json!([
                    {"op": "replace", "path": "/a~1b~0", "value": 5},
                    {"op": "remove", "path": "/q\""},
                ])
            ),
            Some(json!({"a/b~": 5}))
        );
    }

    #[test]
    fn what_the_text_does_not_take_is_left_to_the_tape() {
        let full = r#"{"a": [1, 2], "b": {}}"#;
        let refused = [
            json!([{"op": "add", "path": "/a/0", "value": 0}]),
            json!([{"op": "replace", "path": "", "value": 0}]),
            json!([{"op": "replace", "path": "/a/-", "value": 0}]),
            json!([{"op": "replace", "path": "/missing", "value": 0}]),
            json!([{"op": "replace", "path": "/b", "value": 0}, {"op": "add", "path": "/b/x", "value": 1}]),
            json!([{"op": "add", "path": "/b/x", "value": 0}, {"op": "add", "path": "/b/y", "value": 1}]),
            json!([{"op": "move", "from": "/a", "path": "/c"}]),
            json!({"not": "a patch"}),
        ];
        for patch in refused {
            assert_eq!(spliced(full, patch.clone()), None, "{patch}");
        }
        assert_eq!(
            splice(b"{\"a\":", br#"[{"op":"replace","path":"/a","value":1}]"#),
            None
        );
    }

    proptest! {
        #[test]
        fn a_spliced_version_is_the_patched_one(a in json_value(), b in json_value(), pretty in any::<bool>()) {
            let full = if pretty { serde_json::to_string_pretty(&a).unwrap() } else { a.to_string() };
            let patch = patch_between(&a, &b);
            if let Some(text) = splice(full.as_bytes(), &patch) {
                let got: Value = serde_json::from_slice(&text).expect("JSON");
                prop_assert_eq!(got, b);
            }
        }
    }
}
