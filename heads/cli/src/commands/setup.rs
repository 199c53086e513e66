//! `init` and `up`. `init` lays out the private home (principal, config,
//! default registry, development PKI) and has the signer create its own key
//! (`countersign-signer keygen`): this binary never touches the signing key.
//! `up` initializes on first use, then runs the signer as a separate process
//! and supervises it until interrupted; with `[notify]` it also delivers the
//! signer's notifications (`countersign notify serve`, in this process, with
//! the notifier credential: never in the signer's), and with `[tlog] policy`
//! it sends the log's checkpoints to witnesses (`countersign witness serve`,
//! in this process too: the signer opens no outbound connection).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use countersign_identity::files::write_private_new;
use countersign_identity::shutdown::{Drained, SHUTDOWN_GRACE, drain, shutdown_signal};
use countersign_identity::{Home, IdentityError, pki};
use countersign_registry::Registry;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::signer_binary::signer_binary;
use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// How many times `up` restarts a signer that exits on its own.
const MAX_RESTARTS: u32 = 5;
/// How long `up` waits for the signer to report that it listens.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// `countersign init`
pub(crate) async fn init(home: &Home, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let (mut created, console) = initialize(home).await?;
    if let Some(problem) = console {
        return Err(CliError::Error(problem));
    }
    created.sort();
    if json {
        let created: Vec<String> = created.iter().map(|p| p.display().to_string()).collect();
        return write_json(
            io.out,
            &json!({"home": home.root().display().to_string(), "principal": home.principal().map_err(CliError::error)?, "created": created}),
        );
    }
    let mut text = format!("countersign home: {}\n", home.root().display());
    text.push_str(&format!(
        "principal: {}\n",
        home.principal().map_err(CliError::error)?
    ));
    if created.is_empty() {
        text.push_str("already initialized; nothing changed\n");
    }
    for path in &created {
        text.push_str(&format!("created {}\n", path.display()));
    }
    write_text(io.out, &text)
}

/// Create whatever is missing; never rewrite what exists. Returns the paths created.
/// Lays out what is missing of the home; the files it created, and why the
/// console's certificate could not be made for its names, if it could not
/// (`init` fails on it; `up` runs the signer without the console).
async fn initialize(home: &Home) -> Result<(Vec<PathBuf>, Option<String>), CliError> {
    let report = home.init().map_err(CliError::error)?;
    let mut created = report.created;
    match write_private_new(&home.registry_path(), Registry::default_toml().as_bytes()) {
        Ok(()) => created.push(home.registry_path()),
        Err(IdentityError::AlreadyExists(_)) => {}
        Err(e) => return Err(CliError::error(e)),
    }
    created.extend(
        pki::create_dev_pki(home, &report.principal)
            .map_err(CliError::error)?
            .created,
    );
    // The Web Push VAPID key pair (`notify/vapid.key`, read only by the
    // notify process, and `notify/vapid.pub`, which the console serves).
    created.extend(countersign_push::VapidKey::ensure(home).map_err(CliError::error)?);
    // The console's name-constrained CA and server certificate, for the
    // names the configuration gives (unless it brings its own).
    let config = countersign_identity::Config::load(home).map_err(CliError::error)?;
    let mut console_problem = None;
    if let Some(console) = config.console.filter(|c| c.own_cert.is_none()) {
        match countersign_identity::console_pki::ensure_console_cert(home, &console.names) {
            Ok((_, report)) => created.extend(report.written),
            Err(e) => console_problem = Some(e.to_string()),
        }
    }
    if !home.has_signing_keys() {
        let status = Command::new(signer_binary(false)?)
            .arg("keygen")
            .arg("--home")
            .arg(home.root())
            .stdout(Stdio::null())
            .status()
            .await
            .map_err(|e| CliError::Error(format!("cannot run countersign-signer keygen: {e}")))?;
        if !status.success() {
            return Err(CliError::Error(format!(
                "countersign-signer keygen failed ({status})"
            )));
        }
        created.push(home.signing_key_path());
    }
    home.check().map_err(CliError::error)?;
    Ok((created, console_problem))
}

/// What `up` says when the console cannot start: the signer runs on.
const CONSOLE_LEFT_OFF: &str = "the signer runs on without it: decide at the terminal (`countersign pending`, `countersign approve ID`), and see `countersign doctor` for the console";

