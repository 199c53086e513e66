//! Waiting for a decision without polling (`WatchProposal`), beside its
//! floor, and what a waiting watcher costs.
//!
//! A signer runs in this process (`TestSigner`: real mTLS on 127.0.0.1,
//! SQLite ledger). The watcher is another process (this binary run again
//! with [`WATCH_CHILD`]) with its own head connection, as a hook is:
//!
//! - latency: for each iteration this process proposes, the watcher opens
//!   `WatchProposal` and says when the first (pending) view arrived, this
//!   process approves with `Decide` over its own kept approver channel,
//!   and the watcher reports when the approved view arrived. The figure
//!   is that instant minus the instant `Decide` returned here (both read
//!   from the system clock, which the two processes share; it can be
//!   negative: the signer announces the decision before its answer is
//!   on the wire). Its floor is a kept-channel `GetProposal` round trip
//!   in the same loop;
//! - idle cost: the watcher waits on a proposal nobody decides, through
//!   `countersign_service::wait_for_decision` (what a hook calls), for
//!   `--idle-secs` (30 by default), and reports its own CPU time
//!   (utime + stime of `/proc/self/stat`, in clock ticks of 10 ms) over
//!   the wait; this process reports its own (the signer's side) over the
//!   same seconds.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use countersign_gate::signer_client;
use countersign_identity::{Home, Role};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, Delivery, GetProposalRequest, ProposalStatus, ProposalView, ProposeRequest,
    WatchProposalRequest,
};
use countersign_signer::testing::TestSigner;
use countersign_verifier::ProposalId;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tonic::transport::Channel;

use super::{Options, verdict};

/// The argument that makes this binary the watcher process.
pub(super) const WATCH_CHILD: &str = "--watch-child";

/// Iterations before the measured ones.
pub(super) const WARM_UP: usize = 3;

/// The target: a decision reaches a waiting watcher within this, p50.
pub(super) const TARGET_P50: Duration = Duration::from_millis(100);

/// Nanoseconds since the epoch, from the clock both processes share.
pub(super) fn now_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or_default()
}

/// This process's CPU time so far (utime + stime of `/proc/self/stat`),
/// in clock ticks (USER_HZ, 100 per second on Linux).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the line; 12 and 13 here.
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

fn ticks_ms(ticks: u64) -> u64 {
    ticks * 10
}

pub(super) fn ms(nanos: i128) -> String {
    format!("{:+.2} ms", nanos as f64 / 1e6)
}

