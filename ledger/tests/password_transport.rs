//! A PostgreSQL ledger URL that would send a password over TCP without
//! `sslmode=verify-full` is refused before anything is connected, against
//! a fake server on a loopback port that does what any local user holding
//! the port while PostgreSQL restarts can do: ask for the password in
//! clear (AuthenticationCleartextPassword) and record the answer.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use countersign_ledger::{Ledger, LedgerError};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// What the fake server saw: connections, and every byte received.
#[derive(Default)]
struct Seen {
    connections: usize,
    received: Vec<u8>,
}

/// A listener on 127.0.0.1:0 that declines TLS, takes the startup message,
/// asks for a cleartext password, and records whatever comes back.
async fn fake_server() -> (u16, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            log.lock().unwrap().connections += 1;
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), serve(tcp, &log)).await;
            });
        }
    });
    (port, seen)
}

async fn serve(mut tcp: TcpStream, log: &Mutex<Seen>) -> std::io::Result<()> {
    // SSLRequest (length 8, code 80877103) or the startup message itself.
    let mut message = read_untyped(&mut tcp, log).await?;
    if message.len() == 4 && message == 80877103u32.to_be_bytes() {
        tcp.write_all(b"N").await?;
        message = read_untyped(&mut tcp, log).await?;
    }
    let _ = message;
    // AuthenticationCleartextPassword: 'R', length 8, code 3.
    tcp.write_all(&[b'R', 0, 0, 0, 8, 0, 0, 0, 3]).await?;
    let mut rest = vec![0u8; 4096];
    loop {
        let n = tcp.read(&mut rest).await?;
        if n == 0 {
            return Ok(());
        }
        log.lock().unwrap().received.extend_from_slice(&rest[..n]);
    }
}

/// One message without a type byte (length first), recorded; its body.
async fn read_untyped(tcp: &mut TcpStream, log: &Mutex<Seen>) -> std::io::Result<Vec<u8>> {
    let mut length = [0u8; 4];
    tcp.read_exact(&mut length).await?;
    let length = u32::from_be_bytes(length) as usize;
    let mut body = vec![0u8; length.saturating_sub(4).min(1 << 16)];
    tcp.read_exact(&mut body).await?;
    let mut seen = log.lock().unwrap();
    seen.received.extend_from_slice(&length.to_be_bytes()[4..]);
    seen.received.extend_from_slice(&body);
    Ok(body)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_password_over_tcp_without_verify_full_is_refused_and_never_sent() {
    let (port, seen) = fake_server().await;
    for url in [
        format!("postgres://countersign_signer:pw-on-the-wire@127.0.0.1:{port}/countersign"),
        format!(
            "postgres://countersign_signer:pw-on-the-wire@127.0.0.1:{port}/countersign?sslmode=require"
        ),
        format!(
            "postgres://countersign_signer@127.0.0.1:{port}/countersign?password=pw-on-the-wire"
        ),
    ] {
        assert_eq!(
            Ledger::open(&url).await.err(),
            Some(LedgerError::PasswordWithoutVerifiedTls),
            "{url}"
        );
        assert_eq!(
            Ledger::open_for_one_command(&url).await.err(),
            Some(LedgerError::PasswordWithoutVerifiedTls),
            "{url}"
        );
        assert_eq!(
            Ledger::schema_status(&url).await.err(),
            Some(LedgerError::PasswordWithoutVerifiedTls),
            "{url}"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.connections, 0);
    assert!(
        !contains(&seen.received, b"pw-on-the-wire"),
        "the password reached the port"
    );
}

#[tokio::test]
async fn a_url_with_no_password_still_connects_over_tcp_and_gives_nothing_away() {
    // The same fake server, reached: it takes the startup message and asks
    // for a password, and gets none (the driver answers with an empty one).
    let (port, seen) = fake_server().await;
    let url = format!("postgres://countersign_signer@127.0.0.1:{port}/countersign");
    let opened = Ledger::open(&url).await;
    assert!(
        matches!(opened, Err(LedgerError::Database(_))),
        "{opened:?}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen = seen.lock().unwrap();
    assert!(seen.connections >= 1);
    assert!(contains(&seen.received, b"countersign_signer"));
    assert!(!contains(&seen.received, b"pw-on-the-wire"));
}

/// A server of its own with TLS under a CA made here: a password goes over
/// TCP with `sslmode=verify-full` and that CA as `sslrootcert`, and a
/// server certificate the client does not trust gets no connection at all.
#[tokio::test]
async fn a_password_over_verify_full_tls_reaches_only_a_server_under_the_root() {
    use countersign_identity::pki::{CaMaterial, issue_server_cert};
    use sqlx::Connection as _;
    let server = countersign_ledger::testing::ThrowawayPgServer::start().unwrap();
    let data = server.data_dir();
    let ca = CaMaterial::generate("ledger test CA").unwrap();
    let now = time::OffsetDateTime::now_utc();
    let leaf = issue_server_cert(
        &ca,
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    std::fs::write(data.join("server.crt"), &leaf.cert_pem).unwrap();
    std::fs::write(data.join("server.key"), leaf.key_pem.as_bytes()).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        data.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    // The server runs as `postgres` when the tests run as root.
    let owner = std::fs::metadata(data.join("postgresql.conf")).unwrap();
    use std::os::unix::fs::MetadataExt as _;
    for file in ["server.crt", "server.key"] {
        std::os::unix::fs::chown(data.join(file), Some(owner.uid()), Some(owner.gid())).unwrap();
    }
    let mut conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
    conf.push_str("\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n");
    std::fs::write(data.join("postgresql.conf"), conf).unwrap();
    // The role with a password may log in only over TLS, with it.
    std::fs::write(
        data.join("pg_hba.conf"),
        "local all all trust\n\
         hostssl all countersign_pw 127.0.0.1/32 scram-sha-256\n\
         host all countersign_pw 127.0.0.1/32 reject\n\
         host all all 127.0.0.1/32 trust\n",
    )
    .unwrap();
    server.stop().unwrap();
    server.start_again().unwrap();
    let mut admin = sqlx::PgConnection::connect(&server.admin_url())
        .await
        .unwrap();
    sqlx::query("CREATE ROLE countersign_pw LOGIN PASSWORD 'pw-verified'")
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query("CREATE DATABASE ledger_tls OWNER countersign_pw")
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let roots = dir.path().join("ca.pem");
    std::fs::write(&roots, ca.cert_pem()).unwrap();
    let url = |roots: &std::path::Path| {
        format!(
            "postgres://countersign_pw:pw-verified@127.0.0.1:{}/ledger_tls?sslmode=verify-full&sslrootcert={}",
            server.port(),
            roots.display()
        )
    };
    let ledger = Ledger::open(&url(&roots)).await.unwrap();
    assert!(ledger.verify_chain().await.unwrap().is_intact());

    // Under another CA the handshake fails: no password goes.
    let other = CaMaterial::generate("another CA").unwrap();
    let other_roots = dir.path().join("other.pem");
    std::fs::write(&other_roots, other.cert_pem()).unwrap();
    let refused = Ledger::open(&url(&other_roots)).await.err();
    assert!(
        matches!(&refused, Some(LedgerError::Database(why)) if why.starts_with("cannot connect to PostgreSQL")),
        "{refused:?}"
    );
    // Without verify-full it is refused before connecting.
    let prefer = format!(
        "postgres://countersign_pw:pw-verified@127.0.0.1:{}/ledger_tls",
        server.port()
    );
    assert_eq!(
        Ledger::open(&prefer).await.err(),
        Some(LedgerError::PasswordWithoutVerifiedTls)
    );
}
