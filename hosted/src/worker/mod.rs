//! The Worker itself (wasm32 only): the `fetch` entry that checks tokens and hands each request
//! to its tenant's Durable Object, and the adapters the objects plug into the core's ports.
//!
//! Routes for people and their MCP clients (when `HUB_PUBLIC_URL` is set; see `access`):
//! `POST /mcp`, the single address, its tenant taken from the OAuth access token (401 with the
//! resource metadata's address without one, 403 `insufficient_scope` without the `mcp` scope);
//! `/.well-known/oauth-protected-resource[/mcp]` and `/.well-known/oauth-authorization-server`;
//! `/oauth/*`, the authorization server, in the `Access` object.
//!
//! A named profile (sent by `hub push` or an admin load) is served at its own address under
//! the default one: `/mcp/<profile>` for people, `/t/<tenant>/mcp/<profile>` for operators,
//! under the same token as the default (OAuth's resource `/mcp` is a prefix of it).
//!
//! Routes for operators: `POST /t/<tenant>/mcp` (MCP; a bearer token from the
//! `HUB_ACCESS_TOKEN` secret when that secret is set, and refused without that secret while
//! sign-in is on, so no tenant is reachable around its owner's token), and the admin endpoint behind a bearer
//! token from the `HUB_ADMIN_TOKEN` secret, always: `POST /t/<tenant>/admin/load`,
//! `GET /t/<tenant>/admin/runs`, `GET /t/<tenant>/admin/pending` (runs waiting for a person,
//! with their undecided calls), `POST /t/<tenant>/admin/approve` (`{"run": "<run id>",
//! "choice": "once"|"run"|"always"|"deny", "call": <n>}`; without `call`, every undecided call
//! of the run) and `GET /admin/accounts` (who signed in, and their tenants).

mod access;
mod admin;
mod api;
mod blobs;
mod http;
mod idp;
mod inbox;
mod oauth;
mod object;
mod platform;
mod push;
mod recorder;
mod skills;
mod store;
mod tenant;
mod upstream;

use worker::{Context, Env, Headers, Method, Request, RequestInit, Response, Result, event};

use crate::access::token::Claims;
use crate::access::{SCOPE_ADMIN, SCOPE_MCP, has_scope, metadata, token};
use crate::{same_secret, split_tenant};
use access::{ACCESS_BINDING, ACCESS_OBJECT, AccessConfig, access_config, now_s};
use platform::secret_text;

/// The Durable Object namespace binding of the tenants' hubs.
pub(crate) const HUB_BINDING: &str = "HUB";
const NOT_FOUND: &str = "not found: the hub serves /mcp (OAuth) and /t/<tenant>/mcp, and a profile at /mcp/<profile> and /t/<tenant>/mcp/<profile>";

#[event(fetch)]
async fn fetch(request: Request, env: Env, _ctx: Context) -> Result<Response> {
    let path = request.path();
    if path.starts_with("/t/") {
        return operator(request, env, &path).await;
    }
    let config = match access_config(&env) {
        Some(Ok(config)) => config,
        Some(Err(why)) => return Response::error(format!("sign-in is misconfigured: {why}"), 503),
        None => return Response::error(NOT_FOUND, 404),
    };
    let settings = &config.settings;
    match path.as_str() {
        p if p == "/mcp" || p.starts_with("/mcp/") => mcp(request, &env, &config, &p[1..]).await,
        "/hub/push" | "/hub/push/files" | "/hub/status" => hub_api(request, &env, &config, &path).await,
        "/inbox" | "/inbox/decide" => inbox::entry(request, &env, &config, &path).await,
        "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp" => {
            public_json(&metadata::protected_resource(settings))
        }
        "/.well-known/oauth-authorization-server" => public_json(&metadata::authorization_server(settings)),
        "/admin/accounts" => {
            if !admin_allowed(&request, &env)? {
                return Response::error("unauthorized: send the admin bearer token", 401);
            }
            env.durable_object(ACCESS_BINDING)?.get_by_name(ACCESS_OBJECT)?.fetch_with_request(request).await
        }
        p if p.starts_with("/oauth/") => {
            env.durable_object(ACCESS_BINDING)?.get_by_name(ACCESS_OBJECT)?.fetch_with_request(request).await
        }
        _ => Response::error(NOT_FOUND, 404),
    }
}

fn public_json(value: &serde_json::Value) -> Result<Response> {
    let response = Response::from_json(value)?;
    response.headers().set("access-control-allow-origin", "*")?;
    response.headers().set("cache-control", "public, max-age=300")?;
    Ok(response)
}

fn admin_allowed(request: &Request, env: &Env) -> Result<bool> {
    let Some(expected) = secret_text(env, "HUB_ADMIN_TOKEN") else { return Ok(false) };
    let given = request.headers().get("authorization")?.unwrap_or_default();
    Ok(same_secret(given.strip_prefix("Bearer ").unwrap_or_default(), &expected))
}

