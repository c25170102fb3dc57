//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!`exists) and
//! field selectors (`metadata.name`, `metadata.namespace`, and for pods
//! `status.phase`, `spec.nodeName`) parsed from query parameters and matched
//! against stored objects.

use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectorError {
    #[error("unable to parse requirement {requirement:?} in labelSelector: {why}")]
    Label { requirement: String, why: String },
    #[error("invalid fieldSelector requirement {requirement:?}: {why}")]
    Field { requirement: String, why: String },
    #[error("field label not supported: {field:?} (supported for {resource}: {supported})")]
    UnsupportedField {
        field: String,
        resource: String,
        supported: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<(String, Op)>,
}

impl LabelSelector {
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_label_req(part)?);
        }
        Ok(LabelSelector { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = &obj["metadata"]["labels"];
        self.reqs.iter().all(|(key, op)| {
            let val = labels.get(key).and_then(Value::as_str);
            match op {
                Op::Eq(v) => val == Some(v.as_str()),
                Op::NotEq(v) => val != Some(v.as_str()),
                Op::In(vs) => val.is_some_and(|x| vs.iter().any(|v| v == x)),
                Op::NotIn(vs) => val.is_none_or(|x| !vs.iter().any(|v| v == x)),
                Op::Exists => val.is_some(),
                Op::NotExists => val.is_none(),
            }
        })
    }
}

/// Split on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_key(k: &str) -> bool {
    let name = k.rsplit('/').next().unwrap_or(k);
    !name.is_empty()
        && name.len() <= 63
        && k.split('/').count() <= 2
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn valid_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn parse_label_req(part: &str) -> Result<(String, Op), SelectorError> {
    let err = |why: &str| SelectorError::Label {
        requirement: part.to_string(),
        why: why.to_string(),
    };
    let check_key = |k: &str| -> Result<String, SelectorError> {
        if valid_key(k) {
            Ok(k.to_string())
        } else {
            Err(err("a label key must be an optional DNS prefix and '/' plus a name of up to 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"))
        }
    };
    let check_val = |v: &str| -> Result<String, SelectorError> {
        let v = v.trim();
        if valid_value(v) {
            Ok(v.to_string())
        } else {
            Err(err("a label value must be empty or up to 63 alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"))
        }
    };
    if let Some(k) = part.strip_prefix('!') {
        return Ok((check_key(k.trim())?, Op::NotExists));
    }
    if let Some((k, v)) = part.split_once("!=") {
        return Ok((check_key(k.trim())?, Op::NotEq(check_val(v)?)));
    }
    if let Some((k, v)) = part.split_once("==") {
        return Ok((check_key(k.trim())?, Op::Eq(check_val(v)?)));
    }
    if let Some((k, v)) = part.split_once('=') {
        return Ok((check_key(k.trim())?, Op::Eq(check_val(v)?)));
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let rest = words[1].trim();
        let (op, list) = if let Some(l) = rest.strip_prefix("notin") {
            ("notin", l)
        } else if let Some(l) = rest.strip_prefix("in") {
            ("in", l)
        } else {
            return Err(err(
                "expected one of '=', '==', '!=', 'in', 'notin' after the key",
            ));
        };
        let list = list.trim();
        let inner = list
            .strip_prefix('(')
            .and_then(|l| l.strip_suffix(')'))
            .ok_or_else(|| {
                err("the values of 'in' and 'notin' go in parentheses, e.g. env in (prod,staging)")
            })?;
        let values = inner
            .split(',')
            .map(check_val)
            .collect::<Result<Vec<_>, _>>()?;
        if values.iter().all(String::is_empty) {
            return Err(err("'in' and 'notin' need at least one value"));
        }
        let key = check_key(words[0])?;
        return Ok((
            key,
            if op == "in" {
                Op::In(values)
            } else {
                Op::NotIn(values)
            },
        ));
    }
    Ok((check_key(part)?, Op::Exists))
}

#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    reqs: Vec<(String, bool, String)>,
}

impl FieldSelector {
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// `supported` lists the fields besides metadata.name/namespace.
    pub fn parse(
        s: &str,
        resource: &str,
        supported: &[&str],
    ) -> Result<FieldSelector, SelectorError> {
        let mut reqs = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, eq, value) = if let Some((f, v)) = part.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, true, v)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, true, v)
            } else {
                return Err(SelectorError::Field {
                    requirement: part.to_string(),
                    why: "expected FIELD=VALUE, FIELD==VALUE or FIELD!=VALUE".to_string(),
                });
            };
            let field = field.trim();
            let base = ["metadata.name", "metadata.namespace"];
            if !base.contains(&field) && !supported.contains(&field) {
                let all: Vec<&str> = base.iter().chain(supported.iter()).copied().collect();
                return Err(SelectorError::UnsupportedField {
                    field: field.to_string(),
                    resource: resource.to_string(),
                    supported: all.join(", "),
                });
            }
            reqs.push((field.to_string(), eq, value.trim().to_string()));
        }
        Ok(FieldSelector { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(field, eq, want)| {
            let mut v = obj;
            for part in field.split('.') {
                v = &v[part];
            }
            let got = v.as_str().unwrap_or("");
            (got == want) == *eq
        })
    }
}

/// Fields a resource can be selected on besides metadata.name/namespace.
pub fn extra_fields(plural: &str) -> &'static [&'static str] {
    match plural {
        "pods" => &[
            "status.phase",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.podIP",
        ],
        "secrets" => &["type"],
        "events" => &[
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
        ],
        "namespaces" => &["status.phase"],
        _ => &[],
    }
}

/// Fields a resource of `group` can be selected on besides
/// metadata.name/namespace (`events.k8s.io` Events name the object they are
/// about `regarding`).
pub fn extra_fields_in(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("events.k8s.io", "events") => &[
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
            "reason",
            "type",
            "reportingController",
        ],
        ("", plural) => extra_fields(plural),
        _ => &[],
    }
}

/// Both selectors together.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    pub label: LabelSelector,
    pub field: FieldSelector,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.label.is_empty() && self.field.is_empty()
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.label.matches(obj) && self.field.matches(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_ops() {
        let o = json!({"metadata": {"labels": {"app": "web", "track": "canary"}}});
        let m = |s: &str| LabelSelector::parse(s).map(|l| l.matches(&o));
        assert_eq!(m("app=web"), Ok(true));
        assert_eq!(m("app==web,track!=stable"), Ok(true));
        assert_eq!(m("app in (api, web),!tier"), Ok(true));
        assert_eq!(m("track notin (canary)"), Ok(false));
        assert_eq!(m("tier"), Ok(false));
        assert!(m("app in web").is_err());
        assert!(m("=x").is_err());
        assert!(m("app=a b").is_err());
    }

    #[test]
    fn field_ops() {
        let o =
            json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}});
        let f = FieldSelector::parse(
            "status.phase=Running,metadata.name!=b",
            "pods",
            extra_fields("pods"),
        )
        .unwrap_or_default();
        assert!(f.matches(&o));
        assert!(FieldSelector::parse("spec.foo=1", "pods", extra_fields("pods")).is_err());
    }
}
