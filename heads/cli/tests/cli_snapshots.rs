//! Snapshot tests of the `countersign` binary: stdout, stderr and exit code
//! for usage errors and refusals that need no running signer. The cases live
//! in `tests/cmd/*.toml`; `TRYCMD=overwrite cargo test` rewrites them.

#[test]
fn cli_snapshots() {
    trycmd::TestCases::new().case("tests/cmd/*.toml");
}
