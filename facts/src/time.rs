//! Times as Kubernetes writes and kubectl shows them: RFC 3339 timestamps
//! (`2026-11-23T00:45:27Z`, parsed with any fraction or offset, written in
//! UTC to the second as the apiserver does), and kubectl's short ages
//! (`45s`, `3m12s`, `5h4m`, `12d`, `3y20d`). Parsing and formatting are the
//! `time` crate's; the age rules are kubectl's `duration.HumanDuration`,
//! including its answer for a time in the future; and durations as Go
//! writes them (metrics-server's `window`: `15s`, `1m0s`).

use ::time::format_description::well_known::Rfc3339;
use ::time::OffsetDateTime;

/// Seconds since the Unix epoch for an RFC 3339 timestamp
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`); `None` if it is not one.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(OffsetDateTime::unix_timestamp)
}

/// Nanoseconds since the Unix epoch for an RFC 3339 timestamp with any
/// fraction (`2026-11-25T10:00:00.123456789Z`, as the kubelet stamps log
/// lines); `None` if it is not one.
pub fn parse_rfc3339_nanos(text: &str) -> Option<i128> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(OffsetDateTime::unix_timestamp_nanos)
}

/// `2026-11-23T00:45:27Z` for a Unix time in seconds; `None` outside the
/// years 0000–9999 that RFC 3339 can write.
pub fn format_rfc3339(unix_seconds: i64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()?
        .format(&Rfc3339)
        .ok()
}

/// `2026-11-23T00:45:27.125Z` for a Unix time in milliseconds, always with
/// three fraction digits (the recorded history's times); `None` outside the
/// years 0000–9999.
pub fn format_rfc3339_millis(unix_millis: i64) -> Option<String> {
    let seconds = format_rfc3339(unix_millis.div_euclid(1000))?;
    let stem = seconds.strip_suffix('Z')?;
    Some(format!("{stem}.{:03}Z", unix_millis.rem_euclid(1000)))
}

/// Milliseconds since the Unix epoch for an RFC 3339 timestamp (a finer
/// fraction is cut to the millisecond, towards the past); `None` if it is
/// not one.
pub fn parse_rfc3339_millis(text: &str) -> Option<i64> {
    let nanos = parse_rfc3339_nanos(text)?;
    i64::try_from(nanos.div_euclid(1_000_000)).ok()
}

/// kubectl's short age of a duration in seconds. Up to a second in the
/// future reads `0s` (clock skew); further is `<invalid>`, as kubectl says.
pub fn format_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    let s = seconds.max(0);
    let (minutes, hours, days) = (s / 60, s / 3600, s / 86_400);
    let pair = |big: i64, big_unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    if s < 120 {
        format!("{s}s")
    } else if minutes < 10 {
        pair(minutes, "m", s % 60, "s")
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        pair(hours, "h", minutes % 60, "m")
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        pair(days, "d", hours % 24, "h")
    } else if days < 365 * 2 {
        format!("{days}d")
    } else if days < 365 * 8 {
        pair(days / 365, "y", days % 365, "d")
    } else {
        format!("{}y", days / 365)
    }
}

/// The age of an object created at RFC 3339 `timestamp` when it is
/// `now_unix` seconds; `<unknown>` when the timestamp is not one.
pub fn age_of(timestamp: &str, now_unix: i64) -> String {
    parse_rfc3339(timestamp)
        .map(|created| format_age(now_unix - created))
        .unwrap_or_else(|| "<unknown>".to_string())
}

/// A duration as Go writes it (`15s`, `1m0s`, `1.5s`, `500ms`, `2h0m0s`),
/// in ms, rounded down; `None` if it is not one.
pub fn parse_go_duration_ms(text: &str) -> Option<i64> {
    const UNITS: [(&str, f64); 7] = [
        ("ns", 1e-6),
        ("us", 1e-3),
        ("µs", 1e-3),
        ("ms", 1.0),
        ("s", 1e3),
        ("m", 60e3),
        ("h", 3_600e3),
    ];
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    if rest == "0" {
        return Some(0);
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        // the longest unit that the text starts with (`ms` before `m`)
        let (unit, scale) = UNITS
            .iter()
            .filter(|(unit, _)| rest.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())?;
        rest = &rest[unit.len()..];
        total += number * scale;
    }
    (0.0..9e15).contains(&total).then_some(total as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_read_as_go_writes_them() {
        for (text, ms) in [
            ("15s", 15_000),
            ("1m0s", 60_000),
            ("1.5s", 1_500),
            ("500ms", 500),
            ("2h0m0s", 7_200_000),
            ("1m30.25s", 90_250),
            ("0s", 0),
            ("1500us", 1),
        ] {
            assert_eq!(parse_go_duration_ms(text), Some(ms), "{text}");
        }
        for text in ["", "15", "s", "1x", "-1s", "1.2.3s"] {
            assert_eq!(parse_go_duration_ms(text), None, "{text}");
        }
    }

    #[test]
    fn millisecond_times_round_trip_and_cut_finer_fractions() {
        assert_eq!(
            format_rfc3339_millis(1_795_000_000_125).as_deref(),
            Some("2026-11-18T11:06:40.125Z")
        );
        assert_eq!(
            format_rfc3339_millis(-1).as_deref(),
            Some("1969-12-31T23:59:59.999Z")
        );
        for ms in [0, 1, 999, 1_000, 1_795_000_000_125, -1, -1_001] {
            let text = format_rfc3339_millis(ms).unwrap();
            assert_eq!(parse_rfc3339_millis(&text), Some(ms), "{text}");
        }
        assert_eq!(
            parse_rfc3339_millis("2026-11-18T11:06:40.1259Z"),
            Some(1_795_000_000_125)
        );
        assert_eq!(
            parse_rfc3339_millis("2026-11-18T13:06:40+02:00"),
            Some(1_795_000_000_000)
        );
        assert_eq!(parse_rfc3339_millis("yesterday"), None);
        assert_eq!(format_rfc3339_millis(i64::MAX), None);
    }

    #[test]
    fn rfc3339_known_instants_and_offsets() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-11-23T00:45:27Z"), Some(1_795_394_727));
        assert_eq!(
            parse_rfc3339("2026-11-23T01:45:27.123456+01:00"),
            Some(1_795_394_727)
        );
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59Z"), Some(-1));
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-11-23 00:45:27",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rfc3339_round_trips_as_the_apiserver_writes() {
        for secs in [0, 1_795_394_727, -86_400, 253_402_300_799] {
            let text = format_rfc3339(secs).unwrap_or_default();
            assert!(text.ends_with('Z') && !text.contains('.'), "{text}");
            assert_eq!(parse_rfc3339(&text), Some(secs));
        }
        assert_eq!(
            format_rfc3339(1_795_394_727).as_deref(),
            Some("2026-11-23T00:45:27Z")
        );
        assert_eq!(format_rfc3339(i64::MAX), None);
    }

    #[test]
    fn nanosecond_timestamps_of_log_lines() {
        assert_eq!(
            parse_rfc3339_nanos("1970-01-01T00:00:01.000000002Z"),
            Some(1_000_000_002)
        );
        assert_eq!(
            parse_rfc3339_nanos("2026-11-23T00:45:27Z"),
            Some(1_795_394_727_000_000_000)
        );
        assert_eq!(parse_rfc3339_nanos("not a time"), None);
    }

    #[test]
    fn ages_follow_kubectl() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (192, "3m12s"),
            (300, "5m"),
            (900, "15m"),
            (3 * 3600 + 240, "3h4m"),
            (10 * 3600, "10h"),
            (3 * 86_400 + 7200, "3d2h"),
            (12 * 86_400, "12d"),
            (3 * 365 * 86_400 + 20 * 86_400, "3y20d"),
            (9 * 365 * 86_400, "9y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(format_age(seconds), want, "{seconds}s");
        }
        assert_eq!(age_of("2026-11-23T00:45:27Z", 1_795_394_727 + 61), "61s");
        assert_eq!(age_of("not a time", 0), "<unknown>");
    }
}
