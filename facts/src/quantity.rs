//! Kubernetes resource quantities (`12345678n`, `250m`, `2`, `123456Ki`,
//! `1.5Gi`, `2e3`) read exactly as apimachinery's `resource.ParseQuantity`
//! reads them, and the two roundings `kubectl top` prints with:
//! `MilliValue()` and `Value()`, both rounded up.
//!
//! Written once for the page (the `kubectl top` columns) and the simulated
//! cluster (its containers' limits). Why a parser of our own and not a
//! crate: the crates that read quantities (`kube_quantity`,
//! `k8s-quantity-parser`) carry a decimal or big-number crate
//! (`rust_decimal`, `regex`) into the page's download for what is one small
//! grammar here. A quantity is held as a whole number of nano-units
//! (`i128`): apimachinery itself rounds every non-zero value up to a
//! nano-unit when it parses, so nothing it keeps is lost.

/// A quantity in nano-units of its base unit (nanocores, nanobytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity {
    nanos: i128,
}

/// Why a text is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("an empty quantity")]
    Empty,
    #[error("{text:?} is not a quantity: it has no digits")]
    NoDigits { text: String },
    #[error("{text:?} is not a quantity: unknown suffix {suffix:?}")]
    UnknownSuffix { text: String, suffix: String },
    #[error("{text:?} is too large a quantity")]
    TooLarge { text: String },
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// The decimal SI suffixes and their powers of ten.
const DECIMAL_SUFFIXES: [(&str, i32); 9] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// The binary SI suffixes and their powers of 1024.
const BINARY_SUFFIXES: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];

impl Quantity {
    /// A whole number of nano-units.
    pub fn from_nanos(nanos: i128) -> Quantity {
        Quantity { nanos }
    }

    pub fn nanos(self) -> i128 {
        self.nanos
    }

    /// The value in thousandths of the unit, rounded up (apimachinery's
    /// `MilliValue`: CPU in millicores).
    pub fn milli_value(self) -> i128 {
        ceil_div(self.nanos, NANOS_PER_UNIT / 1000)
    }

    /// The value in the unit, rounded up (apimachinery's `Value`: bytes).
    pub fn value(self) -> i128 {
        ceil_div(self.nanos, NANOS_PER_UNIT)
    }

    /// The sum of two quantities (`Quantity.Add`: exact).
    pub fn saturating_add(self, other: Quantity) -> Quantity {
        Quantity {
            nanos: self.nanos.saturating_add(other.nanos),
        }
    }
}

fn ceil_div(value: i128, by: i128) -> i128 {
    let quotient = value.div_euclid(by);
    if value.rem_euclid(by) == 0 {
        quotient
    } else {
        quotient + 1
    }
}

/// Reads `text` as apimachinery does: an optional sign, digits with an
/// optional fraction, then a binary suffix (`Ki` … `Ei`), a decimal one
/// (`n`, `u`, `m`, none, `k` … `E`) or an exponent (`e3`, `E-2`). A value
/// finer than a nano-unit is rounded up to one, as apimachinery rounds it.
pub fn parse_quantity(text: &str) -> Result<Quantity, QuantityError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(QuantityError::Empty);
    }
    let too_large = || QuantityError::TooLarge {
        text: text.to_string(),
    };
    let (negative, unsigned) = match trimmed.as_bytes()[0] {
        b'-' => (true, &trimmed[1..]),
        b'+' => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(QuantityError::NoDigits {
            text: text.to_string(),
        });
    }
    let mut mantissa: i128 = 0;
    for digit in whole.bytes().chain(fraction.bytes()) {
        mantissa = mantissa
            .checked_mul(10)
            .and_then(|m| m.checked_add(i128::from(digit - b'0')))
            .ok_or_else(too_large)?;
    }
    let (binary_power, decimal_power) =
        suffix_powers(suffix).ok_or_else(|| QuantityError::UnknownSuffix {
            text: text.to_string(),
            suffix: suffix.to_string(),
        })?;
    let scaled = mantissa
        .checked_mul(1024i128.checked_pow(binary_power).ok_or_else(too_large)?)
        .ok_or_else(too_large)?;
    // nano-units: × 10^(9 + exponent − fraction digits)
    let power = 9 + i64::from(decimal_power) - fraction.len() as i64;
    let nanos = if power >= 0 {
        let factor = u32::try_from(power)
            .ok()
            .and_then(|p| 10i128.checked_pow(p))
            .ok_or_else(too_large)?;
        scaled.checked_mul(factor).ok_or_else(too_large)?
    } else {
        match u32::try_from(-power)
            .ok()
            .and_then(|p| 10i128.checked_pow(p))
        {
            Some(divisor) => ceil_div(scaled, divisor),
            // Finer than any i128 can divide: a non-zero value is one nano-unit.
            None => i128::from(scaled > 0),
        }
    };
    Ok(Quantity {
        nanos: if negative { -nanos } else { nanos },
    })
}

