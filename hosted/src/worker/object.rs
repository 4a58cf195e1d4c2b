//! One Durable Object per tenant: it owns the tenant's SQLite storage, routes its requests and
//! keeps its configuration, read from storage once and kept until the next load. MCP requests
//! go to a `tenant::TenantHub` made for the request, where each `execute` runs the core's
//! engine with the QuickJS driver; `admin/*` requests go to the admin API in `admin`.
//!
//! A run that waits for a person is decided either in the client's own forms (stateless
//! clients that declare form elicitation; see `rpc`) or through the admin endpoint:
//! `GET admin/pending` lists the undecided calls, `POST admin/approve` decides them. Both go
//! through the one `recorder`.

use std::cell::RefCell;
use std::rc::Rc;

use capabilities_core::limits::Limits;
use capabilities_core::surface::Surface;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use super::access::access_config;
use super::oauth::Refreshing;
use super::store::SqlStore;
use super::tenant::TenantHub;
use super::upstream::Sessions;
use crate::records::{Source, catalog, tenant_limits};
use crate::rpc;
use crate::split_tenant;

/// The largest request body accepted, in bytes.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What a tenant serves, read from storage.
pub(super) struct Loaded {
    pub(super) sources: Rc<Vec<Source>>,
    pub(super) surface: Surface,
    /// MCP sessions open with the sources, reused across runs.
    pub(super) sessions: Rc<Sessions>,
    /// The OAuth connections being refreshed, one refresh each at a time.
    pub(super) refreshing: Rc<Refreshing>,
}

#[durable_object]
pub struct Hub {
    state: State,
    env: Env,
    loaded: RefCell<Option<Rc<Loaded>>>,
}

impl DurableObject for Hub {
    fn new(state: State, env: Env) -> Self {
        Hub { state, env, loaded: RefCell::new(None) }
    }

    async fn fetch(&self, mut request: Request) -> Result<Response> {
        let path = request.path();
        let Some((tenant, rest)) = split_tenant(&path) else {
            return Response::error("not found", 404);
        };
        let tenant = tenant.to_owned();
        let body = request.bytes().await?;
        if body.len() > MAX_BODY {
            return Response::error(format!("the body is over {MAX_BODY} bytes"), 413);
        }
        match (request.method(), rest) {
            (worker::Method::Post, "mcp") => self.mcp(&tenant, &body).await,
            (worker::Method::Post, "admin/load") => self.load(&tenant, &body),
            (worker::Method::Get, "admin/runs") => self.runs(),
            (worker::Method::Get, "admin/pending") => self.pending(),
            (worker::Method::Post, "admin/approve") => self.approve(&tenant, &body).await,
            (worker::Method::Post, "hub/push") => self.push(&tenant, &account(&request).0, &body).await,
            (worker::Method::Get, "hub/status") => self.status(&tenant, &account(&request)),
            (worker::Method::Get, "inbox") => {
                self.inbox(&account(&request).1, &super::inbox::csrf_of(&request))
            }
            (worker::Method::Post, "inbox/decide") => self.inbox_decide(&body).await,
            (_, "mcp") => Response::error("this endpoint is stateless: POST JSON-RPC messages", 405),
            _ => Response::error("not found", 404),
        }
    }
}

/// Who the entry says signed in (`hub/*` and `inbox/*` are reached only through it): the
/// account key and the name to show (the key when the provider gave no name).
fn account(request: &Request) -> (String, String) {
    let header = |name: &str| request.headers().get(name).ok().flatten().unwrap_or_default();
    let account = header(super::ACCOUNT_HEADER);
    let name = Some(header(super::NAME_HEADER)).filter(|n| !n.is_empty()).unwrap_or_else(|| account.clone());
    (account, name)
}

impl Hub {
    pub(super) fn store(&self) -> Result<SqlStore> {
        SqlStore::open(self.state.storage()).map_err(|e| worker::Error::RustError(e.to_string()))
    }

    pub(super) fn env(&self) -> &Env {
        &self.env
    }

    /// Drops the cached configuration, so the next request reads it from storage again.
    pub(super) fn forget_loaded(&self) {
        self.loaded.borrow_mut().take();
    }

    fn loaded(&self, tenant: &str) -> Result<Rc<Loaded>> {
        if let Some(loaded) = self.loaded.borrow().as_ref() {
            return Ok(Rc::clone(loaded));
        }
        let store = self.store()?;
        let (sources, policy, problems) =
            store.config().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let timeout = store.upstream_timeout_ms().map_err(|e| worker::Error::RustError(e.to_string()))?;
        for problem in problems {
            worker::console_warn!("{problem}");
        }
        let issuer = access_config(&self.env).and_then(|c| c.ok()).map(|c| c.settings.issuer);
        let (surface, invalid) = Surface::from_config(
            catalog(&sources),
            policy,
            tenant_limits(timeout),
            crate::words(tenant, issuer.as_deref()),
        );
        if let Some(err) = invalid {
            worker::console_warn!("the policy is invalid ({err}); every tool asks until it is loaded again");
        }
        let loaded = Rc::new(Loaded {
            sources: Rc::new(sources),
            surface,
            sessions: Rc::default(),
            refreshing: Rc::default(),
        });
        *self.loaded.borrow_mut() = Some(Rc::clone(&loaded));
        Ok(loaded)
    }

    async fn mcp(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        let hub = TenantHub::new(tenant, self.loaded(tenant)?, self.store()?, &self.env);
        let answer = rpc::handle(body, &hub, &Limits::DEFAULT).await;
        if hub.policy_changed() {
            self.forget_loaded();
        }
        match answer {
            Some(answer) => Response::from_json(&answer),
            None => Ok(Response::empty()?.with_status(202)),
        }
    }
}
