//! Where a request points ([`Target`]): the resource served at
//! `/api/v1/…` or `/apis/GROUP/VERSION/…` (now: a removed CRD's is not), the
//! namespace and the object's name, or the 404 the apiserver answers for a
//! path it does not serve.

use std::sync::Arc;

use crate::resources::{ResIdx, ResourceType};
use crate::status::ApiError;
use crate::store::Store;

pub(super) struct Target {
    pub res: ResIdx,
    /// The type at `res` when the request came.
    pub resource: Arc<ResourceType>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

pub(super) fn unknown_resource(group: &str, version: &str, plural: &str) -> ApiError {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    ApiError::not_found(format!(
        "the server could not find the requested resource: {gv} has no resource {plural:?} (see /api/v1 and /apis for what is served)"
    ))
}

/// The target of `rest`, the path's segments after the group and version.
pub(super) fn parse_target(
    store: &Store,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Target, ApiError> {
    let lookup = |plural: &str| {
        store
            .find(group, version, plural)
            .ok_or_else(|| unknown_resource(group, version, plural))
    };
    let target = |(res, resource), namespace: Option<&str>, name: Option<&str>| Target {
        res,
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    };
    match rest {
        [plural] => Ok(target(lookup(plural)?, None, None)),
        ["namespaces", ns, plural] => {
            let found = lookup(plural)?;
            if !found.1.namespaced {
                return Err(ApiError::not_found(format!(
                    "{plural} are cluster-scoped; use /api/v1/{plural} without a namespace"
                )));
            }
            Ok(target(found, Some(ns), None))
        }
        [plural, name] => {
            let found = lookup(plural)?;
            if found.1.namespaced {
                return Err(ApiError::not_found(format!(
                    "{plural} are namespaced; get one at .../namespaces/NAMESPACE/{plural}/{name}"
                )));
            }
            Ok(target(found, None, Some(name)))
        }
        ["namespaces", ns, plural, name] => Ok(target(lookup(plural)?, Some(ns), Some(name))),
        ["namespaces", _, plural, _, sub, ..] => Err(ApiError::not_found(format!(
            "the simulated cluster does not serve the {plural}/{sub} subresource"
        ))),
        _ => Err(ApiError::not_found(
            "the server could not find the requested resource",
        )),
    }
}
