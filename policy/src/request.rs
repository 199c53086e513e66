//! A proposal as a Cedar request: the session as principal (a member of
//! its principal and, for a hook, its agent), the operation as action, the
//! target or the operation as resource, and the context (typed arguments,
//! time, head, class, and a shell call's words), with the entities they name.
//!
//! This module owns that mapping. It must not approximate: arguments go
//! through `value.rs`, which refuses what Cedar cannot hold exactly. It
//! reads no clock: the time is the caller's.

use std::collections::{HashMap, HashSet};

use cedar_policy::{
    Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, Request, RestrictedExpression,
};
use serde_json::Value;

use crate::argv::{self, ARGV_ATTRIBUTE};
use crate::schema::GeneratedSchema;
use crate::{Head, value};

/// One proposal, as a policy is asked about it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyRequest<'a> {
    /// The proposing principal (`Principal::"<principal>"`).
    pub principal: &'a str,
    /// The coding agent a hook named (`Agent::"<agent>"`), or `None`.
    pub agent: Option<&'a str>,
    /// The session (`Session::"<session>"`, the request's principal).
    pub session: &'a str,
    /// The operation's registry name (`Action::"<operation>"`).
    pub operation: &'a str,
    /// The arguments, already validated against the operation's schema;
    /// the proof binds their canonical JSON, never this view of them.
    pub arguments: &'a Value,
    /// When, in unix seconds (`context.time`).
    pub time_unix: i64,
    /// The head it came through (`context.head`).
    pub head: Head,
}

/// Why a request could not be put to a policy. `NotRepresentable` is the
/// refusal of arguments Cedar cannot hold exactly.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The operation is not in the schema's registry.
    #[error("operation `{0}` is not in the registry the policy schema was generated from")]
    UnknownOperation(String),
    /// A principal, session or agent name is empty.
    #[error("the request's {0} is empty")]
    EmptyName(&'static str),
    /// An argument the schema types has a value Cedar cannot hold exactly.
    #[error("argument {pointer} cannot be shown to the policy exactly: {reason}")]
    NotRepresentable {
        /// The argument's JSON pointer (`/` for the whole arguments).
        pointer: String,
        /// Why.
        reason: String,
    },
    /// Cedar refused the request built here (a bug: the request follows
    /// the generated schema).
    #[error("Cedar refused the request: {0}")]
    Cedar(String),
}

/// A request as Cedar evaluates it.
#[derive(Debug)]
pub struct CedarRequest {
    /// The request, validated against the schema.
    pub request: Request,
    /// The entities it names: session, principal, agent, resource.
    pub entities: Entities,
}

fn uid(type_name: &EntityTypeName, id: &str) -> EntityUid {
    EntityUid::from_type_name_and_id(type_name.clone(), EntityId::new(id))
}

impl PolicyRequest<'_> {
    /// The Cedar request and entities of this request under `schema`.
    pub fn to_cedar(&self, schema: &GeneratedSchema) -> Result<CedarRequest, RequestError> {
        let view = schema
            .operations
            .get(self.operation)
            .ok_or_else(|| RequestError::UnknownOperation(self.operation.to_owned()))?;
        for (field, name) in [("principal", self.principal), ("session", self.session)]
            .into_iter()
            .chain(self.agent.map(|a| ("agent", a)))
        {
            if name.is_empty() {
                return Err(RequestError::EmptyName(field));
            }
        }
        let cedar = |e: &dyn std::fmt::Display| RequestError::Cedar(e.to_string());

        let arguments = value::record(&view.arguments, self.arguments)?;
        let argv = argv::value(self.operation, self.arguments)
            .map(|words| {
                Ok::<_, RequestError>((ARGV_ATTRIBUTE.to_owned(), words.into_expression()?))
            })
            .transpose()?;
        let context = Context::from_pairs(
            [
                ("arguments".to_owned(), value::record_expression(arguments)?),
                (
                    "time".to_owned(),
                    RestrictedExpression::new_long(self.time_unix),
                ),
                (
                    "head".to_owned(),
                    RestrictedExpression::new_string(self.head.as_str().to_owned()),
                ),
                (
                    "class".to_owned(),
                    RestrictedExpression::new_string(view.class.as_str().to_owned()),
                ),
            ]
            .into_iter()
            .chain(argv),
        )
        .map_err(|e| cedar(&e))?;

        let types = &schema.types;
        let principal = uid(&types.principal, self.principal);
        let mut entities = vec![Entity::new_no_attrs(principal.clone(), HashSet::new())];
        let mut parents = HashSet::from([principal]);
        if let Some(agent) = self.agent {
            let agent = uid(&types.agent, agent);
            entities.push(Entity::new_no_attrs(agent.clone(), HashSet::new()));
            parents.insert(agent);
        }
        let session = uid(&types.session, self.session);
        entities.push(Entity::new_no_attrs(session.clone(), parents));

        let target = view
            .target
            .as_deref()
            .and_then(|pointer| self.arguments.pointer(pointer))
            .and_then(Value::as_str);
        let resource = match target {
            Some(target) => {
                let resource = uid(&types.target, target);
                let attrs = HashMap::from([(
                    "value".to_owned(),
                    RestrictedExpression::new_string(target.to_owned()),
                )]);
                entities.push(
                    Entity::new(resource.clone(), attrs, HashSet::new()).map_err(|e| cedar(&e))?,
                );
                resource
            }
            None => {
                let resource = uid(&types.operation, self.operation);
                entities.push(Entity::new_no_attrs(resource.clone(), HashSet::new()));
                resource
            }
        };

        let action = uid(&types.action, self.operation);
        let request = Request::new(session, action, resource, context, Some(schema.cedar()))
            .map_err(|e| cedar(&e))?;
        let entities = Entities::from_entities(entities, None).map_err(|e| cedar(&e))?;
        Ok(CedarRequest { request, entities })
    }
}
