//! The operator's Cedar policy as the signer applies it (`[policy] cedar`,
//! binding, and `[policy] cedar_log_only`, watched): at a proposal, what
//! the binding set says of it (forbid, require approval, permit, or a
//! person decides) and, when a log-only set would have said otherwise,
//! that; at a decision, whether the set the proposal was made under
//! forbids approving it now.
//!
//! Owns: following the policy files (read at each proposal, as the
//! registry is; parsed and validated again only when their text or the
//! registry changed), storing a set's text in the ledger before any
//! proposal names its digest, and reading it back by digest for a
//! decision, so that an edit takes effect for new proposals only and
//! whichever signer decides uses the same set.
//!
//! Must not: let a set that does not validate against the registry decide
//! anything (a binding set that cannot be used refuses every proposal,
//! `policy_unavailable`), let a log-only set decide anything, or show a
//! policy arguments it cannot hold exactly (`not_representable`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use countersign_identity::PolicyConfig;
use countersign_ledger::{Ledger, PolicyQuorum, PolicyVerdict, ProposalPolicy, ProposalRecord};
use countersign_policy::{
    GeneratedSchema, Head, MAX_POLICY_BYTES, PolicyRequest, PolicySet, RequestError, Verdict,
    VerdictKind, shadow_difference,
};
use countersign_registry::{Quorum, Registry};
use serde_json::Value;

use crate::error::{RpcError, StartError};

/// The configured policy sets and what was last loaded from them.
#[derive(Debug, Default)]
pub struct OperatorPolicy {
    binding: Option<PolicyFile>,
    log_only: Option<PolicyFile>,
    /// The schema of the registry it was generated from (compared by
    /// identity: the registry is re-parsed only when its file changed).
    schema: Mutex<Option<(Arc<Registry>, Arc<GeneratedSchema>)>>,
    /// Sets by digest whose text this process knows the ledger holds:
    /// those it stored there, and those it read back for a decision.
    by_digest: Mutex<HashMap<String, Arc<PolicySet>>>,
}

/// One configured policy file and the set last loaded from it.
#[derive(Debug)]
struct PolicyFile {
    path: PathBuf,
    last: Mutex<Option<Loaded>>,
}

#[derive(Debug, Clone)]
struct Loaded {
    /// The file as it was when read: while its metadata is the same, its
    /// text is not read again.
    stamp: Option<Stamp>,
    text: Arc<str>,
    /// The digest of the schema it was validated against.
    schema: String,
    set: Arc<PolicySet>,
}

/// What the policy said of a proposal: the record it is stored with, and
/// the binding verdict the signer acts on (`None` without a binding set).
#[derive(Debug)]
pub(crate) struct Evaluated {
    pub(crate) record: ProposalPolicy,
    pub(crate) binding: Option<Verdict>,
    /// The log-only set's verdict, when it differs (as in `record`).
    pub(crate) shadow: Option<VerdictKind>,
}

impl OperatorPolicy {
    /// The sets `[policy]` names, each loaded and validated against
    /// `registry` now: a signer never starts with a set it cannot use.
    pub fn configured(config: &PolicyConfig, registry: &Arc<Registry>) -> Result<Self, StartError> {
        let policy =
            OperatorPolicy::from_files(config.cedar.clone(), config.cedar_log_only.clone());
        if policy.binding.is_none() && policy.log_only.is_none() {
            return Ok(policy);
        }
        let schema = policy.schema_for(registry).map_err(StartError::Policy)?;
        for file in [&policy.binding, &policy.log_only].into_iter().flatten() {
            file.current(&schema).map_err(StartError::Policy)?;
        }
        Ok(policy)
    }

    /// The sets in `binding` and `log_only`, loaded at first use.
    pub fn from_files(binding: Option<PathBuf>, log_only: Option<PathBuf>) -> Self {
        let file = |path| PolicyFile {
            path,
            last: Mutex::new(None),
        };
        OperatorPolicy {
            binding: binding.map(file),
            log_only: log_only.map(file),
            ..OperatorPolicy::default()
        }
    }

