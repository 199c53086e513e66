//! The argv lexer against real shells: every command it accepts, from a
//! fixed set and from many generated out of shell metacharacters, is split
//! by `/bin/sh` (and `bash`, `bash --posix` where installed) into exactly
//! the argv the lexer reports. A shell that is not installed is skipped.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

use countersign_registry::rule::argv::split;

/// What the generator draws from: words, quotes, escapes, every character
/// the lexer treats specially, spaces and a few non-ASCII ones.
const ALPHABET: &[&str] = &[
    "a", "b", "1", "-", ".", "/", ",", ":", "@", "%", "+", "=", " ", " ", " ", "\t", "'", "'",
    "\"", "\"", "\\", "\\", "\\ ", "\\;", ";", "&", "|", "<", ">", "(", ")", "$", "`", "*", "?",
    "[", "]", "{", "}", "~", "#", "!", "^", "é", "\u{a0}", "x=", "''", "\"\"",
];

const FIXED: &[&str] = &[
    "git status",
    "git commit -m 'fix: a; b | c $HOME `x` * ~ # ! \" ^ {} \\.'",
    "git commit -m \"hello world; 'quoted' * ~ #\"",
    "a'b'\"c\"d e",
    "printf '' \"\"",
    "ls my\\ file",
    "echo \\; \\| \\$ \\* \\\\ \\' \\\" \\~ \\# \\=x",
    "git commit -m 'café' \"naïve\" '\u{a0}'",
    "grep 'a\\.b' f",
];

/// A small deterministic generator (64-bit LCG), so a failure reproduces.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

fn accepted() -> Vec<(String, Vec<String>)> {
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::new();
    for command in FIXED {
        out.push((command.to_string(), split(command).unwrap()));
    }
    for _ in 0..40_000 {
        let len = 1 + rng.below(10);
        let command: String = (0..len)
            .map(|_| ALPHABET[rng.below(ALPHABET.len())])
            .collect();
        if let Ok(argv) = split(&command) {
            out.push((command, argv));
        }
    }
    out
}

/// Runs each command as the arguments of `printf` in one script and reads
/// back the words each one became (unit separator between words, record
/// separator after each command: neither can be in an accepted word).
fn shell_argv(
    shell: &[&str],
    locale: &str,
    commands: &[(String, Vec<String>)],
) -> Option<Vec<Vec<String>>> {
    let mut script = String::new();
    for (command, _) in commands {
        script.push_str("printf '%s\\037' ");
        script.push_str(command);
        script.push_str("; printf '\\036'\n");
    }
    let output = Command::new(shell[0])
        .args(&shell[1..])
        .arg("-c")
        .arg(&script)
        .env("LC_ALL", locale)
        .env("HOME", "/nonexistent-home")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    assert!(
        output.status.success(),
        "{shell:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let mut records: Vec<&str> = text.split('\u{1e}').collect();
    assert_eq!(records.pop(), Some(""));
    Some(
        records
            .into_iter()
            .map(|r| {
                let mut words: Vec<String> = r.split('\u{1f}').map(str::to_owned).collect();
                assert_eq!(words.pop().as_deref(), Some(""));
                words
            })
            .collect(),
    )
}

#[test]
fn every_accepted_command_is_split_by_real_shells_into_the_same_argv() {
    let commands = accepted();
    assert!(commands.len() > 1_000, "only {} accepted", commands.len());
    let mut ran = 0;
    for shell in [&["/bin/sh"][..], &["bash"], &["bash", "--posix"]] {
        for locale in ["C", "C.UTF-8"] {
            let Some(seen) = shell_argv(shell, locale, &commands) else {
                continue;
            };
            ran += 1;
            assert_eq!(seen.len(), commands.len(), "{shell:?} {locale}");
            for ((command, argv), seen) in commands.iter().zip(seen) {
                assert_eq!(&seen, argv, "{shell:?} {locale}: {command:?}");
            }
        }
    }
    if ran == 0 {
        eprintln!("no shell installed: skipped");
    }
}
