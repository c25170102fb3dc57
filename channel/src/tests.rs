//! The channel's framing: every frame survives a split at every byte offset,
//! and the interleaved frames of many streams come out as exactly each
//! stream's own response.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

/// What one stream received, rebuilt from events.
#[derive(Debug, Default, PartialEq, Eq)]
struct Received {
    start: Option<(u16, Option<u32>)>,
    body: Vec<u8>,
    ended: Option<Result<(), String>>,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Transcript {
    hello: Option<String>,
    pings: usize,
    streams: BTreeMap<StreamId, Received>,
}

fn decode_in_chunks(bytes: &[u8], cuts: &[usize]) -> Result<Transcript, DecodeError> {
    let mut decoder = Decoder::new();
    let mut transcript = Transcript::default();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let cut = cut.clamp(from, bytes.len());
        decoder.feed(&bytes[from..cut], |event| record(&mut transcript, event))?;
        from = cut;
    }
    assert!(decoder.at_boundary(), "a whole stream ends between frames");
    Ok(transcript)
}

fn record(transcript: &mut Transcript, event: Event<'_>) {
    match event {
        Event::Hello { channel } => transcript.hello = Some(channel),
        Event::Ping => transcript.pings += 1,
        Event::Start {
            stream,
            status,
            retry_after_secs,
        } => {
            let received = transcript.streams.entry(stream).or_default();
            assert!(received.start.is_none(), "one Start per stream");
            received.start = Some((status, retry_after_secs));
        }
        Event::Data { stream, bytes } => {
            assert!(!bytes.is_empty(), "no empty data events");
            let received = transcript.streams.entry(stream).or_default();
            assert!(received.ended.is_none(), "no data after the end");
            received.body.extend_from_slice(bytes);
        }
        Event::End { stream } => {
            transcript.streams.entry(stream).or_default().ended = Some(Ok(()));
        }
        Event::Fail { stream, reason } => {
            transcript.streams.entry(stream).or_default().ended = Some(Err(reason));
        }
    }
}

fn sample() -> Vec<u8> {
    let mut out = Vec::new();
    encode(&Frame::Hello { channel: "c0ffee" }, &mut out);
    encode(
        &Frame::Start {
            stream: 1,
            status: 200,
            retry_after_secs: None,
        },
        &mut out,
    );
    encode(
        &Frame::Data {
            stream: 1,
            bytes: b"{\"type\":\"ADDED\"}\n{\"ty",
        },
        &mut out,
    );
    encode(
        &Frame::Start {
            stream: 2,
            status: 429,
            retry_after_secs: Some(3),
        },
        &mut out,
    );
    encode(&Frame::Ping, &mut out);
    encode(
        &Frame::Data {
            stream: 1,
            bytes: b"pe\":\"BOOKMARK\"}\n",
        },
        &mut out,
    );
    encode(
        &Frame::Data {
            stream: 2,
            bytes: b"",
        },
        &mut out,
    );
    encode(&Frame::End { stream: 2 }, &mut out);
    encode(
        &Frame::Fail {
            stream: 1,
            reason: "the upstream closed — as a slow watcher",
        },
        &mut out,
    );
    out
}

fn expected_sample() -> Transcript {
    let mut streams = BTreeMap::new();
    streams.insert(
        1,
        Received {
            start: Some((200, None)),
            body: b"{\"type\":\"ADDED\"}\n{\"type\":\"BOOKMARK\"}\n".to_vec(),
            ended: Some(Err("the upstream closed — as a slow watcher".into())),
        },
    );
    streams.insert(
        2,
        Received {
            start: Some((429, Some(3))),
            body: Vec::new(),
            ended: Some(Ok(())),
        },
    );
    Transcript {
        hello: Some("c0ffee".into()),
        pings: 1,
        streams,
    }
}

#[test]
fn split_at_every_offset() {
    let bytes = sample();
    let expected = expected_sample();
    assert_eq!(decode_in_chunks(&bytes, &[]).unwrap(), expected);
    for cut in 0..=bytes.len() {
        assert_eq!(
            decode_in_chunks(&bytes, &[cut]).unwrap(),
            expected,
            "split at {cut}"
        );
    }
    // and every pair of offsets, so a header split twice is covered too
    for a in 0..=bytes.len() {
        for b in a..=bytes.len() {
            assert_eq!(decode_in_chunks(&bytes, &[a, b]).unwrap(), expected);
        }
    }
}

#[test]
fn byte_at_a_time() {
    let bytes = sample();
    let cuts: Vec<usize> = (0..bytes.len()).collect();
    assert_eq!(decode_in_chunks(&bytes, &cuts).unwrap(), expected_sample());
}

#[test]
fn data_is_handed_out_without_buffering() {
    let mut out = Vec::new();
    encode(
        &Frame::Data {
            stream: 7,
            bytes: &[b'x'; 100],
        },
        &mut out,
    );
    let mut decoder = Decoder::new();
    let mut seen = 0;
    decoder
        .feed(&out[..HEADER_LEN + 10], |event| match event {
            Event::Data { bytes, .. } => seen += bytes.len(),
            other => panic!("{other:?}"),
        })
        .unwrap();
    assert_eq!(seen, 10, "the first ten bytes arrive before the frame ends");
    assert!(!decoder.at_boundary());
}

#[test]
fn oversized_control_frames_are_refused() {
    let mut bytes = header(KIND_FAIL, 1, MAX_CONTROL_PAYLOAD + 1).to_vec();
    bytes.extend_from_slice(b"...");
    let error = Decoder::new().feed(&bytes, |_| {}).unwrap_err();
    assert!(matches!(error, DecodeError::ControlTooLong { .. }));
    assert!(error.to_string().contains("more than"));
}

