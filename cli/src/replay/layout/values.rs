//! A layout file's member values: booleans, integers and byte sizes.

use streamcore_mock::replay::json::Value;

use super::file::{FileError, format_err};

pub(super) fn boolean(v: &Value, at: &str) -> Result<bool, FileError> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(format_err(at, "not true or false")),
    }
}

pub(super) fn integer(v: &Value, at: &str) -> Result<u64, FileError> {
    match v {
        Value::UInt(n) => Ok(*n),
        Value::Number(x) => Err(format_err(at, number_why(*x))),
        _ => Err(format_err(at, "not a non-negative integer")),
    }
}

/// Why a JSON number that is not a `u64` is refused: what is wrong with it.
fn number_why(x: f64) -> String {
    format!("{x} is {}", streamcore_mock::replay::json::why_not_u64(x))
}

/// A byte size: an integer, or a string such as `"4 MiB"` (B, KiB, MiB,
/// GiB, TiB; binary units).
pub(super) fn size(v: &Value, at: &str) -> Result<u64, FileError> {
    match v {
        Value::UInt(n) => Ok(*n),
        Value::Number(x) => Err(format_err(at, number_why(*x))),
        Value::Str(s) => parse_size(s).map_err(|e| {
            format_err(
                at,
                match e {
                    SizeError::Syntax => format!(
                        "\"{s}\" is not a size (bytes, or a whole number with B, KiB, MiB, GiB, TiB)"
                    ),
                    SizeError::Overflow => {
                        format!("\"{s}\" is above the largest size, 2^64 - 1 bytes")
                    }
                },
            )
        }),
        _ => Err(format_err(
            at,
            "not a size (an integer or a string like \"4 MiB\")",
        )),
    }
}

/// Why a size string was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum SizeError {
    /// Not digits and a unit.
    Syntax,
    /// More bytes than a `u64` holds.
    Overflow,
}

fn parse_size(s: &str) -> Result<u64, SizeError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    if digits.is_empty() {
        return Err(SizeError::Syntax);
    }
    let shift = match unit.trim() {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        "TiB" => 40,
        _ => return Err(SizeError::Syntax),
    };
    // Only digits are left: a parse error is an overflow.
    let n: u64 = digits.parse().map_err(|_| SizeError::Overflow)?;
    n.checked_mul(1u64 << shift).ok_or(SizeError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units_and_refuse_overflow() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("3 KiB"), Ok(3 << 10));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1 TiB"), Ok(1 << 40));
        assert_eq!(parse_size("20000000 TiB"), Err(SizeError::Overflow));
        assert_eq!(parse_size("18446744073709551616"), Err(SizeError::Overflow));
        assert_eq!(parse_size("MiB"), Err(SizeError::Syntax));
        assert_eq!(parse_size("1.5 GiB"), Err(SizeError::Syntax));
        assert_eq!(parse_size("4 MB"), Err(SizeError::Syntax));
    }
}
