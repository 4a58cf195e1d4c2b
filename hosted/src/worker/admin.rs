//! The admin API of a tenant's object, behind the admin token (`worker/mod.rs` checks it):
//! `POST admin/load` replaces the tenant's configuration, `GET admin/runs` lists its runs,
//! `GET admin/pending` lists the runs waiting for a person with their undecided calls, and
//! `POST admin/approve` records a person's decision through the one `recorder`.

use capabilities_core::approval::rounds;
use capabilities_core::approval::{Channel, Choice};
use capabilities_core::ports::{Clock, Entropy};
use serde_json::{Value, json};
use worker::{Response, Result};

use super::object::Hub;
use super::platform::{WorkerClock, WorkerEntropy, secret_text};
use super::recorder;
use crate::records::Load;
use crate::seal::SealKey;

impl Hub {
    /// Every run of the tenant.
    pub(super) fn runs(&self) -> Result<Response> {
        let runs = self.store()?.runs().map_err(|e| worker::Error::RustError(e.to_string()))?;
        Response::from_json(&runs)
    }

    /// The runs waiting for a person, each with its undecided calls (`call` is the number to
    /// name in `admin/approve`).
    pub(super) fn pending(&self) -> Result<Response> {
        Response::from_json(&self.waiting()?)
    }

    /// The runs waiting for a person, with their undecided calls, newest first.
    pub(super) fn waiting(&self) -> Result<Vec<Value>> {
        let now = WorkerClock.now_ms();
        let runs = self.store()?.waiting_runs().map_err(|e| worker::Error::RustError(e.to_string()))?;
        Ok(runs
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
            .collect())
    }

    /// A person's decision from the admin endpoint: `{"run", "choice", "call"?}`, every
    /// undecided call of the run when `call` is absent. The run continues on the next
    /// `execute {"resume": run}`.
    pub(super) async fn approve(&self, tenant: &str, body: &[u8]) -> Result<Response> {
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
        match recorder::record_checked(&store, &run.id, &decisions, Channel::Admin, now, |_| Ok(())).await {
            Ok(recorded) => {
                if recorded.policy_changed {
                    self.forget_loaded();
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

    /// A load: the tenant's whole configuration, checked, then stored in place of the old one
    /// with its credential values sealed.
    pub(super) fn load(&self, tenant: &str, body: &[u8]) -> Result<Response> {
        let load: Load = match serde_json::from_slice(body) {
            Ok(load) => load,
            Err(err) => return Response::error(format!("the load is not valid JSON for a hub: {err}"), 400),
        };
        if let Err(err) = load.check() {
            return Response::error(err.to_string(), 400);
        }
        let Some(key) = self.seal_key(!load.secrets.is_empty())? else {
            return Response::error("secrets cannot be stored: set the HUB_SECRETS_KEY secret", 400);
        };
        self.store()?
            .replace(&load, &key, tenant, &mut Hub::seal_nonce)
            .map_err(|e| worker::Error::RustError(e.to_string()))?;
        self.forget_loaded();
        let tools: usize = load.sources.iter().map(|s| s.manifest.tools.len()).sum();
        Response::from_json(&json!({
            "sources": load.sources.len(),
            "tools": tools,
            "secrets": load.secrets.iter().map(|s| s.values.len()).sum::<usize>(),
            "profiles": load.profiles.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            "warnings": load.warnings(),
        }))
    }

    /// The key credential values are sealed with; `None` when values are to be stored
    /// (`needed`) and the operator set no `HUB_SECRETS_KEY`. Without values to store, a key
    /// that seals nothing stands in.
    pub(super) fn seal_key(&self, needed: bool) -> Result<Option<SealKey>> {
        match secret_text(self.env(), "HUB_SECRETS_KEY").map(|s| SealKey::derive(&s)) {
            Some(Ok(key)) => Ok(Some(key)),
            _ if !needed => SealKey::derive("no secrets are sealed with this key")
                .map(Some)
                .map_err(|e| worker::Error::RustError(e.to_string())),
            _ => Ok(None),
        }
    }

    /// A fresh nonce for sealing.
    pub(super) fn seal_nonce() -> [u8; 12] {
        let mut bytes = [0u8; 12];
        WorkerEntropy.fill(&mut bytes);
        bytes
    }
}
