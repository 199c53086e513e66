//! Unit tests of the shell-word lexer (accepted commands with their argv,
//! refused commands with their exact refusal) and of argv patterns.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

#[test]
fn splits_plain_quoted_and_escaped_words_into_the_argv_sh_would_run() {
    let cases: &[(&str, &[&str])] = &[
        ("git status", &["git", "status"]),
        ("  git\tstatus  ", &["git", "status"]),
        (
            "git log --oneline -n 5",
            &["git", "log", "--oneline", "-n", "5"],
        ),
        ("/usr/bin/git status", &["/usr/bin/git", "status"]),
        (
            "cargo test -p countersign-registry",
            &["cargo", "test", "-p", "countersign-registry"],
        ),
        (
            "git diff --stat=80,20 a=b x@y:z %s +1 ./p",
            &[
                "git",
                "diff",
                "--stat=80,20",
                "a=b",
                "x@y:z",
                "%s",
                "+1",
                "./p",
            ],
        ),
        // Single quotes: everything literal, shell syntax included.
        (
            "git commit -m 'fix: a; b | c $HOME `x` * ~ # ! \" ^ {} \\.'",
            &[
                "git",
                "commit",
                "-m",
                "fix: a; b | c $HOME `x` * ~ # ! \" ^ {} \\.",
            ],
        ),
        ("grep 'a\\.b' f", &["grep", "a\\.b", "f"]),
        // Double quotes without $, backtick, backslash or !.
        (
            "git commit -m \"hello world; 'quoted' * ~ #\"",
            &["git", "commit", "-m", "hello world; 'quoted' * ~ #"],
        ),
        // Quoted and unquoted parts join into one word; '' is an empty word.
        ("a'b'\"c\"d e", &["abcd", "e"]),
        ("git' 'status", &["git status"]),
        ("printf '' \"\"", &["printf", "", ""]),
        // A backslash before a space or ASCII punctuation.
        ("ls my\\ file", &["ls", "my file"]),
        (
            "echo \\; \\| \\$ \\* \\\\ \\' \\\" \\~ \\# \\=x",
            &["echo", ";", "|", "$", "*", "\\", "'", "\"", "~", "#", "=x"],
        ),
        // Non-ASCII only inside quotes; a no-break space there is literal.
        (
            "git commit -m 'café' \"naïve\" '\u{a0}'",
            &["git", "commit", "-m", "café", "naïve", "\u{a0}"],
        ),
    ];
    for (command, argv) in cases {
        assert_eq!(
            split(command),
            Ok(argv.iter().map(|s| s.to_string()).collect()),
            "{command:?}"
        );
    }
}

