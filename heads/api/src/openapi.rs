//! The OpenAPI 3.1 document of the API, generated from the table of data
//! operations and the registry (one path per registry operation for
//! `propose`, so each carries its own argument schema), and the API's
//! [`Exposure`]s read back from that document for the parity gate.
//!
//! The router is built from the same table (`routes`), and a test
//! checks that every path and method here is served. Nothing in this module
//! decides what a request may do.

use countersign_registry::{Class, Registry};
use countersign_surface::operations::{DataOperation, Exposure, Head, ParamSchema};
use countersign_surface::{propose_tool_name, results};
use serde_json::{Map, Value, json};

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// The health endpoint.
pub const HEALTH_PATH: &str = "/healthz";

/// Operations whose result is an execution outcome: their refusals are
/// outcomes too (`ok: false`, `status: refused`), not the generic refusal.
pub(crate) fn returns_outcome(op: &DataOperation) -> bool {
    (op.result)() == results::outcome_schema()
}

/// The path parameters of a route template, in order.
pub(crate) fn path_params(route: &str) -> Vec<&str> {
    route
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

/// The body of a 4xx/5xx response.
pub fn error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["error", "message"],
        "properties": {"error": {"type": "string"}, "message": {"type": "string"}}
    })
}

/// One OpenAPI operation object for `op` at `route`, with `params` the
/// merged parameter schema.
fn operation_object(
    op: &DataOperation,
    key: &str,
    operation_id: &str,
    method: &str,
    route: &str,
    params: &Value,
) -> Value {
    let props = params["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = params["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let in_path = path_params(route);
    let mut parameters = Vec::new();
    for name in &in_path {
        if let Some(schema) = props.get(*name) {
            parameters
                .push(json!({"name": name, "in": "path", "required": true, "schema": schema}));
        }
    }
    let mut body_props = Map::new();
    let mut body_required = Vec::new();
    for (name, schema) in &props {
        if in_path.contains(&name.as_str()) {
            continue;
        }
        if method == "GET" {
            parameters.push(json!({"name": name, "in": "query", "required": required.contains(&name.as_str()), "schema": schema}));
        } else {
            body_props.insert(name.clone(), schema.clone());
            if required.contains(&name.as_str()) {
                body_required.push(Value::String(name.clone()));
            }
        }
    }
    let result = (op.result)();
    let ok_schema = if returns_outcome(op) {
        result
    } else {
        json!({"oneOf": [result, {"$ref": "#/components/schemas/Refusal"}]})
    };
    let mut object = json!({
        "operationId": operation_id,
        "summary": op.description,
        "x-countersign-operation": key,
        "x-countersign-class": op.class.as_str(),
        "parameters": parameters,
        "responses": {
            "200": {
                "description": "The result, or a refusal (`ok: false`, nothing applied).",
                "content": {"application/json": {"schema": ok_schema}}
            },
            "400": error_response("Malformed request: unknown field, duplicate key, wrong type, or a secret outside the body."),
            "401": error_response("Missing, invalid, expired, revoked or wrong-audience bearer credential."),
            "403": error_response("Cross-site or DNS-rebinding request (Host, Origin, Sec-Fetch-Site)."),
            "404": error_response("No such operation."),
            "413": error_response("The body is larger than the limit."),
            "415": error_response("The body is not application/json."),
            "500": error_response("Internal fault (detail in the server log only)."),
            "503": error_response("The signer is unavailable, or the request timed out.")
        }
    });
    if method != "GET" {
        let mut body =
            json!({"type": "object", "additionalProperties": false, "properties": body_props});
        if !body_required.is_empty() {
            body["required"] = Value::Array(body_required.clone());
        }
        object["requestBody"] = json!({
            "required": !body_required.is_empty(),
            "content": {"application/json": {"schema": body}}
        });
    }
    object
}

/// The OpenAPI 3.1 document for `table` over `registry`.
pub fn document(table: &[DataOperation], registry: &Registry) -> Value {
    let mut paths = Map::new();
    let mut add = |route: String, method: &str, object: Value| {
        let entry = paths.entry(route).or_insert_with(|| json!({}));
        entry[method.to_ascii_lowercase()] = object;
    };
    for op in table {
        let Some((method, route)) = op.entries.api() else {
            continue;
        };
        match op.params {
            ParamSchema::Propose => {
                for reg in registry.proposable() {
                    let key = format!("{}:{}", op.name, reg.name);
                    let concrete = route.replace("{operation}", &reg.name);
                    let params = op.params.schema(Some(reg));
                    let id = propose_tool_name(&reg.name);
                    add(
                        concrete.clone(),
                        method,
                        operation_object(op, &key, &id, method, &concrete, &params),
                    );
                }
            }
            ParamSchema::Fixed(_) => {
                let params = op.params.schema(None);
                add(
                    route.to_string(),
                    method,
                    operation_object(op, op.name, op.name, method, route, &params),
                );
            }
        }
    }
    add(
        HEALTH_PATH.to_string(),
        "GET",
        json!({
            "operationId": "health",
            "summary": "Liveness: reveals nothing private.",
            "security": [],
            "responses": {"200": {"description": "Serving.", "content": {"application/json": {"schema": {
                "type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}}}}}
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "countersign private API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The data operations of countersign over HTTP, for programs that are not MCP clients. Every data endpoint requires a bearer credential created with `countersign api token create`. Proofs travel only in the `proof` field of a request body. Approving and denying are not API operations. The same operations, with the same parameter and result schemas, are on the CLI and MCP (see docs/operations.md). This document itself is served at /openapi.json to authenticated callers."
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "cs1_<id>_<secret>, from `countersign api token create`"}},
            "schemas": {"Refusal": results::refusal_schema(), "Error": error_schema()}
        }
    })
}

/// What the API exposes, read back from an OpenAPI document: one
/// [`Exposure`] per operation, with the parameters merged from its path,
/// query and body, and the result schema of its 200 response.
pub fn exposures_from_document(doc: &Value) -> Vec<Exposure> {
    let mut out = Vec::new();
    let Some(paths) = doc["paths"].as_object() else {
        return out;
    };
    for (route, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        for (method, object) in item {
            let Some(key) = object["x-countersign-operation"].as_str() else {
                continue;
            };
            let mut props = Map::new();
            let mut required = Vec::new();
            for p in object["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap_or_default().to_string();
                if p["required"] == true {
                    required.push(Value::String(name.clone()));
                }
                props.insert(name, p["schema"].clone());
            }
            let body = &object["requestBody"]["content"]["application/json"]["schema"];
            if let Some(body_props) = body["properties"].as_object() {
                for (name, schema) in body_props {
                    props.insert(name.clone(), schema.clone());
                }
            }
            required.extend(body["required"].as_array().into_iter().flatten().cloned());
            let mut params =
                json!({"type": "object", "additionalProperties": false, "properties": props});
            if !required.is_empty() {
                params["required"] = Value::Array(required);
            }
            let ok = &object["responses"]["200"]["content"]["application/json"]["schema"];
            let result = match ok["oneOf"].as_array() {
                Some(alts)
                    if alts.len() == 2 && alts[1]["$ref"] == "#/components/schemas/Refusal" =>
                {
                    alts[0].clone()
                }
                _ => ok.clone(),
            };
            out.push(Exposure {
                operation: key.to_string(),
                head: Head::Api,
                entry: format!("{} {route}", method.to_ascii_uppercase()),
                class: if object["x-countersign-class"] == "read" {
                    Class::Read
                } else {
                    Class::Write
                },
                params,
                result,
            });
        }
    }
    out
}