/// The nearest-rank percentile `q` of `v` (sorted here).
pub(super) fn pct(v: &mut [i128], q: f64) -> i128 {
    v.sort_unstable();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// A new `schedule.create` proposal named `name`, through `head`.
pub(super) async fn propose(
    head: &mut SignerClient<Channel>,
    name: &str,
) -> Result<ProposalView, String> {
    Ok(head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: format!(r#"{{"name":"{name}","cron":"0 3 * * *"}}"#),
            session: "bench".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner())
}

/// Approves `id` (handoff) through `approver`; how long `Decide` took.
pub(super) async fn approve(
    approver: &mut SignerClient<Channel>,
    id: &str,
) -> Result<Duration, String> {
    let t = Instant::now();
    approver
        .decide(DecideRequest {
            proposal_id: id.to_owned(),
            approve: true,
            delivery: Delivery::Handoff as i32,
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    Ok(t.elapsed())
}

/// Prints the table of `rows` (a name and its samples, in nanoseconds):
/// p50 and p99 of each; returns the p50s.
pub(super) fn print_rows(rows: Vec<(&str, &mut Vec<i128>)>) -> Vec<i128> {
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    println!("{:<width$} {:>10} {:>10}", "what", "p50", "p99");
    let mut p50s = Vec::new();
    for (name, samples) in rows {
        let (p50, p99) = (pct(samples, 0.5), pct(samples, 0.99));
        p50s.push(p50);
        println!("{name:<width$} {:>10} {:>10}", ms(p50), ms(p99));
    }
    p50s
}

/// The watcher process, talked to line by line.
pub(super) struct Watcher {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Watcher {
    pub(super) fn start(home: &Home, addr: &str) -> Result<Watcher, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = tokio::process::Command::new(exe)
            .arg(WATCH_CHILD)
            .arg(home.root())
            .arg(addr)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("watcher process: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok(Watcher {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
        })
    }

    pub(super) async fn say(&mut self, line: &str) -> Result<(), String> {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .map_err(|e| e.to_string())
    }

    pub(super) async fn hear(&mut self) -> Result<String, String> {
        self.lines
            .next_line()
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "the watcher process ended".to_owned())
    }

    /// Tells the watcher to open `WatchProposal` of `id`; [`Self::ready`]
    /// says when its first view arrived.
    pub(super) async fn watch(&mut self, id: &str) -> Result<(), String> {
        self.say(&format!("watch {id}")).await
    }

    /// Waits until the watcher has the first (pending) view.
    pub(super) async fn ready(&mut self) -> Result<(), String> {
        match self.hear().await? {
            ready if ready == "ready" => Ok(()),
            other => Err(format!("the watcher said {other:?}")),
        }
    }

    /// Tells the watcher process to end, and waits until it has.
    pub(super) async fn quit(mut self) -> Result<(), String> {
        self.say("quit").await?;
        let _ = self.child.wait().await;
        Ok(())
    }

    /// The number after `word` on the next line.
    pub(super) async fn hear_number(&mut self, word: &str) -> Result<i128, String> {
        let line = self.hear().await?;
        line.strip_prefix(word)
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| format!("the watcher said {line:?}, not {word}"))
    }
}

/// The watch section; an error says what went wrong.
pub(super) async fn run(opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(300)).max(1);
    let idle = opts.idle_secs.unwrap_or(30);
    let signer = TestSigner::start()
        .await
        .map_err(|e| format!("signer: {e}"))?;
    let home = signer.home();
    let addr = signer.addr().to_string();
    let connect = |role| signer_client::connect(home, &addr, role);
    let mut head = connect(Role::Head).await.map_err(|e| e.to_string())?;
    let mut approver = connect(Role::Approver).await.map_err(|e| e.to_string())?;
    let mut watcher = Watcher::start(home, &addr)?;

    let mut floor = Vec::with_capacity(n);
    let mut decide = Vec::with_capacity(n);
    let mut after_return = Vec::with_capacity(n);
    let mut after_send = Vec::with_capacity(n);
    let started = Instant::now();
    for i in 0..n + WARM_UP {
        let keep = i >= WARM_UP;
        let proposal = propose(&mut head, &format!("watch-{i}")).await?;
        let t = Instant::now();
        approver
            .get_proposal(GetProposalRequest {
                proposal_id: proposal.id.clone(),
            })
            .await
            .map_err(|e| e.to_string())?;
        let got = t.elapsed();
        watcher.watch(&proposal.id).await?;
        watcher.ready().await?;
        let sent = now_nanos();
        let decided = approve(&mut approver, &proposal.id).await?;
        let returned = now_nanos();
        let received = watcher.hear_number("approved").await?;
        if keep {
            floor.push(got.as_nanos() as i128);
            decide.push(decided.as_nanos() as i128);
            after_return.push(received - returned);
            after_send.push(received - sent);
        }
    }
    let elapsed = started.elapsed();

    // Idle: a pending proposal nobody decides.
    let proposal = propose(&mut head, "watch-idle").await?;
    watcher.say(&format!("idle {} {idle}", proposal.id)).await?;
    let ours = cpu_ticks();
    let watcher_ticks = watcher.hear_number("idle-ticks").await?;
    let ours = cpu_ticks() - ours;
    watcher.quit().await?;

    println!("## WatchProposal: a decision reaching a waiting watcher (another process)");
    let p50s = print_rows(vec![
        ("kept-channel GetProposal round trip (floor)", &mut floor),
        ("Decide (approve, handoff) round trip", &mut decide),
        (
            "watcher has the approved view, after Decide sent",
            &mut after_send,
        ),
        ("watcher has it, after Decide returned", &mut after_return),
    ]);
    println!("({n} iterations in {elapsed:.1?}; p99 is the nearest-rank percentile)");
    println!(
        "idle watcher (wait_for_decision, {idle} s): {} ms CPU in the watcher process, {} ms in the signer's process (clock ticks of 10 ms)",
        ticks_ms(u64::try_from(watcher_ticks).unwrap_or(u64::MAX)),
        ticks_ms(ours)
    );
    let after_send = Duration::from_nanos(u64::try_from(p50s[2].max(0)).unwrap_or(0));
    println!("Targets:");
    println!(
        "  a person's approval reaches a waiting watcher: p50 {:.2} ms after Decide was sent, {:.1}x a GetProposal round trip (target <= 100 ms) {}",
        after_send.as_secs_f64() * 1e3,
        p50s[2] as f64 / p50s[0] as f64,
        verdict(after_send <= TARGET_P50)
    );
    println!(
        "  an idle watcher costs no measurable CPU: {} ms over {idle} s (target: below one 10 ms tick) {}",
        ticks_ms(u64::try_from(watcher_ticks).unwrap_or(u64::MAX)),
        verdict(watcher_ticks == 0)
    );
    println!();
    Ok(())
}

/// The watcher process: `home` and `addr` as arguments, commands on
/// stdin (`watch ID`, `idle ID SECS`, `quit`), answers on stdout.
pub(super) fn child(args: &[String]) {
    let [home, addr] = args else {
        panic!("usage: {WATCH_CHILD} HOME ADDR (commands on stdin)");
    };
    // One thread, as a hook process has.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let home = Home::at(home).unwrap();
        let mut head = signer_client::connect(&home, addr, Role::Head)
            .await
            .unwrap();
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut out = tokio::io::stdout();
        while let Some(line) = lines.next_line().await.unwrap() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let answer = match words.as_slice() {
                ["watch", id] => {
                    let mut views = head
                        .watch_proposal(WatchProposalRequest {
                            proposal_id: (*id).to_owned(),
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    views.message().await.unwrap().unwrap();
                    out.write_all(b"ready\n").await.unwrap();
                    out.flush().await.unwrap();
                    let view = views.message().await.unwrap().unwrap();
                    let at = now_nanos();
                    assert_eq!(view.status(), ProposalStatus::Approved);
                    format!("approved {at}")
                }
                ["idle", id, secs] => {
                    let id = ProposalId::parse(*id).unwrap();
                    let secs: u64 = secs.parse().unwrap();
                    let before = cpu_ticks();
                    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
                    let waited = countersign_service::wait_for_decision(&mut head, &id, deadline)
                        .await
                        .unwrap();
                    assert!(
                        matches!(
                            waited,
                            countersign_service::Waited::TimedOut { last: Some(_) }
                        ),
                        "{waited:?}"
                    );
                    format!("idle-ticks {}", cpu_ticks() - before)
                }
                ["quit"] => return,
                _ => panic!("unknown command {line:?}"),
            };
            out.write_all(format!("{answer}\n").as_bytes())
                .await
                .unwrap();
            out.flush().await.unwrap();
        }
    });
}