/// The powers a suffix stands for: (of 1024, of 10). `None`: not a suffix.
fn suffix_powers(suffix: &str) -> Option<(u32, i32)> {
    if suffix.is_empty() {
        return Some((0, 0));
    }
    if let Some((_, power)) = BINARY_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((*power, 0));
    }
    if let Some((_, power)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some((0, *power));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Beyond this the value over- or underflows whatever its digits.
    let power: i32 = exponent.parse().ok().filter(|p: &i32| p.abs() <= 60)?;
    Some((0, power))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i128 {
        parse_quantity(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .nanos()
    }

    #[test]
    fn every_suffix_reads_as_apimachinery_reads_it() {
        assert_eq!(nanos("12345678n"), 12_345_678);
        assert_eq!(nanos("3u"), 3_000);
        assert_eq!(nanos("250m"), 250_000_000);
        assert_eq!(nanos("2"), 2_000_000_000);
        assert_eq!(nanos("1k"), 1_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("1M"), 1_000_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("2G"), 2_000_000_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("123456Ki"), 123_456 * 1024 * NANOS_PER_UNIT);
        assert_eq!(nanos("256Mi"), 268_435_456 * NANOS_PER_UNIT);
        assert_eq!(nanos("3Gi"), (3i128 << 30) * NANOS_PER_UNIT);
        assert_eq!(nanos("1Ei"), (1i128 << 60) * NANOS_PER_UNIT);
        assert_eq!(nanos("2e3"), 2_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("5E-3"), 5_000_000);
        assert_eq!(nanos("1e+2"), 100 * NANOS_PER_UNIT);
    }

    #[test]
    fn signs_and_fractions() {
        assert_eq!(nanos("1.5Gi"), 1_610_612_736 * NANOS_PER_UNIT);
        assert_eq!(nanos("0.5"), 500_000_000);
        assert_eq!(nanos(".5"), 500_000_000);
        assert_eq!(nanos("5."), 5 * NANOS_PER_UNIT);
        assert_eq!(nanos("+250m"), 250_000_000);
        assert_eq!(nanos("-250m"), -250_000_000);
        assert_eq!(nanos(" 100m "), 100_000_000);
        assert_eq!(nanos("0"), 0);
    }

    #[test]
    fn finer_than_a_nano_unit_rounds_up_to_one() {
        assert_eq!(nanos("0.1n"), 1);
        assert_eq!(nanos("1.0000000001"), NANOS_PER_UNIT + 1);
        assert_eq!(nanos("1e-30"), 1);
        assert_eq!(nanos("0e-30"), 0);
    }

    #[test]
    fn what_is_not_a_quantity_is_refused() {
        assert_eq!(parse_quantity(""), Err(QuantityError::Empty));
        assert!(matches!(
            parse_quantity("Mi"),
            Err(QuantityError::NoDigits { .. })
        ));
        assert!(matches!(
            parse_quantity("."),
            Err(QuantityError::NoDigits { .. })
        ));
        assert!(matches!(
            parse_quantity("1.2.3"),
            Err(QuantityError::NoDigits { .. })
        ));
        for bad in ["12Qi", "1mi", "1 Ki", "1e", "1e3.5", "1KiB", "0x10"] {
            assert!(
                matches!(
                    parse_quantity(bad),
                    Err(QuantityError::UnknownSuffix { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            parse_quantity("1e61"),
            Err(QuantityError::UnknownSuffix { .. })
        ));
        assert!(matches!(
            parse_quantity("99999999999999999999999999999999999999999"),
            Err(QuantityError::TooLarge { .. })
        ));
        assert!(matches!(
            parse_quantity("1e40"),
            Err(QuantityError::TooLarge { .. })
        ));
    }

    #[test]
    fn milli_value_and_value_round_up_as_kubectl_prints_them() {
        let q = |text| parse_quantity(text).expect("a quantity");
        assert_eq!(q("12345678n").milli_value(), 13);
        assert_eq!(q("12000000n").milli_value(), 12);
        assert_eq!(q("1n").milli_value(), 1);
        assert_eq!(q("0").milli_value(), 0);
        assert_eq!(q("2").milli_value(), 2000);
        assert_eq!(q("1500u").milli_value(), 2);
        assert_eq!(q("123456Ki").value(), 126_418_944);
        assert_eq!(q("0.5").value(), 1);
        assert_eq!(q("1k").value(), 1000);
        let sum = q("1n").saturating_add(q("999999n"));
        assert_eq!(sum.milli_value(), 1);
    }
}
