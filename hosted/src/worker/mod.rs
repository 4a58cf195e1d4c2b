//! The Worker itself (wasm32 only): the `fetch` entry that checks tokens and hands each request
//! to its tenant's Durable Object, and the adapters the object plugs into the core's ports.
//!
//! Routes: `POST /t/<tenant>/mcp` (MCP; a bearer token from the `HUB_ACCESS_TOKEN` secret
//! when that secret is set), and the admin endpoint behind a bearer token from the
//! `HUB_ADMIN_TOKEN` secret, always: `POST /t/<tenant>/admin/load`, `GET /t/<tenant>/admin/runs`,
//! `GET /t/<tenant>/admin/pending` (runs waiting for a person, with their undecided calls) and
//! `POST /t/<tenant>/admin/approve` (`{"run": "<run id>", "choice": "once"|"run"|"always"|"deny",
//! "call": <n>}`; without `call`, every undecided call of the run).

mod admin;
mod oauth;
mod object;
mod platform;
mod recorder;
mod store;
mod tenant;
mod upstream;

use worker::{Context, Env, Request, Response, Result, event};

use crate::{same_secret, split_tenant};
use platform::secret_text;

/// The Durable Object namespace binding of the tenants' hubs.
pub(crate) const HUB_BINDING: &str = "HUB";

#[event(fetch)]
async fn fetch(request: Request, env: Env, _ctx: Context) -> Result<Response> {
    let path = request.path();
    let Some((tenant, rest)) = split_tenant(&path) else {
        return Response::error("not found: the hub serves /t/<tenant>/mcp", 404);
    };
    let token = match rest {
        "mcp" => secret_text(&env, "HUB_ACCESS_TOKEN"),
        "admin/load" | "admin/runs" | "admin/pending" | "admin/approve" => {
            match secret_text(&env, "HUB_ADMIN_TOKEN") {
                Some(secret) => Some(secret),
                None => {
                    return Response::error("the admin endpoint is off: set the HUB_ADMIN_TOKEN secret", 403);
                }
            }
        }
        _ => return Response::error("not found: the hub serves /t/<tenant>/mcp", 404),
    };
    if let Some(expected) = token {
        let given = request.headers().get("authorization")?.unwrap_or_default();
        let given = given.strip_prefix("Bearer ").unwrap_or_default();
        if !same_secret(given, &expected) {
            return Response::error("unauthorized: send the bearer token", 401);
        }
    }
    let stub = env.durable_object(HUB_BINDING)?.id_from_name(tenant)?.get_stub()?;
    stub.fetch_with_request(request).await
}
