#![allow(clippy::unwrap_used)]
use super::*;

fn seed(name: &str) -> Vec<u8> {
    std::fs::read(corpus().join(name)).unwrap()
}

fn corpus() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/mcp_frame")
}

fn answer(line: &[u8]) -> Value {
    match screen_frame(line) {
        Screened::Answer(answer) => answer,
        other => panic!("expected an answer, got {other:?}"),
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[test]
fn every_seed_of_the_fuzz_corpus_replays_through_the_fuzz_body() {
    let mut seen = 0;
    for file in std::fs::read_dir(corpus()).unwrap() {
        fuzz_frame(&std::fs::read(file.unwrap().path()).unwrap());
        seen += 1;
    }
    assert!(seen >= 20, "the seed corpus is missing ({seen} files)");
}

#[test]
fn refuses_each_non_strict_frame_with_its_own_error_and_the_requests_id() {
    let inside_params = -32602;
    for (name, id, code, message) in [
        (
            "duplicate_key",
            json!(7),
            inside_params,
            "duplicate object key \"message\"",
        ),
        (
            "non_finite",
            json!(7),
            inside_params,
            "number is not finite",
        ),
        (
            "out_of_range",
            json!(7),
            inside_params,
            "integer outside ±(2^53 - 1)",
        ),
        (
            "lone_surrogate",
            json!(7),
            inside_params,
            "lone UTF-16 surrogate escape",
        ),
        ("deep", json!(7), inside_params, "nesting deeper than 32"),
        (
            "escaped_key",
            json!(2),
            inside_params,
            "number is not finite",
        ),
        (
            "duplicate_top_level_key",
            json!(3),
            -32600,
            "duplicate object key \"method\"",
        ),
        // Two ids: which one is meant cannot be told.
        (
            "duplicate_id",
            Value::Null,
            -32600,
            "duplicate object key \"id\"",
        ),
    ] {
        assert_eq!(answer(&seed(name)), error(id, code, message), "{name}");
    }
}

#[test]
fn text_that_is_not_json_is_a_parse_error_with_a_null_id() {
    for (name, at) in [("not_json", 0), ("truncated", 56)] {
        assert_eq!(
            answer(&seed(name)),
            error(
                Value::Null,
                -32700,
                &format!("parse error: JSON syntax error at byte {at}")
            ),
            "{name}"
        );
    }
    assert_eq!(
        answer(&seed("trailing")),
        error(
            Value::Null,
            -32700,
            "parse error: trailing data after the JSON value"
        )
    );
    assert_eq!(
        answer(b"{\"id\":1,\"x\":\"\xff\"}"),
        error(Value::Null, -32700, "parse error: input is not valid UTF-8")
    );
}

#[test]
fn strict_json_that_is_no_message_is_an_invalid_request() {
    let message = "invalid request: not a JSON-RPC request, notification or response that this server understands";
    assert_eq!(
        answer(&seed("not_a_message")),
        error(json!(9), -32600, message)
    );
    assert_eq!(answer(&seed("batch")), error(Value::Null, -32600, message));
}

#[test]
fn notifications_and_blank_lines_are_never_answered() {
    for name in ["notification_with_duplicate", "blank"] {
        assert!(
            matches!(screen_frame(&seed(name)), Screened::Ignore),
            "{name}"
        );
    }
}

#[test]
fn strict_messages_pass_and_arguments_may_nest_as_deep_as_anywhere() {
    for name in [
        "initialize",
        "initialized",
        "tools_list",
        "tools_call",
        "crlf_bom",
        "response",
        // The SDK drops it itself.
        "unknown_notification",
    ] {
        assert!(
            matches!(screen_frame(&seed(name)), Screened::Message(_)),
            "{name}"
        );
    }
    let nested = |depth: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"arguments":{}{}}}}}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        )
    };
    assert!(matches!(
        screen_frame(nested(canonical::MAX_DEPTH).as_bytes()),
        Screened::Message(_)
    ));
    assert_eq!(
        answer(nested(canonical::MAX_DEPTH + 1).as_bytes()),
        error(json!(1), -32602, "nesting deeper than 32")
    );
}