    /// The Cedar schema of `registry` (generated once per registry).
    pub(crate) fn schema_for(
        &self,
        registry: &Arc<Registry>,
    ) -> Result<Arc<GeneratedSchema>, String> {
        let mut cached = self.schema.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((from, schema)) = &*cached
            && Arc::ptr_eq(from, registry)
        {
            return Ok(Arc::clone(schema));
        }
        let schema = Arc::new(
            countersign_policy::schema(registry)
                .map_err(|e| format!("the registry has no Cedar schema: {e}"))?,
        );
        *cached = Some((Arc::clone(registry), Arc::clone(&schema)));
        Ok(schema)
    }

    /// Evaluates `request` (a proposal about to be recorded) against the
    /// binding set and the log-only set, and stores each set's text it
    /// names in the ledger. `None` when no set is configured.
    pub(crate) async fn at_proposal(
        &self,
        ledger: &Ledger,
        registry: &Arc<Registry>,
        request: &PolicyRequest<'_>,
    ) -> Result<Option<Evaluated>, RpcError> {
        if self.binding.is_none() && self.log_only.is_none() {
            return Ok(None);
        }
        let schema = self
            .schema_for(registry)
            .map_err(RpcError::PolicyUnavailable)?;
        let binding = match &self.binding {
            None => None,
            Some(file) => {
                let loaded = file.current(&schema).map_err(RpcError::PolicyUnavailable)?;
                let verdict = loaded.set.evaluate(&schema, request).map_err(refusal)?;
                self.store(ledger, &loaded).await?;
                Some((loaded, verdict))
            }
        };
        let shadow = match &self.log_only {
            None => None,
            Some(file) => {
                self.shadow(ledger, file, &schema, request, binding.as_ref())
                    .await
            }
        };
        Ok(Some(Evaluated {
            record: ProposalPolicy {
                head: request.head.as_str().to_owned(),
                binding: binding
                    .as_ref()
                    .map(|(loaded, verdict)| verdict_record(&loaded.set, verdict)),
                shadow: shadow.as_ref().map(|(record, _)| record.clone()),
            },
            binding: binding.map(|(_, verdict)| verdict),
            shadow: shadow.map(|(_, kind)| kind),
        }))
    }

    /// The log-only set's verdict, when it differs from the binding one
    /// (or from a person deciding): a set that cannot be used, or a
    /// request it cannot see, is logged and decides nothing either way.
    async fn shadow(
        &self,
        ledger: &Ledger,
        file: &PolicyFile,
        schema: &GeneratedSchema,
        request: &PolicyRequest<'_>,
        binding: Option<&(Loaded, Verdict)>,
    ) -> Option<(PolicyVerdict, VerdictKind)> {
        let loaded = file
            .current(schema)
            .inspect_err(|e| tracing::warn!(error = %e, "the log-only policy set is not evaluated"))
            .ok()?;
        let shadow = loaded
            .set
            .evaluate(schema, request)
            .inspect_err(|e| tracing::warn!(error = %e, "the log-only policy set could not see the proposal"))
            .ok()?;
        let acted_on = binding.map_or(Verdict::PersonDecides, |(_, v)| v.clone());
        let difference = shadow_difference(&acted_on, &shadow)?;
        if let Err(e) = self.store(ledger, &loaded).await {
            tracing::warn!(error = %e, "the log-only policy set's text was not stored; its difference is not recorded");
            return None;
        }
        tracing::info!(
            binding = difference.binding.kind().as_str(),
            shadow = difference.shadow.kind().as_str(),
            policies = ?difference.shadow.policies(),
            "the log-only policy set would have decided otherwise"
        );
        Some((verdict_record(&loaded.set, &shadow), shadow.kind()))
    }

    /// Stores `loaded`'s text in the ledger, once per digest per process.
    async fn store(&self, ledger: &Ledger, loaded: &Loaded) -> Result<(), RpcError> {
        let digest = loaded.set.digest();
        if lock(&self.by_digest).contains_key(digest) {
            return Ok(());
        }
        ledger.record_policy_set(&loaded.text).await?;
        lock(&self.by_digest).insert(digest.to_owned(), Arc::clone(&loaded.set));
        Ok(())
    }

