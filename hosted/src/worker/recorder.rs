//! The recorder: the one place in the hosted hub that records a person's decision on a pending
//! call. The admin endpoint (`POST /t/<tenant>/admin/approve`, behind the admin token) and form
//! answers checked against a state the hub signed both come here, each naming its channel;
//! nothing the model can reach calls it with an answer of its own.
//!
//! Everything up to the final `sync` runs without an await, so no other request to the tenant's
//! object runs between reading the run, spending a state's nonce and writing the decision.

use capabilities_core::approval::{Channel, Choice, PendingCall, record_all};
use capabilities_core::policy::AllowAlwaysError;
use capabilities_core::record::RunStatus;

use super::store::SqlStore;

/// What recording did.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The calls decided, with the choice made for each.
    pub(crate) decided: Vec<(PendingCall, Choice)>,
    /// Whether every approval the run waits for now has a decision, so it can resume.
    pub(crate) all_decided: bool,
    /// Whether an "always" choice added a policy rule (the cached configuration is stale).
    pub(crate) policy_changed: bool,
}

/// Why nothing was recorded, with the HTTP status the admin endpoint answers.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) status: u16,
    pub(crate) message: String,
}

impl Refused {
    fn new(status: u16, message: impl Into<String>) -> Refused {
        Refused { status, message: message.into() }
    }
}

/// Records `decisions` (pending call id, choice) on run `run_id` at `now_ms`, after `check`
/// passes (an error from it records nothing; form answers spend their state's nonce there).
/// Either every decision is recorded or none is. An "always" choice also adds a policy rule
/// pinned to the contract the person saw.
pub(crate) async fn record_checked(
    store: &SqlStore,
    run_id: &str,
    decisions: &[(String, Choice)],
    channel: Channel,
    now_ms: u64,
    check: impl FnOnce(&SqlStore) -> Result<(), String>,
) -> Result<Recorded, Refused> {
    let store_error = |err: capabilities_core::ports::StoreError| Refused::new(500, err.to_string());
    let Some(mut run) = store.run_now(run_id).map_err(store_error)? else {
        return Err(Refused::new(
            404,
            format!("there is no run `{run_id}`; GET /t/<tenant>/admin/pending lists the runs that wait"),
        ));
    };
    if run.status != RunStatus::AwaitingInput {
        return Err(Refused::new(409, format!("run `{run_id}` waits for nothing now")));
    }
    check(store).map_err(|message| Refused::new(409, message))?;
    let recorded = record_all(&mut run, decisions, channel, now_ms).map_err(|err| {
        Refused::new(409, format!("{err}; GET /t/<tenant>/admin/pending shows what the run waits for"))
    })?;
    let policy_changed = !recorded.rules.is_empty();
    if policy_changed {
        let mut state = store.policy().map_err(store_error)?;
        for rule in &recorded.rules {
            state.allow_always(&rule.address, rule.connection.clone(), rule.contract).map_err(
                |err| match err {
                    AllowAlwaysError::Invalid(err) => Refused::new(
                        409,
                        format!("the stored policy is invalid ({err}); load the hub again, then decide"),
                    ),
                    AllowAlwaysError::NotAnAddress(_) => Refused::new(500, err.to_string()),
                    other => Refused::new(409, other.to_string()),
                },
            )?;
        }
        store.put_policy_now(&state).map_err(store_error)?;
    }
    store.put_run_now(&run).map_err(store_error)?;
    store.sync(&format!("runs/{run_id}")).await.map_err(store_error)?;
    Ok(Recorded { decided: recorded.decided, all_decided: recorded.all_decided, policy_changed })
}
