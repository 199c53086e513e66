//! Web Push in the privilege-separated installation (`deploy/setup-system.sh`):
//! the notify process runs as its own user, which can read neither the
//! signer's home nor the console's session stores where the subscriptions
//! are, and still pushes to the person's paired browser, because the
//! signer tells it the devices (`PushDevices`). The VAPID private key is
//! the notify user's alone; the console keeps the public half it gives
//! browsers. The browser's side and the push's checks are
//! `tests/e2e/hardened_push.py` (py-vapid and http_ece, as in push.py).
//!
//! Needs root (useradd, runuser, setpriv), the PostgreSQL test server and
//! python3 with pexpect, py-vapid and http_ece; without root it says so and
//! passes without testing anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::Command;

use hardened_support::{
    Base, Layout, Processes, ROOT, Users, ledger_with_roles, skipped_without_root, spawn_as,
    uid_of, wait_for_port,
};

/// Appends `text` to the file at `path` (its owner and mode stay).
fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_notify_user_pushes_to_a_paired_browser_without_reading_the_consoles_files() {
    if skipped_without_root("hardened_push") {
        return;
    }
    let (_db, signer_url, head_url) = ledger_with_roles().await;
    let users = Users::create();
    let (base, bin_dir) = Base::with_binaries("cs-push");
    let layout = Layout::under(&base.0);
    let signer_home = &layout.signer_home;
    let notify_home = &layout.notify_home;
    layout.setup(&users, &bin_dir, &signer_url, &head_url);

    // The VAPID key pair `init` made: the private half moved to the notify
    // user's home (0600, its own), the public half in both.
    let key_pair = || {
        assert!(
            !signer_home.join("notify/vapid.key").exists(),
            "the signer's home keeps no VAPID private key"
        );
        let private = notify_home.join("notify/vapid.key");
        let meta = std::fs::metadata(&private).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(meta.uid(), uid_of(&users.notify));
        let public = std::fs::read_to_string(signer_home.join("notify/vapid.pub")).unwrap();
        assert_eq!(
            std::fs::read_to_string(notify_home.join("notify/vapid.pub")).unwrap(),
            public
        );
        (std::fs::read(private).unwrap(), public)
    };
    let first = key_pair();
    // Run again, the script makes no new pair: the browsers' subscriptions,
    // made with the console's public key, stay valid.
    layout.setup(&users, &bin_dir, &signer_url, &head_url);
    assert_eq!(key_pair(), first);

    // Notifications on: the signer records them, the notify process pushes.
    append(&signer_home.join("config.toml"), "\n[notify]\n");
    append(
        &notify_home.join("config.toml"),
        "\n[notify]\npoll_ms = 100\n[notify.push]\ncontact = \"mailto:ops@example.com\"\nttl_secs = 600\n",
    );
    let cli = bin_dir.join("countersign").display().to_string();
    let signer_home_s = signer_home.display().to_string();
    let mut processes = Processes::default();
    processes.0.push(spawn_as(
        &users.signer,
        &[
            &bin_dir.join("countersign-signer").display().to_string(),
            "serve",
            "--home",
            &signer_home_s,
        ],
    ));
    wait_for_port(&layout.signer_addr, processes.0.last_mut().unwrap());
    processes.0.push(spawn_as(
        &users.signer,
        &[&cli, "--home", &signer_home_s, "console"],
    ));
    wait_for_port(&layout.console_addr, processes.0.last_mut().unwrap());
    processes.0.push(spawn_as(
        &users.notify,
        &[
            &cli,
            "--home",
            &notify_home.display().to_string(),
            "notify",
            "serve",
        ],
    ));

    let agent_home = format!("/home/{}/.config/countersign", users.agent);
    let status = Command::new("python3")
        .arg(Path::new(ROOT).join("tests/e2e/hardened_push.py"))
        .args([&users.signer, &signer_home_s, &users.notify])
        .arg(notify_home)
        .args([&users.agent, &agent_home])
        .env("COUNTERSIGN_BIN", &cli)
        .status()
        .expect("python3 runs (scripts/test installs the test tools)");
    assert!(status.success(), "hardened_push.py: {status}");
    for child in &mut processes.0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "a process of the installation exited"
        );
    }
}