    /// The policies of the set `record` was proposed under that forbid
    /// approving it at `time_unix` (`None`: nothing forbids it, or it was
    /// proposed without a binding set).
    pub(crate) async fn forbids_at_decision(
        &self,
        ledger: &Ledger,
        registry: &Arc<Registry>,
        record: &ProposalRecord,
        time_unix: i64,
    ) -> Result<Option<Vec<String>>, RpcError> {
        let p = &record.proposal;
        let (Some(policy), Some(binding)) = (&p.policy, binding_of(record)) else {
            return Ok(None);
        };
        let set = self.recorded(ledger, &binding.set).await?;
        let schema = self
            .schema_for(registry)
            .map_err(RpcError::PolicyUnavailable)?;
        let head = Head::parse(&policy.head).ok_or_else(|| {
            RpcError::Internal(format!("{} names no head the policy knows", p.id))
        })?;
        let arguments: Value = serde_json::from_str(&p.arguments_json)
            .map_err(|e| RpcError::Internal(format!("stored arguments of {}: {e}", p.id)))?;
        let request = PolicyRequest {
            principal: p.principal.as_str(),
            agent: agent_of(head, &arguments),
            session: p.session.as_str(),
            operation: &p.operation,
            arguments: &arguments,
            time_unix,
            head,
        };
        match set.evaluate(&schema, &request).map_err(refusal)? {
            Verdict::Forbid { policies } => Ok(Some(policies)),
            _ => Ok(None),
        }
    }

    /// The set stored under `digest`, parsed (cached by digest).
    async fn recorded(&self, ledger: &Ledger, digest: &str) -> Result<Arc<PolicySet>, RpcError> {
        if let Some(set) = lock(&self.by_digest).get(digest) {
            return Ok(Arc::clone(set));
        }
        let text = ledger.policy_set(digest).await?.ok_or_else(|| {
            RpcError::Internal(format!("policy set {digest} is not in the ledger"))
        })?;
        let set = Arc::new(PolicySet::parse(&text).map_err(|e| {
            RpcError::Internal(format!("stored policy set {digest} does not parse: {e}"))
        })?);
        lock(&self.by_digest).insert(digest.to_owned(), Arc::clone(&set));
        Ok(set)
    }
}

impl PolicyFile {
    /// The set as the file says now, validated against `schema`: parsed
    /// again only when the text or the schema changed. The error names
    /// the file and what is wrong.
    fn current(&self, schema: &GeneratedSchema) -> Result<Loaded, String> {
        let stamp = Stamp::of(&self.path);
        {
            let last = lock(&self.last);
            if let Some(loaded) = &*last
                && stamp.is_some()
                && loaded.stamp == stamp
                && loaded.schema == schema.digest()
            {
                return Ok(loaded.clone());
            }
        }
        let text = read_policy(&self.path)?;
        let mut last = lock(&self.last);
        if let Some(loaded) = &mut *last
            && *loaded.text == *text
            && loaded.schema == schema.digest()
        {
            loaded.stamp = stamp;
            return Ok(loaded.clone());
        }
        let named = |e: String| format!("{}: {e}", self.path.display());
        let set = PolicySet::parse(&text).map_err(|e| named(e.to_string()))?;
        set.validate(schema)
            .map_err(|issues| named(countersign_policy::schema_mismatch(&issues)))?;
        let loaded = Loaded {
            stamp,
            text: Arc::from(text),
            schema: schema.digest().to_owned(),
            set: Arc::new(set),
        };
        *last = Some(loaded.clone());
        Ok(loaded)
    }
}

/// What tells that a file changed without reading it: its inode, size,
/// and modification and change times (nanoseconds). An edit in place
/// moves the times; an editor's replacement brings another inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// `None` when the file cannot be read: then it is read, and the
    /// reading's error reported.
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// The policy file's text, at most [`MAX_POLICY_BYTES`].
fn read_policy(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let named = |e: String| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| named(e.to_string()))?;
    let mut text = String::new();
    let limit = u64::try_from(MAX_POLICY_BYTES).unwrap_or(u64::MAX) + 1;
    file.take(limit)
        .read_to_string(&mut text)
        .map_err(|e| named(e.to_string()))?;
    if text.len() > MAX_POLICY_BYTES {
        return Err(named(format!("larger than {MAX_POLICY_BYTES} bytes")));
    }
    Ok(text)
}

