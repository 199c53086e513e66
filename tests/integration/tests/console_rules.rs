//! The console's Rules page, served over a real TCP listener by the same
//! `countersign::console_state` as `countersign console`: a paired browser
//! sees each rule with its uses and remaining budget and can revoke it or
//! revise it (POSTs that carry the pairing's page key; a revision only after the signer's dry
//! run rendered the new scope, bound to its digest); an unpaired one sees
//! nothing, and a POST without the page key changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use api_support::Reply;
use console_support::{Site, get, https, post_form};
use serde_json::{Value, json};
use support::{Backend, Capture, Harness, assert_refused};

/// The console of `h` over TLS, and a paired browser's cookie.
async fn console(h: &Harness) -> (Site, String) {
    let site = console_support::serve(&h.home(), None).await;
    console_support::pair(&site, &h.home(), "console").await
}

/// The value of the first hidden field `name` on a page, unescaped.
fn hidden(page: &str, name: &str) -> String {
    let (_, rest) = page
        .split_once(&format!(r#"name="{name}" value=""#))
        .unwrap_or_else(|| panic!("no field {name} in {page}"));
    rest.split('"')
        .next()
        .unwrap()
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// A rule definition over `schedule.create` with `constraint`, from any
/// session, at most 3 uses and 2 an hour, for the next hour.
fn nightly(constraint: Value) -> Value {
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    json!({
        "operations": ["schedule.create"],
        "constraints": [constraint],
        "sessions": ["*"],
        "max_uses": 3,
        "per_hour": 2,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    })
}

/// A rule over `schedule.create` with `constraint`, created at the
/// terminal, and the console with a paired browser: the harness, the
/// rule's id, the console's address and the browser's cookie.
async fn console_with_rule(constraint: Value) -> (Harness, String, Site, String) {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let id = h.create_rule(&nightly(constraint)).await;
    let (site, cookie) = console(&h).await;
    (h, id, site, cookie)
}

/// Rule `id`'s version and definition digest, as the ledger holds them.
async fn rule_version(h: &Harness, id: &str) -> (u64, String) {
    let rule = h.ledger().rule(id).await.unwrap().unwrap();
    (rule.version, rule.definition_sha256)
}

/// `schedule.create` of `name` proposed in the CLI's session: its id and
/// the status the signer gave it at once.
async fn propose_schedule(h: &Harness, name: &str) -> (String, String) {
    let args = json!({"name": name, "cron": "0 3 * * *"}).to_string();
    let id = h.propose("schedule.create", &args).await;
    let status = h.ledger().proposal(&id).await.unwrap().unwrap().status;
    (id, status.as_str().to_owned())
}

/// A form refused: where it is posted, its fields, and the status and
/// message of the page that refuses it.
type Refused<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16, &'a str);

/// A refusal page with `status` whose message contains `why`.
fn assert_refusal(reply: &Reply, status: u16, why: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert!(reply.body.contains(why), "{why:?} in {}", reply.body);
}

#[tokio::test]
async fn the_rules_page_lists_uses_and_budget_and_revokes_with_the_page_key() {
    let capture = Capture::trace();
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let id = h
        .create_rule(&nightly(json!({"pointer": "/name", "equals": "nightly"})))
        .await;
    h.propose(
        "schedule.create",
        r#"{"name":"nightly","cron":"0 3 * * *"}"#,
    )
    .await;

    let (site, cookie) = console(&h).await;
    // Unpaired: nothing.
    let unpaired = https(&site, "GET", "/rules", &[], b"").await;
    assert!(!unpaired.body.contains(&id), "{}", unpaired.body);

    let page = get(&site, &cookie, "/rules").await;
    assert_eq!(page.status, 200, "{}", page.body);
    for part in [
        id.as_str(),
        "active",
        "1 of 3",
        "1 of 2",
        "/name equals &quot;nightly&quot;",
        "Revoke this rule",
    ] {
        assert!(page.body.contains(part), "{part:?} in {}", page.body);
    }

    // Without the page key: refused, nothing revoked.
    let target = format!("/rules/{id}/revoke");
    let forged = post_form(&site, &cookie, &target, &[("reason", "x")]).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(h.ledger().rule(&id).await.unwrap().unwrap().version, 1);

    let token = site.page_key.clone();
    let fields = [("page_key", token.as_str()), ("reason", "enough")];
    let revoked = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert!(revoked.body.contains("Revoked rule"), "{}", revoked.body);
    let rule = h.ledger().rule(&id).await.unwrap().unwrap();
    assert_eq!((rule.version, rule.reason.as_str()), (2, "enough"));
    let page = get(&site, &cookie, "/rules").await;
    assert!(page.body.contains("revoked"), "{}", page.body);
    assert!(!page.body.contains("Revoke this rule"), "{}", page.body);
    // Each request ran in a span named by its method and route template,
    // never its path's values (the rule id) or a form field.
    let spans = capture.spans("request");
    assert!(
        spans
            .iter()
            .any(|s| s.contains("method=POST route=/rules/{id}/revoke")),
        "{spans:?}"
    );
    assert!(
        spans
            .iter()
            .all(|s| !s.contains(&id) && !s.contains("enough")),
        "{spans:?}"
    );
    // Revoked: the next covered proposal waits for a person.
    let next = h
        .propose(
            "schedule.create",
            r#"{"name":"nightly","cron":"0 4 * * *"}"#,
        )
        .await;
    let status = h.ledger().proposal(&next).await.unwrap().unwrap().status;
    assert_eq!(status.as_str(), "pending");
}

#[tokio::test]
async fn a_person_creates_a_proposed_rule_in_the_console_and_nothing_else_does() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let definition = json!({
        "operations": ["schedule.create"],
        "constraints": [{"pointer": "/cron", "prefix": "0 3 "}],
        "sessions": ["cli"],
        "max_uses": 1,
        "per_hour": 1,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires).unwrap(),
    });
    let id = h.propose("rule.create", &definition.to_string()).await;
    let (site, cookie) = console(&h).await;
    let card = get(&site, &cookie, &format!("/proposals/{id}")).await;
    assert_eq!(card.status, 200, "{}", card.body);
    for part in [
        "Create this rule",
        "WITHOUT asking a person",
        "/cron is a string starting with &quot;0 3 &quot;",
    ] {
        assert!(card.body.contains(part), "{part:?} in {}", card.body);
    }
    assert!(!card.body.contains("Approve and run now"), "{}", card.body);
    let target = format!("/proposals/{id}/approve");
    // Without the page key: refused, nothing created.
    let forged = post_form(&site, &cookie, &target, &[("delivery", "handoff")]).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(
        h.ledger()
            .rules(h.signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
    let token = site.page_key.clone();
    let fields = [("page_key", token.as_str()), ("delivery", "handoff")];
    let created = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert!(created.body.contains("Rule created"), "{}", created.body);
    let rules = h.ledger().rules(h.signer.principal()).await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].created_by,
        format!("{}/console", h.signer.principal())
    );
    let status = h.ledger().proposal(&id).await.unwrap().unwrap().status;
    assert_eq!(status.as_str(), "applied");
}

#[tokio::test]
async fn a_person_revises_a_rule_in_the_console_after_reading_its_new_scope() {
    let (h, id, site, cookie) =
        console_with_rule(json!({"pointer": "/name", "prefix": "nightly"})).await;
    let (before, status) = propose_schedule(&h, "nightly").await;
    assert_eq!(status, "approved");
    let list = get(&site, &cookie, "/rules").await;
    let target = format!("/rules/{id}/revise");
    assert!(
        list.body.contains(&format!(r#"href="{target}""#)),
        "{}",
        list.body
    );
    let edit = get(&site, &cookie, &target).await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    for part in [
        "/name is a string starting with &quot;nightly&quot;",
        r#"{&quot;constraints&quot;:[{&quot;pointer&quot;:&quot;/name&quot;,&quot;prefix&quot;:&quot;nightly&quot;}]"#,
        r#"name="version" value="1""#,
    ] {
        assert!(edit.body.contains(part), "{part:?} in {}", edit.body);
    }

    // The dry run: the new scope, whole, and what revising means; nothing
    // changes yet.
    let v1 = rule_version(&h, &id).await;
    let narrower = nightly(json!({"pointer": "/name", "prefix": "nightly-db"})).to_string();
    let token = site.page_key.clone();
    let fields = [
        ("page_key", token.as_str()),
        ("version", "1"),
        ("definition", narrower.as_str()),
    ];
    let shown = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    for part in [
        "WITHOUT asking a person",
        "/name is a string starting with &quot;nightly-db&quot;",
        "at most 3 in total, at most 2 per hour",
        "lets the signer approve every proposal this new scope covers WITHOUT asking you; unused proofs issued under version 1 are refused from now on.",
        "Revise this rule",
    ] {
        assert!(shown.body.contains(part), "{part:?} in {}", shown.body);
    }
    assert_eq!(rule_version(&h, &id).await, v1);

    // Confirmed: the form the page carries.
    let confirm = format!("/rules/{id}/revise/confirm");
    let fields =
        ["version", "definition", "definition_sha256"].map(|f| (f, hidden(&shown.body, f)));
    let mut fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    fields.push(("page_key", &site.page_key));
    let revised = post_form(&site, &cookie, &confirm, &fields).await;
    assert_eq!(revised.status, 200, "{}", revised.body);
    assert!(
        revised
            .body
            .contains(&format!("Revised rule {id} (now version 2)")),
        "{}",
        revised.body
    );
    let listed = h.cli(&["--json", "rules", "list"]).await;
    assert_eq!(listed.result, Ok(()), "{}", listed.stderr);
    let rule = &listed.json()["rules"][0];
    assert_eq!(rule["version"], 2, "{rule}");
    assert!(
        rule["scope"]
            .as_str()
            .unwrap()
            .contains("/name is a string starting with \"nightly-db\""),
        "{rule}"
    );
    let changed_by = h.ledger().rule(&id).await.unwrap().unwrap().changed_by;
    assert_eq!(changed_by, format!("{}/console", h.signer.principal()));

    // The same confirmation again: the rule is no longer at version 1.
    let v2 = rule_version(&h, &id).await;
    assert_refusal(
        &post_form(&site, &cookie, &confirm, &fields).await,
        409,
        &format!("rule {id} changed since; look at it again (rule_changed)"),
    );
    assert_eq!(rule_version(&h, &id).await, v2);

    // The proof issued under version 1 is refused, nothing applied; version
    // 2 approves what it covers now.
    assert_refused(&h.exec_handoff(&before, "cli").await, "rule_revoked");
    assert_eq!(h.schedules().await, vec![]);
    assert_eq!(propose_schedule(&h, "nightly-db").await.1, "approved");
}

#[tokio::test]
async fn a_revision_is_refused_without_the_page_key_the_shown_definition_or_valid_fields() {
    let (h, id, site, cookie) =
        console_with_rule(json!({"pointer": "/name", "equals": "nightly"})).await;
    let v1 = rule_version(&h, &id).await;
    let target = format!("/rules/{id}/revise");
    let confirm = format!("/rules/{id}/revise/confirm");

    // Unpaired: the pairing page, nothing of the rule.
    let unpaired = https(&site, "GET", &target, &[], b"").await;
    assert_refusal(&unpaired, 401, "Pair this browser");
    assert!(!unpaired.body.contains("nightly"), "{}", unpaired.body);

    let edit = get(&site, &cookie, &target).await;
    assert_eq!(edit.status, 200, "{}", edit.body);
    let token = site.page_key.clone();
    let wider = nightly(json!({"pointer": "/name", "prefix": "n"})).to_string();
    let fields = [
        ("page_key", token.as_str()),
        ("version", "1"),
        ("definition", &wider),
    ];
    let dry_run = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(dry_run.status, 200, "{}", dry_run.body);
    let sha256 = hidden(&dry_run.body, "definition_sha256");

    // Each refused with its exact reason, the rule unchanged: without the
    // page key; a definition other than the one shown (more uses) with
    // the digest of the one shown; a version the rule is not at; missing
    // or malformed fields (a 400 page before the signer is asked); a body
    // over the console's limit (413); a definition the signer refuses.
    let tampered = wider.replace(r#""max_uses":3"#, r#""max_uses":99999"#);
    assert_ne!(tampered, wider);
    let no_token = "does not carry the page key of this browser's pairing";
    let changed = format!("rule {id} changed since; look at it again (rule_changed)");
    let version = "the version of the rule you looked at, a whole number; nothing was revised.";
    let definition = "the rule's new definition (JSON); nothing was revised.";
    let (huge, oversized) = ("x".repeat(17 * 1024), "x".repeat(70 * 1024));
    let (t, c, s) = (token.as_str(), confirm.as_str(), sha256.as_str());
    let cases: Vec<Refused<'_>> = vec![
        (
            &target,
            vec![("version", "1"), ("definition", &wider)],
            403,
            no_token,
        ),
        (
            c,
            vec![
                ("version", "1"),
                ("definition", &wider),
                ("definition_sha256", s),
            ],
            403,
            no_token,
        ),
        (
            c,
            vec![
                ("page_key", t),
                ("version", "1"),
                ("definition", &tampered),
                ("definition_sha256", s),
            ],
            409,
            "(rule_definition_changed); nothing was done.",
        ),
        (
            &target,
            vec![("page_key", t), ("version", "7"), ("definition", &wider)],
            409,
            &changed,
        ),
        (
            c,
            vec![
                ("page_key", t),
                ("version", "7"),
                ("definition", &wider),
                ("definition_sha256", s),
            ],
            409,
            &changed,
        ),
        (
            &target,
            vec![("page_key", t), ("definition", &wider)],
            400,
            version,
        ),
        (
            c,
            vec![
                ("page_key", t),
                ("version", "one"),
                ("definition", &wider),
                ("definition_sha256", s),
            ],
            400,
            version,
        ),
        (
            &target,
            vec![("page_key", t), ("version", "-1"), ("definition", &wider)],
            400,
            version,
        ),
        (
            &target,
            vec![("page_key", t), ("version", "1"), ("definition", "  ")],
            400,
            definition,
        ),
        (
            c,
            vec![("page_key", t), ("version", "1"), ("definition_sha256", s)],
            400,
            definition,
        ),
        (
            &target,
            vec![("page_key", t), ("version", "1"), ("definition", &huge)],
            400,
            "more than a rule may have (16384); nothing was revised.",
        ),
        (
            c,
            vec![("page_key", t), ("version", "1"), ("definition", &wider)],
            400,
            "lacks the SHA-256 of the definition you were shown; nothing was revised.",
        ),
        (
            &target,
            vec![
                ("page_key", t),
                ("version", "1"),
                ("definition", &oversized),
            ],
            413,
            "larger than the console accepts (65536 bytes); nothing was done.",
        ),
        (
            &target,
            vec![
                ("page_key", t),
                ("version", "1"),
                ("definition", r#"{"operations":[]}"#),
            ],
            409,
            "(invalid_rule); nothing was done.",
        ),
    ];
    for (path, fields, status, why) in cases {
        assert_refusal(&post_form(&site, &cookie, path, &fields).await, status, why);
        assert_eq!(rule_version(&h, &id).await, v1, "{path} {fields:?}");
    }

    // A revoked rule offers no revision, and none is applied to it.
    let revoked = h.cli(&["rules", "revoke", &id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stderr);
    assert_refusal(
        &get(&site, &cookie, &target).await,
        409,
        "is revoked: nothing can change it any more.",
    );
    let late = [
        ("page_key", t),
        ("version", "2"),
        ("definition", &wider),
        ("definition_sha256", s),
    ];
    assert_refusal(
        &post_form(&site, &cookie, c, &late).await,
        409,
        &format!("rule {id} is revoked (rule_not_live)"),
    );
    // Version 2 is the revocation; nothing came after it.
    assert_eq!(rule_version(&h, &id).await.0, 2);
}

/// A proposed rule whose scope is written in Cedar: the card shows its
/// policies verbatim, the person creates it in the console, and it then
/// approves what they permit, nothing else.
#[tokio::test]
async fn a_proposed_rule_written_in_cedar_shows_its_policies_on_the_card() {
    let h = Harness::start_with_rules(Backend::Sqlite).await;
    let mut definition = nightly(json!({"pointer": "/cron", "prefix": "0 3 "}));
    definition["cedar"] = json!(
        "@id(\"nightly\")\npermit (principal, action == Action::\"schedule.create\", resource)\nwhen { context.arguments.name like \"nightly*\" };"
    );
    let id = h.propose("rule.create", &definition.to_string()).await;
    let (site, cookie) = console(&h).await;
    let card = get(&site, &cookie, &format!("/proposals/{id}")).await;
    assert_eq!(card.status, 200, "{}", card.body);
    for part in [
        "WITHOUT asking a person",
        "Cedar:      only what these policies permit",
        "  | @id(&quot;nightly&quot;)",
        "  | when { context.arguments.name like &quot;nightly*&quot; };",
    ] {
        assert!(card.body.contains(part), "{part:?} in {}", card.body);
    }
    let fields = [
        ("page_key", site.page_key.as_str()),
        ("delivery", "handoff"),
    ];
    let target = format!("/proposals/{id}/approve");
    let created = post_form(&site, &cookie, &target, &fields).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert!(created.body.contains("Rule created"), "{}", created.body);
    assert_eq!(propose_schedule(&h, "nightly-1").await.1, "approved");
    assert_eq!(propose_schedule(&h, "weekly").await.1, "pending");
}
