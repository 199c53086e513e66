//! `countersign init AGENT [--project DIR | --user]`: writes the hook into
//! the agent's settings file, merged with what is there.
//!
//! Owns: where each agent reads its hooks, the exact entry each one gets
//! (the command, the events, the agent's own timeout above the hook's wait,
//! and the agent's fail-closed switch where it has one), and the merge:
//! an entry already there is left alone (idempotent, so an agent that
//! trusts a hook by its hash is not asked again), anything else in the
//! file is kept, the file as it was is copied to `FILE.countersign-backup`
//! before it is replaced, and the replacement is atomic.
//! Must not: start the agent, or change a hook that is not countersign's.

use std::path::{Path, PathBuf};

use countersign_hook::Agent;
use countersign_service::hook::DEFAULT_WAIT;
use serde_json::{Map, Value, json};

/// How much longer than the hook's wait the agent's own hook timeout is:
/// time for the hook to withdraw the proposal and answer "deny".
const TIMEOUT_MARGIN_SECS: u64 = 60;

/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Where the hook goes: one project's settings, or the user's.
pub(crate) enum Scope {
    /// The project at this directory.
    Project(PathBuf),
    /// The user's own settings under `home` (Codex: in `codex_home`, its
    /// `$CODEX_HOME`, when set).
    User {
        home: PathBuf,
        codex_home: Option<PathBuf>,
    },
}

/// What `init AGENT` did to one file.
pub(crate) struct Change {
    /// The settings file.
    pub(crate) file: PathBuf,
    /// The events a hook was added for (empty: it was there already).
    pub(crate) added: Vec<&'static str>,
    /// The copy of the file as it was, when it existed and changed.
    pub(crate) backup: Option<PathBuf>,
}

/// The settings file of `agent` in `scope`. In a project, Claude Code's
/// is its local file (`settings.local.json`, which Claude Code keeps out of
/// version control), since the hook's command names this user's program
/// and home by absolute path: a clone elsewhere must not run it.
pub(crate) fn settings_file(agent: Agent, scope: &Scope) -> PathBuf {
    let (dir, file) = match (agent, scope) {
        (Agent::ClaudeCode, Scope::Project(_)) => (".claude", "settings.local.json"),
        (Agent::ClaudeCode, Scope::User { .. }) => (".claude", "settings.json"),
        (Agent::Codex, _) => (".codex", "hooks.json"),
        (Agent::Gemini, _) => (".gemini", "settings.json"),
        (Agent::Cursor, _) => (".cursor", "hooks.json"),
    };
    match scope {
        Scope::Project(root) => root.join(dir).join(file),
        Scope::User {
            codex_home: Some(codex_home),
            ..
        } if agent == Agent::Codex => codex_home.join(file),
        Scope::User { home, .. } => home.join(dir).join(file),
    }
}

/// The events `init` hooks for `agent`, and one entry for each.
fn entries(agent: Agent, command: &str) -> Vec<(&'static str, Value)> {
    let timeout = DEFAULT_WAIT.as_secs() + TIMEOUT_MARGIN_SECS;
    match agent {
        // `onFailure: "block"`: a hook that cannot answer blocks the call
        // (the default lets it run).
        Agent::ClaudeCode => vec![(
            "PreToolUse",
            json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout, "onFailure": "block"}]}),
        )],
        Agent::Codex => vec![(
            "PreToolUse",
            json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout}]}),
        )],
        // Gemini CLI counts its timeout in milliseconds.
        Agent::Gemini => vec![(
            "BeforeTool",
            json!({"matcher": "*", "hooks": [{"name": "countersign", "type": "command", "command": command, "timeout": timeout * 1000}]}),
        )],
        // `failClosed`: a hook that cannot answer blocks the call.
        Agent::Cursor => ["beforeShellExecution", "beforeMCPExecution"]
            .into_iter()
            .map(|event| {
                (
                    event,
                    json!({"command": command, "timeout": timeout, "failClosed": true}),
                )
            })
            .collect(),
    }
}

