//! The policy sets the benchmarks evaluate, against the default registry's
//! schema: 7 policies (the coding-agents example and three more) and any
//! number generated of the same kinds (forbidden shell commands, edits
//! needing approval, permitted reads, schedules). Shared by this crate's
//! criterion bench and the load tool's policy section
//! (`bench/benches/load/policy.rs`), so both time the same sets.

const EXAMPLE: &str = include_str!("../../examples/coding-agents.cedar");

const EXTRA: &str = r#"
@id("no-force-push") forbid (principal, action == Action::"agent.shell", resource is Target)
when { resource.value like "*git push --force*" };
@id("schedules") permit (principal, action == Action::"schedule.create", resource)
when { context.arguments.name like "nightly-*" };
@id("office-hours") @require_approval permit (principal, action == Action::"agent.web", resource)
when { context.time < 1796558400 || context.class == "network" };
"#;

/// The coding-agents example and three more: 7 policies.
pub(crate) fn example() -> String {
    format!("{EXAMPLE}{EXTRA}")
}

/// `n` policies cycling through four realistic kinds.
pub(crate) fn generated(n: usize) -> String {
    (0..n)
        .map(|i| match i % 4 {
            0 => format!(
                "@id(\"no-cmd-{i}\") forbid (principal, action == Action::\"agent.shell\", resource is Target)\n\
                 when {{ resource.value like \"*forbidden-tool-{i} *\" }};\n"
            ),
            1 => format!(
                "@id(\"edit-{i}\") @require_approval @quorum(\"2\") @approvers(\"alice,bob,carol\")\n\
                 permit (principal, action == Action::\"agent.edit\", resource is Target)\n\
                 when {{ resource.value like \"/srv/service-{i}/deploy/*\" }};\n"
            ),
            2 => format!(
                "@id(\"read-{i}\") permit (principal in Agent::\"claude-code\", action == Action::\"agent.read\", resource is Target)\n\
                 when {{ resource.value like \"/srv/project-{i}/*\" && context.head == \"hook\" }};\n"
            ),
            _ => format!(
                "@id(\"schedule-{i}\") permit (principal in Principal::\"pr_{i:032x}\", action == Action::\"schedule.create\", resource)\n\
                 when {{ context.arguments.name like \"team-{i}-*\" && context.arguments.cron != \"* * * * *\" }};\n"
            ),
        })
        .collect()
}
