use super::*;

#[test]
fn candidates_come_out_in_order_without_duplicates_on_the_stack_or_spilled() {
    for count in [0, 1, 5, INLINE_CANDIDATES, INLINE_CANDIDATES + 1, 50] {
        let pushed: Vec<usize> = (0..count).map(|k| (k * 7919) % 23).collect();
        let mut candidates = Candidates::new();
        pushed.iter().for_each(|&i| candidates.push(i));
        let mut expected = pushed.clone();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(candidates.in_order(), expected.as_slice(), "{count} pushed");
    }
}
