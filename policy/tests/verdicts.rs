//! Verdicts and their precedence, the fail-safe reading of evaluation
//! errors, quorums, and the shadow comparison.
#![allow(clippy::unwrap_used)]

mod common;

use common::{agent_args, default_registry, payments_registry, request, schema_of, valid_set};
use countersign_policy::{
    ApprovalQuorum, Difference, Head, PolicyRequest, RequestError, Verdict, shadow_difference,
};
use countersign_registry::ApproverName;
use serde_json::json;

fn quorum(required: u32, approvers: &[&str]) -> ApprovalQuorum {
    ApprovalQuorum {
        required,
        approvers: approvers
            .iter()
            .map(|a| ApproverName::parse(*a).unwrap())
            .collect(),
    }
}

fn payment(amount: i64) -> serde_json::Value {
    json!({ "amount": amount, "currency": "EUR", "payee": "acme" })
}

fn payments_verdict(policies: &str, amount: i64) -> Verdict {
    let schema = schema_of(&payments_registry());
    let set = valid_set(policies, &schema);
    let args = payment(amount);
    set.evaluate(&schema, &request("payment.send", &args))
        .unwrap()
}

const ALL_THREE: &str = r#"
@id("forbid-huge") forbid (principal, action == Action::"payment.send", resource)
when { context.arguments.amount >= 1000000 };
@id("approve-large") @require_approval
permit (principal, action == Action::"payment.send", resource)
when { context.arguments.amount >= 1000 };
@id("permit-all") permit (principal, action == Action::"payment.send", resource);
"#;

#[test]
fn forbid_beats_require_approval_beats_permit() {
    assert_eq!(
        payments_verdict(ALL_THREE, 2_000_000),
        Verdict::Forbid {
            policies: vec!["forbid-huge".into()]
        }
    );
    assert_eq!(
        payments_verdict(ALL_THREE, 5000),
        Verdict::RequireApproval {
            policies: vec!["approve-large".into()],
            quorum: None
        }
    );
    assert_eq!(
        payments_verdict(ALL_THREE, 10),
        Verdict::Permit {
            policies: vec!["permit-all".into()]
        }
    );
}

#[test]
fn no_satisfied_permit_means_a_person_decides() {
    let only_forbid = r#"forbid (principal, action == Action::"payment.send", resource)
        when { context.arguments.amount > 5 };"#;
    assert_eq!(payments_verdict(only_forbid, 5), Verdict::PersonDecides);
    assert_eq!(payments_verdict("", 5), Verdict::PersonDecides);
}

#[test]
fn policies_without_an_id_annotation_keep_cedars_generated_ids() {
    let text = r#"permit (principal, action == Action::"payment.send", resource);
        @id("named") permit (principal, action, resource);"#;
    assert_eq!(
        payments_verdict(text, 5),
        Verdict::Permit {
            policies: vec!["named".into(), "policy0".into()]
        }
    );
}

#[test]
fn a_forbid_whose_condition_errors_counts_as_a_forbid() {
    // Overflow is an evaluation error the strict validator cannot see.
    let text = r#"
        @id("overflowing-forbid") forbid (principal, action, resource)
        when { context.arguments.amount + 9223372036854775807 > 0 };
        @id("permit-all") permit (principal, action, resource);"#;
    assert_eq!(
        payments_verdict(text, 1),
        Verdict::Forbid {
            policies: vec!["overflowing-forbid".into()]
        }
    );
}

#[test]
fn a_permit_whose_condition_errors_is_not_satisfied() {
    let text = r#"
        @id("overflowing-permit") permit (principal, action, resource)
        when { context.arguments.amount + 9223372036854775807 > 0 };
        @id("overflowing-approval") @require_approval permit (principal, action, resource)
        when { context.arguments.amount * 9223372036854775807 > 0 };"#;
    assert_eq!(payments_verdict(text, 2), Verdict::PersonDecides);
}

#[test]
fn the_payments_quorum_is_two_of_alice_and_bob() {
    let text = common::example("payments.cedar");
    assert_eq!(
        payments_verdict(&text, 1000),
        Verdict::RequireApproval {
            policies: vec!["large-payments-need-two".into()],
            quorum: Some(quorum(2, &["alice", "bob"])),
        }
    );
}