#[test]
fn refuses_every_construct_it_cannot_see_through_with_its_reason() {
    use Refusal::*;
    let cases: &[(&str, Refusal)] = &[
        ("", Empty),
        (" \t ", Empty),
        // Injection attempts.
        ("git status;rm -rf /", Operator(';')),
        ("git status && curl x", Operator('&')),
        ("git status &", Operator('&')),
        ("git status | sh", Operator('|')),
        ("git status > /etc/passwd", Operator('>')),
        ("git status < /dev/zero", Operator('<')),
        ("(git status)", Operator('(')),
        ("git status )", Operator(')')),
        ("git $(rm -rf /)", Expansion('$')),
        ("git $HOME", Expansion('$')),
        ("git `id`", Expansion('`')),
        ("FOO=1 git status", Assignment),
        ("'FOO=1' git status", Assignment),
        ("git status *", Glob('*')),
        ("git st?tus", Glob('?')),
        ("ls [ab]", Glob('[')),
        ("ls a]", Glob(']')),
        ("echo {a,b}", Brace('{')),
        ("echo }", Brace('}')),
        ("git \"st$HOME\"", InDoubleQuotes('$')),
        ("git \"`id`\"", InDoubleQuotes('`')),
        ("git \"a\\\"b\"", InDoubleQuotes('\\')),
        ("git \"!!\"", InDoubleQuotes('!')),
        ("git status\nrm -rf /", Newline),
        ("git status\r", Newline),
        ("git status\\\nrm -rf /", Newline),
        ("git 'a\nb'", Newline),
        ("git\u{a0}status", NonAscii(0xa0)),
        ("git\u{3000}status", NonAscii(0x3000)),
        ("git stat\u{fc}s", NonAscii(0xfc)),
        ("\u{ff47}it status", NonAscii(0xff47)),
        ("git\u{2028}status", Invisible(0x2028)),
        ("git status\u{200b}", Invisible(0x200b)),
        ("git '\u{202e}x'", Invisible(0x202e)),
        ("git \"\u{ad}\"", Invisible(0xad)),
        ("~/x", Tilde),
        ("git log HEAD~1", Tilde),
        ("cp a --target=~/x", Tilde),
        ("git status #c", Comment),
        ("git a#b", Comment),
        ("git !", Bang),
        ("! git status", Bang),
        ("git ^a", Caret),
        ("=ls", LeadingEquals),
        ("git =ls", LeadingEquals),
        // Control characters, anywhere.
        ("git\0status", Control(0)),
        ("git 'a\0b'", Control(0)),
        ("git \"a\tb\"", Control(9)),
        ("git\u{1b}[2J", Control(0x1b)),
        ("git\u{7f}", Control(0x7f)),
        ("git\u{85}", Control(0x85)),
        // Words the shell reads as syntax in command position.
        ("time git status", ReservedWord("time")),
        ("if git status", ReservedWord("if")),
        ("'while' x", ReservedWord("while")),
        ("coproc git status", ReservedWord("coproc")),
        // Quotes and escapes.
        ("git 'status", Unterminated("single")),
        ("git \"status", Unterminated("double")),
        ("git status\\", TrailingBackslash),
        ("git \\n", Escape('n')),
        ("git \\1", Escape('1')),
        ("git \\\u{a0}", NonAscii(0xa0)),
        ("git \\\t", Control(9)),
        ("git 'a\\'b'", SingleQuotedBackslash),
        ("git 'a\\\\'", SingleQuotedBackslash),
        ("git 'a''b'", AdjacentSingleQuotes),
        ("git ''''", AdjacentSingleQuotes),
    ];
    for (command, refusal) in cases {
        assert_eq!(split(command), Err(refusal.clone()), "{command:?}");
        // Every reason is one line a terminal shows as it is.
        let reason = refusal.to_string();
        assert!(
            reason.chars().all(|c| c.is_ascii_graphic() || c == ' '),
            "{reason:?}"
        );
    }
}

#[test]
fn refuses_a_command_over_the_size_limit_and_reads_one_at_it() {
    let at = format!("echo {}", "x".repeat(MAX_COMMAND_BYTES - 5));
    assert_eq!(at.len(), MAX_COMMAND_BYTES);
    assert_eq!(split(&at).unwrap().len(), 2);
    assert_eq!(split(&format!("{at}x")), Err(Refusal::TooLong));
}

#[test]
fn refusal_reasons_name_the_construct() {
    for (refusal, text) in [
        (
            Refusal::Operator(';'),
            "';' outside quotes (a command list, pipe, background job, redirection or subshell)",
        ),
        (
            Refusal::Expansion('`'),
            "'`' outside single quotes (parameter expansion or command substitution)",
        ),
        (
            Refusal::NonAscii(0xa0),
            "non-ASCII character U+00A0 outside quotes",
        ),
        (Refusal::Control(0), "control character U+0000"),
        (
            Refusal::InDoubleQuotes('\\'),
            "'\\\\' inside double quotes (expansion or escape; use single quotes)",
        ),
        (
            Refusal::Unterminated("single"),
            "an unterminated single quote",
        ),
        (
            Refusal::ReservedWord("time"),
            "the shell reserved word \"time\" as the command",
        ),
        (Refusal::TooLong, "the command is longer than 4096 bytes"),
    ] {
        assert_eq!(refusal.to_string(), text);
    }
}

