//! The browser's stored history kept per cluster: which of the browser's
//! databases belongs to the cluster behind the page, and when the page must
//! ask again who that cluster is. Decisions only (tested natively); the
//! reading and the databases are `crate::service::persistence::cluster`.
//!
//! A cluster is known by its `kube-system` uid (`crate::api::cluster_identity`).
//! Each database carries a mark (`MARK_KEY` in its `meta` store) naming the
//! cluster it holds. The first database, `deltascope`, is the one a page of
//! an earlier deltascope filled before clusters were told apart: the first
//! cluster seen claims it (its records stay usable), every other cluster
//! gets `deltascope@{uid}`. So a page pointed at another cluster behind the
//! same address starts cold instead of mixing the two histories, and the
//! first cluster's data is kept apart, listed in the settings.
//!
//! After a watch broke (a relist or a re-watch anywhere), the writer asks
//! again before it stores: a cluster that changed behind the same name
//! would otherwise have its objects written into the old one's database.

use serde::{Deserialize, Serialize};

use crate::api::cluster_identity::IdentityAnswer;

/// The first database's name (an earlier deltascope's only one).
pub const PRIMARY_DATABASE: &str = "deltascope";
/// The `meta` store's key of the mark; no view's key starts with `@`.
pub const MARK_KEY: &str = "@cluster";
/// The identity a cluster that will not say who it is is stored under.
pub const UNIDENTIFIED: &str = "unidentified";

/// What a database's mark says: whose history it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterMark {
    /// The `kube-system` uid, or [`UNIDENTIFIED`].
    pub identity: String,
    /// serve's name for the cluster, when the page was served by serve.
    #[serde(default)]
    pub name: Option<String>,
}

impl ClusterMark {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A mark's text; `None` for anything else. Read as bytes: the page's
    /// other JSON is, and `from_str` would link serde_json's parser a
    /// second time (for `str` input).
    pub fn from_json(text: &str) -> Option<ClusterMark> {
        serde_json::from_slice(text.as_bytes()).ok()
    }
}

/// The database of the cluster `identity` that is not the first one.
pub fn own_database(identity: &str) -> String {
    format!("{PRIMARY_DATABASE}@{identity}")
}

/// Which database holds the cluster's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The first one; `claim`: it has no mark yet, so it is marked now.
    Primary { claim: bool },
    /// A database of its own (by name).
    Own(String),
}

/// Where `identity`'s history is: its own database when one exists
/// (`own_exists`), else the first one when that is unmarked or marked with
/// this identity, else a new database of its own. An unidentified cluster
/// never claims the first one.
pub fn place(primary_mark: Option<&ClusterMark>, identity: &str, own_exists: bool) -> Placement {
    if own_exists {
        return Placement::Own(own_database(identity));
    }
    match primary_mark {
        None if identity != UNIDENTIFIED => Placement::Primary { claim: true },
        Some(mark) if mark.identity == identity => Placement::Primary { claim: false },
        _ => Placement::Own(own_database(identity)),
    }
}

/// [`place`] for a cluster of serve's other than the default one: it uses
/// the first database only when that is marked with its identity, never
/// claims it (the default cluster's store may be claiming it at the same
/// moment: two clusters would share it).
pub fn place_other(
    primary_mark: Option<&ClusterMark>,
    identity: &str,
    own_exists: bool,
) -> Placement {
    match place(primary_mark, identity, own_exists) {
        Placement::Primary { claim: true } => Placement::Own(own_database(identity)),
        placement => placement,
    }
}

/// Who the page takes the cluster to be at load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The cluster said so.
    Confirmed(String),
    /// It did not answer; the identity seen last at this address is assumed
    /// for reading what is stored, and nothing is written until it answers.
    Assumed { identity: String, why: String },
    /// It answered that it will not say: stored as [`UNIDENTIFIED`].
    Unidentified(String),
    /// It did not answer and none was seen before: nothing is stored.
    Unknown(String),
}

impl Standing {
    /// The identity the database is chosen by, if any.
    pub fn identity(&self) -> Option<&str> {
        match self {
            Standing::Confirmed(identity) | Standing::Assumed { identity, .. } => Some(identity),
            Standing::Unidentified(_) => Some(UNIDENTIFIED),
            Standing::Unknown(_) => None,
        }
    }
}

/// The page's standing from the cluster's `answer` and the identity last
/// seen at this address.
pub fn standing(answer: IdentityAnswer, last_seen: Option<String>) -> Standing {
    match (answer, last_seen) {
        (IdentityAnswer::Known(identity), _) => Standing::Confirmed(identity),
        (IdentityAnswer::Unreadable(why), _) => Standing::Unidentified(why),
        (IdentityAnswer::NoAnswer(why), Some(identity)) => Standing::Assumed { identity, why },
        (IdentityAnswer::NoAnswer(why), None) => Standing::Unknown(why),
    }
}

/// The `localStorage` key of the identity last seen behind `name` (serve's
/// name for the cluster; without serve, one key for the address).
pub fn last_seen_key(name: Option<&str>) -> String {
    format!("deltascope.cluster.{}", name.unwrap_or("default"))
}

/// How the cluster is named in the page's words.
pub fn cluster_words(name: Option<&str>) -> String {
    match name {
        Some(name) => format!("the cluster behind {name}"),
        None => "the cluster behind this address".into(),
    }
}

/// An identity, short enough to read.
pub fn short_identity(identity: &str) -> &str {
    identity.get(..8).unwrap_or(identity)
}