#[test]
fn several_approvals_combine_to_the_highest_count_from_the_common_approvers() {
    let text = r#"
        @id("a") @require_approval @quorum("2") @approvers("alice,bob,carol")
        permit (principal, action, resource);
        @id("b") @require_approval @approvers("bob, carol, dave")
        permit (principal, action, resource);
        @id("c") @require_approval permit (principal, action, resource);"#;
    assert_eq!(
        payments_verdict(text, 1),
        Verdict::RequireApproval {
            policies: vec!["a".into(), "b".into(), "c".into()],
            quorum: Some(quorum(2, &["bob", "carol"])),
        }
    );
}

#[test]
fn approvals_no_approver_group_can_give_together_are_refused() {
    let text = r#"
        @id("a") @require_approval @quorum("2") @approvers("alice,bob")
        permit (principal, action, resource);
        @id("b") @require_approval @approvers("bob,carol")
        permit (principal, action, resource);"#;
    assert_eq!(
        payments_verdict(text, 1),
        Verdict::Forbid {
            policies: vec!["a".into(), "b".into()]
        }
    );
}

#[test]
fn the_session_is_in_its_principal_and_agent_and_the_head_and_time_are_in_the_context() {
    let schema = schema_of(&default_registry());
    let text = r#"
        @id("alice-after-noon-by-hook") permit (
            principal in Principal::"pr_0123456789abcdef0123456789abcdef",
            action == Action::"agent.read",
            resource
        ) when {
            principal in Agent::"claude-code" && context.head == "hook"
            && context.time >= 1796558400 && context.class == "read"
        };"#;
    let set = valid_set(text, &schema);
    let args = agent_args("Read", json!({ "file_path": "/srv/app/x" }));
    let mut req = request("agent.read", &args);
    assert!(matches!(
        set.evaluate(&schema, &req).unwrap(),
        Verdict::Permit { .. }
    ));
    req.head = Head::Mcp;
    assert_eq!(set.evaluate(&schema, &req).unwrap(), Verdict::PersonDecides);
    req.head = Head::Hook;
    req.time_unix -= 1;
    assert_eq!(set.evaluate(&schema, &req).unwrap(), Verdict::PersonDecides);
    req.time_unix += 1;
    req.agent = None;
    assert_eq!(set.evaluate(&schema, &req).unwrap(), Verdict::PersonDecides);
}

#[test]
fn a_call_without_its_target_has_the_operation_as_resource() {
    let schema = schema_of(&default_registry());
    let text = r#"
        @id("no-rm") forbid (principal, action == Action::"agent.shell", resource is Target)
        when { resource.value like "rm *" };
        @id("shell-without-command")
        forbid (principal, action == Action::"agent.shell", resource == Operation::"agent.shell");"#;
    let set = valid_set(text, &schema);
    let args = agent_args("Bash", json!({ "command": "rm x" }));
    assert_eq!(
        set.evaluate(&schema, &request("agent.shell", &args))
            .unwrap(),
        Verdict::Forbid {
            policies: vec!["no-rm".into()]
        }
    );
    for input in [json!({}), json!({ "command": ["rm", "x"] })] {
        let args = agent_args("Bash", input);
        assert_eq!(
            set.evaluate(&schema, &request("agent.shell", &args))
                .unwrap(),
            Verdict::Forbid {
                policies: vec!["shell-without-command".into()]
            }
        );
    }
}

#[test]
fn refuses_a_request_for_an_operation_the_schema_does_not_know() {
    let schema = schema_of(&default_registry());
    let set = valid_set("", &schema);
    let args = json!({});
    assert_eq!(
        set.evaluate(&schema, &request("payment.send", &args)),
        Err(RequestError::UnknownOperation("payment.send".into()))
    );
    let mut empty = request("schedule.create", &args);
    empty.session = "";
    assert_eq!(
        set.evaluate(&schema, &empty),
        Err(RequestError::EmptyName("session"))
    );
}

