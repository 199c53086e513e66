//! An HTTP head on a Unix socket for one OS user (`api serve --listen
//! unix:PATH --client-user USER`): a port is no identity, a socket is.
//!
//! Both ends are known without a credential crossing anything first: the
//! server takes only connections whose peer the kernel reports
//! (SO_PEERCRED) to be the client user's uid, dropping any other before a
//! byte is read; and the client reaches the server's own socket, since the
//! socket is made in a directory that only its owner (or root) can write,
//! so no other user can put theirs at that path. [`bind`] refuses a
//! directory anyone else can write.

use std::io;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use tokio::net::unix::SocketAddr;
use tokio::net::{UnixListener, UnixStream};

/// A Unix socket listener that yields only connections of one uid.
pub struct PeerListener {
    listener: UnixListener,
    client_uid: u32,
    path: PathBuf,
}

impl PeerListener {
    /// Where it listens.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Bind `path` for connections from `client_uid` only ([`listen`]).
pub fn bind(path: &Path, client_uid: u32) -> Result<PeerListener, String> {
    Ok(PeerListener {
        listener: listen(path)?,
        client_uid,
        path: path.to_owned(),
    })
}

/// A listener on `path`: refused when its directory can be written by a
/// user other than this process's and root (another user could replace
/// the socket and receive what clients send), or when something other
/// than a socket is there; a stale socket of an earlier run is replaced.
/// The socket itself is open to every user: a check of each connection's
/// peer, not its mode, decides who is served.
pub fn listen(path: &Path) -> Result<UnixListener, String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .ok_or_else(|| format!("{}: no directory", path.display()))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "{} belongs to uid {}: another user could replace the socket; use a directory of this user's or root's",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} can be written by other users (mode {:o}): any of them could replace the socket; use a directory only its owner writes (such as a systemd RuntimeDirectory)",
            dir.display(),
            meta.permissions().mode() & 0o7777
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)
            .map_err(|e| format!("cannot replace {}: {e}", path.display()))?,
        Ok(_) => {
            return Err(format!(
                "{} exists and is not a socket; nothing was changed",
                path.display()
            ));
        }
        Err(_) => {}
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(listener)
}

impl axum::serve::Listener for PeerListener {
    type Io = UnixStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = match self.listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            match stream.peer_cred().map(|c| c.uid()) {
                Ok(uid) if uid == self.client_uid => return (stream, addr),
                Ok(uid) => tracing::warn!(
                    uid,
                    client_uid = self.client_uid,
                    "refused a connection from another user; nothing was read"
                ),
                Err(e) => tracing::warn!("a connection's peer credentials are unreadable: {e}"),
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.listener.local_addr()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_socket_is_refused_and_kept() {
        let dir = private_dir();
        let path = dir.path().join("api.sock");
        std::fs::write(&path, "mine").unwrap();
        let why = listen(&path).err().unwrap();
        assert_eq!(
            why,
            format!(
                "{} exists and is not a socket; nothing was changed",
                path.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "mine");
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced_and_left_open_to_every_user() {
        let dir = private_dir();
        let path = dir.path().join("api.sock");
        drop(listen(&path).unwrap());
        assert!(path.exists(), "a stopped listener leaves its socket file");
        let _again = listen(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666);
        UnixStream::connect(&path).await.unwrap();
    }

    #[tokio::test]
    async fn a_directory_other_users_can_write_is_refused() {
        let dir = private_dir();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = dir.path().join("api.sock");
        let why = listen(&path).err().unwrap();
        assert!(
            why.starts_with(&format!(
                "{} can be written by other users (mode 777)",
                dir.path().display()
            )),
            "{why}"
        );
        assert!(!path.exists());
    }
}
