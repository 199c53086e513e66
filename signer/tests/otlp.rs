//! OTLP trace export (`--features otlp`): a real `countersign-signer`
//! process, pointed at a collector on 127.0.0.1 by
//! `OTEL_EXPORTER_OTLP_ENDPOINT`, exports the spans of a propose and an
//! approval under its default service name, flushed when SIGTERM stops it,
//! and nothing it exports carries the proof it issued: the same promise the
//! logs keep, with every countersign event at TRACE.
#![cfg(feature = "otlp")]
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use countersign_identity::Role;
use countersign_proto::v1::Delivery;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

use support::{approve, process_client, process_home, propose_request, stop_with_sigterm};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");

/// The collector: keeps every export request it is sent.
#[derive(Clone, Default)]
struct Collector {
    received: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.received.lock().unwrap().push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

fn string_value(value: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Value::StringValue(s)) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// A started signer: its process, gRPC address, what standard error said
/// up to "listening", and a thread reading the rest (so that TRACE
/// logging never blocks on a full pipe), which returns it once the process
/// ends.
struct Started {
    child: std::process::Child,
    addr: String,
    seen: String,
    logs: std::thread::JoinHandle<String>,
}

/// `countersign-signer serve` for `home` with `command`'s environment.
fn start(mut command: Command, home: &countersign_identity::Home) -> Started {
    let mut child = command
        .args(["serve", "--home"])
        .arg(home.root())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "exited: {seen}");
        seen.push_str(&line);
        if let Some(rest) = line
            .trim_end()
            .strip_prefix("countersign-signer listening on ")
        {
            break rest.split_once(" key ").unwrap().0.to_owned();
        }
    };
    let logs = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        rest
    });
    Started {
        child,
        addr,
        seen,
        logs,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_the_signers_spans_flushed_on_sigterm_without_the_proof() {
    let collector = Collector::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector_addr = listener.local_addr().unwrap();
    tokio::spawn(
        Server::builder()
            .add_service(TraceServiceServer::new(collector.clone()))
            .serve_with_incoming(TcpIncoming::from(listener)),
    );

    let (_dir, home) = process_home();
    let mut command = Command::new(BIN);
    command
        .env("COUNTERSIGN_LOG", "trace")
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://{collector_addr}"),
        )
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES");
    let Started {
        child, addr, logs, ..
    } = start(command, &home);

    let proposal = process_client(&addr, &home, Role::Head)
        .await
        .propose(propose_request("agent-session-1"))
        .await
        .unwrap()
        .into_inner();
    let decided = process_client(&addr, &home, Role::Approver)
        .await
        .decide(approve(&proposal.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    assert!(
        decided.proof.starts_with("v4.public."),
        "a proof was issued"
    );

    // No wait for the batch timer: SIGTERM's clean exit flushes the spans.
    stop_with_sigterm(child).await;
    let logs = logs.join().unwrap();

    let received = collector.received.lock().unwrap().clone();
    assert!(
        !received.is_empty(),
        "no spans reached the collector: {logs}"
    );
    let mut service_names = Vec::new();
    let mut span_names = Vec::new();
    let mut code_paths = Vec::new();
    for resource_spans in received.iter().flat_map(|r| &r.resource_spans) {
        for attribute in resource_spans.resource.iter().flat_map(|r| &r.attributes) {
            if attribute.key == "service.name" {
                service_names.push(string_value(&attribute.value));
            }
        }
        for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
            span_names.push(span.name.clone());
            let attributes = span
                .attributes
                .iter()
                .chain(span.events.iter().flat_map(|e| &e.attributes));
            for attribute in attributes {
                if attribute.key.starts_with("code.") && attribute.key.contains("name") {
                    code_paths.push(string_value(&attribute.value));
                }
            }
        }
    }
    assert!(
        service_names.iter().all(|n| n == "countersign-signer") && !service_names.is_empty(),
        "{service_names:?}"
    );
    for method in [
        "/countersign.v1.Signer/Propose",
        "/countersign.v1.Signer/Decide",
    ] {
        assert!(span_names.iter().any(|n| n == method), "{span_names:?}");
    }
    // Only countersign's own spans and events: no dependency's.
    assert!(
        !code_paths.is_empty() && code_paths.iter().all(|p| p.starts_with("countersign")),
        "{code_paths:?}"
    );

    let exported = format!("{received:?}");
    let body = decided.proof.split('.').nth(2).unwrap();
    assert!(
        !exported.contains(body),
        "the proof appears in the exported spans"
    );
    assert!(!logs.contains(body), "the proof appears in the logs");
}

/// With `OTEL_EXPORTER_OTLP_HEADERS` set (a collector's API key, as a rule),
/// nothing is exported: the exporter has no TLS, and a listener on the
/// endpoint's port (any local user can hold a free one) would read the
/// header. The listener is never even connected to, and standard error
/// says why.
#[tokio::test]
async fn headers_are_never_sent_over_plain_http2_and_nothing_is_exported() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let squatter = listener.local_addr().unwrap();
    let (_dir, home) = process_home();
    let mut command = Command::new(BIN);
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{squatter}"))
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=secret-key-1")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
    let Started {
        child,
        addr,
        seen,
        logs,
    } = start(command, &home);
    assert!(
        seen.contains(
            "trace export off: OTEL_EXPORTER_OTLP_HEADERS is set, and countersign exports over plain HTTP/2 only"
        ),
        "{seen}"
    );
    process_client(&addr, &home, Role::Head)
        .await
        .propose(propose_request("agent-session-1"))
        .await
        .unwrap();
    stop_with_sigterm(child).await;
    let logs = logs.join().unwrap();
    let accepted =
        tokio::time::timeout(std::time::Duration::from_millis(500), listener.accept()).await;
    assert!(accepted.is_err(), "the endpoint was connected to");
    assert!(!format!("{seen}{logs}").contains("secret-key-1"));
}
