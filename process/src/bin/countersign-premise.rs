//! `countersign-premise`: the premise runner. Premise programs never run in
//! the process that asks for them (the signer, a head); they run here.
//!
//! ```text
//! countersign-premise exec [--hide DIR]... -- PROGRAM [ARG]...
//! countersign-premise probe [--hide DIR]...
//! countersign-premise serve --socket PATH --client-user NAME [--client-user NAME]...
//! ```
//!
//! - `exec`: restricts itself with Landlock (nothing beneath any `--hide`
//!   directory; no ptrace of, signal to or abstract socket of a process
//!   outside; see `countersign_process::sandbox`), then becomes PROGRAM
//!   (same stdin, stdout, stderr, environment and process group, which
//!   its parent set up). Exit 126 when the restriction cannot be built,
//!   127 when PROGRAM cannot be executed.
//! - `probe`: the same restriction, then prints what it achieved
//!   (`fully`, `partially` or `not`).
//! - `serve`: the premise service of the hardened installation, run as its
//!   own system user: accepts connections on a unix socket only from the
//!   named users (checked by the kernel's peer credentials), and runs each
//!   request's program through `exec` (this binary), answering with its
//!   outcome.
#![forbid(unsafe_code)]

use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use countersign_process::CommandSpec;
use countersign_process::premise::{
    PremiseRunner, RUNNER_REFUSAL, SERVICE_MAX_REQUEST_BYTES, SERVICE_MAX_TIMEOUT, ServiceAnswer,
    ServiceRequest,
};
use countersign_process::sandbox::restrict_self;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{UnixListener, UnixStream};

/// How many requests the service runs at once.
const SERVICE_CONCURRENCY: usize = 16;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        return usage();
    };
    match command.as_str() {
        "exec" => exec(rest),
        "probe" => probe(rest),
        "serve" => serve(rest),
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: countersign-premise exec [--hide DIR]... -- PROGRAM [ARG]...\n\
         \x20      countersign-premise probe [--hide DIR]...\n\
         \x20      countersign-premise serve --socket PATH --client-user NAME..."
    );
    ExitCode::from(2)
}

/// `--hide DIR` pairs up to `--` (or the end): the directories, and what
/// follows `--`.
fn hidden_and_rest(args: &[String]) -> Option<(Vec<PathBuf>, &[String])> {
    let mut hidden = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "--hide" => {
                hidden.push(PathBuf::from(args.get(i + 1)?));
                i += 2;
            }
            "--" => return Some((hidden, args.get(i + 1..).unwrap_or_default())),
            _ => return None,
        }
    }
    Some((hidden, &[]))
}

fn exec(args: &[String]) -> ExitCode {
    let Some((hidden, program)) = hidden_and_rest(args) else {
        return usage();
    };
    let Some((program, program_args)) = program.split_first() else {
        return usage();
    };
    if let Err(e) = restrict_self(&hidden) {
        eprintln!("{RUNNER_REFUSAL}not running {program:?}: {e}");
        return ExitCode::from(126);
    }
    // Only returns on failure.
    let e = std::process::Command::new(program)
        .args(program_args)
        .exec();
    eprintln!("{RUNNER_REFUSAL}cannot start {program:?}: {e}");
    ExitCode::from(127)
}

fn probe(args: &[String]) -> ExitCode {
    let Some((hidden, [])) = hidden_and_rest(args) else {
        return usage();
    };
    match restrict_self(&hidden) {
        Ok(restricted) => {
            println!("{}", restricted.as_str());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("countersign-premise: {e}");
            ExitCode::from(126)
        }
    }
}

/// `serve`'s options.
struct ServeOptions {
    socket: PathBuf,
    clients: Vec<u32>,
}

