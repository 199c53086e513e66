//! The runner of the `command` effect and of premise commands, against
//! real programs: what the program receives (stdin, argv, environment,
//! working directory) and how exits, timeouts, large output and refusals
//! are reported.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign_process::{
    CommandError, CommandOutcome, CommandSpec, MAX_OUTPUT_BYTES, run_command, run_query,
};

const KEY: &str = "n0nce-AbC_123";

fn spec(program: &str, args: &[&str], timeout_secs: u64) -> CommandSpec {
    CommandSpec {
        program: PathBuf::from(program),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        timeout: Duration::from_secs(timeout_secs),
    }
}

async fn run(program: &str, args: &[&str], stdin: &str) -> CommandOutcome {
    run_command(&spec(program, args, 10), stdin, KEY)
        .await
        .unwrap()
}

#[tokio::test]
async fn stdin_receives_exactly_the_canonical_arguments() {
    let args = r#"{"message":"hi \"there\"\n","n":1}"#;
    let outcome = run("/bin/cat", &[], args).await;
    assert!(outcome.succeeded(), "{outcome:?}");
    assert_eq!(outcome.stdout, args);
    assert_eq!(outcome.stderr, "");
    assert_eq!((outcome.exit_code, outcome.signal), (Some(0), None));
    assert!(!outcome.timed_out && !outcome.stdout_truncated && !outcome.stderr_truncated);
}

#[tokio::test]
async fn environment_is_scrubbed_to_path_and_idempotency_key() {
    let outcome = run("/usr/bin/env", &[], "{}").await;
    let mut lines: Vec<_> = outcome.stdout.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "COUNTERSIGN_IDEMPOTENCY_KEY=n0nce-AbC_123",
            "PATH=/usr/bin:/bin"
        ]
    );
}

#[tokio::test]
async fn a_query_sees_only_path_and_the_arguments_on_stdin() {
    let outcome = run_query(&spec("/usr/bin/env", &[], 10), "{}")
        .await
        .unwrap();
    assert_eq!(outcome.stdout, "PATH=/usr/bin:/bin\n");
    let args = r#"{"name":"nightly"}"#;
    let outcome = run_query(&spec("/bin/cat", &[], 10), args).await.unwrap();
    assert_eq!((outcome.stdout.as_str(), outcome.succeeded()), (args, true));
    let err = run_query(&spec("cat", &[], 10), args).await.unwrap_err();
    assert_eq!(err, CommandError::RelativeProgram(PathBuf::from("cat")));
}

#[tokio::test]
async fn working_directory_is_root() {
    assert_eq!(run("/bin/pwd", &[], "{}").await.stdout, "/\n");
}

#[tokio::test]
async fn shell_metacharacters_in_arguments_are_passed_literally() {
    let args = [
        "$(id)",
        "; touch /tmp/pwned",
        "`id`",
        "a|b",
        "*",
        "$HOME",
        "x\ny",
    ];
    let outcome = run("/bin/echo", &args, "{}").await;
    assert_eq!(outcome.stdout, format!("{}\n", args.join(" ")));
}

#[tokio::test]
async fn non_zero_exit_and_stderr_are_reported() {
    let outcome = run("/bin/sh", &["-c", "echo oops >&2; exit 3"], "{}").await;
    assert!(!outcome.succeeded());
    assert_eq!((outcome.exit_code, outcome.signal), (Some(3), None));
    assert_eq!(outcome.stderr, "oops\n");
    assert_eq!(
        outcome.describe_failure(),
        "the command exited with status 3"
    );
}

#[tokio::test]
async fn death_by_signal_is_reported() {
    let outcome = run("/bin/sh", &["-c", "kill -TERM $$"], "{}").await;
    assert_eq!((outcome.exit_code, outcome.signal), (None, Some(15)));
    assert_eq!(
        outcome.describe_failure(),
        "the command was killed by signal 15"
    );
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_and_reported() {
    let started = Instant::now();
    let outcome = run_command(&spec("/bin/sleep", &["30"], 1), "{}", KEY)
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(outcome.timed_out && !outcome.succeeded());
    assert_eq!((outcome.exit_code, outcome.signal), (None, Some(9)));
    assert!(outcome.duration_ms >= 1000, "{outcome:?}");
    assert!(
        outcome
            .describe_failure()
            .contains("may have partly applied")
    );
}

#[tokio::test]
async fn a_timeout_kills_what_the_command_started_and_keeps_partial_output() {
    let script = "sleep 30 & echo $!; wait";
    let outcome = run_command(&spec("/bin/sh", &["-c", script], 1), "{}", KEY)
        .await
        .unwrap();
    assert!(outcome.timed_out);
    let grandchild: u32 = outcome.stdout.trim().parse().unwrap();
    let proc_path = format!("/proc/{grandchild}/stat");
    let deadline = Instant::now() + Duration::from_secs(5);
    // Gone, or a zombie waiting for init to reap it.
    while std::fs::read_to_string(&proc_path).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            Instant::now() < deadline,
            "grandchild {grandchild} survived"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn output_is_bounded_and_flagged_while_the_program_runs_to_the_end() {
    let outcome = run(
        "/bin/sh",
        &["-c", "head -c 300000 /dev/zero; echo done >&2"],
        "{}",
    )
    .await;
    assert!(outcome.succeeded(), "{}", outcome.describe_failure());
    assert_eq!(outcome.stdout.len(), MAX_OUTPUT_BYTES);
    assert!(outcome.stdout_truncated && !outcome.stderr_truncated);
    assert_eq!(outcome.stderr, "done\n");
}

#[tokio::test]
async fn a_program_that_ignores_stdin_does_not_hang() {
    let big = format!(r#"{{"m":"{}"}}"#, "x".repeat(60 * 1024));
    let outcome = run("/bin/true", &[], &big).await;
    assert!(outcome.succeeded());
}

#[tokio::test]
async fn refuses_a_relative_program() {
    let err = run_command(&spec("bin/cat", &[], 5), "{}", KEY)
        .await
        .unwrap_err();
    assert_eq!(err, CommandError::RelativeProgram(PathBuf::from("bin/cat")));
    assert!(!err.started());
    let err = run_command(&spec("cat", &[], 5), "{}", KEY)
        .await
        .unwrap_err();
    assert_eq!(err, CommandError::RelativeProgram(PathBuf::from("cat")));
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let err = run_command(&spec("/nonexistent/program", &[], 5), "{}", KEY)
        .await
        .unwrap_err();
    assert!(matches!(&err, CommandError::Spawn { program, .. } if program.ends_with("program")));
    assert!(!err.started());
}

#[tokio::test]
async fn refuses_unprintable_idempotency_keys() {
    for key in ["", "a b", "a\nb", "a=\u{0}"] {
        let err = run_command(&spec("/bin/true", &[], 5), "{}", key)
            .await
            .unwrap_err();
        assert_eq!(err, CommandError::InvalidIdempotencyKey, "{key:?}");
    }
}

#[tokio::test]
async fn outcome_serializes_as_the_ledger_result() {
    let outcome = run("/bin/cat", &[], "{}").await;
    let json = serde_json::to_value(&outcome).unwrap();
    let mut keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "duration_ms",
            "exit_code",
            "signal",
            "stderr",
            "stderr_truncated",
            "stdout",
            "stdout_truncated",
            "timed_out"
        ]
    );
    assert_eq!(json["stdout"], "{}");
    assert_eq!(json["exit_code"], 0);
    assert!(json["signal"].is_null());
}