/// `countersign up [--api ADDR]`
pub(crate) async fn up(
    home: &Home,
    api: Option<SocketAddr>,
    console: Option<Option<SocketAddr>>,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let (created, console_problem) = initialize(home).await?;
    for path in created {
        writeln_err(io, &format!("created {}", path.display()));
    }
    let binary = signer_binary(false)?;
    let mut restarts = 0;
    let mut api_server: Option<Served> = None;
    let mut console_server: Option<Served> = None;
    let mut console_failed = false;
    if let (Some(_), Some(problem)) = (console, &console_problem) {
        console_failed = true;
        writeln_err(
            io,
            &format!("the console will not start: {problem}\n{CONSOLE_LEFT_OFF}"),
        );
    }
    let mut notifier: Option<countersign_notify::Notifier> = None;
    let mut witnessing: Option<countersign_witness::Witnessing> = None;
    // The notify and witnessing tasks start once, with the first signer.
    let mut tasks_started = false;
    loop {
        let mut child = spawn_signer(&binary, home)?;
        let line = match wait_ready(&mut child).await {
            Ok(line) => line,
            Err(e) => {
                let _ = child.start_kill();
                return Err(e);
            }
        };
        writeln_err(io, &line);
        if let (Some(listen), None) = (api, &api_server) {
            match Served::api(home, listen, io).await {
                Ok(server) => api_server = Some(server),
                Err(e) => {
                    stop(&mut child).await;
                    return Err(e);
                }
            }
        }
        if let (Some(listen), None, false) = (console, &console_server, console_failed) {
            // The console is the person's window, not the gate: one that
            // cannot start (a name that does not resolve, an address
            // another program holds) is said and left off, and the signer
            // runs on, so agents' hooks and the terminal still get answers.
            match Served::console(home, listen, io).await {
                Ok(server) => console_server = Some(server),
                Err(e) => {
                    console_failed = true;
                    writeln_err(
                        io,
                        &format!("the console did not start: {e}\n{CONSOLE_LEFT_OFF}"),
                    );
                }
            }
        }
        if !tasks_started {
            tasks_started = true;
            let started = match start_notifier(home, io).await {
                Ok(started) => {
                    notifier = started;
                    start_witnessing(home).await
                }
                Err(e) => Err(e),
            };
            match started {
                Ok(started) => witnessing = started,
                Err(e) => {
                    if let Some(notifier) = notifier.take() {
                        notifier.stop().await;
                    }
                    for server in [console_server.take(), api_server.take()]
                        .into_iter()
                        .flatten()
                    {
                        server.stop().await;
                    }
                    stop(&mut child).await;
                    return Err(e);
                }
            }
        }
        writeln_err(
            io,
            &format!(
                "countersign is up (home {}); press Ctrl-C to stop",
                home.root().display()
            ),
        );
        if restarts == 0 {
            writeln_err(io, next_steps(console_server.is_some()));
        }
        tokio::select! {
            status = child.wait() => {
                let status = status.map_err(CliError::error)?;
                restarts += 1;
                if restarts > MAX_RESTARTS {
                    for server in [console_server.take(), api_server.take()].into_iter().flatten() {
                        server.stop().await;
                    }
                    if let Some(notifier) = notifier.take() {
                        notifier.stop().await;
                    }
                    if let Some(witnessing) = witnessing.take() {
                        witnessing.stop().await;
                    }
                    return Err(CliError::Error(format!("the signer keeps exiting ({status}); giving up after {MAX_RESTARTS} restarts")));
                }
                writeln_err(io, &format!("the signer exited ({status}); restarting ({restarts}/{MAX_RESTARTS})"));
                tokio::time::sleep(Duration::from_millis(500 * u64::from(restarts))).await;
            }
            () = shutdown_signal() => {
                if let Some(server) = console_server.take() {
                    writeln_err(io, "stopping the console");
                    server.stop().await;
                }
                if let Some(server) = api_server.take() {
                    writeln_err(io, "stopping the API");
                    server.stop().await;
                }
                if let Some(notifier) = notifier.take() {
                    writeln_err(io, "stopping the notifications");
                    notifier.stop().await;
                }
                if let Some(witnessing) = witnessing.take() {
                    writeln_err(io, "stopping the witnessing");
                    witnessing.stop().await;
                }
                writeln_err(io, "stopping the signer");
                stop(&mut child).await;
                return Ok(());
            }
        }
    }
}

