//! `CurrentRegistry`: a long-running process sees the registry file as it
//! is now, parses it again only when it changed, and fails closed when it
//! became invalid.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use countersign_registry::{CurrentRegistry, Registry, RegistryError};

#[test]
fn follows_the_file_and_reparses_only_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("operations.toml");
    std::fs::write(&path, Registry::default_toml()).unwrap();
    let current = CurrentRegistry::open(&path).unwrap();
    let first = current.now().unwrap();
    let revision = |r: &Registry| {
        r.get("schedule.create")
            .unwrap()
            .contract_revision()
            .to_string()
    };
    let before = revision(&first);
    // Unchanged text: the same parsed registry.
    assert!(Arc::ptr_eq(&first, &current.now().unwrap()));

    let changed = Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "preview = \"Create the schedule",
        1,
    );
    std::fs::write(&path, &changed).unwrap();
    let second = current.now().unwrap();
    assert_ne!(revision(&second), before, "a changed contract is seen");
    assert!(Arc::ptr_eq(&second, &current.last_loaded()));

    // Broken: an error at use, not the last good registry.
    std::fs::write(&path, "not toml [").unwrap();
    assert!(matches!(current.now(), Err(RegistryError::Toml(_))));
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(current.now(), Err(RegistryError::Io { .. })));
}

#[test]
fn a_fixed_registry_never_reads_a_file() {
    let registry = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let current = CurrentRegistry::fixed(registry);
    let first = current.now().unwrap();
    assert!(Arc::ptr_eq(&first, &current.now().unwrap()));
    assert!(first.get("schedule.create").is_some());
}
