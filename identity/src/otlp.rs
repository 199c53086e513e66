//! OTLP trace export (the `otlp` feature): the layer [`crate::log::init`]
//! adds beside standard error when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, and the pipeline that
//! flushes on drop. Spans go over OTLP/gRPC through the workspace's tonic,
//! in plain HTTP/2 (a collector on the same host or network), from a
//! background thread that batches them.
//!
//! What is exported: only spans and events whose target is a countersign
//! crate (`countersign…`), at INFO or what [`crate::log::LOG_ENV`] asks for
//! if more. Countersign code never puts a proof, a credential or argument
//! values in a span or event field; dependencies may (a library that logs
//! whole requests at TRACE), which is why their spans and events are never
//! exported: the log's line filter (redaction) sees only standard error.
//!
//! Must not: export anything of a dependency, start anything when no
//! endpoint is configured, or send `OTEL_EXPORTER_OTLP_HEADERS` (a
//! collector's credential, as a rule) over its plain HTTP/2: with headers
//! set, nothing is exported and standard error says why.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// The target prefix of every span and event exported: countersign's own crates.
const EXPORTED_TARGETS: &str = "countersign";

/// How long dropping the [`Pipeline`] waits for the last batch to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The running trace pipeline; flushed and shut down when dropped.
#[derive(Debug)]
pub(crate) struct Pipeline {
    provider: SdkTracerProvider,
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            eprintln!("countersign: trace export did not finish: {e}");
        }
    }
}

/// The endpoint variable set, if any: only then is an exporter built.
fn endpoint_configured() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The headers variable set, if any: the exporter would send its headers
/// (a collector's API key, as a rule) in clear, since it has no TLS.
fn headers_configured() -> Option<&'static str> {
    [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ]
    .into_iter()
    .find(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
}

/// The export layer and its pipeline, or neither when no endpoint is
/// configured or the exporter cannot be built (said on standard error: the
/// process still runs, with its logs).
pub(crate) fn layer<S>(
    service_name: &str,
    level: LevelFilter,
) -> (Option<impl Layer<S> + use<S>>, Option<Pipeline>)
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    if !endpoint_configured() {
        return (None, None);
    }
    if let Some(name) = headers_configured() {
        eprintln!(
            "countersign: trace export off: {name} is set, and countersign exports over plain HTTP/2 only; \
             a header (usually a collector's credential) is never sent unencrypted to whoever holds the port. \
             Export without headers to a collector on this host, which forwards over TLS."
        );
        return (None, None);
    }
    // The exporter's gRPC channel runs on the current Tokio runtime.
    if tokio::runtime::Handle::try_current().is_err() {
        eprintln!("countersign: trace export off: no Tokio runtime at start-up");
        return (None, None);
    }
    // Endpoint, headers, timeout and compression from the standard variables.
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
    {
        Ok(exporter) => exporter,
        Err(e) => {
            eprintln!("countersign: trace export off: {e}");
            return (None, None);
        }
    };
    let name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| service_name.to_owned());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name(name).build())
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("countersign"))
        .with_filter(Targets::new().with_target(EXPORTED_TARGETS, level));
    (Some(layer), Some(Pipeline { provider }))
}