/// The notify process's work inside `up`, when `[notify]` is configured:
/// a task of this process (which links no signing code), delivering with
/// the home's notifier credential, as `countersign notify serve` would,
/// and serving its metrics at `[metrics] notify`, if set. Started once.
async fn start_notifier(
    home: &Home,
    io: &mut Io<'_>,
) -> Result<Option<countersign_notify::Notifier>, CliError> {
    let ctx = Context::load(home.clone())?;
    if ctx.config.notify.is_none() {
        return Ok(None);
    }
    let notifier = countersign_notify::Notifier::start(&ctx.home, &ctx.config)
        .await
        .map_err(CliError::error)?;
    let mut exposition = countersign_metrics::Exposition::new();
    notifier.metrics().register(&mut exposition);
    super::metrics::serve_exposition(ctx.config.metrics.notify, exposition, "notify", io).await?;
    Ok(Some(notifier))
}

/// The witnessing client inside `up`, when `[tlog] policy` is configured:
/// a task of this process, as `countersign witness serve` would run it.
async fn start_witnessing(
    home: &Home,
) -> Result<Option<countersign_witness::Witnessing>, CliError> {
    let ctx = Context::load(home.clone())?;
    super::witness::start(&ctx).await
}

/// Completes when a server inside `up` is told to drain.
type Stopped = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A server running inside `up` (the HTTP API, the console), until told to drain.
struct Served {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    async fn api(home: &Home, listen: SocketAddr, io: &mut Io<'_>) -> Result<Self, CliError> {
        let ctx = Context::load(home.clone())?;
        let (listener, state) = super::api::bind(&ctx, listen, io).await?;
        Ok(Self::spawn("the API", |stopped| {
            countersign_api::run(listener, state, stopped)
        }))
    }

    async fn console(
        home: &Home,
        listen: Option<SocketAddr>,
        io: &mut Io<'_>,
    ) -> Result<Self, CliError> {
        let ctx = Context::load(home.clone())?;
        let (listener, state, origin, advertised) =
            super::console::bind(&ctx, listen, None, io).await?;
        super::console::offer_pairing(&ctx, &origin, None, io);
        Ok(Self::spawn("the console", move |stopped| async move {
            let served = countersign_console::run(listener, state, stopped).await;
            drop(advertised);
            served
        }))
    }

    /// Run `serve` with a future that completes when [`Served::stop`] is called.
    fn spawn<F>(what: &'static str, serve: impl FnOnce(Stopped) -> F) -> Self
    where
        F: std::future::Future<Output = std::io::Result<()>> + Send + 'static,
    {
        let (stop, stopped) = oneshot::channel::<()>();
        let served = serve(Box::pin(async {
            let _ = stopped.await;
        }));
        let task = tokio::spawn(async move {
            if let Err(e) = served.await {
                tracing::error!(error = %e, "{what} stopped with an error");
            }
        });
        Self { stop, task }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

fn spawn_signer(binary: &std::path::Path, home: &Home) -> Result<Child, CliError> {
    Command::new(binary)
        .arg("serve")
        .arg("--home")
        .arg(home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CliError::Error(format!("cannot start {}: {e}", binary.display())))
}

/// Wait for the signer's readiness line, then keep forwarding its log to our stderr.
async fn wait_ready(child: &mut Child) -> Result<String, CliError> {
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| CliError::Error("no signer log pipe".to_string()))?;
    let mut lines = BufReader::new(stderr).lines();
    let ready = tokio::time::timeout(READY_TIMEOUT, async {
        while let Some(line) = lines.next_line().await.map_err(CliError::error)? {
            if line.contains("countersign-signer listening on") {
                return Ok(line);
            }
            eprintln!("{line}");
        }
        Err(CliError::Error(
            "the signer exited before it was ready (see its log above)".to_string(),
        ))
    })
    .await
    .map_err(|_| CliError::Error("the signer did not become ready within 30 s".to_string()))??;
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    Ok(ready)
}

/// Ask the signer to drain (SIGTERM), then kill it if it does not exit in time.
async fn stop(child: &mut Child) {
    if let Some(pid) = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32))
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    // The signer drains for SHUTDOWN_GRACE itself; a second more for it to exit.
    let grace = SHUTDOWN_GRACE + Duration::from_secs(1);
    if let Drained::GraceOver = drain(child.wait(), grace).await {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

fn writeln_err(io: &mut Io<'_>, line: &str) {
    let _ = writeln!(io.err, "{line}");
}

/// What a person does next, once `up` is up: decide at a terminal, and
/// where the console is (or how to start it).
fn next_steps(console: bool) -> &'static str {
    if console {
        "next: in another terminal, `countersign pending` lists what waits for your decision and `countersign approve ID` decides one; to decide in a browser, pair it once with `countersign console pair`"
    } else {
        "next: in another terminal, `countersign pending` lists what waits for your decision and `countersign approve ID` decides one; to decide in a browser, run `countersign up --console` instead and pair it with `countersign console pair`"
    }
}