/// The command the agent runs: this program, by absolute path, with the
/// home it was initialized for (an agent started from a desktop may have
/// neither the shell's PATH nor its environment).
pub(crate) fn hook_command(program: &Path, home: &Path, agent: Agent) -> String {
    format!(
        "{} --home {} hook {}",
        shell_word(&program.to_string_lossy()),
        shell_word(&home.to_string_lossy()),
        agent.name()
    )
}

/// `word` as one shell word: unchanged when it is made of characters no
/// shell treats specially, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Merge `agent`'s hook running `command` into `file`.
pub(crate) fn install(agent: Agent, file: &Path, command: &str) -> Result<Change, String> {
    let existing = read(file)?;
    let mut settings = match &existing {
        Some(bytes) => {
            let value = countersign_verifier::canonical::parse(bytes, bytes.len())
                .map_err(|e| format!("{} is not strict JSON: {e}", file.display()))?;
            match value {
                Value::Object(map) => map,
                _ => return Err(format!("{} is not a JSON object", file.display())),
            }
        }
        None => Map::new(),
    };
    if agent == Agent::Cursor && !settings.contains_key("version") {
        settings.insert("version".into(), json!(1));
    }
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| format!("{}: \"hooks\" is not an object", file.display()))?;
    let mut added = Vec::new();
    for (event, entry) in entries(agent, command) {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("{}: \"hooks\".{event} is not an array", file.display()))?;
        if !list.iter().any(|group| runs(group, command)) {
            list.push(entry);
            added.push(event);
        }
    }
    if added.is_empty() {
        return Ok(Change {
            file: file.to_owned(),
            added,
            backup: None,
        });
    }
    let backup = match &existing {
        Some(bytes) => {
            let backup = PathBuf::from(format!("{}.countersign-backup", file.display()));
            std::fs::write(&backup, bytes)
                .map_err(|e| format!("cannot write {}: {e}", backup.display()))?;
            Some(backup)
        }
        None => None,
    };
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    text.push('\n');
    write(file, text.as_bytes())?;
    Ok(Change {
        file: file.to_owned(),
        added,
        backup,
    })
}

/// Whether a hook entry (a matcher group, or Cursor's flat entry) runs
/// exactly `command`.
fn runs(entry: &Value, command: &str) -> bool {
    let is_it = |hook: &Value| hook.get("command").and_then(Value::as_str) == Some(command);
    is_it(entry)
        || entry
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|hooks| hooks.iter().any(is_it))
}

/// The file's bytes, or `None` when there is none.
fn read(file: &Path) -> Result<Option<Vec<u8>>, String> {
    use std::io::Read as _;
    let opened = match std::fs::File::open(file) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let mut bytes = Vec::new();
    opened
        .take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(format!("{} is larger than 1 MiB", file.display()));
    }
    Ok(Some(bytes))
}

/// Replace `file` with `bytes` atomically (written beside it, then
/// renamed over it), creating its directory; an existing file keeps its
/// permissions.
fn write(file: &Path, bytes: &[u8]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", file.display());
    let dir = file
        .parent()
        .ok_or_else(|| format!("{} has no directory", file.display()))?;
    std::fs::create_dir_all(dir).map_err(fail)?;
    let name = file
        .file_name()
        .map_or_else(|| "settings".into(), |n| n.to_string_lossy().into_owned());
    let temporary = dir.join(format!(".{name}.countersign-{}", std::process::id()));
    std::fs::write(&temporary, bytes).map_err(fail)?;
    if let Ok(metadata) = std::fs::metadata(file) {
        std::fs::set_permissions(&temporary, metadata.permissions()).map_err(fail)?;
    }
    std::fs::rename(&temporary, file).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        fail(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_with_shell_syntax_is_one_quoted_word() {
        assert_eq!(shell_word("/usr/bin/countersign"), "/usr/bin/countersign");
        assert_eq!(shell_word("/home/a b/it's"), r"'/home/a b/it'\''s'");
        assert_eq!(shell_word("/x;rm -rf y"), "'/x;rm -rf y'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
    }
}