#[test]
fn shadow_difference_reports_only_another_outcome() {
    let permit_a = Verdict::Permit {
        policies: vec!["a".into()],
    };
    let permit_b = Verdict::Permit {
        policies: vec!["b".into()],
    };
    assert_eq!(shadow_difference(&permit_a, &permit_b), None);
    assert_eq!(
        shadow_difference(&permit_a, &Verdict::PersonDecides),
        Some(Difference {
            binding: permit_a.clone(),
            shadow: Verdict::PersonDecides
        })
    );
    let one = Verdict::RequireApproval {
        policies: vec!["x".into()],
        quorum: None,
    };
    let two = Verdict::RequireApproval {
        policies: vec!["x".into()],
        quorum: Some(quorum(2, &["alice", "bob"])),
    };
    assert_eq!(shadow_difference(&one, &one.clone()), None);
    assert!(shadow_difference(&one, &two).is_some());
}

#[test]
fn a_request_carries_the_modes_verdicts_independently() {
    // A log-only set is evaluated beside the binding one on the same request.
    let schema = schema_of(&payments_registry());
    let binding = valid_set(&common::example("payments.cedar"), &schema);
    let shadow = valid_set(r#"forbid (principal, action, resource);"#, &schema);
    let args = payment(10);
    let req: PolicyRequest<'_> = request("payment.send", &args);
    let (b, s) = (
        binding.evaluate(&schema, &req).unwrap(),
        shadow.evaluate(&schema, &req).unwrap(),
    );
    let difference = shadow_difference(&b, &s).unwrap();
    assert!(matches!(difference.binding, Verdict::Permit { .. }));
    assert!(matches!(difference.shadow, Verdict::Forbid { .. }));
}

/// Each request is evaluated against the policies its action can match
/// (indexed at parse): a policy scoped to other actions never decides it,
/// `action in [A, B]` decides both, and one that names no action decides
/// every action, as over the whole set.
#[test]
fn the_action_index_decides_as_the_whole_set_would() {
    let schema = schema_of(&default_registry());
    let set = valid_set(
        r#"
@id("no-shell") forbid (principal, action == Action::"agent.shell", resource);
@id("reads-and-edits") permit (principal, action in [Action::"agent.read", Action::"agent.edit", Action::"agent.read"], resource);
@id("friday") forbid (principal, action, resource) when { context.time == 1 };
@id("everything-needs-a-person") @require_approval permit (principal, action, resource);
"#,
        &schema,
    );
    let read = agent_args("Read", json!({ "file_path": "/srv/app/a.rs" }));
    let shell = agent_args("Bash", json!({ "command": "ls" }));
    let create = json!({ "name": "nightly", "cron": "0 3 * * *" });
    let cases = [
        ("agent.shell", &shell, "forbid", vec!["no-shell"]),
        (
            "agent.read",
            &read,
            "require_approval",
            vec!["everything-needs-a-person"],
        ),
        (
            "agent.edit",
            &read,
            "require_approval",
            vec!["everything-needs-a-person"],
        ),
        (
            "schedule.create",
            &create,
            "require_approval",
            vec!["everything-needs-a-person"],
        ),
    ];
    for (operation, args, kind, policies) in cases {
        let verdict = set.evaluate(&schema, &request(operation, args)).unwrap();
        let (got_kind, got) = match &verdict {
            Verdict::Forbid { policies } => ("forbid", policies),
            Verdict::RequireApproval { policies, .. } => ("require_approval", policies),
            Verdict::Permit { policies } => ("permit", policies),
            Verdict::PersonDecides => ("person", &Vec::new()),
        };
        assert_eq!(
            (got_kind, got.iter().map(String::as_str).collect::<Vec<_>>()),
            (kind, policies),
            "{operation}: {verdict:?}"
        );
    }
    // Without the approval policy, the listed actions are permitted by
    // the `in` list and the others fall to a person.
    let set = valid_set(
        r#"@id("reads-and-edits") permit (principal, action in [Action::"agent.read", Action::"agent.edit"], resource);"#,
        &schema,
    );
    assert_eq!(
        set.evaluate(&schema, &request("agent.edit", &read))
            .unwrap(),
        Verdict::Permit {
            policies: vec!["reads-and-edits".into()]
        }
    );
    assert_eq!(
        set.evaluate(&schema, &request("agent.shell", &shell))
            .unwrap(),
        Verdict::PersonDecides
    );
}
