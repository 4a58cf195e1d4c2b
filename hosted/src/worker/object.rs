//! One Durable Object per tenant: it owns the tenant's SQLite storage and answers its MCP
//! requests and admin loads. The configuration is read from storage once and kept until the
//! next load; each `execute` runs the core's engine with the QuickJS driver right here.
//!
//! A run that waits for a person is decided either in the client's own forms (stateless
//! clients that declare form elicitation; see `rpc`) or through the admin endpoint:
//! `GET admin/pending` lists the undecided calls, `POST admin/approve` decides them. Both go
//! through the one `recorder`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use capabilities_core::approval::rounds;
use capabilities_core::approval::state::{ApprovalKey, NONCE_BYTES, StateError};
use capabilities_core::approval::{Channel, Choice};
use capabilities_core::limits::Limits;
use capabilities_core::policy::CompiledPolicy;
use capabilities_core::ports::LocalBoxFuture;
use capabilities_core::ports::{Clock, Entropy};
use capabilities_core::record::RunError;
use capabilities_core::run::Engine;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::surface::Surface;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::tools::{self, ExecuteRequest};
use serde_json::{Map, Value, json};
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use super::platform::{WorkerClock, WorkerEntropy, now_micros, secret_text};
use super::recorder;
use super::store::SqlStore;
use super::upstream::{FetchUpstream, SealedSecrets, Sessions};
use crate::records::{Load, Source, catalog, tenant_limits};
use crate::rpc;
use crate::seal::SealKey;
use crate::split_tenant;

/// Guest compute time counted per QuickJS interrupt-handler call. QuickJS calls the handler
/// about every 10,000 bytecode operations; counting each call as 1 ms keeps the budget well
/// on the safe side of real time.
const MICROS_PER_TICK: u64 = 1_000;

/// What the approval key is derived for, from `HUB_APPROVAL_KEY` or else `HUB_SECRETS_KEY`.
const APPROVAL_KEY_LABEL: &str = "capabilities-hosted/approval-state/v1";

