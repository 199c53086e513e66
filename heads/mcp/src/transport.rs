//! The stdio transport in front of the MCP SDK: reads newline-delimited
//! frames, screens each one's raw text with [`crate::frame::screen_frame`]
//! before any `serde_json::Value` exists, hands the SDK only what passed,
//! and writes the SDK's messages and its own error answers through one
//! writer task, in order.
//!
//! Must not: pass the SDK a refused frame, leave a request it refused
//! unanswered, interleave two messages on stdout or reorder them (a message
//! is queued when the SDK calls `send`, not when its future first runs), or
//! buffer without bound (a line is capped at [`MAX_FRAME_BYTES`], and the
//! next line is read only once our answer to the last one is written).

use std::io;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::frame::{MAX_FRAME_BYTES, Screened, oversized_answer, screen_frame};

/// One line for the writer, and who to tell once it is written.
struct Outgoing {
    line: Vec<u8>,
    written: Option<oneshot::Sender<io::Result<()>>>,
}

/// A server transport over a reader and a writer (stdin and stdout) that
/// screens every incoming frame strictly.
pub struct StrictTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the rest of an oversized line, up to its newline.
    discarding: bool,
    /// Our last answer, until the writer has written it.
    answered: Option<oneshot::Receiver<io::Result<()>>>,
    out: Option<mpsc::UnboundedSender<Outgoing>>,
    writer: Option<JoinHandle<()>>,
}

impl<R: AsyncRead + Unpin + Send> StrictTransport<R> {
    /// A transport reading frames from `read` and writing to `write`; starts
    /// the writer task (call inside a Tokio runtime).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> Self {
        let (out, queue) = mpsc::unbounded_channel();
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            answered: None,
            out: Some(out),
            writer: Some(tokio::spawn(write_lines(write, queue))),
        }
    }

    /// Read the next whole line into `self.line` (without its newline).
    /// Cancel-safe: a partial line stays in `self.line` for the next call.
    /// `Ok(false)` at the end of input; `Ok(true)` with an empty buffer for
    /// an oversized line, which is answered here.
    async fn read_line(&mut self) -> io::Result<bool> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut done = false;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len().saturating_add(take) > MAX_FRAME_BYTES.saturating_add(1) {
                self.line.clear();
                self.discarding = newline.is_none();
                self.answer(&oversized_answer());
                tracing::warn!(
                    max = MAX_FRAME_BYTES,
                    "refused an incoming frame over the size limit"
                );
                done = true;
            } else {
                self.line.extend_from_slice(&available[..take]);
                done = newline.is_some();
            }
            self.read.consume(take);
            if done {
                if self.line.last() == Some(&b'\n') {
                    self.line.pop();
                }
                return Ok(true);
            }
        }
    }

    /// Queue an answer of ours, after everything the SDK sent so far.
    fn answer(&mut self, answer: &Value) {
        let (written, done) = oneshot::channel();
        if let Some(out) = &self.out {
            let queued = out.send(Outgoing {
                line: to_line(answer),
                written: Some(written),
            });
            if queued.is_ok() {
                self.answered = Some(done);
            }
        }
    }

    /// Wait until our last answer is written (cancel-safe).
    async fn wait_answered(&mut self) {
        if let Some(done) = self.answered.as_mut() {
            let _ = done.await;
            self.answered = None;
        }
    }
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for StrictTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Queued now, in the order the SDK sends, whenever the future runs.
        let queued = match (&self.out, serde_json::to_vec(&item)) {
            (None, _) => Err(closed()),
            (_, Err(e)) => Err(io::Error::other(e)),
            (Some(out), Ok(mut line)) => {
                line.push(b'\n');
                let (written, done) = oneshot::channel();
                out.send(Outgoing {
                    line,
                    written: Some(written),
                })
                .map(|()| done)
                .map_err(|_| closed())
            }
        };
        async move { queued?.await.map_err(|_| closed())? }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.wait_answered().await;
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    tracing::error!("reading the MCP client's input failed: {e}");
                    return None;
                }
            }
            let screened = screen_frame(&self.line);
            self.line.clear();
            match screened {
                Screened::Message(message) => return Some(*message),
                Screened::Answer(answer) => self.answer(&answer),
                Screened::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Let the writer drain what is queued, then stop.
        drop(self.out.take());
        if let Some(writer) = self.writer.take() {
            writer.await.map_err(io::Error::other)?;
        }
        Ok(())
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the MCP transport is closed")
}

fn to_line(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The one writer of the output: each line whole, flushed, in queue order.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
) {
    while let Some(Outgoing { line, written }) = queue.recv().await {
        let result = async {
            write.write_all(&line).await?;
            write.flush().await
        }
        .await;
        if let Err(e) = &result {
            tracing::debug!("writing to the MCP client failed: {e}");
        }
        if let Some(written) = written {
            let _ = written.send(result);
        }
    }
}
