//! Percentiles and medians of the figures.

use std::time::Duration;

/// The value at `p` (0.0 to 1.0) of `sorted`, which must not be empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The median of `values` (the upper one of an even count), which must not be empty.
pub fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("figures are comparable"));
    values[values.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_picks_the_nearest_rank() {
        let sorted: Vec<Duration> = (1..=101).map(Duration::from_micros).collect();
        assert_eq!(percentile(&sorted, 0.5), Duration::from_micros(51));
        assert_eq!(percentile(&sorted, 0.99), Duration::from_micros(100));
        assert_eq!(percentile(&sorted, 0.0), Duration::from_micros(1));
    }

    #[test]
    fn median_sorts_first() {
        assert_eq!(median(vec![5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(vec![4, 1, 3, 2]), 3);
    }
}
