//! One Durable Object per tenant: it owns the tenant's SQLite storage and answers its MCP
//! requests and admin loads. The configuration is read from storage once and kept until the
//! next load; each `execute` runs the core's engine with the QuickJS driver right here.

use std::cell::RefCell;
use std::rc::Rc;

use capabilities_core::limits::Limits;
use capabilities_core::policy::CompiledPolicy;
use capabilities_core::ports::LocalBoxFuture;
use capabilities_core::run::Engine;
use capabilities_core::run::RunError;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::surface::Surface;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::tools::{self, ExecuteRequest};
use serde_json::Value;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use super::platform::{WorkerClock, WorkerEntropy, now_micros, secret_text};
use super::store::SqlStore;
use super::upstream::{FetchUpstream, SealedSecrets};
use crate::records::{Load, Source, catalog, tenant_limits};
use crate::rpc;
use crate::seal::SealKey;
use crate::split_tenant;

/// Guest compute time counted per QuickJS interrupt-handler call. QuickJS calls the handler
/// about every 10,000 bytecode operations; counting each call as 1 ms keeps the budget well
/// on the safe side of real time.
const MICROS_PER_TICK: u64 = 1_000;

/// The largest request body accepted, in bytes.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What a tenant serves, read from storage.
struct Loaded {
    sources: Rc<Vec<Source>>,
    surface: Surface,
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
            (worker::Method::Get, "admin/runs") => {
                let runs = self.store()?.runs().map_err(|e| worker::Error::RustError(e.to_string()))?;
                Response::from_json(&runs)
            }
            (_, "mcp") => Response::error("this endpoint is stateless: POST JSON-RPC messages", 405),
            _ => Response::error("not found", 404),
        }
    }
}

impl Hub {
    fn store(&self) -> Result<SqlStore> {
        SqlStore::open(self.state.storage()).map_err(|e| worker::Error::RustError(e.to_string()))
    }

    fn loaded(&self) -> Result<Rc<Loaded>> {
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
        let policy = CompiledPolicy::new(policy).unwrap_or_else(|err| {
            worker::console_warn!("the policy is invalid ({err}); every tool asks until it is loaded again");
            CompiledPolicy::default()
        });
        let surface = Surface::new(catalog(&sources), policy, tenant_limits(timeout));
        let loaded = Rc::new(Loaded { sources: Rc::new(sources), surface });
        *self.loaded.borrow_mut() = Some(Rc::clone(&loaded));
        Ok(loaded)
    }

    async fn mcp(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        let loaded = self.loaded()?;
        let key = secret_text(&self.env, "HUB_SECRETS_KEY").and_then(|s| SealKey::derive(&s).ok());
        let hub = TenantHub { tenant: tenant.to_owned(), loaded, store: self.store()?, key };
        match rpc::handle(body, &hub, &Limits::DEFAULT).await {
            Some(answer) => Response::from_json(&answer),
            None => Ok(Response::empty()?.with_status(202)),
        }
    }

    fn load(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        let load: Load = match serde_json::from_slice(body) {
            Ok(load) => load,
            Err(err) => return Response::error(format!("the load is not valid JSON for a hub: {err}"), 400),
        };
        if let Err(err) = load.check() {
            return Response::error(err.to_string(), 400);
        }
        let key = match secret_text(&self.env, "HUB_SECRETS_KEY").map(|s| SealKey::derive(&s)) {
            Some(Ok(key)) => key,
            _ if load.secrets.is_empty() => SealKey::derive("no secrets are sealed with this key")
                .map_err(|e| worker::Error::RustError(e.to_string()))?,
            _ => return Response::error("secrets cannot be stored: set the HUB_SECRETS_KEY secret", 400),
        };
        let mut nonce = || {
            let mut bytes = [0u8; 12];
            capabilities_core::ports::Entropy::fill(&WorkerEntropy, &mut bytes);
            bytes
        };
        self.store()?
            .replace(&load, &key, tenant, &mut nonce)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        self.loaded.borrow_mut().take();
        let tools: usize = load.sources.iter().map(|s| s.manifest.tools.len()).sum();
        Response::from_json(&serde_json::json!({
            "sources": load.sources.len(),
            "tools": tools,
            "secrets": load.secrets.iter().map(|s| s.values.len()).sum::<usize>(),
        }))
    }
}

/// One request's view of the tenant: the surface for `search`/`describe`, the engine's ports
/// for `execute`.
struct TenantHub {
    tenant: String,
    loaded: Rc<Loaded>,
    store: SqlStore,
    key: Option<SealKey>,
}

impl rpc::Hub for TenantHub {
    fn lookup(&self, tool: &str, arguments: &Value) -> std::result::Result<String, String> {
        if tool == tools::SEARCH {
            self.loaded.surface.search(arguments)
        } else {
            self.loaded.surface.describe(arguments)
        }
    }

    fn execute<'a>(&'a self, request: ExecuteRequest) -> LocalBoxFuture<'a, Envelope> {
        Box::pin(async move {
            let sandbox = QuickJs::new(ComputeMeter::ticks_with_wall_clock(MICROS_PER_TICK, now_micros));
            let upstream = FetchUpstream { sources: Rc::clone(&self.loaded.sources) };
            let secrets = SealedSecrets {
                tenant: self.tenant.clone(),
                sources: Rc::clone(&self.loaded.sources),
                store: self.store.clone(),
                key: self.key.clone(),
            };
            let surface = &self.loaded.surface;
            let engine = Engine {
                catalog: &surface.catalog,
                policy: &surface.policy,
                lookup: surface,
                sandbox: &sandbox,
                upstream: &upstream,
                secrets: &secrets,
                store: &self.store,
                clock: &WorkerClock,
                entropy: &WorkerEntropy,
                limits: surface.limits,
            };
            match request {
                ExecuteRequest::Code(code) => engine.execute(&code).await,
                ExecuteRequest::Resume(id) => engine.resume(&id).await,
                other => Envelope::failure(
                    "",
                    RunError::new("unsupported", format!("{other:?} is not served here"), None),
                ),
            }
        })
    }
}
