//! `#[claw_tool]` refuses what it cannot turn into a tool, with a message that points at
//! the offending item (expected output in `tests/ui/*.stderr`).

#[test]
fn compile_errors_point_at_the_offending_item() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/[!p]*.rs");
    cases.compile_fail("tests/ui/parameter_without_schema.rs");
    cases.compile_fail("tests/ui/pattern_parameter.rs");
    cases.pass("tests/ui/pass_*.rs");
}
