//! The registry as its files say now (the registry file, and the
//! gateway's configuration and pinned tools beside it), for processes that outlive a change
//! of the file (the API and MCP heads): every use re-reads the file, and
//! re-parses it only when its text changed, so a contract changed under a
//! running head is checked exactly as a freshly started CLI checks it. A
//! file that became unreadable or invalid is an error at that use (the
//! caller fails closed); the last good registry is not used in its place.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::{Registry, RegistryError, Schemas, Sources};

/// A registry file, re-checked before each use; or a fixed registry.
#[derive(Debug)]
pub struct CurrentRegistry {
    /// `None`: a fixed registry, never re-read.
    path: Option<PathBuf>,
    /// When each load compiles the schemas.
    schemas: Schemas,
    last: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    sources: Option<Sources>,
    registry: Arc<Registry>,
}

impl CurrentRegistry {
    /// Read and load the file at `path`, compiling every schema at each
    /// load ([`Schemas::Compiled`]).
    pub fn open(path: &Path) -> Result<CurrentRegistry, RegistryError> {
        CurrentRegistry::open_with(path, Schemas::Compiled)
    }

    /// Read and load the file at `path`, compiling schemas as `schemas`
    /// says at each load.
    pub fn open_with(path: &Path, schemas: Schemas) -> Result<CurrentRegistry, RegistryError> {
        let sources = Sources::read(path)?;
        let registry = Arc::new(Registry::from_sources(&sources, schemas)?);
        Ok(CurrentRegistry {
            path: Some(path.to_path_buf()),
            schemas,
            last: Mutex::new(Loaded {
                sources: Some(sources),
                registry,
            }),
        })
    }

    /// A registry that is not backed by a file and never changes.
    pub fn fixed(registry: Registry) -> CurrentRegistry {
        CurrentRegistry {
            path: None,
            schemas: Schemas::Compiled,
            last: Mutex::new(Loaded {
                sources: None,
                registry: Arc::new(registry),
            }),
        }
    }

    /// The registry as the file says now: re-read, and re-parsed if its
    /// text changed since the last use.
    pub fn now(&self) -> Result<Arc<Registry>, RegistryError> {
        let Some(path) = &self.path else {
            return Ok(self.last_loaded());
        };
        let sources = Sources::read(path)?;
        if let Some(same) = self.if_unchanged(&sources) {
            return Ok(same);
        }
        let registry = Arc::new(Registry::from_sources(&sources, self.schemas)?);
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        *last = Loaded {
            sources: Some(sources),
            registry: Arc::clone(&registry),
        };
        Ok(registry)
    }

    /// The registry file this follows (`None` for a fixed registry).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The registry of the last successful load, without reading the file.
    pub fn last_loaded(&self) -> Arc<Registry> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&last.registry)
    }

    fn if_unchanged(&self, sources: &Sources) -> Option<Arc<Registry>> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        (last.sources.as_ref() == Some(sources)).then(|| Arc::clone(&last.registry))
    }
}
