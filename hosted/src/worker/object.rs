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
use std::collections::BTreeMap;
use std::rc::Rc;

use capabilities_core::catalog::Catalog;
use capabilities_core::limits::Limits;
use capabilities_core::policy::PolicyState;
use capabilities_core::profile::{DEFAULT, Profile};
use capabilities_core::surface::Surface;
use capabilities_core::surface::direct::DirectTools;
use capabilities_core::surface::skills::SkillDoc;
use capabilities_core::wording::HostWords;
use serde_json::Value;
use worker::{DurableObject, Env, Request, Response, Result, State, durable_object};

use super::access::access_config;
use super::oauth::Refreshing;
use super::skills::StoredSkillFiles;
use super::store::SqlStore;
use super::tenant::TenantHub;
use super::upstream::Sessions;
use crate::records::{Source, catalog, tenant_limits};
use crate::rpc;
use crate::skills::PushedSkill;
use crate::split_tenant;

/// The largest request body accepted, in bytes.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// What a tenant serves, read from storage.
pub(super) struct Loaded {
    pub(super) sources: Rc<Vec<Source>>,
    /// Every source's tools, before a profile filters them.
    catalog: Catalog,
    policy: PolicyState,
    limits: Limits,
    words: HostWords,
    /// The profiles loaded or pushed, besides the built-in `default`.
    profiles: Vec<Profile>,
    /// The skill library pushed, served on every profile.
    pub(super) skills: Rc<Vec<PushedSkill>>,
    /// The same as `search` and `describe` show it.
    skill_docs: Vec<SkillDoc>,
    /// Where `hub.skill` reads their files.
    store: SqlStore,
    /// Each profile's surface, built on its first request.
    served: RefCell<BTreeMap<String, Rc<Served>>>,
    /// MCP sessions open with the sources, reused across runs.
    pub(super) sessions: Rc<Sessions>,
    /// The OAuth connections being refreshed, one refresh each at a time.
    pub(super) refreshing: Rc<Refreshing>,
}

/// One profile as its endpoint serves it: its surface (catalog filtered, policy tightened) and,
/// in direct mode, its tools under their listed names with their definitions, built once so
/// every connection lists the same.
pub(super) struct Served {
    pub(super) profile: Profile,
    pub(super) surface: Surface,
    pub(super) direct: Option<(DirectTools, Vec<Value>)>,
}

impl Loaded {
    /// Profile `name` as it is served; `Ok(None)` when the tenant has no such profile.
    pub(super) fn served(&self, name: &str) -> std::result::Result<Option<Rc<Served>>, String> {
        if let Some(served) = self.served.borrow().get(name) {
            return Ok(Some(Rc::clone(served)));
        }
        let profile = match name {
            DEFAULT => Profile::everything(),
            _ => match self.profiles.iter().find(|p| p.name == name) {
                Some(profile) => profile.clone(),
                None => return Ok(None),
            },
        };
        let (mut surface, invalid) = profile
            .surface(&self.catalog, self.policy.clone(), self.limits, self.words.clone())
            .map_err(|err| format!("profile `{name}` cannot be served ({err}); load or push it again"))?;
        surface.skills = self.skill_docs.clone();
        surface.skill_files =
            Some(Box::new(StoredSkillFiles { store: self.store.clone(), skills: Rc::clone(&self.skills) }));
        if let Some(err) = invalid {
            worker::console_warn!("the policy is invalid ({err}); every tool asks until it is loaded again");
        }
        let direct = profile.direct(&surface).map(|tools| {
            let definitions = tools.definitions(&surface.catalog);
            (tools, definitions)
        });
        let served = Rc::new(Served { profile, surface, direct });
        self.served.borrow_mut().insert(name.to_owned(), Rc::clone(&served));
        Ok(Some(served))
    }

    /// The names of the profiles served, `default` first.
    pub(super) fn names(&self) -> Vec<&str> {
        std::iter::once(DEFAULT).chain(self.profiles.iter().map(|p| p.name.as_str())).collect()
    }
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
            (worker::Method::Post, "mcp") => self.mcp(&tenant, DEFAULT, &body).await,
            (worker::Method::Post, p) if p.starts_with("mcp/") => self.mcp(&tenant, &p[4..], &body).await,
            (worker::Method::Post, "admin/load") => self.load(&tenant, &body),
            (worker::Method::Get, "admin/runs") => self.runs(),
            (worker::Method::Get, "admin/pending") => self.pending(),
            (worker::Method::Post, "admin/approve") => self.approve(&tenant, &body).await,
            (worker::Method::Post, "hub/push") => self.push(&tenant, &account(&request).0, &body).await,
            (worker::Method::Post, "hub/push/files") => self.push_files(&body).await,
            (worker::Method::Get, "hub/status") => self.status(&tenant, &account(&request)),
            (worker::Method::Get, "inbox") => {
                self.inbox(&account(&request).1, &super::inbox::csrf_of(&request))
            }
            (worker::Method::Post, "inbox/decide") => self.inbox_decide(&body).await,
            (_, p) if p == "mcp" || p.starts_with("mcp/") => {
                Response::error("this endpoint is stateless: POST JSON-RPC messages", 405)
            }
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
        let (profiles, more) = store.profiles().map_err(|e| worker::Error::RustError(e.to_string()))?;
        for problem in problems.into_iter().chain(more) {
            worker::console_warn!("{problem}");
        }
        let skills = store.skills().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let skill_docs = store.skill_docs(&skills);
        let issuer = access_config(&self.env).and_then(|c| c.ok()).map(|c| c.settings.issuer);
        let loaded = Rc::new(Loaded {
            catalog: catalog(&sources),
            sources: Rc::new(sources),
            policy,
            limits: tenant_limits(timeout),
            words: crate::words(tenant, issuer.as_deref()),
            profiles,
            skills: Rc::new(skills),
            skill_docs,
            store,
            served: RefCell::default(),
            sessions: Rc::default(),
            refreshing: Rc::default(),
        });
        *self.loaded.borrow_mut() = Some(Rc::clone(&loaded));
        Ok(loaded)
    }

    /// MCP for profile `profile` of the tenant (`mcp` is `default`, `mcp/<profile>` any other).
    async fn mcp(&self, tenant: &str, profile: &str, body: &[u8]) -> Result<Response> {
        let loaded = self.loaded(tenant)?;
        let served = match loaded.served(profile) {
            Ok(Some(served)) => served,
            Ok(None) => {
                return Response::error(
                    format!(
                        "there is no profile `{profile}` on this hub; its profiles are {} (a local hub's \
                         `capabilities hub push` sends its profiles)",
                        loaded.names().join(", ")
                    ),
                    404,
                );
            }
            Err(why) => return Response::error(why, 500),
        };
        let hub = TenantHub::new(tenant, loaded, served, self.store()?, &self.env);
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
