//! Tests of `follower`, in their own file to keep that one readable.

use super::*;

fn follower(options: LogOptions) -> LogFollower {
    let source = LogSource {
        namespace: "shop".into(),
        pod: "web-1".into(),
        container: "web".into(),
    };
    LogFollower::new(2, source, options)
}

/// The single Send queued, as (id, path).
fn sent(f: &mut LogFollower) -> (RequestId, String) {
    let mut out = None;
    while let Some(action) = f.poll_action() {
        if let Action::Send {
            id, path_and_query, ..
        } = action
        {
            out = Some((id, path_and_query));
        }
    }
    out.expect("a request was sent")
}

fn events(f: &mut LogFollower) -> Vec<LogEvent> {
    std::iter::from_fn(|| f.poll_event()).collect()
}

fn texts(events: &[LogEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LogEvent::Line(l) => Some(l.text.clone()),
            _ => None,
        })
        .collect()
}

fn answer(f: &mut LogFollower, id: RequestId, status: u16, body: &[u8], now: Millis) {
    f.handle(
        Input::ResponseStarted {
            id,
            status,
            retry_after_secs: None,
        },
        now,
    );
    f.handle(Input::BodyChunk { id, bytes: body }, now);
}

#[test]
fn first_request_asks_for_what_the_user_chose() {
    let mut f = follower(LogOptions {
        previous: true,
        tail_lines: Some(100),
        since_seconds: Some(60),
        limit_bytes: Some(4096),
        ..LogOptions::default()
    });
    f.start(0);
    let (_, path) = sent(&mut f);
    assert_eq!(
        path,
        "/api/v1/namespaces/shop/pods/web-1/log?container=web&timestamps=true&follow=true\
         &previous=true&tailLines=100&sinceSeconds=60&limitBytes=4096"
    );
}

#[test]
fn a_break_resumes_from_the_last_second_without_duplicates_or_gaps() {
    let mut f = follower(LogOptions::default());
    f.start(0);
    let (id, _) = sent(&mut f);
    answer(
        &mut f,
        id,
        200,
        b"2026-11-25T10:00:00.100000000Z one\n2026-11-25T10:00:01.500000000Z two\n\
          2026-11-25T10:00:01.500000000Z two-bis\n2026-11-25T10:00:0",
        0,
    );
    f.handle(
        Input::Failed {
            id,
            message: "connection reset".into(),
        },
        10,
    );
    let got = events(&mut f);
    assert_eq!(
        texts(&got),
        vec!["one", "two", "two-bis"],
        "the partial line is not given out"
    );
    let Some(LogEvent::Break {
        after,
        retry_at,
        reason,
        ..
    }) = got.last().cloned()
    else {
        panic!("a break is marked: {got:?}");
    };
    assert_eq!(after, "2026-11-25T10:00:01.500000000Z");
    assert!(reason.contains("connection reset"));
    assert_eq!(f.poll_timeout(), Some(retry_at));

    f.handle(Input::Tick, retry_at);
    let (id, path) = sent(&mut f);
    assert!(
        path.ends_with("&sinceTime=2026-11-25T10%3A00%3A01Z"),
        "{path}"
    );
    assert!(!path.contains("tailLines"));
    // the server resends the whole second, then new lines, one of them
    // with the same timestamp as the last one shown
    answer(
        &mut f,
        id,
        200,
        b"2026-11-25T10:00:01.200000000Z one-and-a-bit\n2026-11-25T10:00:01.500000000Z two\n\
          2026-11-25T10:00:01.500000000Z two-bis\n2026-11-25T10:00:01.500000000Z two-ter\n\
          2026-11-25T10:00:02.000000000Z three\n",
        retry_at,
    );
    assert_eq!(texts(&events(&mut f)), vec!["two-ter", "three"]);
    assert_eq!(
        f.repeated(),
        3,
        "one-and-a-bit, two and two-bis were sent again"
    );
}

#[test]
fn a_finished_read_ends_and_a_followed_one_reconnects() {
    let mut once = follower(LogOptions {
        follow: false,
        ..LogOptions::default()
    });
    once.start(0);
    let (id, path) = sent(&mut once);
    assert!(!path.contains("follow"));
    answer(
        &mut once,
        id,
        200,
        b"2026-11-25T10:00:00Z last line without newline",
        0,
    );
    once.handle(Input::BodyEnd { id }, 1);
    let got = events(&mut once);
    assert_eq!(texts(&got), vec!["last line without newline"]);
    assert_eq!(
        got.last(),
        Some(&LogEvent::Ended {
            source: 2,
            error: None
        })
    );
    assert!(once.is_ended());

    let mut followed = follower(LogOptions::default());
    followed.start(0);
    let (id, _) = sent(&mut followed);
    answer(&mut followed, id, 200, b"2026-11-25T10:00:00Z a\n", 0);
    followed.handle(Input::BodyEnd { id }, 5);
    assert!(matches!(
        events(&mut followed).last(),
        Some(LogEvent::Break { .. })
    ));
    assert!(followed.poll_timeout().is_some(), "follows again");
}

