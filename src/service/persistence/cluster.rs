//! Whose history the browser's database holds, carried out for the
//! persistence task (the decisions are `crate::app::cluster_identity`):
//! at load, asking the cluster who it is (and serve what it calls it) and
//! opening that cluster's database — never another's; before a write that
//! follows a broken watch, asking again, and when another cluster answers
//! behind the same name, starting the page anew (a reload), so neither the
//! page nor the database mixes the two; and, for the settings, the other
//! clusters this browser stores history of.

use crate::address::route::api_root;
use crate::api::cluster_identity::{
    default_cluster_name, identity_answer, IdentityAnswer, CLUSTERS_PATH, KUBE_SYSTEM_PATH,
};
use crate::api::history_summary::status_message;
use crate::app::cluster_identity::{
    last_seen_key, own_database, place, place_other, standing, ClusterMark, Confirmation,
    Placement, Recheck, Standing, PRIMARY_DATABASE, UNIDENTIFIED,
};
use crate::informer::persist::Restorer;
use crate::service::kept_informers::local_storage;
use crate::transport::database::{Database, DbError};
use crate::transport::database_directory::{database_names, delete_database};
use crate::transport::serve_history::get;
use crate::transport::timer::sleep_ms;

/// Times the cluster is asked at load, a second apart, before the page
/// gives up storing for this load (only when no identity was seen before).
const ASKS_AT_LOAD: u32 = 3;

/// The cluster the page stores history for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClusterSummary {
    /// serve's name for it (none without serve).
    pub name: Option<String>,
    /// Its `kube-system` uid, or `unidentified`.
    pub identity: String,
    /// The database its history is in.
    pub database: String,
    /// Why it is not told apart from another cluster, when it is not.
    pub unidentified: Option<String>,
}

/// Another cluster this browser stores history of.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherCluster {
    pub database: String,
    /// Its `kube-system` uid, or `unknown` for a database with no mark.
    pub identity: String,
    pub name: Option<String>,
    /// Views stored for it, and their bytes.
    pub views: usize,
    pub bytes: u64,
}

/// The cluster's database, open.
pub(super) struct Opened {
    pub db: Database,
    pub cluster: ClusterSummary,
    /// Asks again after broken watches; `None` for a cluster that does not
    /// say who it is.
    pub confirmation: Option<Confirmation>,
    /// The identity last seen behind the same name, when it was another.
    pub changed_from: Option<String>,
}

/// Asks who serve's cluster `cluster` (`None`: the default one) is; `Err`
/// when serve has no cluster of that name (an address naming one it does
/// not serve): there is nothing to store for it.
pub(super) async fn ask_identity(cluster: Option<&str>) -> Result<IdentityAnswer, String> {
    let path = format!("{}{KUBE_SYSTEM_PATH}", api_root(cluster));
    match get(&path).await {
        Ok(answer) if cluster.is_some() && answer.status == 404 => {
            let message = status_message(&answer.body).unwrap_or_default();
            if message.contains("no cluster named") {
                return Err(message);
            }
            Ok(identity_answer(answer.status, &answer.body))
        }
        Ok(answer) => Ok(identity_answer(answer.status, &answer.body)),
        Err(error) => Ok(IdentityAnswer::NoAnswer(error.to_string())),
    }
}

async fn ask_name() -> Option<String> {
    let answer = get(CLUSTERS_PATH).await.ok()?;
    default_cluster_name(answer.status, &answer.body)
}

