//! The log sink of every countersign process (the signer and every head):
//! one variable, [`LOG_ENV`] (`COUNTERSIGN_LOG`, the `RUST_LOG` directive
//! syntax), standard error only, colour only when standard error is a
//! terminal, and no line longer than [`MAX_LOG_LINE_BYTES`] (a dependency
//! that logs whole requests at TRACE cannot turn a large argument into a
//! log of the same size).
//!
//! With the `otlp` feature, and `OTEL_EXPORTER_OTLP_ENDPOINT` set when the
//! process starts, the same subscriber also exports countersign's own spans
//! (and the events inside them) as OTLP traces (`otlp`); [`LogGuard`]
//! flushes them when the process is done.
//!
//! Must not: write to standard output, or decide what is a secret (a
//! process passes its own redaction).

use std::borrow::Cow;
use std::io::{self, IsTerminal as _, Write};

use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The environment variable every countersign process reads its log filter from.
pub const LOG_ENV: &str = "COUNTERSIGN_LOG";

/// The longest log line written; a longer one is cut and marked.
pub const MAX_LOG_LINE_BYTES: usize = 8 * 1024;

/// A process's own rewriting of a log line before it is written (redaction).
pub type LineFilter = fn(&str) -> Cow<'_, str>;

/// The [`LineFilter`] that keeps every line as it is.
pub fn unfiltered(line: &str) -> Cow<'_, str> {
    Cow::Borrowed(line)
}

/// Installs the global subscriber: filter from [`LOG_ENV`] (else
/// `default_filter`), written through [`LogWriter`].
///
/// With the `otlp` feature, also starts OTLP trace export when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, naming the process
/// `OTEL_SERVICE_NAME` or else `service_name`; this needs a Tokio runtime
/// to be current. Keep the returned guard until the process is about to
/// exit (while that runtime still runs): dropping it flushes the spans not
/// yet sent.
pub fn init(default_filter: &str, filter: LineFilter, service_name: &str) -> LogGuard {
    let env_filter = tracing_subscriber::EnvFilter::try_from_env(LOG_ENV)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    // Traces carry at least INFO, and more when the log filter asks for more.
    let trace_level = env_filter
        .max_level_hint()
        .unwrap_or(LevelFilter::INFO)
        .max(LevelFilter::INFO);
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(move || LogWriter { filter })
        .with_ansi(io::stderr().is_terminal())
        .with_filter(env_filter);
    #[cfg(feature = "otlp")]
    {
        let (traces, pipeline) = crate::otlp::layer(service_name, trace_level);
        tracing_subscriber::registry()
            .with(stderr)
            .with(traces)
            .init();
        LogGuard { traces: pipeline }
    }
    #[cfg(not(feature = "otlp"))]
    {
        let _ = (service_name, trace_level);
        tracing_subscriber::registry().with(stderr).init();
        LogGuard {}
    }
}

/// What [`init`] started that must be finished before the process exits:
/// with the `otlp` feature and an endpoint configured, the trace pipeline,
/// flushed and shut down (within a few seconds) when this is dropped.
/// Without them, nothing.
#[derive(Debug)]
#[must_use = "dropping the guard stops trace export"]
pub struct LogGuard {
    #[cfg(feature = "otlp")]
    traces: Option<crate::otlp::Pipeline>,
}

impl LogGuard {
    /// Whether spans are being exported (the `otlp` feature is on and an
    /// endpoint was configured).
    pub fn exports_traces(&self) -> bool {
        #[cfg(feature = "otlp")]
        {
            self.traces.is_some()
        }
        #[cfg(not(feature = "otlp"))]
        {
            false
        }
    }
}

/// Standard error, with the process's filter applied to every write and
/// each line capped at [`MAX_LOG_LINE_BYTES`]. The formatter writes one
/// whole event per call.
#[derive(Debug, Clone, Copy)]
pub struct LogWriter {
    filter: LineFilter,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let text = (self.filter)(&text);
        io::stderr().write_all(cap_lines(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// `text` with every line longer than [`MAX_LOG_LINE_BYTES`] cut at a
/// character boundary and marked with how many bytes were left out.
pub fn cap_lines(text: &str) -> Cow<'_, str> {
    if text
        .split('\n')
        .all(|line| line.len() <= MAX_LOG_LINE_BYTES)
    {
        return Cow::Borrowed(text);
    }
    let mut capped = String::with_capacity(text.len().min(4 * MAX_LOG_LINE_BYTES));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            capped.push('\n');
        }
        if line.len() <= MAX_LOG_LINE_BYTES {
            capped.push_str(line);
            continue;
        }
        let mut end = MAX_LOG_LINE_BYTES;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        capped.push_str(&line[..end]);
        capped.push_str(&format!(
            " …[log line truncated: {} bytes omitted]",
            line.len() - end
        ));
    }
    Cow::Owned(capped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_pass_untouched() {
        assert!(matches!(cap_lines("a\nb\n"), Cow::Borrowed("a\nb\n")));
    }

    #[test]
    fn a_long_line_is_cut_at_a_character_boundary_and_marked() {
        let long = format!("{}\n", "é".repeat(MAX_LOG_LINE_BYTES));
        let capped = cap_lines(&long);
        let (kept, marker) = capped.split_once(" …[").unwrap_or_default();
        assert!(kept.len() <= MAX_LOG_LINE_BYTES && kept.len() > MAX_LOG_LINE_BYTES - 4);
        assert_eq!(
            marker,
            format!(
                "log line truncated: {} bytes omitted]\n",
                long.len() - 1 - kept.len()
            )
        );
    }
}
