//! Compile tests of `#[task]` and `#[workflow]`: the accepted shapes in `ui/pass` build and run;
//! each file in `ui/fail` is one misuse, rejected with the message in its `.stderr`.
//!
//! Regenerate the expected messages with `TRYBUILD=overwrite cargo test -p magrathea-macros
//! --test ui`, then read every changed `.stderr`: it is what a user will see.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
