//! The tenant object's side of `hub push` and `hub status` (the Worker's entry checks the
//! `hub:admin` token and names the account): `POST hub/push` answers with the plan, its hash
//! and the skill files whose bytes it still needs (`missing`, sha256s), or applies it when the
//! push carries the same hash and every skill file is here; `POST hub/push/files` takes those
//! bytes in parts (`{ "parts": [...] }`, checked against their sha256: `skills.rs`);
//! `GET hub/status` says what the tenant serves (sources, profiles, skills), how each source
//! fared on its last call, the last push and the calls waiting for a person.

use capabilities_core::ports::Clock;
use serde_json::{Value, json};
use worker::{Response, Result};

use super::access::access_config;
use super::object::Hub;
use super::platform::WorkerClock;
use crate::push::{self, Push};
use crate::records::OAUTH_SLOT;
use crate::skills::Part;

fn answer(status: u16, body: &Value) -> Result<Response> {
    let response = Response::from_json(body)?.with_status(status);
    response.headers().set("cache-control", "no-store")?;
    Ok(response)
}

fn refused(status: u16, message: impl std::fmt::Display) -> Result<Response> {
    answer(status, &json!({ "error": message.to_string() }))
}

fn internal(err: impl std::fmt::Display) -> worker::Error {
    worker::Error::RustError(err.to_string())
}

impl Hub {
    /// A push: its plan and hash, or, with `apply` equal to that hash, the push applied.
    pub(super) async fn push(&self, tenant: &str, account: &str, body: &[u8]) -> Result<Response> {
        let push: Push = match serde_json::from_slice(body) {
            Ok(push) => push,
            Err(err) => return refused(400, format!("the push is not valid JSON for a hub: {err}")),
        };
        if let Err(err) = push.check() {
            return refused(400, format!("{err}; nothing was recorded"));
        }
        let store = self.store()?;
        let current = store.current().map_err(internal)?;
        let plan = push.plan(&current);
        let hash = push::hash(&current, &push);
        let missing = store.missing_files(&push.skills).map_err(internal)?;
        let Some(wanted) = push.apply.as_deref() else {
            return answer(200, &json!({ "plan": plan, "hash": hash, "applied": false, "missing": missing }));
        };
        if wanted != hash {
            return answer(
                409,
                &json!({
                    "error": "the hosted hub changed since this plan was made, or the push differs from it; \
                              nothing was applied: look at the new plan and push again",
                    "plan": plan,
                    "hash": hash,
                }),
            );
        }
        if !missing.is_empty() {
            return answer(
                409,
                &json!({
                    "error": format!(
                        "the bytes of {} skill file{} have not arrived; nothing was applied: push again",
                        missing.len(),
                        if missing.len() == 1 { "" } else { "s" }
                    ),
                    "plan": plan,
                    "hash": hash,
                    "missing": missing,
                }),
            );
        }
        let Some(key) = self.seal_key(!push.secrets.is_empty())? else {
            return refused(
                400,
                "secrets cannot be stored: the operator set no HUB_SECRETS_KEY; nothing was applied",
            );
        };
        let kept = push.kept(&current);
        let record = json!({
            "atMs": WorkerClock.now_ms(),
            "hash": hash,
            "account": account,
            "sources": push.sources.len(),
            "tools": plan.tools,
            "added": plan.added,
            "changed": plan.changed.iter().map(|c| c.namespace.as_str()).collect::<Vec<_>>(),
            "removed": plan.removed,
            "leftOut": plan.left_out.iter().map(|l| l.namespace.as_str()).collect::<Vec<_>>(),
            "profiles": plan.profiles,
            "skills": push.skills.len(),
        });
        store.apply_push(&push, &kept, &key, tenant, &mut Hub::seal_nonce, &record).map_err(internal)?;
        store.sync("push").await.map_err(internal)?;
        self.forget_loaded();
        answer(200, &json!({ "plan": plan, "hash": hash, "applied": true }))
    }

    /// Parts of skill files for a push to come: each checked, a whole file kept only when its
    /// bytes match its sha256.
    pub(super) async fn push_files(&self, body: &[u8]) -> Result<Response> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Upload {
            parts: Vec<Part>,
        }
        let upload: Upload = match serde_json::from_slice(body) {
            Ok(upload) => upload,
            Err(err) => {
                return refused(
                    400,
                    format!("the upload is not `{{\"parts\": [...]}}` ({err}); nothing was stored"),
                );
            }
        };
        let store = self.store()?;
        match store.put_parts(&upload.parts).map_err(internal)? {
            Ok(whole) => {
                store.sync("skill files").await.map_err(internal)?;
                answer(200, &json!({ "stored": upload.parts.len(), "whole": whole }))
            }
            Err(why) => refused(400, why),
        }
    }

    /// What `hub status` shows of the tenant.
    pub(super) fn status(&self, tenant: &str, (account, name): &(String, String)) -> Result<Response> {
        let store = self.store()?;
        let current = store.current().map_err(internal)?;
        let last_calls = store.last_calls().map_err(internal)?;
        let sources: Vec<Value> = current
            .sources
            .iter()
            .map(|source| {
                let ns = &source.namespace;
                let connections: Vec<Value> = source
                    .connections
                    .iter()
                    .map(|c| {
                        let slots =
                            c.slots.iter().map(String::as_str).chain(c.oauth.as_ref().map(|_| OAUTH_SLOT));
                        let missing: Vec<&str> = slots
                            .filter(|slot| {
                                !current.filled.contains(&(ns.clone(), c.name.clone(), (*slot).to_owned()))
                            })
                            .collect();
                        json!({ "name": c.name, "oauth": c.oauth.is_some(), "missing": missing })
                    })
                    .collect();
                let last = last_calls.get(ns);
                let missing =
                    connections.iter().any(|c| c["missing"].as_array().is_some_and(|m| !m.is_empty()));
                let health = match last.map(|l| l.outcome.as_str()) {
                    _ if missing => "needs_secret",
                    None => "not_called",
                    Some("ok" | "approval_denied" | "policy_denied" | "invalid_arguments") => "ok",
                    Some("auth_required") => "needs_sign_in",
                    Some(_) => "failing",
                };
                json!({
                    "namespace": ns,
                    "url": source.url,
                    "tools": source.manifest.tools.len(),
                    "connections": connections,
                    "health": health,
                    "lastCall": last,
                })
            })
            .collect();
        let settings = access_config(self.env()).and_then(|c| c.ok()).map(|c| c.settings);
        let inbox = settings.as_ref().map(|s| s.at("/inbox"));
        let (profiles, unreadable) = store.profiles().map_err(internal)?;
        let profiles: Vec<Value> = profiles
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "mode": p.mode.as_str(),
                    "serves": p.serves,
                    "rules": p.rules.len(),
                    "url": settings.as_ref().map(|s| s.at(&format!("/mcp/{}", p.name))),
                })
            })
            .collect();
        let skills: Vec<Value> = store
            .skills()
            .map_err(internal)?
            .iter()
            .map(|s| json!({ "name": s.name, "digest": s.digest, "files": s.files.len() }))
            .collect();
        answer(
            200,
            &json!({
                "account": account,
                "name": name,
                "tenant": tenant,
                "lastPush": store.last_push().map_err(internal)?,
                "sources": sources,
                "profiles": profiles,
                "unreadableProfiles": unreadable,
                "skills": skills,
                "waiting": self.waiting()?,
                "inbox": inbox,
            }),
        )
    }
}