#[test]
fn malformed_start_and_hello_are_errors() {
    let mut bytes = header(KIND_START, 1, 2).to_vec();
    bytes.extend_from_slice(&[0, 200]);
    assert_eq!(
        Decoder::new().feed(&bytes, |_| {}),
        Err(DecodeError::BadStart(2))
    );
    let mut bytes = header(KIND_HELLO, 0, 2).to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    assert_eq!(
        Decoder::new().feed(&bytes, |_| {}),
        Err(DecodeError::NotUtf8)
    );
}

#[test]
fn unknown_kinds_are_skipped() {
    let mut bytes = header(42, 1, 3).to_vec();
    bytes.extend_from_slice(b"abc");
    encode(&Frame::End { stream: 1 }, &mut bytes);
    let mut events = Vec::new();
    Decoder::new()
        .feed(&bytes, |event| events.push(format!("{event:?}")))
        .unwrap();
    assert_eq!(events, vec!["End { stream: 1 }".to_string()]);
}

#[test]
fn long_fail_reasons_are_cut_on_a_character_boundary() {
    let reason = "é".repeat(MAX_CONTROL_PAYLOAD as usize);
    let mut out = Vec::new();
    encode(
        &Frame::Fail {
            stream: 3,
            reason: &reason,
        },
        &mut out,
    );
    let mut got = None;
    Decoder::new()
        .feed(&out, |event| {
            if let Event::Fail { reason, .. } = event {
                got = Some(reason);
            }
        })
        .unwrap();
    let got = got.unwrap();
    assert!(got.len() <= MAX_CONTROL_PAYLOAD as usize);
    assert!(got.chars().all(|c| c == 'é'));
}

#[test]
fn control_bodies_round_trip_and_default() {
    let control = Control {
        open: vec![Open {
            stream: 4,
            path: "/api/v1/pods?watch=1&resourceVersion=10".into(),
            accept: Some("application/json;as=Table;v=v1;g=meta.k8s.io".into()),
        }],
        close: vec![1, 2],
    };
    let text = serde_json::to_string(&control).unwrap();
    assert_eq!(serde_json::from_str::<Control>(&text).unwrap(), control);
    assert_eq!(
        serde_json::from_str::<Control>("{\"close\":[9]}").unwrap(),
        Control {
            open: vec![],
            close: vec![9]
        }
    );
}

/// One stream's whole response, as its own connection would have given it.
#[derive(Debug, Clone)]
struct Response {
    status: u16,
    retry_after: Option<u32>,
    chunks: Vec<Vec<u8>>,
    failure: Option<String>,
}

fn response() -> impl Strategy<Value = Response> {
    (
        prop_oneof![Just(200u16), Just(403), Just(410), Just(429), Just(500)],
        proptest::option::of(0u32..100),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8),
        proptest::option::of("[a-z ]{0,20}"),
    )
        .prop_map(|(status, retry_after, chunks, failure)| Response {
            status,
            retry_after,
            chunks,
            failure,
        })
}

proptest! {
    /// N streams' frames interleaved in any order (each stream's own order
    /// kept), pings between, cut into random chunks: each stream comes out
    /// exactly as its own response.
    #[test]
    fn interleaved_streams_come_out_as_their_own(
        responses in proptest::collection::vec(response(), 1..6),
        schedule in proptest::collection::vec(any::<u8>(), 0..200),
        cuts in proptest::collection::vec(0usize..4000, 0..30),
    ) {
        // Each stream's frames, in order.
        let mut queues: Vec<Vec<Vec<u8>>> = responses.iter().enumerate().map(|(i, r)| {
            let stream = i as StreamId + 1;
            let mut frames = Vec::new();
            let mut f = Vec::new();
            encode(&Frame::Start { stream, status: r.status, retry_after_secs: r.retry_after }, &mut f);
            frames.push(f);
            for chunk in &r.chunks {
                let mut f = Vec::new();
                encode(&Frame::Data { stream, bytes: chunk }, &mut f);
                frames.push(f);
            }
            let mut f = Vec::new();
            match &r.failure {
                Some(reason) => encode(&Frame::Fail { stream, reason }, &mut f),
                None => encode(&Frame::End { stream }, &mut f),
            }
            frames.push(f);
            frames
        }).collect();
        queues.iter_mut().for_each(|q| q.reverse());
        let mut wire = Vec::new();
        encode(&Frame::Hello { channel: "id" }, &mut wire);
        let mut pick = schedule.into_iter().cycle();
        while queues.iter().any(|q| !q.is_empty()) {
            let live: Vec<usize> = (0..queues.len()).filter(|&i| !queues[i].is_empty()).collect();
            let choice = pick.next().unwrap_or(0) as usize;
            if choice % 7 == 0 {
                encode(&Frame::Ping, &mut wire);
            }
            let i = live[choice % live.len()];
            wire.extend(queues[i].pop().unwrap());
        }
        let mut cuts = cuts;
        cuts.sort_unstable();
        let transcript = decode_in_chunks(&wire, &cuts).unwrap();
        prop_assert_eq!(transcript.hello.as_deref(), Some("id"));
        prop_assert_eq!(transcript.streams.len(), responses.len());
        for (i, r) in responses.iter().enumerate() {
            let got = &transcript.streams[&(i as StreamId + 1)];
            prop_assert_eq!(got.start, Some((r.status, r.retry_after)));
            prop_assert_eq!(&got.body, &r.chunks.concat());
            let ended = match &r.failure { Some(reason) => Err(reason.clone()), None => Ok(()) };
            prop_assert_eq!(got.ended.as_ref(), Some(&ended));
        }
    }
}