/// The largest request body accepted, in bytes.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What a tenant serves, read from storage.
struct Loaded {
    sources: Rc<Vec<Source>>,
    surface: Surface,
    /// MCP sessions open with the sources, reused across runs.
    sessions: Rc<Sessions>,
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
            (worker::Method::Get, "admin/pending") => self.pending(),
            (worker::Method::Post, "admin/approve") => self.approve(&tenant, &body).await,
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
        let loaded = Rc::new(Loaded { sources: Rc::new(sources), surface, sessions: Rc::default() });
        *self.loaded.borrow_mut() = Some(Rc::clone(&loaded));
        Ok(loaded)
    }

    async fn mcp(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        let loaded = self.loaded()?;
        let key = secret_text(&self.env, "HUB_SECRETS_KEY").and_then(|s| SealKey::derive(&s).ok());
        let hub = TenantHub {
            tenant: tenant.to_owned(),
            loaded,
            store: self.store()?,
            key,
            approval_key: approval_key(&self.env),
            policy_changed: Cell::new(false),
        };
        let answer = rpc::handle(body, &hub, &Limits::DEFAULT).await;
        if hub.policy_changed.get() {
            self.loaded.borrow_mut().take();
        }
        match answer {
            Some(answer) => Response::from_json(&answer),
            None => Ok(Response::empty()?.with_status(202)),
        }
    }

    /// The runs waiting for a person, each with its undecided calls (`call` is the number to
    /// name in `admin/approve`).
    fn pending(&self) -> Result<Response> {
        let now = WorkerClock.now_ms();
        let runs = self.store()?.waiting_runs().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let listed: Vec<Value> = runs
            .iter()
            .filter_map(|run| {
                let calls = rounds::undecided(run, now);
                (!calls.is_empty()).then(|| {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|p| {
                            let mut value = serde_json::to_value(p).unwrap_or_default();
                            value["call"] = json!(p.seq);
                            value
                        })
                        .collect();
                    json!({ "runId": run.id, "status": "awaiting_approval", "pending": calls })
                })
            })
            .collect();
        Response::from_json(&listed)
    }

    /// A person's decision from the admin endpoint: `{"run", "choice", "call"?}`, every
    /// undecided call of the run when `call` is absent. The run continues on the next
    /// `execute {"resume": run}`.
    async fn approve(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Approve {
            run: String,
            choice: String,
            #[serde(default)]
            call: Option<u32>,
        }
        let approve: Approve = match serde_json::from_slice(body) {
            Ok(approve) => approve,
            Err(err) => {
                return Response::error(
                    format!(
                        "send {{\"run\": \"<run id>\", \"choice\": \"once|run|always|deny\", \"call\": <n>}}: {err}"
                    ),
                    400,
                );
            }
        };
        let Some(choice) = Choice::parse(&approve.choice) else {
            return Response::error(
                format!("`{}` is not a choice: use once, run, always or deny", approve.choice),
                400,
            );
        };
        let store = self.store()?;
        let now = WorkerClock.now_ms();
        let run = store.run_now(&approve.run).map_err(|e| worker::Error::RustError(e.to_string()))?;
        let Some(run) = run else {
            return Response::error(
                format!(
                    "there is no run `{}`; GET /t/{tenant}/admin/pending lists the runs that wait",
                    approve.run
                ),
                404,
            );
        };
        let decisions: Vec<(String, Choice)> = rounds::undecided(&run, now)
            .into_iter()
            .filter(|p| approve.call.is_none_or(|call| p.seq == call))
            .map(|p| (p.id, choice))
            .collect();
        if decisions.is_empty() {
            let what =
                approve.call.map_or("no undecided call".to_owned(), |n| format!("no undecided call {n}"));
            return Response::error(
                format!("run `{}` has {what}; GET /t/{tenant}/admin/pending lists what it waits for", run.id),
                409,
            );
        }
        match recorder::record_checked(&store, &run.id, &decisions, Channel::Dashboard, now, |_| Ok(())).await
        {
            Ok(recorded) => {
                if recorded.policy_changed {
                    self.loaded.borrow_mut().take();
                }
                let decided: Vec<Value> = recorded
                    .decided
                    .iter()
                    .map(|(p, choice)| json!({ "call": p.seq, "address": p.address, "choice": choice }))
                    .collect();
                Response::from_json(&json!({
                    "runId": run.id,
                    "decided": decided,
                    "allDecided": recorded.all_decided,
                    "next": format!("call execute with {{\"resume\": \"{}\"}} to continue the run", run.id),
                }))
            }
            Err(refused) => Response::error(refused.message, refused.status),
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

/// The key approval states are signed with: derived from the `HUB_APPROVAL_KEY` secret, or
/// else from `HUB_SECRETS_KEY` (with its own label, so it is unrelated to the sealing key).
/// Without either, clients are not handed forms and a person decides through the admin
/// endpoint.
fn approval_key(env: &Env) -> Option<ApprovalKey> {
    let secret = secret_text(env, "HUB_APPROVAL_KEY").or_else(|| secret_text(env, "HUB_SECRETS_KEY"))?;
    Some(ApprovalKey::derive(secret.as_bytes(), APPROVAL_KEY_LABEL))
}

/// One request's view of the tenant: the surface for `search`/`describe`, the engine's ports
/// for `execute`, and the approval key for the client's forms.
struct TenantHub {
    tenant: String,
    loaded: Rc<Loaded>,
    store: SqlStore,
    key: Option<SealKey>,
    approval_key: Option<ApprovalKey>,
    /// Set when an answer added a policy rule, so the object drops its cached configuration.
    policy_changed: Cell<bool>,
}

impl TenantHub {
    /// Records one round's answers; the run they name.
    async fn record_round(
        &self,
        key: &ApprovalKey,
        request_state: &str,
        responses: Option<&Map<String, Value>>,
    ) -> std::result::Result<(String, bool), String> {
        let now = WorkerClock.now_ms();
        let retry = rounds::read_json(key, request_state, responses, now).map_err(|e| e.to_string())?;
        for answered in &retry.answered {
            let claims = &answered.claims;
            // The recorder refuses a run that waits for nothing and a call it does not wait
            // for; the state must also name the call's place in the run.
            let run = self.store.run_now(&retry.run_id).map_err(|e| e.to_string())?;
            let pending = run.and_then(|run| run.pending.into_iter().find(|p| p.id == claims.pending_id));
            if pending.is_some_and(|p| p.seq != claims.seq) {
                return Err(StateError::Mismatch.to_string());
            }
            let decision = [(claims.pending_id.clone(), answered.choice)];
            let recorded = recorder::record_checked(
                &self.store,
                &retry.run_id,
                &decision,
                Channel::Elicitation,
                now,
                |store| match store.spend_nonce(&claims.run_id, &claims.nonce) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err(StateError::Used.to_string()),
                    Err(err) => Err(err.to_string()),
                },
            )
            .await
            .map_err(|refused| refused.message)?;
            if recorded.policy_changed {
                self.policy_changed.set(true);
            }
        }
        Ok((retry.run_id, !retry.answered.is_empty()))
    }
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
            let upstream = FetchUpstream {
                sources: Rc::clone(&self.loaded.sources),
                sessions: Rc::clone(&self.loaded.sessions),
            };
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
                decide_later: &|run_id| later(&self.tenant, run_id),
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

    fn ask<'a>(&'a self, run_id: &'a str) -> LocalBoxFuture<'a, std::result::Result<Option<Value>, String>> {
        Box::pin(async move {
            let Some(key) = &self.approval_key else {
                return Err(format!(
                    "this hub cannot hand out approval forms (set the HUB_APPROVAL_KEY secret); a person \
                     decides with POST /t/{}/admin/approve",
                    self.tenant
                ));
            };
            let now = WorkerClock.now_ms();
            let run = self.store.run_now(run_id).map_err(|e| e.to_string())?;
            let calls = run.map(|run| rounds::undecided(&run, now)).unwrap_or_default();
            if calls.is_empty() {
                return Ok(None);
            }
            let later = later(&self.tenant, run_id);
            let mut nonce = || {
                let mut bytes = [0u8; NONCE_BYTES];
                WorkerEntropy.fill(&mut bytes);
                bytes
            };
            Ok(Some(rounds::ask(key, run_id, &calls, now, &later, &mut nonce).to_value()))
        })
    }

    fn answer<'a>(
        &'a self,
        request_state: &'a str,
        responses: Option<&'a Map<String, Value>>,
    ) -> LocalBoxFuture<'a, std::result::Result<(Envelope, bool), String>> {
        Box::pin(async move {
            let recorded = match &self.approval_key {
                Some(key) => self.record_round(key, request_state, responses).await,
                None => Err(StateError::BadSignature.to_string()),
            };
            let (run_id, recorded) = recorded.map_err(|err| {
                format!(
                    "the approval answer was not recorded: {err}; call execute with {{\"resume\": \"<runId>\"}} to be asked again"
                )
            })?;
            let envelope = rpc::Hub::execute(self, ExecuteRequest::Resume(run_id)).await;
            Ok((envelope, recorded))
        })
    }
}

/// Where a person decides on run `run_id` of `tenant` without a prompt: the admin endpoint.
fn later(tenant: &str, run_id: &str) -> String {
    format!("`POST /t/{tenant}/admin/approve {{\"run\": \"{run_id}\"}}`")
}
