//! The recorder: the one place in the local hub that records a person's decision on a pending
//! call. The CLI (`hub approve`), the approval page and MCP elicitation answers all come here,
//! each naming its [`Channel`]; nothing the model can reach calls it with an answer of its own.

use anyhow::{Context, Result, anyhow, bail};
use capabilities_core::approval::{AlwaysRule, Channel, Choice, PendingCall, record_all};
use capabilities_core::policy::AllowAlwaysError;
use capabilities_core::record::RunStatus;

use crate::config::{self, POLICY};
use crate::platform::now_ms;
use crate::store::{Store, write_atomic};

/// What recording did.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The calls decided, with the choice made for each.
    pub decided: Vec<(PendingCall, Choice)>,
    /// Whether every approval the run waits for now has a decision, so it can resume.
    pub all_decided: bool,
}

/// Records `decisions` (pending call id, choice) on run `run_id`, all under the run's lock, and
/// persists an "always" choice as a rule pinned to the contract the person saw. Either every
/// decision is recorded or none is.
pub fn record(
    store: &Store,
    run_id: &str,
    decisions: &[(String, Choice)],
    channel: Channel,
) -> Result<Recorded> {
    record_checked(store, run_id, decisions, channel, || Ok(()))
}

/// [`record`], with `check` run under the run's lock once the run is known to wait: an error
/// from it records nothing. Elicitation answers spend their signed state's nonce there.
pub fn record_checked(
    store: &Store,
    run_id: &str,
    decisions: &[(String, Choice)],
    channel: Channel,
    check: impl FnOnce() -> Result<()>,
) -> Result<Recorded> {
    // Asked first, so a run id that names nothing leaves nothing behind (its lock would make
    // the run's journal).
    if !crate::store::is_run_id(run_id) || !store.root().join("runs").join(format!("{run_id}.json")).exists()
    {
        bail!("there is no run `{run_id}`; `capabilities hub runs` lists the runs kept");
    }
    let recorded = {
        let _lock = store.lock(run_id).map_err(|e| anyhow!("{e}"))?;
        let Some(mut run) = store.load_run_sync(run_id).map_err(|e| anyhow!("{e}"))? else {
            bail!("there is no run `{run_id}`; `capabilities hub runs` lists the runs kept");
        };
        if run.status != RunStatus::AwaitingInput {
            bail!("run `{run_id}` waits for nothing now; `capabilities hub runs show {run_id}` shows it");
        }
        check()?;
        let recorded = record_all(&mut run, decisions, channel, now_ms()).map_err(|err| {
            anyhow!("{err}; `capabilities hub runs show {run_id}` shows what the run waits for")
        })?;
        // The run's lock is held, so write the file directly (`save_run_sync` would take the
        // same lock again).
        let bytes = serde_json::to_vec_pretty(&run)?;
        write_atomic(&store.root().join("runs").join(format!("{}.json", run.id)), &bytes)
            .with_context(|| format!("saving run `{}`", run.id))?;
        recorded
    };
    for rule in &recorded.rules {
        persist_always(store, rule)?;
    }
    Ok(Recorded { decided: recorded.decided, all_decided: recorded.all_decided })
}

/// "Always allow": a rule pinned to the contract the person saw, and that contract marked
/// reviewed.
fn persist_always(store: &Store, rule: &AlwaysRule) -> Result<()> {
    let _lock = store.lock("policy").map_err(|e| anyhow!("{e}"))?;
    let mut state = config::load_policy(store)?;
    state.allow_always(&rule.address, rule.connection.clone(), rule.contract).map_err(|err| match err {
        AllowAlwaysError::Invalid(err) => {
            anyhow!(err).context(format!("{POLICY} is invalid; fix it, then decide again"))
        }
        other => anyhow!("{other}"),
    })?;
    config::save_policy(store, &state)
}