/// What the page says when the cluster behind `name` is another than the
/// one last seen there.
pub fn changed_words(name: Option<&str>, before: &str, after: &str) -> String {
    format!(
        "{} changed (kube-system {} is now {}): this page shows the new cluster only; \
         what this browser stored of the old one is kept apart (Settings)",
        cluster_words(name),
        short_identity(before),
        short_identity(after),
    )
}

/// When the writer asks again who the cluster is: after any watch broke
/// since the last time it asked (`epoch` counts the kept informers'
/// relists and re-watches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    identity: String,
    /// The epoch the identity was last confirmed at; `None` until the first.
    confirmed_at: Option<u64>,
}

/// What one answer to the question means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recheck {
    /// The same cluster: writing goes on.
    Same,
    /// Another cluster: stop writing; the page starts anew.
    Changed { from: String, to: String },
    /// No answer: writing waits.
    Unsure,
}

impl Confirmation {
    /// `standing`'s identity, confirmed now when the cluster said so.
    pub fn new(identity: &str, confirmed: bool, epoch: u64) -> Confirmation {
        Confirmation {
            identity: identity.to_string(),
            confirmed_at: confirmed.then_some(epoch),
        }
    }

    /// Whether the writer must ask before it writes at `epoch`.
    pub fn due(&self, epoch: u64) -> bool {
        self.confirmed_at != Some(epoch)
    }

    /// Takes in the cluster's `answer` asked at `epoch`.
    pub fn answered(&mut self, answer: &IdentityAnswer, epoch: u64) -> Recheck {
        match answer {
            IdentityAnswer::Known(identity) if *identity == self.identity => {
                self.confirmed_at = Some(epoch);
                Recheck::Same
            }
            IdentityAnswer::Known(identity) => Recheck::Changed {
                from: self.identity.clone(),
                to: identity.clone(),
            },
            IdentityAnswer::Unreadable(_) | IdentityAnswer::NoAnswer(_) => Recheck::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(identity: &str) -> ClusterMark {
        ClusterMark {
            identity: identity.into(),
            name: None,
        }
    }

    #[test]
    fn the_first_cluster_claims_the_first_database_and_others_get_their_own() {
        assert_eq!(place(None, "a", false), Placement::Primary { claim: true });
        assert_eq!(
            place(Some(&mark("a")), "a", false),
            Placement::Primary { claim: false }
        );
        assert_eq!(
            place(Some(&mark("a")), "b", false),
            Placement::Own("deltascope@b".into())
        );
        // once it has its own, the first one is never claimed again
        assert_eq!(
            place(None, "b", true),
            Placement::Own("deltascope@b".into())
        );
        // nor by a cluster that does not say who it is
        assert_eq!(
            place(None, UNIDENTIFIED, false),
            Placement::Own("deltascope@unidentified".into())
        );
        // nor by another of serve's clusters, which uses it only when it is
        // already its own
        assert_eq!(
            place_other(None, "b", false),
            Placement::Own("deltascope@b".into())
        );
        assert_eq!(
            place_other(Some(&mark("b")), "b", false),
            Placement::Primary { claim: false }
        );
    }

    #[test]
    fn a_mark_reads_back_and_anything_else_is_none() {
        let marked = ClusterMark {
            identity: "4f1c".into(),
            name: Some("prod".into()),
        };
        assert_eq!(ClusterMark::from_json(&marked.to_json()), Some(marked));
        assert_eq!(
            ClusterMark::from_json("{\"resource\":\"#/core/v1/pods\"}"),
            None
        );
    }

    #[test]
    fn the_standing_at_load() {
        let known = IdentityAnswer::Known("b".into());
        assert_eq!(
            standing(known, Some("a".into())),
            Standing::Confirmed("b".into())
        );
        let down = IdentityAnswer::NoAnswer("HTTP 502".into());
        assert_eq!(
            standing(down.clone(), Some("a".into())).identity(),
            Some("a")
        );
        assert_eq!(standing(down, None).identity(), None);
        let refused = IdentityAnswer::Unreadable("forbidden".into());
        assert_eq!(standing(refused, None).identity(), Some(UNIDENTIFIED));
    }

    #[test]
    fn the_writer_asks_again_after_a_watch_broke_and_stops_on_another_cluster() {
        let mut confirmation = Confirmation::new("a", true, 3);
        assert!(!confirmation.due(3));
        assert!(confirmation.due(4), "a relist or re-watch since");
        assert_eq!(
            confirmation.answered(&IdentityAnswer::NoAnswer("502".into()), 4),
            Recheck::Unsure
        );
        assert!(confirmation.due(4), "still unconfirmed");
        assert_eq!(
            confirmation.answered(&IdentityAnswer::Known("a".into()), 4),
            Recheck::Same
        );
        assert!(!confirmation.due(4));
        assert_eq!(
            confirmation.answered(&IdentityAnswer::Known("b".into()), 5),
            Recheck::Changed {
                from: "a".into(),
                to: "b".into()
            }
        );
        // an assumed identity is due at once
        assert!(Confirmation::new("a", false, 0).due(0));
    }

    #[test]
    fn the_change_in_words() {
        let words = changed_words(Some("default"), "0123456789", "abcdefghij");
        assert!(
            words.starts_with("the cluster behind default changed"),
            "{words}"
        );
        assert!(words.contains("01234567 is now abcdefgh"), "{words}");
        assert_eq!(last_seen_key(None), "deltascope.cluster.default");
    }
}
