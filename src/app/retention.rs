//! The history retention settings a user types in the settings panel: the
//! most deltas and the most MiB of history each kept resource may hold.
//! Parsing and validation live here, with no web dependency, so every bad
//! input has a tested message; the page stores the accepted limits in
//! `localStorage` (as [`to_storage`] writes them) and applies them to every
//! live informer.
//!
//! The bound is per resource: with [`crate::app::kept_set::KEPT_CAPACITY`] resources
//! kept live, the page holds at most that many times the limits in history
//! (plus each resource's store of current objects).

use crate::informer::HistoryConfig;
use crate::model::decimal::{fixed, short};

/// The fewest deltas a history may be limited to.
pub const MIN_DELTAS: usize = 10;
/// The most deltas a history may be limited to (per resource).
pub const MAX_DELTAS: usize = 2_000_000;
/// The least MiB a history may be limited to.
pub const MIN_MIB: f64 = 0.5;
/// The most MiB a history may be limited to (per resource): eight resources
/// at this limit stay within wasm32's 4 GiB address space.
pub const MAX_MIB: f64 = 256.0;

const MIB: f64 = 1024.0 * 1024.0;

/// Which input a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    MaxDeltas,
    MaxMib,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Field::MaxDeltas => "max deltas",
            Field::MaxMib => "max MiB",
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RetentionError {
    #[error("{field} is empty: type a number, e.g. {example}")]
    Empty { field: Field, example: &'static str },
    #[error("{field} {text:?} is not a number: type digits only, e.g. {example}")]
    NotANumber {
        field: Field,
        text: String,
        example: &'static str,
    },
    #[error("{field} must be between {min} and {max} (got {value})")]
    OutOfRange {
        field: Field,
        value: String,
        min: String,
        max: String,
    },
    #[error("the saved retention settings {0:?} are unreadable; the defaults apply until you save new ones")]
    Stored(String),
}

/// Parses what the user typed: a whole number of deltas and a number of MiB
/// (decimals allowed, e.g. `0.5`). Spaces, `_` and `,` between digits are
/// accepted as thousands separators in the delta count.
pub fn parse(max_deltas: &str, max_mib: &str) -> Result<HistoryConfig, RetentionError> {
    let deltas_text: String = max_deltas
        .trim()
        .chars()
        .filter(|c| !matches!(c, '_' | ',' | ' '))
        .collect();
    if deltas_text.is_empty() {
        return Err(RetentionError::Empty {
            field: Field::MaxDeltas,
            example: "50000",
        });
    }
    let deltas: u64 = deltas_text
        .parse()
        .map_err(|_| RetentionError::NotANumber {
            field: Field::MaxDeltas,
            text: max_deltas.trim().to_string(),
            example: "50000",
        })?;
    if !(MIN_DELTAS as u64..=MAX_DELTAS as u64).contains(&deltas) {
        return Err(RetentionError::OutOfRange {
            field: Field::MaxDeltas,
            value: deltas.to_string(),
            min: MIN_DELTAS.to_string(),
            max: MAX_DELTAS.to_string(),
        });
    }
    let mib_text = max_mib.trim();
    if mib_text.is_empty() {
        return Err(RetentionError::Empty {
            field: Field::MaxMib,
            example: "64",
        });
    }
    let mib: f64 = mib_text
        .parse()
        .ok()
        .filter(|m: &f64| m.is_finite())
        .ok_or_else(|| RetentionError::NotANumber {
            field: Field::MaxMib,
            text: mib_text.to_string(),
            example: "64",
        })?;
    if !(MIN_MIB..=MAX_MIB).contains(&mib) {
        return Err(RetentionError::OutOfRange {
            field: Field::MaxMib,
            value: mib_text.to_string(),
            min: short(MIN_MIB).to_string(),
            max: short(MAX_MIB).to_string(),
        });
    }
    Ok(HistoryConfig {
        max_deltas: deltas as usize,
        max_bytes: (mib * MIB).round() as usize,
    })
}

/// The limits as the settings inputs show them: (deltas, MiB).
pub fn to_inputs(config: &HistoryConfig) -> (String, String) {
    let mib = config.max_bytes as f64 / MIB;
    let mib = if (mib - mib.round()).abs() < 1e-9 {
        format!("{}", mib.round() as u64)
    } else {
        fixed(mib, 2)
            .to_string()
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    };
    (config.max_deltas.to_string(), mib)
}

/// The text stored in `localStorage`: `DELTAS BYTES`.
pub fn to_storage(config: &HistoryConfig) -> String {
    format!("{} {}", config.max_deltas, config.max_bytes)
}

/// Reads what [`to_storage`] wrote, checking the same bounds as [`parse`].
pub fn from_storage(text: &str) -> Result<HistoryConfig, RetentionError> {
    let stored = || RetentionError::Stored(text.chars().take(80).collect());
    let mut parts = text.split_whitespace();
    let (Some(deltas), Some(bytes), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(stored());
    };
    let deltas: usize = deltas.parse().map_err(|_| stored())?;
    let bytes: usize = bytes.parse().map_err(|_| stored())?;
    let mib = bytes as f64 / MIB;
    let in_range = (MIN_DELTAS..=MAX_DELTAS).contains(&deltas)
        && (MIN_MIB..=MAX_MIB + 1e-9).contains(&(mib + 1e-9));
    if !in_range {
        return Err(stored());
    }
    Ok(HistoryConfig {
        max_deltas: deltas,
        max_bytes: bytes,
    })
}

/// The page's whole-history bound for `kept` resources, in words.
pub fn total_bound(config: &HistoryConfig, kept: usize) -> String {
    let (deltas, mib) = to_inputs(config);
    let total_mib = config.max_bytes as f64 * kept as f64 / MIB;
    format!(
        "Each resource kept live holds at most {deltas} deltas and {mib} MiB of history; \
         with up to {kept} resources kept live the page holds at most {} deltas and {} MiB of history.",
        config.max_deltas.saturating_mul(kept),
        fixed(total_mib, 0)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn defaults_read_as_a_laptop_would_expect() {
        let default = HistoryConfig::default();
        assert_eq!(to_inputs(&default), ("50000".to_string(), "64".to_string()));
        assert_eq!(parse("50000", "64"), Ok(default.clone()));
        assert_eq!(parse(" 50,000 ", "64.0"), Ok(default));
        assert_eq!(
            parse("100", "0.5"),
            Ok(HistoryConfig {
                max_deltas: 100,
                max_bytes: 512 * 1024
            })
        );
        assert_eq!(
            to_inputs(&HistoryConfig {
                max_deltas: 100,
                max_bytes: 512 * 1024
            }),
            ("100".to_string(), "0.5".to_string())
        );
    }

    #[test]
    fn bad_input_says_which_field_and_what_to_type() {
        let cases = [
            ("", "64", "max deltas is empty: type a number, e.g. 50000"),
            (
                "lots",
                "64",
                "max deltas \"lots\" is not a number: type digits only, e.g. 50000",
            ),
            ("-5", "64", "max deltas \"-5\" is not a number"),
            (
                "5",
                "64",
                "max deltas must be between 10 and 2000000 (got 5)",
            ),
            ("99999999999999999999", "64", "is not a number"),
            ("3000000", "64", "between 10 and 2000000"),
            ("1000", " ", "max MiB is empty"),
            ("1000", "NaN", "max MiB \"NaN\" is not a number"),
            ("1000", "inf", "is not a number"),
            (
                "1000",
                "0.1",
                "max MiB must be between 0.5 and 256 (got 0.1)",
            ),
            ("1000", "1024", "between 0.5 and 256"),
        ];
        for (deltas, mib, message) in cases {
            let error = parse(deltas, mib).expect_err(message);
            assert!(
                error.to_string().contains(message),
                "{deltas:?} {mib:?}: {error}"
            );
        }
    }

    #[test]
    fn storage_round_trips_and_rejects_garbage() {
        for config in [
            HistoryConfig::default(),
            HistoryConfig {
                max_deltas: 10,
                max_bytes: 512 * 1024,
            },
        ] {
            assert_eq!(from_storage(&to_storage(&config)), Ok(config));
        }
        for garbage in [
            "",
            "50000",
            "a b",
            "50000 67108864 1",
            "5 67108864",
            "50000 1",
        ] {
            assert!(
                matches!(from_storage(garbage), Err(RetentionError::Stored(_))),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn the_total_bound_multiplies_by_the_kept_resources() {
        let text = total_bound(&HistoryConfig::default(), 8);
        assert!(text.contains("400000 deltas and 512 MiB"), "{text}");
    }

    proptest! {
        #[test]
        fn whatever_is_typed_parses_or_explains_and_never_panics(deltas in ".{0,12}", mib in ".{0,8}") {
            match parse(&deltas, &mib) {
                Ok(config) => {
                    prop_assert!((MIN_DELTAS..=MAX_DELTAS).contains(&config.max_deltas));
                    prop_assert_eq!(from_storage(&to_storage(&config)), Ok(config));
                }
                Err(error) => prop_assert!(!error.to_string().is_empty()),
            }
        }

        #[test]
        fn accepted_limits_show_as_they_were_typed(deltas in MIN_DELTAS..=MAX_DELTAS, halves in 1u32..=512) {
            let mib = f64::from(halves) / 2.0;
            let config = parse(&deltas.to_string(), &mib.to_string()).expect("in range");
            let (d, m) = to_inputs(&config);
            prop_assert_eq!(parse(&d, &m), Ok(config));
        }
    }
}