fn refusal(code: u16, message: &str) -> Option<LogEvent> {
    let mut f = follower(LogOptions::default());
    f.start(0);
    let (id, _) = sent(&mut f);
    let body = Status::failure(code, "BadRequest", message).to_body();
    answer(&mut f, id, code, &body, 0);
    f.handle(Input::BodyEnd { id }, 1);
    events(&mut f).pop()
}

#[test]
fn refusals_say_what_is_wrong() {
    let ended = |event: Option<LogEvent>| match event {
        Some(LogEvent::Ended { error: Some(e), .. }) => Some(e),
        _ => None,
    };
    assert!(matches!(
        ended(refusal(400, "container nosuch is not valid for pod web-1")),
        Some(LogError::UnknownContainer { container, .. }) if container == "web"
    ));
    assert!(matches!(
        ended(refusal(
            400,
            "previous terminated container \"web\" in pod \"web-1\" not found"
        )),
        Some(LogError::PreviousUnavailable { .. })
    ));
    assert!(matches!(
        ended(refusal(404, "pods \"web-1\" not found")),
        Some(LogError::PodGone { .. })
    ));
    assert!(matches!(
        ended(refusal(403, "forbidden")),
        Some(LogError::Forbidden { .. })
    ));
    // not started yet, or a server error: wait and try again
    let waiting = refusal(
        400,
        "container \"web\" in pod \"web-1\" is waiting to start: ContainerCreating",
    );
    assert!(
        matches!(&waiting, Some(LogEvent::Break { reason, .. }) if reason.contains("not started yet")),
        "{waiting:?}"
    );
    assert!(matches!(
        refusal(503, "unavailable"),
        Some(LogEvent::Break { .. })
    ));
}

#[test]
fn stopping_cancels_and_later_input_is_ignored() {
    let mut f = follower(LogOptions::default());
    f.start(0);
    let (id, _) = sent(&mut f);
    f.stop();
    assert_eq!(f.poll_action(), Some(Action::Cancel { id }));
    answer(&mut f, id, 200, b"2026-11-25T10:00:00Z late\n", 1);
    assert!(events(&mut f).is_empty());
    f.handle(Input::Tick, 1_000_000);
    assert_eq!(f.poll_action(), None);
}

/// A log of `n` lines whose timestamps repeat and jump (gaps as
/// generated), as the server would send it from `since` seconds on.
fn server_log(gaps: &[u8], since: Option<i64>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut nanos: i128 = 1_795_000_000 * 1_000_000_000;
    for (i, gap) in gaps.iter().enumerate() {
        nanos += i128::from(*gap % 4) * 300_000_000; // 0: same timestamp
        if since.is_some_and(|s| nanos < i128::from(s) * 1_000_000_000) {
            continue;
        }
        let seconds = nanos.div_euclid(1_000_000_000) as i64;
        let ts = format!(
            "{}.{:09}Z",
            format_rfc3339(seconds)
                .unwrap_or_default()
                .trim_end_matches('Z'),
            nanos.rem_euclid(1_000_000_000)
        );
        out.extend_from_slice(format!("{ts} line {i}\n").as_bytes());
    }
    out
}

proptest::proptest! {
    /// However the stream breaks (after any byte, any number of times),
    /// what the view gets is the log, each line once, in order.
    #[test]
    fn breaks_lose_and_repeat_nothing(
        gaps in proptest::collection::vec(0u8..8, 1..60),
        cuts in proptest::collection::vec(0usize..4000, 0..5),
    ) {
        let whole = server_log(&gaps, None);
        let mut f = follower(LogOptions::default());
        f.start(0);
        let mut now = 0;
        let mut given = Vec::new();
        let mut cuts = cuts.into_iter();
        loop {
            let (id, path) = sent(&mut f);
            let since = path.split("sinceTime=").nth(1).map(|t| {
                let t = deltascope_facts::percent::decode_query_value(t).unwrap_or_default();
                deltascope_facts::time::parse_rfc3339(&t).unwrap_or(0)
            });
            let body = server_log(&gaps, since);
            match cuts.next().filter(|c| *c < body.len()) {
                Some(cut) => {
                    answer(&mut f, id, 200, &body[..cut], now);
                    f.handle(Input::Failed { id, message: "cut".into() }, now);
                    given.extend(texts(&events(&mut f)));
                    now = f.poll_timeout().unwrap_or(now);
                    f.handle(Input::Tick, now);
                }
                None => {
                    answer(&mut f, id, 200, &body, now);
                    f.handle(Input::BodyEnd { id }, now);
                    given.extend(texts(&events(&mut f)));
                    break;
                }
            }
        }
        let want: Vec<String> = String::from_utf8_lossy(&whole)
            .lines()
            .map(|l| l.split_once(' ').map(|x| x.1).unwrap_or("").to_owned())
            .collect();
        proptest::prop_assert_eq!(given, want);
    }
}
