//! The `command` effect (being written).
