//! Kubernetes quantities as the metrics API writes and the pods' specs hold
//! them: CPU in nanocores written as metrics-server writes it
//! (`resource.NewScaledQuantity(n, -9)`: `12345678n`, `250m`, `2`), memory
//! in bytes as a binary-SI quantity (`resource.NewQuantity(b, BinarySI)`:
//! `123456Ki`, `256Mi`), both in apimachinery's canonical form (the largest
//! suffix that loses no precision); limits and allocatable read back
//! (`500m`, `256Mi`, `13252124Ki`); and window durations written as Go's
//! `time.Duration` prints them (`15s`, `1m0s`, `500ms`). Owned here so the
//! metrics objects and their tests share one writer.

use std::time::Duration;

use deltascope_facts::quantity::parse_quantity;

/// Decimal suffixes by power of ten (a multiple of 3, from -9 to 18).
const DECIMAL: &[(i32, &str)] = &[
    (-9, "n"),
    (-6, "u"),
    (-3, "m"),
    (0, ""),
    (3, "k"),
    (6, "M"),
    (9, "G"),
    (12, "T"),
    (15, "P"),
    (18, "E"),
];

/// Binary suffixes by power of 1024.
const BINARY: &[&str] = &["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// `mantissa × 10^exponent` in canonical decimal-SI form: trailing zeros
/// moved into the exponent, the exponent the largest multiple of 3 that
/// keeps the mantissa whole.
fn decimal(mut mantissa: u64, mut exponent: i32) -> String {
    if mantissa == 0 {
        return "0".to_string();
    }
    while mantissa % 10 == 0 && exponent < 18 {
        mantissa /= 10;
        exponent += 1;
    }
    let mut mantissa = u128::from(mantissa);
    while exponent.rem_euclid(3) != 0 {
        mantissa *= 10;
        exponent -= 1;
    }
    let suffix = DECIMAL
        .iter()
        .find(|(e, _)| *e == exponent)
        .map_or("", |(_, s)| s);
    format!("{mantissa}{suffix}")
}

/// CPU usage as metrics-server writes it: `12345678n`, `250m`, `1`.
pub fn cpu(nanocores: u64) -> String {
    decimal(nanocores, -9)
}

/// Memory as a binary-SI quantity: `123456Ki`, `256Mi`; below 1024 bytes
/// apimachinery writes it decimal (`512`, `1k`).
pub fn memory(bytes: u64) -> String {
    if bytes < 1024 {
        return decimal(bytes, 0);
    }
    let (mut mantissa, mut power) = (bytes, 0);
    while mantissa % 1024 == 0 && power + 1 < BINARY.len() {
        mantissa /= 1024;
        power += 1;
    }
    format!("{mantissa}{}", BINARY[power])
}

/// A CPU quantity in nanocores (`500m` → 500,000,000), read by
/// [`deltascope_facts::quantity`]; `None` if it is none or negative.
pub fn parse_nanocores(text: &str) -> Option<u64> {
    let quantity = parse_quantity(text).ok()?;
    u64::try_from(quantity.nanos()).ok()
}

/// A memory quantity in bytes (`256Mi` → 268,435,456), rounded up as
/// apimachinery's `Value()`; `None` if it is none or negative.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let quantity = parse_quantity(text).ok()?;
    u64::try_from(quantity.value()).ok()
}

/// A duration as Go's `time.Duration.String` writes it, to the
/// millisecond: `15s`, `1m0s`, `1h0m0s`, `1.5s`, `500ms`, `0s`.
pub fn go_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis == 0 {
        return "0s".to_string();
    }
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let (hours, rest) = (millis / 3_600_000, millis % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (seconds, fraction) = (rest / 1000, rest % 1000);
    let mut seconds = seconds.to_string();
    if fraction > 0 {
        let digits = format!("{fraction:03}");
        seconds.push('.');
        seconds.push_str(digits.trim_end_matches('0'));
    }
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_written_as_metrics_server_writes_it() {
        assert_eq!(cpu(0), "0");
        assert_eq!(cpu(12_345_678), "12345678n");
        assert_eq!(cpu(250_000_000), "250m");
        assert_eq!(cpu(1_000_000_000), "1");
        assert_eq!(cpu(2_500_000_000), "2500m");
        assert_eq!(cpu(1_500), "1500n");
        assert_eq!(cpu(3_000), "3u");
        assert_eq!(cpu(40_000_000_000), "40");
    }

    #[test]
    fn memory_is_binary_si() {
        assert_eq!(memory(0), "0");
        assert_eq!(memory(512), "512");
        assert_eq!(memory(1000), "1k");
        assert_eq!(memory(1024), "1Ki");
        assert_eq!(memory(1536), "1536");
        assert_eq!(memory(123_456 * 1024), "123456Ki");
        assert_eq!(memory(268_435_456), "256Mi");
        assert_eq!(memory(3 << 30), "3Gi");
        assert_eq!(memory(2049 * 1024), "2049Ki");
    }

    #[test]
    fn quantities_read_back() {
        assert_eq!(parse_nanocores("500m"), Some(500_000_000));
        assert_eq!(parse_nanocores("4"), Some(4_000_000_000));
        assert_eq!(parse_nanocores("3920m"), Some(3_920_000_000));
        assert_eq!(parse_nanocores("12345678n"), Some(12_345_678));
        assert_eq!(parse_bytes("256Mi"), Some(268_435_456));
        assert_eq!(parse_bytes("13252124Ki"), Some(13_252_124 * 1024));
        assert_eq!(parse_bytes("1.5Gi"), Some(1_610_612_736));
        assert_eq!(parse_bytes("2k"), Some(2000));
        assert_eq!(parse_bytes("2e3"), Some(2000));
        assert_eq!(parse_bytes("12Qi"), None);
        assert_eq!(parse_bytes(""), None);
        for bytes in [4096, 123_456 * 1024, 268_435_456, 3 << 30] {
            assert_eq!(parse_bytes(&memory(bytes)), Some(bytes));
        }
        for nanos in [1, 12_345_678, 250_000_000, 3_920_000_000] {
            assert_eq!(parse_nanocores(&cpu(nanos)), Some(nanos));
        }
    }

    #[test]
    fn durations_as_go_prints_them() {
        let ms = Duration::from_millis;
        assert_eq!(go_duration(ms(0)), "0s");
        assert_eq!(go_duration(ms(500)), "500ms");
        assert_eq!(go_duration(ms(1500)), "1.5s");
        assert_eq!(go_duration(ms(15_000)), "15s");
        assert_eq!(go_duration(ms(60_000)), "1m0s");
        assert_eq!(go_duration(ms(90_250)), "1m30.25s");
        assert_eq!(go_duration(ms(3_600_000)), "1h0m0s");
    }
}
