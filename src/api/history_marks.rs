//! A resource's record counted per bucket: the path of
//! `GET /_deltascope/history/marks?resource=R&since=T&until=T&buckets=N[&namespace=NS]`
//! ([`marks_path`]; ARCHITECTURE.md's History contracts) and its answer —
//! `{"since","until","buckets","types":[…],"counts":[[bucket, n…]…],"gaps":[…],"first"}`
//! — read into [`RecordedMarks`]: each non-empty bucket's deltas per type
//! (in [`MARK_TYPES`] order), and the spans the recorder did not watch.
//! Strict where the timeline would draw something wrong (a bucket outside
//! the range, a count row of the wrong length, an unknown type name, a
//! time that is none: the answer is refused, naming what), lenient about
//! fields serve adds later. When the page asks is `crate::app::recorded_marks`.

use serde::Deserialize;

use crate::api::object_record::{GapFields, RecordGap};
use crate::informer::{DeltaType, Millis};
use deltascope_facts::percent::encode_query_value;
use deltascope_facts::time::{format_rfc3339_millis, parse_rfc3339_millis};

/// serve's counted record.
pub const MARKS_PATH: &str = "/_deltascope/history/marks";

/// The order of [`RecordedMarks::counts`]' values.
pub const MARK_TYPES: [DeltaType; 5] = [
    DeltaType::Added,
    DeltaType::Updated,
    DeltaType::Deleted,
    DeltaType::Replaced,
    DeltaType::Sync,
];

/// The most buckets serve counts in one answer.
pub const MAX_BUCKETS: usize = 4096;

/// `GET /_deltascope/history/marks` for `resource` (as in `data-resource`)
/// over `[since, until)` in `buckets`, in `namespace` when given.
pub fn marks_path(
    resource: &str,
    namespace: Option<&str>,
    (since, until): (Millis, Millis),
    buckets: usize,
) -> String {
    let time = |ms: Millis| {
        format_rfc3339_millis(ms as i64)
            .map(|t| encode_query_value(&t))
            .unwrap_or_default()
    };
    let mut path = format!(
        "{MARKS_PATH}?resource={}&since={}&until={}&buckets={buckets}",
        encode_query_value(resource),
        time(since),
        time(until),
    );
    if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
        path.push_str("&namespace=");
        path.push_str(&encode_query_value(namespace));
    }
    path
}

/// The record's deltas over a range, per bucket and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMarks {
    pub since: Millis,
    pub until: Millis,
    pub buckets: usize,
    /// Non-empty buckets in order: index and counts in [`MARK_TYPES`]
    /// order (whatever order serve named them in).
    pub counts: Vec<(usize, [u32; 5])>,
    pub gaps: Vec<RecordGap>,
}

impl RecordedMarks {
    /// Where bucket `index` starts.
    pub fn bucket_start(&self, index: usize) -> Millis {
        let span = self.until.saturating_sub(self.since) as u128;
        self.since + (span * index as u128 / self.buckets.max(1) as u128) as Millis
    }

    /// Every delta counted.
    pub fn total(&self) -> u64 {
        self.counts
            .iter()
            .map(|(_, c)| c.iter().map(|n| u64::from(*n)).sum::<u64>())
            .sum()
    }
}

/// Why an answer is not marks the timeline can draw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarksError {
    #[error("serve's marks are not JSON of the expected shape: {0}")]
    Shape(String),
    #[error("serve's marks name {0:?}, not a time in RFC 3339")]
    Time(String),
    #[error("serve's marks name the delta type {0:?}, which the page does not know")]
    Type(String),
    #[error("serve's marks count bucket {bucket} of {buckets}, or a row of {len} values")]
    Bucket {
        bucket: u64,
        buckets: usize,
        len: usize,
    },
}

#[derive(Deserialize)]
struct Body {
    since: String,
    until: String,
    buckets: usize,
    types: Vec<String>,
    counts: Vec<Vec<u64>>,
    #[serde(default)]
    gaps: Vec<GapFields>,
}

fn time(text: &str) -> Result<Millis, MarksError> {
    parse_rfc3339_millis(text)
        .and_then(|ms| Millis::try_from(ms).ok())
        .ok_or_else(|| MarksError::Time(text.chars().take(40).collect()))
}

