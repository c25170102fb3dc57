//! Who changed what between two versions, for the object's story: kept
//! across the story's rebuilds (it is rebuilt every second while shown),
//! and read within a budget per build. A pod's diff and attribution take
//! about 0.8 ms in the page; a pod with a thousand recorded versions held
//! the page for 836 ms on every rebuild before (`cargo xtask bench --only
//! page`, `reach.object.jank`). Rows whose attribution is not read yet say
//! so, and the story is built again on the next frame until none is left.

use std::collections::HashMap;

use crate::informer::KubeObject;
use crate::model::who_changed::{who_changed, WhoChanged};

/// Attributions read per build when bounded (about 8 ms of a frame).
pub const READS_PER_BUILD: usize = 10;

/// One change: the object's uid, the resourceVersion before, the one after.
type Change = (String, String, String);

/// The attributions known for one shown object's story; bounded by
/// default.
#[derive(Debug)]
pub struct StoryWho {
    /// The shown object's uid: another one forgets what is known.
    object: String,
    known: HashMap<Change, WhoChanged>,
    /// New reads allowed per build; `None`: every one at once.
    budget: Option<usize>,
    reads: usize,
    left: usize,
}

impl Default for StoryWho {
    /// At most [`READS_PER_BUILD`] new attributions per build.
    fn default() -> StoryWho {
        StoryWho {
            object: String::new(),
            known: HashMap::new(),
            budget: Some(READS_PER_BUILD),
            reads: 0,
            left: 0,
        }
    }
}

impl StoryWho {
    /// Every attribution read at once (tests, and a story built once).
    pub fn unbounded() -> StoryWho {
        StoryWho {
            budget: None,
            ..StoryWho::default()
        }
    }

    /// A build of the story of the object `uid` begins.
    pub fn begin(&mut self, uid: &str) {
        if self.object != uid {
            self.known.clear();
            self.object = uid.to_string();
        }
        self.reads = 0;
        self.left = 0;
    }

    /// Who changed what from `before` to `object`: known, or read now
    /// while the build's budget lasts; `None` when it is spent.
    pub fn who(&mut self, before: &KubeObject, object: &KubeObject) -> Option<WhoChanged> {
        let change = (
            object.uid.clone(),
            before.resource_version.clone(),
            object.resource_version.clone(),
        );
        if let Some(known) = self.known.get(&change) {
            return Some(known.clone());
        }
        if self.budget.is_some_and(|budget| self.reads >= budget) {
            self.left += 1;
            return None;
        }
        self.reads += 1;
        let who = who_changed(before.value.root(), object.value.root());
        self.known.insert(change, who.clone());
        Some(who)
    }

    /// Attributions the last build left unread.
    pub fn left(&self) -> usize {
        self.left
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{JsonValue, KubeObject};

    fn pod(rv: u64, image: &str) -> KubeObject {
        let text = format!(
            r#"{{"metadata":{{"name":"p","namespace":"n","uid":"u","resourceVersion":"{rv}"}},"spec":{{"containers":[{{"name":"c","image":"{image}"}}]}}}}"#
        );
        KubeObject::from_json(JsonValue::parse(text.as_bytes()).expect("json")).expect("pod")
    }

    #[test]
    fn a_build_reads_within_its_budget_and_the_next_goes_on_from_what_is_known() {
        let versions: Vec<KubeObject> = (0..25).map(|i| pod(i, &format!("img:{i}"))).collect();
        let mut who = StoryWho::default();
        let build = |who: &mut StoryWho| {
            who.begin("u");
            versions
                .windows(2)
                .filter(|w| who.who(&w[0], &w[1]).is_some())
                .count()
        };
        assert_eq!(build(&mut who), READS_PER_BUILD);
        assert_eq!(who.left(), 24 - READS_PER_BUILD);
        assert_eq!(build(&mut who), 2 * READS_PER_BUILD);
        assert_eq!(build(&mut who), 24);
        assert_eq!(who.left(), 0);
        // another object starts over
        who.begin("other");
        assert!(who.known.is_empty());
        let mut all = StoryWho::unbounded();
        all.begin("u");
        assert!(versions.windows(2).all(|w| all.who(&w[0], &w[1]).is_some()));
    }
}