/// The coding agent a hook's proposal names (`arguments.agent`), for the
/// policy's `Agent` entity; `None` for every other head.
pub(crate) fn agent_of(head: Head, arguments: &Value) -> Option<&str> {
    match head {
        Head::Hook => arguments.get("agent").and_then(Value::as_str),
        _ => None,
    }
}

/// The refusal of a request the policy cannot be asked about.
fn refusal(e: RequestError) -> RpcError {
    match e {
        RequestError::NotRepresentable { .. } => RpcError::NotRepresentable(e.to_string()),
        other => RpcError::PolicyUnavailable(other.to_string()),
    }
}

/// `verdict` of `set`, as the ledger records it.
fn verdict_record(set: &PolicySet, verdict: &Verdict) -> PolicyVerdict {
    let quorum = match verdict {
        Verdict::RequireApproval {
            quorum: Some(q), ..
        } => Some(PolicyQuorum {
            required: q.required,
            approvers: q.approvers.iter().map(|a| a.as_str().to_owned()).collect(),
        }),
        _ => None,
    };
    PolicyVerdict {
        set: set.digest().to_owned(),
        verdict: verdict.kind().as_str().to_owned(),
        policies: verdict.policies().to_vec(),
        quorum,
    }
}

/// Why a proposal is recorded denied at once, if it is: the binding
/// verdict forbids it, or requires a quorum that no group of approvers
/// meets together with the operation's own (`operation_quorum`).
pub(crate) fn denied_by_policy(
    binding: Option<&Verdict>,
    operation_quorum: Option<&Quorum>,
) -> Option<String> {
    match binding? {
        Verdict::Forbid { policies } => Some(format!(
            "forbidden by the operator's policy ({})",
            policies.join(", ")
        )),
        Verdict::RequireApproval {
            policies,
            quorum: Some(q),
        } => {
            let names: Vec<String> = q.approvers.iter().map(|a| a.as_str().to_owned()).collect();
            let required = Quorum::new(q.required, &names);
            let meetable = match (&required, operation_quorum) {
                (Ok(required), Some(own)) => required.and(own).is_some(),
                (Ok(_), None) => true,
                (Err(_), _) => false,
            };
            (!meetable).then(|| {
                format!(
                    "the operator's policy ({}) requires {} of {} and the operation's own quorum names approvers no group can satisfy together",
                    policies.join(", "),
                    q.required,
                    names.join(", ")
                )
            })
        }
        _ => None,
    }
}

/// Whether `record` was proposed under a binding set (which a decision
/// then asks again).
pub(crate) fn was_judged(record: &ProposalRecord) -> bool {
    binding_of(record).is_some()
}

/// Whether a rule may approve `record`: without a binding verdict (no
/// binding set when it was proposed), as rules always could; with one,
/// only what a permit covers (`require_approval` and `person` are a
/// person's to decide, `forbid` nobody's).
pub(crate) fn rule_may_approve(record: &ProposalRecord) -> bool {
    binding_of(record).is_none_or(|b| b.verdict == VerdictKind::Permit.as_str())
}

/// The quorum `record` needs: its operation's own (`operation_quorum`,
/// from the registry), and the one its binding verdict recorded, both
/// met at once (see `Quorum::and`). A recorded quorum that cannot be
/// read, or that cannot be met with the operation's, stands alone: an
/// approval never needs less than the policy asked for.
pub(crate) fn quorum_of(
    record: &ProposalRecord,
    operation_quorum: Option<Quorum>,
) -> Option<Quorum> {
    let recorded = binding_of(record)
        .and_then(|b| b.quorum.as_ref())
        .and_then(|q| {
            Quorum::new(q.required, &q.approvers)
                .inspect_err(|e| tracing::error!(proposal_id = %record.proposal.id, error = %e, "stored policy quorum"))
                .ok()
        });
    match (operation_quorum, recorded) {
        (Some(own), Some(policy)) => own.and(&policy).or(Some(policy)),
        (own, policy) => policy.or(own),
    }
}

fn binding_of(record: &ProposalRecord) -> Option<&PolicyVerdict> {
    record.proposal.policy.as_ref()?.binding.as_ref()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
