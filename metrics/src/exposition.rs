//! One process's metrics as a scrape renders them: a registry of metric
//! families and the hooks that refresh gauges read from live state (the
//! signer's waiting handoffs) just before each rendering.

use std::fmt;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// A hook run before each scrape (it sets gauges from live state).
type BeforeScrape = Box<dyn Fn() + Send + Sync>;

/// The metrics one process serves. Built only when a `[metrics]` address
/// is configured; the metric sets count whether or not one is.
#[derive(Default)]
pub struct Exposition {
    pub(crate) registry: Registry,
    before_scrape: Vec<BeforeScrape>,
}

impl fmt::Debug for Exposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exposition")
            .field("hooks", &self.before_scrape.len())
            .finish_non_exhaustive()
    }
}

impl Exposition {
    /// An empty exposition: register metric sets into it.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Runs `hook` before every rendering (to set a gauge from live state).
    pub fn before_scrape(&mut self, hook: impl Fn() + Send + Sync + 'static) {
        self.before_scrape.push(Box::new(hook));
    }

    /// The OpenMetrics text of every registered metric, ending in `# EOF`.
    pub fn render(&self) -> String {
        for hook in &self.before_scrape {
            hook();
        }
        let mut text = String::new();
        // Writing into a String cannot fail; an encoder error would be a
        // bug in a metric's encoding, and a scrape then gets what was written.
        if let Err(e) = encode(&mut text, &self.registry) {
            tracing::error!("metrics encoding: {e}");
        }
        text
    }
}
