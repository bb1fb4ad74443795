//! The integer constants of an `IN` list, asked "is `v` one of them?" once per row.
//!
//! A join's key list, as Sift's TPC-DS client pushes it down, is hundreds of surrogate keys
//! or dates, mostly close together: `d_date_sk` of a few months, `hd_demo_sk` of a few
//! thousand. A binary search over them costs a dozen unpredictable branches per row, which
//! over a Parquet column (no text to parse) is most of a select's time. So a set whose
//! values span at most [`MAX_BITMAP_SPAN`] is also kept as a bitmap over `min..=max`, and a
//! lookup is one subtraction, one range check and one bit test; a sparser set keeps the
//! binary search.
//!
//! Invariant: `values` is sorted and holds no duplicates; when `bitmap` is present, bit
//! `v - values[0]` is set exactly for the `v` in `values`.

/// The widest `max - min + 1` kept as a bitmap: 2^20 bits, 128 KiB, which stays in a core's
/// L2 cache.
const MAX_BITMAP_SPAN: u64 = 1 << 20;

/// A set of integers, sorted, with a bitmap where it is dense enough.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IntSet {
    values: Box<[i64]>,
    bitmap: Option<Box<[u64]>>,
}

impl IntSet {
    /// The set of `values` (in any order, repeats allowed).
    pub fn new(mut values: Vec<i64>) -> IntSet {
        values.sort_unstable();
        values.dedup();
        let bitmap = match (values.first(), values.last()) {
            (Some(&min), Some(&max)) => {
                let span = max.abs_diff(min).saturating_add(1);
                (span <= MAX_BITMAP_SPAN).then(|| {
                    let mut words = vec![0u64; span.div_ceil(64) as usize];
                    for &v in &values {
                        let bit = v.abs_diff(min);
                        words[(bit / 64) as usize] |= 1 << (bit % 64);
                    }
                    words.into_boxed_slice()
                })
            }
            _ => None,
        };
        IntSet {
            values: values.into_boxed_slice(),
            bitmap,
        }
    }

    /// Whether `v` is in the set.
    #[inline]
    pub fn contains(&self, v: i64) -> bool {
        match (&self.bitmap, self.values.first()) {
            (Some(words), Some(&min)) => {
                // Values below `min` wrap to offsets past the bitmap.
                let bit = v.wrapping_sub(min) as u64;
                words
                    .get((bit / 64) as usize)
                    .is_some_and(|w| w >> (bit % 64) & 1 == 1)
            }
            _ => self.values.binary_search(&v).is_ok(),
        }
    }

    /// The values, ascending.
    pub fn values(&self) -> &[i64] {
        &self.values
    }

    /// The values of both sets.
    pub fn union(&self, other: &IntSet) -> IntSet {
        IntSet::new(
            self.values
                .iter()
                .chain(other.values.iter())
                .copied()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dense_sets_get_a_bitmap_and_sparse_ones_do_not() {
        assert!(IntSet::new(vec![2_451_180, 2_452_246, 2_451_545])
            .bitmap
            .is_some());
        assert!(IntSet::new(vec![0, 1 << 30]).bitmap.is_none());
        assert!(IntSet::new(vec![i64::MIN, i64::MAX]).bitmap.is_none());
        assert!(IntSet::new(Vec::new()).bitmap.is_none());
        assert!(!IntSet::new(Vec::new()).contains(0));
    }

    #[test]
    fn the_edges_of_a_bitmap_and_of_the_integers() {
        let set = IntSet::new(vec![-3, 60, 64, -3, 63]);
        assert_eq!(set.values(), &[-3, 60, 63, 64]);
        for (v, expected) in [
            (-4, false),
            (-3, true),
            (-2, false),
            (60, true),
            (61, false),
        ] {
            assert_eq!(set.contains(v), expected, "{v}");
        }
        for v in [63, 64] {
            assert!(set.contains(v), "{v}");
        }
        for v in [65, 1 << 40, i64::MIN, i64::MAX] {
            assert!(!set.contains(v), "{v}");
        }
        let extreme = IntSet::new(vec![i64::MAX - 1, i64::MAX]);
        assert!(extreme.bitmap.is_some());
        assert!(extreme.contains(i64::MAX) && !extreme.contains(i64::MIN));
    }

    proptest! {
        /// The bitmap answers as the binary search over the sorted values does.
        #[test]
        fn contains_is_membership(
            values in prop::collection::vec(-3000i64..3000, 0..200),
            far in prop::collection::vec(any::<i64>(), 0..3),
            probes in prop::collection::vec(-3100i64..3100, 1..200),
        ) {
            let mut all = values.clone();
            all.extend(&far);
            for set in [IntSet::new(values.clone()), IntSet::new(all.clone())] {
                for &v in probes.iter().chain(&far) {
                    prop_assert_eq!(set.contains(v), set.values().binary_search(&v).is_ok());
                }
            }
            let union = IntSet::new(values.clone()).union(&IntSet::new(far.clone()));
            prop_assert_eq!(union, IntSet::new(all));
        }
    }
}
