//! The decimal text of an `f64` (sizes, seconds, pixels, chart coordinates)
//! written with integer arithmetic, not the standard library's float
//! formatting.
//!
//! `format!("{:.1}", x)` or `x.to_string()` of an `f64` links the standard
//! float printer (Grisu with its Dragon fallback, big-number arithmetic and
//! tables): about 5 KB of the page's brotli'd wasm, for the two dozen numbers
//! the page writes. [`fixed`] writes the same text as `{:.N}` (the exact
//! binary value rounded half to even), [`short`] the same as `{}` for any
//! value with at most three decimals (the page's are pixels, percents and
//! speeds): both from the value's bits with `u128` arithmetic, which the
//! page's integer formatting already links.

use std::fmt;

/// Most places [`short`] writes.
const SHORT_PLACES: u8 = 3;

/// `value` with `places` decimals (at most 6), as `format!("{value:.places$}")`
/// writes it: `fixed(2.25, 1)` is `2.2`, `fixed(0.05, 0)` is `0`.
pub fn fixed(value: f64, places: u8) -> Decimal {
    Decimal {
        value,
        places: places.min(6),
        trim: false,
    }
}

/// `value` as `value.to_string()` writes it when it has at most three
/// decimals (`28`, `18.5`, `0.125`); a value with more is rounded to three.
pub fn short(value: f64) -> Decimal {
    Decimal {
        value,
        places: SHORT_PLACES,
        trim: true,
    }
}

/// The text of an `f64` ([`fixed`], [`short`]): a `Display`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decimal {
    value: f64,
    places: u8,
    /// Drop trailing zeros of the fraction (and its point).
    trim: bool,
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Decimal {
            value,
            places,
            trim,
        } = *self;
        if value.is_nan() {
            return f.write_str("NaN");
        }
        let sign = if value.is_sign_negative() { "-" } else { "" };
        if value.is_infinite() {
            return write!(f, "{sign}inf");
        }
        let scale = 10u128.pow(u32::from(places));
        let scaled = scaled_round_even(value.abs(), scale);
        let (whole, mut fraction) = (scaled / scale, scaled % scale);
        let mut digits = usize::from(places);
        if trim {
            while digits > 0 && fraction % 10 == 0 {
                fraction /= 10;
                digits -= 1;
            }
        }
        if digits == 0 {
            write!(f, "{sign}{whole}")
        } else {
            write!(f, "{sign}{whole}.{fraction:0digits$}")
        }
    }
}

/// `value × scale` rounded to the nearest integer, ties to even, exactly
/// (`value` is finite and not negative; `scale` at most 10⁶). A value past
/// `u128` (above 10³² or so) saturates.
fn scaled_round_even(value: f64, scale: u128) -> u128 {
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = u128::from(bits & ((1 << 52) - 1));
    // value = mantissa × 2^power
    let (mantissa, power) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    let product = mantissa * scale; // < 2^73
    if power >= 0 {
        let shift = power.unsigned_abs();
        return if shift < product.leading_zeros() {
            product << shift
        } else {
            u128::MAX
        };
    }
    let shift = power.unsigned_abs();
    if shift > 100 {
        // product < 2^73 is below half of 2^shift: rounds to zero
        return 0;
    }
    let quotient = product >> shift;
    let remainder = product & ((1 << shift) - 1);
    let half = 1u128 << (shift - 1);
    if remainder > half || (remainder == half && quotient % 2 == 1) {
        quotient + 1
    } else {
        quotient
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn writes_what_the_standard_formatting_writes() {
        for value in [
            0.0, -0.0, 0.05, 0.25, 0.35, 1.0, 2.25, 2.5, 3.5, 9.95, 12.345, 99.99, 1e6, 1.5e9,
            -3.75, 5e-324, 1e-7, 123456.789,
        ] {
            for places in 0..=3 {
                assert_eq!(
                    fixed(value, places).to_string(),
                    format!("{value:.*}", usize::from(places)),
                    "{value} to {places} places"
                );
            }
        }
        for value in [0.0, 28.0, 18.5, 0.125, 120.0, 1000.0, -2.5, 100.0, 1e15] {
            assert_eq!(short(value).to_string(), value.to_string());
        }
        assert_eq!(short(1.0 / 3.0).to_string(), "0.333");
        assert_eq!(fixed(f64::NAN, 1).to_string(), "NaN");
        assert_eq!(fixed(f64::NEG_INFINITY, 1).to_string(), "-inf");
    }

    proptest! {
        /// Any value of the page's range, to 0–3 places, as `{:.N}`.
        #[test]
        fn fixed_is_the_standard_text(value in -1e12f64..1e12, places in 0u8..=3) {
            prop_assert_eq!(
                fixed(value, places).to_string(),
                format!("{value:.*}", usize::from(places))
            );
        }

        /// Thousandths, as `to_string()` writes them.
        #[test]
        fn short_is_the_standard_text_to_three_places(thousandths in -1_000_000_000i64..1_000_000_000) {
            let value = thousandths as f64 / 1000.0;
            prop_assert_eq!(short(value).to_string(), value.to_string());
        }
    }
}
