//! The command line's history flags, shared by `serve` and `record`, and
//! their parsers (`7d`, `500MiB`): mapped onto [`HistoryOptions`].

use std::time::Duration;

use clap::Args;
use deltascope_history::{default_sqlite_path, HistoryTarget, Retention};
use deltascope_proxy::recorder::RecorderConfig;
use deltascope_proxy::recording::HistoryOptions;

/// `--history` when the flag is not given (tests and benchmarks set `off`).
pub const HISTORY_ENV: &str = "DELTASCOPE_HISTORY";

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Where the cluster's history is kept: `sqlite:PATH`, `postgres://USER@HOST/DB`
    /// or `off`. Default: a SQLite file under $XDG_STATE_HOME/deltascope/ (else
    /// ~/.local/state/deltascope/). Without the flag, DELTASCOPE_HISTORY is used if set.
    #[arg(long, value_name = "off|sqlite:PATH|postgres://…")]
    history: Option<String>,
    /// Record only these resources (as the page names them: pods,deployments.apps).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "RES,…",
        conflicts_with = "no_record"
    )]
    record: Option<Vec<String>>,
    /// Record every resource but these.
    #[arg(long, value_delimiter = ',', value_name = "RES,…")]
    no_record: Vec<String>,
    /// Records older than this are evicted (the span left as a "not kept" gap): 90m, 36h, 14d.
    #[arg(long, default_value = "14d", value_parser = parse_age)]
    history_retention: Duration,
    /// The oldest records are evicted while the history takes more than this: 500MiB, 2GiB.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    history_max_size: u64,
    /// Resource usage (kubectl top's numbers, from the metrics API) is
    /// stored once per this interval: 15s, 60s, 5m; `off` stores none.
    #[arg(long, default_value = "60s", value_name = "INTERVAL|off", value_parser = parse_usage_every)]
    record_usage: UsageEvery,
    /// DANGER: store Secrets' values in the history database in plain text.
    /// Without it Secrets are stored redacted exactly as serve redacts them,
    /// whatever --show-secrets says.
    #[arg(long)]
    record_secret_values_in_plain_text: bool,
}

impl HistoryArgs {
    /// The options these flags give; `record` says whether this command
    /// records (serve: unless `--history-read-only`; record: always).
    pub fn to_options(&self, record: bool) -> Result<HistoryOptions, String> {
        let given = self
            .history
            .clone()
            .or_else(|| std::env::var(HISTORY_ENV).ok());
        let target = match &given {
            Some(text) => text.parse::<HistoryTarget>().map_err(|e| e.to_string())?,
            None => match default_sqlite_path() {
                Some(path) => HistoryTarget::Sqlite(path),
                None => {
                    return Err("no state directory for the history (neither XDG_STATE_HOME nor HOME is set): give --history sqlite:PATH or --history off".into())
                }
            },
        };
        Ok(HistoryOptions {
            record: record && target != HistoryTarget::Off,
            target,
            recorder: RecorderConfig {
                record: self.record.clone(),
                no_record: self.no_record.clone(),
                store_secret_values: self.record_secret_values_in_plain_text,
                usage_every: self.record_usage.0,
                ..RecorderConfig::default()
            },
            retention: Retention {
                max_age: Some(self.history_retention),
                max_bytes: Some(self.history_max_size),
            },
        })
    }

    pub fn stores_secret_values(&self) -> bool {
        self.record_secret_values_in_plain_text
    }
}

/// A flag's value as a number and its unit (`" 15m"` → `(15, "m")`, `"90"`
/// → `(90, "")`); `None` when it does not start with a number.
pub fn number_and_unit(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    Some((number.parse().ok()?, unit))
}

/// `--record-usage`: how often a usage window is stored (`None`: off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageEvery(pub Option<Duration>);

/// `off`, or an interval of at least a second (`15s`, `60s`, `5m`).
fn parse_usage_every(text: &str) -> Result<UsageEvery, String> {
    if text.trim() == "off" {
        return Ok(UsageEvery(None));
    }
    let every = parse_duration(text)?;
    if every < Duration::from_secs(1) {
        return Err("record usage at most once a second (or give off)".into());
    }
    Ok(UsageEvery(Some(every)))
}

/// `90m`, `36h`, `14d`, at least a minute; a bare number is seconds.
fn parse_age(text: &str) -> Result<Duration, String> {
    let duration = parse_duration(text)?;
    if duration < Duration::from_secs(60) {
        return Err("keep the history at least a minute".into());
    }
    Ok(duration)
}

/// `30s`, `90m`, `36h`, `14d`; a bare number is seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = number_and_unit(text)
        .ok_or_else(|| format!("{text:?} is not a duration like 90m, 36h or 14d"))?;
    let seconds = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?}: use s, m, h or d"
            ))
        }
    };
    Ok(Duration::from_secs(number.saturating_mul(seconds)))
}

/// `500MiB`, `2GiB`, `10GB`, `750MB`, or bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) = number_and_unit(text)
        .ok_or_else(|| format!("{text:?} is not a size like 500MiB or 2GiB"))?;
    let scale: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: use MiB, GiB, MB or GB"
            ))
        }
    };
    let bytes = number.saturating_mul(scale);
    if bytes < 1 << 20 {
        return Err("a history of less than 1 MiB keeps nothing useful".into());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_sizes() {
        assert_eq!(parse_age("14d"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_age("90m"), Ok(Duration::from_secs(5_400)));
        assert!(parse_age("30s").is_err());
        assert!(parse_age("2w").is_err());
        assert!(parse_age("d").is_err());
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("750MB"), Ok(750_000_000));
        assert_eq!(parse_size("2097152"), Ok(2 << 20));
        assert!(parse_size("10").is_err());
        assert!(parse_size("5XB").is_err());
        assert!(parse_size("-1GiB").is_err());
    }

    #[test]
    fn usage_intervals() {
        let every = |text| parse_usage_every(text).map(|e| e.0);
        assert_eq!(every("60s"), Ok(Some(Duration::from_secs(60))));
        assert_eq!(every("1s"), Ok(Some(Duration::from_secs(1))));
        assert_eq!(every("5m"), Ok(Some(Duration::from_secs(300))));
        assert_eq!(every("off"), Ok(None));
        assert!(every("0s").is_err());
        assert!(every("often").is_err());
        assert!(every("1w").is_err());
    }
}
