//! `countersign audit export --format ocsf` with the real binaries, driven
//! by `tests/e2e/ocsf_validate.py`: a home with proposals applied (the
//! proof consumed), denied, withdrawn and pending; every exported event
//! validated against the JSON Schema of OCSF 1.8.0 API Activity with the
//! Security Control profile (tests/vectors/ocsf/), each proposal's events
//! with their dispositions, the ledger's hashes and leaf indexes, `--since`,
//! and the refusals (an unknown format, an existing output file, a time
//! that is not RFC 3339) with nothing written.

#[test]
fn exports_every_ledger_event_as_valid_ocsf() {
    countersign_integration_tests::run_e2e_script("ocsf_validate.py");
}
