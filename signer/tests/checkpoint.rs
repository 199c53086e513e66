//! The signer checkpoints the ledger's chains: when it stops serving, a
//! `checkpoint` event on the global chain names the head of every chain
//! that moved since its last one, and nothing is written when none moved.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::GLOBAL_CHAIN;
use countersign_signer::testing::TestSigner;

use support::{head, propose};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_signer_checkpoints_the_chains_that_moved_when_it_stops() {
    let mut signer = TestSigner::start().await.unwrap();
    let principal = signer.principal().to_owned();
    // Started on an empty ledger: nothing to checkpoint.
    assert!(signer.state().ledger().events().await.unwrap().is_empty());
    propose(&mut head(&signer).await).await;
    propose(&mut head(&signer).await).await;
    signer.halt().await.unwrap();

    let ledger = signer.state().ledger();
    let events = ledger.events().await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        (last.chain.as_str(), last.kind.as_str()),
        (GLOBAL_CHAIN, "checkpoint")
    );
    let principal_head = events.iter().rfind(|e| e.chain == principal).unwrap();
    assert_eq!(last.details["heads"][&principal]["count"], 2);
    assert_eq!(
        last.details["heads"][&principal]["hash"],
        principal_head.hash.as_str()
    );
    let report = ledger.verify_chain().await.unwrap();
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.checkpoints, 1);
}
