//! One MCP request's view of a tenant (`TenantHub`, the `rpc::Tenant` the JSON-RPC handling
//! calls) as one profile serves it: the profile's cached surface answers `search` and
//! `describe`, the core's engine runs `execute` (or a direct-mode call) on this object's ports
//! with runs and handles bound to the profile, and the approval key signs the forms handed to clients
//! that can show them (their answers record through the one `recorder`).

use std::cell::Cell;
use std::rc::Rc;

use capabilities_core::approval::Channel;
use capabilities_core::approval::rounds;
use capabilities_core::approval::state::{ApprovalKey, NONCE_BYTES, StateError};
use capabilities_core::ports::{Clock, Entropy, LocalBoxFuture};
use capabilities_core::record::RunError;
use capabilities_core::run::Engine;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::surface::approval;
use capabilities_core::surface::direct;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::tools::{self, ExecuteRequest};
use serde_json::{Map, Value};
use worker::Env;

use super::object::{Loaded, Served};
use super::platform::{WorkerClock, WorkerEntropy, now_micros, secret_text};
use super::recorder;
use super::store::SqlStore;
use super::upstream::{FetchUpstream, SealedSecrets};
use crate::rpc;
use crate::seal::SealKey;

/// Guest compute time counted per QuickJS interrupt-handler call. QuickJS calls the handler
/// about every 10,000 bytecode operations; counting each call as 1 ms keeps the budget well
/// on the safe side of real time.
const MICROS_PER_TICK: u64 = 1_000;

/// What the approval key is derived for, from `HUB_APPROVAL_KEY` or else `HUB_SECRETS_KEY`.
const APPROVAL_KEY_LABEL: &str = "capabilities-hosted/approval-state/v1";

/// One request's view of the tenant: the surface for `search`/`describe`, the engine's ports
/// for `execute`, and the approval key for the client's forms.
pub(super) struct TenantHub {
    tenant: String,
    loaded: Rc<Loaded>,
    /// The profile this request's endpoint serves.
    served: Rc<Served>,
    store: SqlStore,
    key: Option<SealKey>,
    approval_key: Option<ApprovalKey>,
    /// Set when an answer added a policy rule, so the object drops its cached configuration.
    policy_changed: Cell<bool>,
}

impl TenantHub {
    /// The tenant's hub for one request, its keys derived from the Worker's secrets in `env`.
    pub(super) fn new(
        tenant: &str,
        loaded: Rc<Loaded>,
        served: Rc<Served>,
        store: SqlStore,
        env: &Env,
    ) -> TenantHub {
        let key = secret_text(env, "HUB_SECRETS_KEY").and_then(|s| SealKey::derive(&s).ok());
        TenantHub {
            tenant: tenant.to_owned(),
            loaded,
            served,
            store,
            key,
            approval_key: approval_key(env),
            policy_changed: Cell::new(false),
        }
    }

    fn profile(&self) -> &str {
        &self.served.profile.name
    }

    /// The limits this profile's runs run under (a direct call's leave room for its arguments
    /// and its result).
    fn limits(&self) -> capabilities_core::limits::Limits {
        match self.served.direct {
            Some(_) => direct::limits(self.served.surface.limits),
            None => self.served.surface.limits,
        }
    }

    /// Whether an answer added a policy rule, so the cached configuration is stale.
    pub(super) fn policy_changed(&self) -> bool {
        self.policy_changed.get()
    }

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
            // Another profile's run is unknown here.
            let run = run.filter(|run| run.profile == self.profile());
            rounds::check_claims(run.as_ref(), claims).map_err(|err| err.to_string())?;
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

impl rpc::Tenant for TenantHub {
    fn lookup(&self, tool: &str, arguments: &Value) -> std::result::Result<String, String> {
        if tool == tools::SEARCH {
            self.served.surface.search(arguments)
        } else {
            self.served.surface.describe(arguments)
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
                refreshing: Rc::clone(&self.loaded.refreshing),
            };
            let surface = &self.served.surface;
            let limits = self.limits();
            let engine = Engine {
                catalog: &surface.catalog,
                policy: &surface.policy,
                lookup: surface,
                sandbox: &sandbox,
                upstream: &upstream,
                secrets: &secrets,
                store: &self.store,
                blobs: &self.store,
                clock: &WorkerClock,
                entropy: &WorkerEntropy,
                limits,
                words: &surface.words,
                profile: self.profile(),
            };
            let report = match request {
                ExecuteRequest::Code(code) => engine.execute(&code).await,
                ExecuteRequest::Resume(id) => engine.resume(&id).await,
                other => {
                    return Envelope::failure(
                        "",
                        RunError::new("unsupported", format!("{other:?} is not served here"), None),
                    );
                }
            };
            Envelope::render(report, &limits, &surface.words)
        })
    }

    fn direct(&self) -> Option<&[Value]> {
        self.served.direct.as_ref().map(|(_, definitions)| definitions.as_slice())
    }

    fn call_direct<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> LocalBoxFuture<'a, Option<Envelope>> {
        Box::pin(async move {
            let address = self.served.direct.as_ref()?.0.address(name)?;
            let code = direct::call_code(address, arguments);
            // The same call made again continues its run while that run waits for a person.
            let body = capabilities_core::code::prepare(&code, self.limits().code_bytes).ok()?.body;
            let waiting = self.store.waiting_runs().unwrap_or_default();
            let request =
                match waiting.into_iter().find(|run| run.profile == self.profile() && run.body == body) {
                    Some(run) => ExecuteRequest::Resume(run.id.to_string()),
                    None => ExecuteRequest::Code(code),
                };
            Some(rpc::Tenant::execute(self, request).await)
        })
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, std::result::Result<Value, String>> {
        Box::pin(async move {
            let profile = self.profile();
            match capabilities_core::handles::read_resource(&self.store, &self.store, profile, uri).await {
                Ok((record, slice)) => Ok(rpc::resource_contents(uri, record.kind, slice.text)),
                Err(failure) => Err(failure.message),
            }
        })
    }

    fn skills(&self) -> &[crate::skills::PushedSkill] {
        &self.loaded.skills
    }

    fn skill_file<'a>(&'a self, sha256: &'a str) -> LocalBoxFuture<'a, std::result::Result<Vec<u8>, String>> {
        Box::pin(async move { self.store.file_bytes(sha256).map_err(|e| e.to_string()) })
    }

    fn ask<'a>(&'a self, run_id: &'a str) -> LocalBoxFuture<'a, std::result::Result<Option<Value>, String>> {
        Box::pin(async move {
            let Some(key) = &self.approval_key else {
                return Err(format!(
                    "this hub cannot hand out approval forms (set the HUB_APPROVAL_KEY secret); a person \
                     decides with {}",
                    self.served.surface.words.decide(run_id)
                ));
            };
            let now = WorkerClock.now_ms();
            let run = self.store.run_now(run_id).map_err(|e| e.to_string())?;
            let run = run.filter(|run| run.profile == self.profile());
            let calls = run.map(|run| rounds::undecided(&run, now)).unwrap_or_default();
            if calls.is_empty() {
                return Ok(None);
            }
            let later = self.served.surface.words.decide(run_id);
            let mut nonce = || {
                let mut bytes = [0u8; NONCE_BYTES];
                WorkerEntropy.fill(&mut bytes);
                bytes
            };
            Ok(Some(approval::input_required(&rounds::ask(key, run_id, &calls, now, &later, &mut nonce))))
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
            let envelope = rpc::Tenant::execute(self, ExecuteRequest::Resume(run_id)).await;
            Ok((envelope, recorded))
        })
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
