//! A registry configured outside the home where others can write it: every
//! command refuses to start, naming what others can write, and runs nothing,
//! so nobody else can choose the program an approved `command` (or a
//! reconcile replay) runs. The same proof runs once the path is safe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use countersign::CliError;
use countersign_registry::Registry;
use support::{Harness, command_operation};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn a_command_refuses_to_start_with_a_registry_others_can_write_and_runs_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(scratch.path()).unwrap();
    chmod(&base, 0o700);
    let marker = base.join("ran");
    let registry_text = format!(
        "{}{}",
        Registry::default_toml(),
        command_operation(
            "note.touch",
            false,
            &format!("touch {}", marker.display()),
            10
        )
    );
    let h = Harness::start_with_registry(&registry_text).await;
    let id = h.propose("note.touch", r#"{"text":"hi"}"#).await;
    let proof = h.approve_to_file(&id).await;

    // The same registry, moved out of the home into a directory anyone can
    // write, as a 0666 file.
    let open = base.join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    let registry = open.join("operations.toml");
    std::fs::write(&registry, &registry_text).unwrap();
    chmod(&registry, 0o666);
    let config_path = h.signer.home().config_path();
    let config = std::fs::read_to_string(&config_path).unwrap();
    std::fs::write(
        &config_path,
        format!("{config}[registry]\npath = \"{}\"\n", registry.display()),
    )
    .unwrap();

    for args in [
        vec![
            "--json",
            "exec",
            &id,
            "--proof-file",
            proof.to_str().unwrap(),
        ],
        vec!["--json", "reconcile"],
    ] {
        let run = h.cli(&args).await;
        assert_eq!(
            run.result,
            Err(CliError::Error(format!(
                "{} has mode 0777: the group or others can write to it",
                open.display()
            ))),
            "{args:?}"
        );
        // `--json`: the one document is the error's, and nothing else.
        assert_eq!(run.json()["reason"], "error", "{args:?}: {}", run.stdout);
        assert_eq!(run.stdout.lines().count(), 1, "{args:?}: {}", run.stdout);
    }
    chmod(&open, 0o755);
    let run = h.exec(&id, &proof, &[]).await;
    assert_eq!(
        run.result,
        Err(CliError::Error(format!(
            "{} has mode 0666: the group or others can write to it",
            registry.display()
        )))
    );
    assert!(!marker.exists(), "the command ran");
    assert_eq!(h.effects_run().await, 0);

    // Only its owner can write it now: the same proof runs, once.
    chmod(&registry, 0o644);
    let run = h.exec(&id, &proof, &[]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    assert!(marker.exists());
    assert_eq!(h.effects_run().await, 1);
}