/// Opens the database of serve's cluster `cluster` (`None`: the default
/// one, the cluster behind the page); `Err` says why nothing is stored
/// for it this load. `epoch` is the kept informers' count of broken
/// watches now.
pub(super) async fn open_for_cluster(epoch: u64, cluster: Option<&str>) -> Result<Opened, String> {
    let name = async {
        match cluster {
            Some(name) => Some(name.to_string()),
            None => ask_name().await,
        }
    };
    let (answer, name) = futures_util::future::join(ask_identity(cluster), name).await;
    let mut answer = answer?;
    let key = last_seen_key(name.as_deref());
    let last_seen = local_storage().and_then(|s| s.get_item(&key).ok().flatten());
    let mut asks = 1;
    while matches!(answer, IdentityAnswer::NoAnswer(_))
        && last_seen.is_none()
        && asks < ASKS_AT_LOAD
    {
        sleep_ms(1_000).await;
        answer = ask_identity(cluster).await?;
        asks += 1;
    }
    let standing = standing(answer, last_seen.clone());
    let identity = match &standing {
        Standing::Unknown(why) => {
            return Err(format!(
                "the cluster did not say who it is ({why}), so what is stored for it cannot be told apart from another cluster's"
            ))
        }
        known => known.identity().unwrap_or(UNIDENTIFIED).to_string(),
    };
    let mark = ClusterMark {
        identity: identity.clone(),
        name: name.clone(),
    };
    let db = open_database(&mark, cluster.is_none())
        .await
        .map_err(|e| e.to_string())?;
    let confirmed = matches!(standing, Standing::Confirmed(_));
    let changed_from = if confirmed {
        if let Some(storage) = local_storage() {
            let _ = storage.set_item(&key, &identity);
        }
        last_seen.filter(|seen| *seen != identity)
    } else {
        None
    };
    let unidentified = match &standing {
        Standing::Unidentified(why) => Some(why.clone()),
        _ => None,
    };
    Ok(Opened {
        cluster: ClusterSummary {
            name,
            identity: identity.clone(),
            database: db.name().to_string(),
            unidentified: unidentified.clone(),
        },
        db,
        confirmation: unidentified
            .is_none()
            .then(|| Confirmation::new(&identity, confirmed, epoch)),
        changed_from,
    })
}

/// The database `mark`'s cluster keeps its history in, opened and marked;
/// only the default cluster (`default`) may claim the first one.
async fn open_database(mark: &ClusterMark, default: bool) -> Result<Database, DbError> {
    let own = own_database(&mark.identity);
    let own_exists = database_names().await.contains(&own);
    let name = if own_exists {
        own
    } else {
        let primary = Database::open(PRIMARY_DATABASE).await?;
        let primary_mark = primary.mark().await?;
        let primary_mark = primary_mark.as_deref().and_then(ClusterMark::from_json);
        let placed = match default {
            true => place(primary_mark.as_ref(), &mark.identity, false),
            false => place_other(primary_mark.as_ref(), &mark.identity, false),
        };
        match placed {
            Placement::Primary { claim } => {
                if claim || primary_mark.as_ref() != Some(mark) {
                    primary.put_mark(&mark.to_json()).await?;
                }
                return Ok(primary);
            }
            Placement::Own(name) => {
                primary.close();
                name
            }
        }
    };
    let db = Database::open(&name).await?;
    db.put_mark(&mark.to_json()).await?;
    Ok(db)
}

/// What one more question to the cluster says, at `epoch`.
pub(super) async fn recheck(
    confirmation: &mut Confirmation,
    epoch: u64,
    cluster: Option<&str>,
) -> Recheck {
    match ask_identity(cluster).await {
        Ok(answer) => confirmation.answered(&answer, epoch),
        // serve no longer has it (restarted with other contexts)
        Err(_) => Recheck::Unsure,
    }
}

/// Starts the page anew on the new cluster: its own database, cold, and
/// the words that say what happened (the identity last seen is still the
/// old one, so the new page tells the change).
pub(super) fn start_anew() {
    if let Some(window) = web_sys::window() {
        let _ = window.location().reload();
    }
}

/// The other clusters this browser stores history of (every database of the
/// page's but `ours`), each read and let go.
pub(super) async fn other_clusters(ours: &str) -> Vec<OtherCluster> {
    let mut others = Vec::new();
    for database in database_names().await {
        if database == ours {
            continue;
        }
        let Ok(db) = Database::open(&database).await else {
            continue;
        };
        let mark = db
            .mark()
            .await
            .ok()
            .flatten()
            .and_then(|text| ClusterMark::from_json(&text));
        let metas = db.metas().await.unwrap_or_default();
        db.close();
        let bytes = metas
            .iter()
            .filter_map(|(_, text)| Restorer::from_json(text).ok())
            .map(|restorer| restorer.meta().stored_bytes())
            .sum();
        others.push(OtherCluster {
            identity: mark
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |m| m.identity.clone()),
            name: mark.and_then(|m| m.name),
            views: metas.len(),
            bytes,
            database,
        });
    }
    others
}

/// Deletes another cluster's database.
pub(super) async fn forget_other(database: &str) -> Result<(), DbError> {
    delete_database(database).await
}