/// Where the type serve names goes in [`MARK_TYPES`].
fn slot_of(name: &str) -> Option<usize> {
    MARK_TYPES
        .iter()
        .position(|kind| format!("{kind:?}") == name)
}

/// Reads serve's answer.
pub fn parse_marks(body: &[u8]) -> Result<RecordedMarks, MarksError> {
    let body: Body =
        serde_json::from_slice(body).map_err(|error| MarksError::Shape(error.to_string()))?;
    let slots: Vec<usize> = body
        .types
        .iter()
        .map(|name| slot_of(name).ok_or_else(|| MarksError::Type(name.chars().take(40).collect())))
        .collect::<Result<_, _>>()?;
    let buckets = body.buckets.clamp(1, MAX_BUCKETS);
    let mut counts = Vec::with_capacity(body.counts.len());
    for row in &body.counts {
        let bad = || MarksError::Bucket {
            bucket: row.first().copied().unwrap_or(u64::MAX),
            buckets,
            len: row.len(),
        };
        let (Some(&bucket), true) = (row.first(), row.len() == slots.len() + 1) else {
            return Err(bad());
        };
        let index = usize::try_from(bucket)
            .ok()
            .filter(|i| *i < buckets)
            .ok_or_else(bad)?;
        let mut by_type = [0u32; 5];
        for (slot, count) in slots.iter().zip(&row[1..]) {
            by_type[*slot] =
                by_type[*slot].saturating_add(u32::try_from(*count).unwrap_or(u32::MAX));
        }
        counts.push((index, by_type));
    }
    let (since, until) = (time(&body.since)?, time(&body.until)?);
    let gaps = body
        .gaps
        .into_iter()
        .map(|gap| {
            gap.read()
                .map_err(|text| MarksError::Time(text.chars().take(40).collect()))
        })
        .collect::<Result<_, MarksError>>()?;
    Ok(RecordedMarks {
        since,
        until,
        buckets,
        counts,
        gaps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = r#"{"resource":"pods","since":"1970-01-01T00:00:00.000Z",
        "until":"1970-01-01T00:00:10.000Z","buckets":10,
        "types":["Added","Updated","Deleted","Replaced","Sync"],
        "counts":[[1,12,0,0,0,0],[5,0,3,1,0,2]],
        "gaps":[{"from":"1970-01-01T00:00:03.000Z","to":"1970-01-01T00:00:03.500Z","reason":"unreachable"}],
        "first":"1970-01-01T00:00:01.000Z","later":"ignored"}"#;

    #[test]
    fn an_answer_reads_into_buckets_by_type() {
        let marks = parse_marks(ANSWER.as_bytes()).unwrap();
        assert_eq!((marks.since, marks.until, marks.buckets), (0, 10_000, 10));
        let (added, updated, deleted, sync) = (0, 1, 2, 4);
        assert_eq!(marks.counts[0].0, 1);
        assert_eq!(marks.counts[0].1[added], 12);
        assert_eq!(marks.counts[1].1[updated], 3);
        assert_eq!(marks.counts[1].1[deleted], 1);
        assert_eq!(marks.counts[1].1[sync], 2);
        assert_eq!(marks.total(), 18);
        assert_eq!(marks.bucket_start(5), 5_000);
        assert_eq!(marks.gaps[0].reason, "unreachable");
        assert_eq!(marks.gaps[0].to_ms, 3_500);
    }

    #[test]
    fn answers_the_timeline_would_draw_wrong_are_refused() {
        let broken = [
            ANSWER.replace("[5,0,3,1,0,2]", "[10,0,3,1,0,2]"),
            ANSWER.replace("[5,0,3,1,0,2]", "[5,0,3]"),
            ANSWER.replace("\"Sync\"", "\"Bookmark\""),
            ANSWER.replace("1970-01-01T00:00:10.000Z", "later"),
            ANSWER.replace("\"counts\"", "\"count\""),
            "not json".to_string(),
        ];
        for body in broken {
            assert!(parse_marks(body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn the_path_encodes_every_value() {
        assert_eq!(
            marks_path("deployments.apps", Some("shop"), (0, 10_000), 100),
            "/_deltascope/history/marks?resource=deployments.apps&since=1970-01-01T00%3A00%3A00.000Z\
             &until=1970-01-01T00%3A00%3A10.000Z&buckets=100&namespace=shop"
        );
    }
}