fn serve_options(args: &[String]) -> Result<ServeOptions, String> {
    let mut socket = None;
    let mut clients = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = it.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--socket" => socket = Some(PathBuf::from(value)),
            "--client-user" => clients.push(countersign_process::users::uid_of(value)?),
            _ => return Err(format!("unknown option {arg}")),
        }
    }
    let socket = socket.ok_or("--socket is required")?;
    if !socket.is_absolute() {
        return Err("--socket must be absolute".to_owned());
    }
    if clients.is_empty() {
        return Err("at least one --client-user is required".to_owned());
    }
    Ok(ServeOptions { socket, clients })
}

fn serve(args: &[String]) -> ExitCode {
    let options = match serve_options(args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("countersign-premise serve: {e}");
            return usage();
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("countersign-premise serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve_on(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("countersign-premise serve: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_on(options: ServeOptions) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let socket = &options.socket;
    // A socket left by an earlier run; anything else there is refused by bind.
    if std::fs::symlink_metadata(socket).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt as _;
        m.file_type().is_socket()
    }) {
        std::fs::remove_file(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    }
    let listener = UnixListener::bind(socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    // Anyone may connect; only the client users are answered (peer
    // credentials, below). The directory's mode is the first gate.
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("{}: {e}", socket.display()))?;
    // Each program runs through `exec` of this binary: restricted too (no
    // ptrace of this service, no signal to it).
    let runner = Arc::new(PremiseRunner::Child {
        runner: std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        hidden: Vec::new(),
    });
    let clients = Arc::new(options.clients);
    let slots = Arc::new(tokio::sync::Semaphore::new(SERVICE_CONCURRENCY));
    eprintln!(
        "countersign-premise: serving {} for uids {:?}",
        socket.display(),
        clients
    );
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                eprintln!("countersign-premise: accept: {e}");
                continue;
            }
        };
        let (runner, clients, slots) = (runner.clone(), clients.clone(), slots.clone());
        tokio::spawn(async move {
            let Ok(_slot) = slots.acquire().await else {
                return;
            };
            answer(stream, &runner, &clients).await;
        });
    }
}

/// One connection: check the peer, read the request, run it, answer.
async fn answer(mut stream: UnixStream, runner: &PremiseRunner, clients: &[u32]) {
    let peer = match stream.peer_cred() {
        Ok(cred) => cred.uid(),
        Err(e) => {
            eprintln!("countersign-premise: peer credentials: {e}");
            return;
        }
    };
    if !clients.contains(&peer) {
        eprintln!("countersign-premise: refused a connection from uid {peer}");
        return;
    }
    let mut body = Vec::new();
    let read = (&mut stream)
        .take(SERVICE_MAX_REQUEST_BYTES + 1)
        .read_to_end(&mut body)
        .await;
    let answer = match read {
        Err(e) => ServiceAnswer::NotRun(format!("reading the request: {e}")),
        Ok(_) if body.len() as u64 > SERVICE_MAX_REQUEST_BYTES => {
            ServiceAnswer::NotRun("the request is too large".to_owned())
        }
        Ok(_) => match serde_json::from_slice::<ServiceRequest>(&body) {
            Err(e) => ServiceAnswer::NotRun(format!("malformed request: {e}")),
            Ok(request) => run(runner, request).await,
        },
    };
    if let Ok(bytes) = serde_json::to_vec(&answer) {
        // Ignored: a client that went away gets nothing either way.
        let _ = stream.write_all(&bytes).await;
        let _ = stream.shutdown().await;
    }
}

async fn run(runner: &PremiseRunner, request: ServiceRequest) -> ServiceAnswer {
    let Some((program, args)) = request.argv.split_first() else {
        return ServiceAnswer::NotRun("empty argv".to_owned());
    };
    let spec = CommandSpec {
        program: PathBuf::from(program),
        args: args.to_vec(),
        timeout: std::time::Duration::from_millis(request.timeout_ms).min(SERVICE_MAX_TIMEOUT),
    };
    match runner.run(&spec, &request.stdin).await {
        Ok(outcome) => ServiceAnswer::Ran(outcome),
        Err(e) => ServiceAnswer::NotRun(e.to_string()),
    }
}