fn pattern(value: Value) -> ArgvPattern {
    ArgvPattern::from_value(value).unwrap()
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_pattern_matches_the_program_literally_and_each_argument_by_position() {
    let p = pattern(json!({
        "program": "git",
        "args": ["log", {"one_of": ["-1", "-5"]}],
        "more_args": false
    }));
    assert!(p.matches(&argv(&["git", "log", "-1"])));
    assert!(p.matches(&argv(&["git", "log", "-5"])));
    for other in [
        &["git", "log", "-2"][..],
        &["git", "log"],
        &["git", "log", "-1", "--stat"],
        &["git", "-1", "log"],
        &["/usr/bin/git", "log", "-1"],
        &["Git", "log", "-1"],
        &["git", "log ", "-1"],
        &[],
    ] {
        assert!(!p.matches(&argv(other)), "{other:?}");
    }
    assert!(p.matches_command("git log '-1'"));
    assert!(!p.matches_command("git log -1;"));
}

#[test]
fn more_args_allows_any_further_arguments_and_no_fewer() {
    let p = pattern(json!({"program": "/usr/bin/git", "args": ["log"], "more_args": true}));
    assert!(p.matches(&argv(&["/usr/bin/git", "log"])));
    assert!(p.matches(&argv(&["/usr/bin/git", "log", "--oneline", "-5"])));
    assert!(!p.matches(&argv(&["/usr/bin/git"])));
    assert!(!p.matches(&argv(&["git", "log"])));
    assert!(!p.matches(&argv(&["/usr/bin/git", "show", "log"])));
    // Further arguments are still words the lexer accepted.
    assert!(!p.matches_command("/usr/bin/git log $(id)"));
}

#[test]
fn refuses_malformed_patterns_with_their_reason() {
    let program = "argv program must be a command name or an absolute path: 1 to 1024 bytes, no whitespace, control characters or '='";
    let arg = "each argv argument is a string of at most 1024 bytes or {\"one_of\": [1 to 64 such strings]}";
    let long = "x".repeat(MAX_ARGV_WORD_BYTES + 1);
    let cases = [
        (
            json!("git status"),
            "argv must be an object with program, args and more_args",
        ),
        (
            json!({"args": [], "more_args": false}),
            "argv needs program",
        ),
        (
            json!({"program": "git", "more_args": false}),
            "argv needs args",
        ),
        (
            json!({"program": "git", "args": []}),
            "argv needs more_args",
        ),
        (
            json!({"program": "git", "args": [], "more_args": false, "prefix": "x"}),
            "unknown argv key \"prefix\"",
        ),
        (
            json!({"program": "git", "args": [], "more_args": false, "\u{202e}": 1}),
            // Escaped for the terminal, then quoted as the other keys are.
            "unknown argv key \"\\\\u{202e}\"",
        ),
        (
            json!({"program": "", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "git status", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "git\u{a0}", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "git\n", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "./git", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "bin/git", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "FOO=1", "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": long, "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": 1, "args": [], "more_args": false}),
            program,
        ),
        (
            json!({"program": "time", "args": [], "more_args": false}),
            "argv program \"time\" is a shell reserved word, not a command",
        ),
        (
            json!({"program": "git", "args": "status", "more_args": false}),
            "argv args must be an array of at most 32 arguments",
        ),
        (
            json!({"program": "git", "args": vec!["x"; MAX_ARGV_ARGS + 1], "more_args": false}),
            "argv args must be an array of at most 32 arguments",
        ),
        (
            json!({"program": "git", "args": [1], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [null], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [["a"]], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [long], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": []}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": "a"}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": [1]}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": [long]}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": vec!["a"; MAX_ONE_OF + 1]}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"one_of": ["a"], "more": 1}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [{"any": ["a"]}], "more_args": false}),
            arg,
        ),
        (
            json!({"program": "git", "args": [], "more_args": "false"}),
            "argv more_args must be true or false",
        ),
        (
            json!({"program": "git", "args": [], "more_args": null}),
            "argv more_args must be true or false",
        ),
    ];
    for (value, reason) in cases {
        assert_eq!(
            ArgvPattern::from_value(value.clone()),
            Err(RuleError::Malformed(reason.to_owned())),
            "{value}"
        );
    }
}

#[test]
fn a_pattern_at_the_bounds_is_accepted() {
    let word = "x".repeat(MAX_ARGV_WORD_BYTES);
    let p = pattern(json!({
        "program": format!("/{}", &word[1..]),
        "args": vec![json!({"one_of": vec![word.clone(); MAX_ONE_OF]}); MAX_ARGV_ARGS],
        "more_args": false
    }));
    assert_eq!(p.args().len(), MAX_ARGV_ARGS);
    assert!(!p.more_args());
    assert_eq!(p.program().len(), MAX_ARGV_WORD_BYTES);
}

#[test]
fn the_description_quotes_every_word_that_is_not_plain() {
    let p = pattern(json!({
        "program": "git",
        "args": ["commit", "-m", {"one_of": ["fix", "a b", "", "|", "\u{202e}x"]}],
        "more_args": false
    }));
    assert_eq!(
        p.describe(),
        "is exactly the plain shell command: git commit -m (one of: fix | \"a b\" | \"\" | \"|\" | \"\\u{202e}x\")"
    );
    let more = pattern(json!({"program": "git", "args": ["log"], "more_args": true}));
    assert_eq!(
        more.describe(),
        "is the plain shell command: git log (then ANY further arguments)"
    );
    let words = pattern(json!({
        "program": "git",
        "args": ["log", "(then", "ANY"],
        "more_args": false
    }));
    assert_eq!(
        words.describe(),
        "is exactly the plain shell command: git log \"(then\" ANY"
    );
}
