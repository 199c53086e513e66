//! The console's commands refuse what they must before anything listens or
//! is stored: an unspecified or non-loopback address (the console serves
//! plain HTTP), a pairing without an interactive terminal, an unknown
//! session; and a pairing link goes to the terminal only, never to stdout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_console::SessionStore;
use support::{Harness, Person};

#[tokio::test]
async fn console_refuses_an_unspecified_or_non_loopback_address() {
    let h = Harness::start().await;
    for (addr, why) in [
        ("0.0.0.0:0", "names no specific address"),
        ("[::]:0", "names no specific address"),
        ("192.0.2.1:7444", "is not a loopback address"),
    ] {
        let run = h.cli(&["console", "--listen", addr]).await;
        assert!(
            matches!(&run.result, Err(CliError::Error(m)) if m.contains(why)),
            "{addr}: {:?}",
            run.result
        );
    }
}

#[tokio::test]
async fn pairing_needs_a_terminal_and_shows_the_link_only_there() {
    let h = Harness::start().await;
    let store = SessionStore::in_home(std::path::Path::new(&h.home()));

    let run = h
        .cli_with(&["console", "pair"], "", Person::NoTerminal)
        .await;
    assert!(
        matches!(&run.result, Err(CliError::Refused(m)) if m.starts_with("pairing needs an interactive terminal") && m.ends_with("no link was created")),
        "{:?}",
        run.result
    );
    assert!(
        !std::path::Path::new(&h.home())
            .join("console-sessions.json")
            .exists()
    );

    let run = h
        .cli_with(
            &["--json", "console", "--listen", "127.0.0.1:7999", "pair"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let link = run
        .shown
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:7999/pair/cp1_"))
        .expect("the terminal shows the link");
    assert!(
        !run.stdout.contains("cp1_"),
        "stdout never carries the code"
    );
    assert!(run.json()["expires_at"].is_string());
    // The link's code opens exactly one session.
    let code = link.rsplit('/').next().unwrap();
    let (_, record) = store.redeem(code).unwrap().unwrap();
    assert!(store.redeem(code).unwrap().is_err());

    let listed = h.cli(&["--json", "console", "sessions", "list"]).await;
    assert_eq!(listed.json()["sessions"][0]["id"], record.id.as_str());
    assert_eq!(listed.json()["sessions"][0]["status"], "active");
    let revoked = h.cli(&["console", "sessions", "revoke", &record.id]).await;
    assert_eq!(revoked.result, Ok(()));
    let listed = h.cli(&["--json", "console", "sessions", "list"]).await;
    assert_eq!(listed.json()["sessions"][0]["status"], "revoked");

    let unknown = h
        .cli(&["console", "sessions", "revoke", "0000000000000000"])
        .await;
    assert_eq!(
        unknown.result,
        Err(CliError::Refused(
            "no console session 0000000000000000".into()
        ))
    );
}