/// The claims of the request's access token when it has `scope`; otherwise the answer that
/// says where to sign in (401) or which scope is missing (403).
fn signed_in(
    request: &Request,
    config: &AccessConfig,
    scope: &str,
) -> Result<std::result::Result<Claims, Response>> {
    let settings = &config.settings;
    let refuse = |status: u16, message: &str, header: &str| challenge(status, message, header).map(Err);
    let given = request.headers().get("authorization")?.unwrap_or_default();
    let Some(bearer) = given.strip_prefix("Bearer ").filter(|t| !t.is_empty()) else {
        return refuse(
            401,
            "unauthorized: sign in (OAuth) to use this hub",
            &metadata::challenge(settings, None),
        );
    };
    let claims = match token::verify(&config.key, bearer, &settings.resource(), now_s()) {
        Ok(claims) => claims,
        Err(why) => {
            let why = why.to_string();
            return refuse(401, &format!("unauthorized: {why}"), &metadata::challenge(settings, Some(&why)));
        }
    };
    if !has_scope(&claims.scope, scope) {
        return refuse(
            403,
            &format!("forbidden: the token lacks the `{scope}` scope"),
            &metadata::insufficient_scope(settings, scope),
        );
    }
    if split_tenant(&format!("/t/{}/mcp", claims.tenant)).is_none() {
        return refuse(401, "the token names no valid tenant", &metadata::challenge(settings, None));
    }
    Ok(Ok(claims))
}

/// `/mcp` (or a profile's `/mcp/<profile>`, `rest` without its `/`): the access token's
/// tenant, or the challenge that says where to sign in.
async fn mcp(mut request: Request, env: &Env, config: &AccessConfig, rest: &str) -> Result<Response> {
    let claims = match signed_in(&request, config, SCOPE_MCP)? {
        Ok(claims) => claims,
        Err(refused) => return Ok(refused),
    };
    let headers = Headers::new();
    for name in ["content-type", "accept", "mcp-protocol-version", "mcp-session-id"] {
        if let Some(value) = request.headers().get(name)? {
            headers.set(name, &value)?;
        }
    }
    // Only a profile's name goes on into the object's path.
    if let Some(profile) = rest.strip_prefix("mcp/")
        && capabilities_core::profile::check_name(profile).is_err()
    {
        return Response::error(format!("there is no profile `{profile}` on this hub"), 404);
    }
    forward(&mut request, env, &claims.tenant, rest, headers).await
}

/// `/hub/push`, `/hub/push/files` and `/hub/status`, for `hub push` and `hub status`: a token with the
/// `hub:admin` scope, its tenant only.
async fn hub_api(mut request: Request, env: &Env, config: &AccessConfig, path: &str) -> Result<Response> {
    let claims = match signed_in(&request, config, SCOPE_ADMIN)? {
        Ok(claims) => claims,
        Err(refused) => return Ok(refused),
    };
    let wanted = if path == "/hub/status" { Method::Get } else { Method::Post };
    if request.method() != wanted {
        return Response::error(format!("{path} takes {wanted}"), 405);
    }
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set(ACCOUNT_HEADER, &claims.account)?;
    headers.set(NAME_HEADER, &claims.name)?;
    forward(&mut request, env, &claims.tenant, path.trim_start_matches('/'), headers).await
}

/// The header a forwarded request names its signed-in account in. Only this entry sets it:
/// the object's `hub/*` and `inbox/*` routes are reached through no other path.
pub(crate) const ACCOUNT_HEADER: &str = "x-hub-account";
/// The header with the signed-in person's name, set the same way.
pub(crate) const NAME_HEADER: &str = "x-hub-name";

/// Hands `request` (its method and body, with `headers`) to `tenant`'s object at `rest`.
pub(crate) async fn forward(
    request: &mut Request,
    env: &Env,
    tenant: &str,
    rest: &str,
    headers: Headers,
) -> Result<Response> {
    let method = request.method();
    let mut init = RequestInit::new();
    init.with_method(method.clone()).with_headers(headers);
    if method == Method::Post {
        let body = request.bytes().await?;
        init.with_body(Some(worker::js_sys::Uint8Array::from(body.as_slice()).into()));
    }
    let forwarded = Request::new_with_init(&format!("https://hub.internal/t/{tenant}/{rest}"), &init)?;
    let stub = env.durable_object(HUB_BINDING)?.id_from_name(tenant)?.get_stub()?;
    stub.fetch_with_request(forwarded).await
}

fn challenge(status: u16, message: &str, header: &str) -> Result<Response> {
    let response = Response::error(message, status)?;
    response.headers().set("www-authenticate", header)?;
    Ok(response)
}

/// `/t/<tenant>/…`: the operator's paths.
async fn operator(request: Request, env: Env, path: &str) -> Result<Response> {
    let Some((tenant, rest)) = split_tenant(path) else {
        return Response::error(NOT_FOUND, 404);
    };
    let token = match rest {
        // With sign-in on, people reach their tenant through /mcp only: the operator's path to
        // any tenant is open only behind the operator's own token.
        r if r == "mcp" || r.starts_with("mcp/") => match secret_text(&env, "HUB_ACCESS_TOKEN") {
            None if access_config(&env).is_some() => {
                return Response::error(
                    "the operator's /t/<tenant>/mcp needs the HUB_ACCESS_TOKEN secret while sign-in is on: \
                     people use /mcp",
                    403,
                );
            }
            token => token,
        },
        "admin/load" | "admin/runs" | "admin/pending" | "admin/approve" => {
            match secret_text(&env, "HUB_ADMIN_TOKEN") {
                Some(secret) => Some(secret),
                None => {
                    return Response::error("the admin endpoint is off: set the HUB_ADMIN_TOKEN secret", 403);
                }
            }
        }
        _ => return Response::error(NOT_FOUND, 404),
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
