//! Quorum approvals with the real binaries: `countersign up`, the CLI at
//! real pseudo-terminals and two consoles (`console --as NAME`) in a real
//! browser, driven by `tests/e2e/quorum.py` (see the script for the flow):
//! non-members and repeat approvals refused with nothing recorded, the
//! proof only from the second required approval and naming both, a denial
//! ending it, each decision shown to the others, two approvers at the same
//! instant yielding one proof, and the audit chain intact.

#[test]
fn quorum_approvers_decide_from_terminals_and_consoles() {
    countersign_integration_tests::run_e2e_script("quorum.py");
}
