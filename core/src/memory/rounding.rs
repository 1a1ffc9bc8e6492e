//! Overflow-safe rounding of sizes: every rounding of the memory manager
//! goes through here and answers `None` instead of wrapping.

/// `v` rounded up to a multiple of `align` (a power of two); `None` when
/// the result does not fit in a `u64`.
#[inline]
pub(crate) const fn round_up(v: u64, align: u64) -> Option<u64> {
    let mask = align.wrapping_sub(1);
    match v.checked_add(mask) {
        Some(x) => Some(x & !mask),
        None => None,
    }
}

/// `v` rounded up to a multiple of `2^(log2(v) - shift)` and of `align`
/// (a size class: at most `1/2^shift` more than `v`); `None` on overflow.
#[inline]
pub(crate) fn round_class(v: u64, shift: u32, align: u64) -> Option<u64> {
    if v == 0 {
        return Some(0);
    }
    let log = 63 - v.leading_zeros();
    if shift >= 64 || log <= shift {
        return round_up(v, align);
    }
    let step = (1u64 << (log - shift)).max(align);
    round_up(v, step)
}

/// `v >> shift`, 0 when `shift` is 64 or more.
#[inline]
pub(crate) const fn shr(v: u64, shift: u32) -> u64 {
    if shift >= 64 { 0 } else { v >> shift }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_never_wraps() {
        assert_eq!(round_up(1000, 256), Some(1024));
        assert_eq!(round_up(1024, 256), Some(1024));
        assert_eq!(round_up(0, 256), Some(0));
        assert_eq!(round_up(u64::MAX, 1), Some(u64::MAX));
        assert_eq!(round_up(u64::MAX, 2), None);
        assert_eq!(round_up(u64::MAX - 255, 256), Some(u64::MAX - 255));
        assert_eq!(round_up(u64::MAX - 254, 256), None);
        assert_eq!(round_up(1, 1 << 63), Some(1 << 63));
        assert_eq!(round_up((1 << 63) + 1, 1 << 63), None);
    }

    #[test]
    fn classes_round_by_a_fraction_and_never_wrap() {
        assert_eq!(round_class(1000, 5, 256), Some(1024));
        // 33 MiB + 1: class step 1 MiB.
        assert_eq!(round_class((33 << 20) + 1, 5, 256), Some(34 << 20));
        assert_eq!(round_class(3 << 20, 64, 256), Some(3 << 20));
        assert_eq!(round_class(u64::MAX, 5, 256), None);
        assert_eq!(round_class(1 << 63, 5, 256), Some(1 << 63));
        assert_eq!(
            round_class((1 << 63) + 1, 5, 256),
            Some((1 << 63) + (1 << 58))
        );
        assert_eq!(round_class(u64::MAX - (1 << 57), 5, 256), None);
        assert_eq!(shr(u64::MAX, 64), 0);
        assert_eq!(shr(1024, 5), 32);
    }
}
