//! The body of the `http_request` fuzz target under `fuzz/` (run with
//! cargo-fuzz), as a plain function, so the committed seed corpus is
//! replayed by this crate's unit test on every CI run. It runs the request
//! parser (misplaced secrets, then the parameters of every data route) on
//! a request read from arbitrary bytes; it panics only if a property
//! breaks: an accepted request yields only declared parameters.
//!
//! Input: `METHOD TARGET` on the first line, `Name: value` header lines,
//! an empty line, then the body (any bytes).

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::Request;
use countersign_surface::operations::DATA_OPERATIONS;

use crate::request::{parameters, refuse_misplaced_secrets};

/// Run the request parser on `data` (see the module doc).
#[allow(clippy::unwrap_used, clippy::expect_used)] // a broken property must panic
pub fn http_request(data: &[u8]) {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    });
    let (head, body) = split(data);
    let Ok(head) = std::str::from_utf8(head) else {
        return;
    };
    let mut lines = head.lines();
    let Some((method, target)) = lines.next().and_then(|l| l.split_once(' ')) else {
        return;
    };
    for op in DATA_OPERATIONS {
        let Some((_, route)) = op.entries.api() else {
            continue;
        };
        let mut builder = Request::builder().method(method).uri(target);
        for line in lines.clone() {
            if let Some((name, value)) = line.split_once(':') {
                builder = builder.header(name.trim(), value.trim());
            }
        }
        let Ok(request) = builder.body(Body::from(body.to_vec())) else {
            return;
        };
        let (parts, body) = request.into_parts();
        if refuse_misplaced_secrets(&parts).is_err() {
            return;
        }
        let path: Vec<(String, String)> = route
            .contains("{proposal_id}")
            .then(|| ("proposal_id".to_string(), "prop_x".to_string()))
            .into_iter()
            .collect();
        let schema = op.params.schema(None);
        if let Ok(params) = runtime.block_on(parameters(&parts, body, &path, &schema)) {
            let declared = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for key in params.keys() {
                assert!(declared.contains_key(key), "undeclared parameter {key:?}");
            }
        }
    }
}

/// The head and the body of a raw request (split at the first empty line).
fn split(data: &[u8]) -> (&[u8], &[u8]) {
    let find = |sep: &[u8]| {
        data.windows(sep.len())
            .position(|w| w == sep)
            .map(|at| (at, at + sep.len()))
    };
    match [find(b"\r\n\r\n"), find(b"\n\n")]
        .into_iter()
        .flatten()
        .min()
    {
        Some((end, start)) => (&data[..end], &data[start..]),
        None => (data, &[]),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_committed_seed_passes_the_target() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/http_request");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            super::http_request(&std::fs::read(&path).unwrap_or_else(|e| panic!("{e}")));
            seen += 1;
        }
        assert!(seen > 0, "no seeds in {}", dir.display());
    }
}
