//! Approvals asked through the MCP client's own prompt (form elicitation), the local half: the
//! signing key kept in `approval-key` in the hub home, the used nonces kept beside each run, and
//! the rmcp types of the request and the answer. The state, its checks, the message and the
//! form itself are the core's (`capabilities_core::approval::state`), shared with the hosted hub.
//!
//! A state counts once: its nonce is written to `runs/<run>.nonces` under the run's lock before
//! the decision is recorded, so a crash between the two burns the nonce and records nothing (the
//! person is asked again).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use capabilities_core::approval::PendingCall;
use capabilities_core::approval::state::{self, NONCE_BYTES};
pub use capabilities_core::approval::state::{
    ASK_MS, Answer, ApprovalKey, Claims, MESSAGE_BYTES, STATE_META, StateError, hmac_sha256,
};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

use crate::host::later;
use crate::platform::random_bytes;
use crate::store::{Store, is_run_id};

/// The file in the hub home that holds the signing key.
pub const KEY_FILE: &str = "approval-key";

/// The local hub's signing key, kept in a file in the hub home.
pub trait KeyFile: Sized {
    /// The hub's key from `<home>/approval-key`, created (32 random bytes, mode 600) on first
    /// use. Two processes creating it at once agree on one key: the file appears whole, by link.
    fn load_or_create(home: &Path) -> Result<Self>;
}

impl KeyFile for ApprovalKey {
    fn load_or_create(home: &Path) -> Result<ApprovalKey> {
        let path = home.join(KEY_FILE);
        match read_key(&path) {
            Ok(key) => return Ok(key),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(err).with_context(|| {
                    format!(
                        "reading {}; remove it to make a new key (open prompts then ask again)",
                        path.display()
                    )
                });
            }
        }
        let key: [u8; 32] = random_bytes()?;
        let tag: [u8; 6] = random_bytes()?;
        let tmp = home.join(format!(".{KEY_FILE}.{}.{}.tmp", std::process::id(), hex::encode(tag)));
        let written = (|| -> io::Result<()> {
            let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            file.write_all(&key)?;
            file.sync_all()?;
            match fs::hard_link(&tmp, &path) {
                Err(err) if err.kind() != io::ErrorKind::AlreadyExists => Err(err),
                _ => Ok(()),
            }
        })();
        let _ = fs::remove_file(&tmp);
        written.with_context(|| format!("creating {}", path.display()))?;
        read_key(&path).with_context(|| format!("reading {}", path.display()))
    }
}

fn read_key(path: &Path) -> io::Result<ApprovalKey> {
    let mut file = fs::File::open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode != 0o600 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        eprintln!("warning: {} had mode {mode:o}; set it to 600", path.display());
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let key: [u8; 32] = bytes
        .try_into()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "the approval key is not 32 bytes"))?;
    Ok(ApprovalKey::from_bytes(key))
}

/// A fresh nonce for one prompt.
pub fn nonce() -> Result<[u8; NONCE_BYTES]> {
    random_bytes::<NONCE_BYTES>()
}

/// Marks `claims`' nonce used for its run. Call it holding the run's lock, before recording:
/// a nonce already there means the state was used, and nothing may be recorded.
pub fn consume_nonce(store: &Store, claims: &Claims) -> Result<()> {
    if !is_run_id(&claims.run_id) {
        return Err(StateError::Malformed.into());
    }
    let path = store.root().join("runs").join(format!("{}.nonces", claims.run_id));
    let seen = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    if seen.lines().any(|line| line == claims.nonce) {
        return Err(StateError::Used.into());
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    // A torn last line from a crash never equals a whole nonce, so it does no harm.
    let line = if seen.is_empty() || seen.ends_with('\n') {
        format!("{}\n", claims.nonce)
    } else {
        format!("\n{}\n", claims.nonce)
    };
    file.write_all(line.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// The elicitation request for `pending` of run `run_id`, carrying `state`; the prompt closes
/// at `closes_ms`. The form is the core's, read into rmcp's type.
pub fn request(run_id: &str, pending: &PendingCall, state: &str, closes_ms: u64) -> ElicitRequestParams {
    let form = capabilities_core::surface::approval::form(run_id, pending, state, closes_ms, &later(run_id));
    serde_json::from_value(form).unwrap_or_else(|err| {
        // The form is fixed JSON that rmcp reads (a test holds it); should that ever break, ask
        // with the message alone rather than not at all.
        eprintln!("warning: the approval form did not read as an rmcp request: {err}");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: state::message(run_id, pending, closes_ms, &later(run_id)),
            requested_schema: rmcp::model::ElicitationSchema::new(Default::default()),
        }
    })
}

/// What a person sees for `pending` of run `run_id` (see [`state::message`]).
pub fn message(run_id: &str, pending: &PendingCall, closes_ms: u64) -> String {
    state::message(run_id, pending, closes_ms, &later(run_id))
}

/// Reads the client's reply.
pub fn answer(result: &ElicitResult) -> Answer {
    let action = match result.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        _ => "cancel",
    };
    state::answer(action, result.content.as_ref())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use capabilities_core::approval::{Choice, PendingKind};
    use capabilities_core::manifest::ContractDigest;
    use expect_test::expect;
    use rmcp::model::{
        ElicitationSchema, EnumSchema, MetaObject, PrimitiveSchemaDefinition, RequestMetaObject,
    };
    use serde_json::json;
    use std::collections::BTreeMap;

    const RUN: &str = "run_0123456789abcdef";
    pub(crate) const NOW: u64 = 1_800_000_000_000;

    pub(crate) fn pending(id: &str, seq: u32, preview: &str) -> PendingCall {
        PendingCall {
            id: id.to_owned(),
            kind: PendingKind::Approval,
            seq,
            address: "memory.createEntities".to_owned(),
            connection: None,
            summary: "Create multiple new entities in the knowledge graph".to_owned(),
            reason: "the tool may change data".to_owned(),
            preview: preview.to_owned(),
            call_digest: "d".to_owned(),
            contract: ContractDigest([0; 32]),
            created_ms: NOW,
            expires_ms: NOW + 24 * 3600 * 1000,
        }
    }

    fn key() -> ApprovalKey {
        ApprovalKey::from_bytes([7; 32])
    }

    #[test]
    fn a_state_counts_once() {
        let home = tempfile::tempdir().expect("a temp dir");
        let store = Store::open(home.path()).expect("a store");
        let call = pending("p_1", 0, "{}");
        let state = key().sign(RUN, &call, [3; 16], NOW + 500);
        let claims = key().verify_for(&state, RUN, &call, NOW).expect("verifies");
        consume_nonce(&store, &claims).expect("first use");
        let again = consume_nonce(&store, &claims).expect_err("second use");
        assert_eq!(again.downcast_ref::<StateError>(), Some(&StateError::Used));
        // Another prompt for the same call has its own nonce.
        let fresh = key().sign(RUN, &call, [4; 16], NOW + 500);
        consume_nonce(&store, &key().verify(&fresh, NOW).expect("verifies")).expect("a fresh nonce");
        // A line torn by a crash stays apart from the next nonce.
        let path = store.root().join("runs").join(format!("{RUN}.nonces"));
        let mut text = fs::read_to_string(&path).expect("the nonces");
        text.push_str("0505");
        fs::write(&path, &text).expect("write");
        let next = key().sign(RUN, &call, [5; 16], NOW + 500);
        consume_nonce(&store, &key().verify(&next, NOW).expect("verifies")).expect("after a torn line");
        let lines: Vec<String> =
            fs::read_to_string(&path).expect("the nonces").lines().map(str::to_owned).collect();
        assert_eq!(lines, ["03".repeat(16), "04".repeat(16), "0505".to_owned(), "05".repeat(16)]);
    }

    #[test]
    fn the_key_is_made_once_with_mode_600() {
        let home = tempfile::tempdir().expect("a temp dir");
        let first = ApprovalKey::load_or_create(home.path()).expect("created");
        let second = ApprovalKey::load_or_create(home.path()).expect("read back");
        let call = pending("p_1", 0, "{}");
        assert_eq!(first.sign(RUN, &call, [1; 16], NOW), second.sign(RUN, &call, [1; 16], NOW));
        let meta = fs::metadata(home.path().join(KEY_FILE)).expect("the key file");
        assert_eq!(meta.len(), 32);
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        fs::write(home.path().join(KEY_FILE), b"short").expect("write");
        assert!(ApprovalKey::load_or_create(home.path()).is_err());
    }

    #[test]
    fn the_message_points_at_hub_approve_when_the_prompt_closes_first() {
        let call = pending("p_1", 0, "{}");
        let sooner = message(RUN, &call, NOW + 30 * 60 * 1000);
        expect!["Expires: 2027-01-16 08:00 UTC (this prompt closes at 2027-01-15 08:30 UTC; later, `capabilities hub approve run_0123456789abcdef`)"]
            .assert_eq(sooner.lines().find(|l| l.starts_with("Expires")).unwrap_or_default());
    }

    /// The request as the hub built it with rmcp's own types before the form moved to the core.
    fn built_with_rmcp(
        run_id: &str,
        pending: &PendingCall,
        state: &str,
        closes_ms: u64,
    ) -> ElicitRequestParams {
        const CHOICES: [(&str, &str); 4] = [
            ("once", "Allow once"),
            ("run", "Allow for the rest of this run"),
            ("always", "Always allow (a policy rule pinned to this tool's contract)"),
            ("deny", "Deny"),
        ];
        let choice = EnumSchema::builder(CHOICES.iter().map(|(value, _)| (*value).to_owned()).collect())
            .enum_titles(CHOICES.iter().map(|(_, title)| (*title).to_owned()).collect())
            .map(|b| b.title("Decision").description("What may this call do?").build())
            .unwrap_or_else(|_| EnumSchema::builder(Vec::new()).build());
        let schema = ElicitationSchema::new(BTreeMap::from([(
            "choice".to_owned(),
            PrimitiveSchemaDefinition::Enum(choice),
        )]))
        .with_required(vec!["choice".to_owned()]);
        let mut meta = serde_json::Map::new();
        meta.insert(STATE_META.to_owned(), serde_json::Value::String(state.to_owned()));
        ElicitRequestParams::FormElicitationParams {
            meta: Some(RequestMetaObject(MetaObject(meta))),
            message: message(run_id, pending, closes_ms),
            requested_schema: schema,
        }
    }

    #[test]
    fn the_request_is_the_one_rmcp_builds_byte_for_byte() {
        for closes in [NOW, NOW + 24 * 3600 * 1000] {
            let call = pending("p_1", 0, "{\n  \"a\": 1\n}");
            let ours = serde_json::to_string(&request(RUN, &call, "v1.state", closes)).expect("serializes");
            let theirs =
                serde_json::to_string(&built_with_rmcp(RUN, &call, "v1.state", closes)).expect("serializes");
            assert_eq!(ours, theirs);
            let core =
                capabilities_core::surface::approval::form(RUN, &call, "v1.state", closes, &later(RUN));
            assert_eq!(serde_json::from_str::<serde_json::Value>(&ours).expect("json"), core);
        }
    }

    #[test]
    fn answers() {
        let reply = |action, content: Option<serde_json::Value>| {
            let mut result = ElicitResult::new(action);
            result.content = content;
            answer(&result)
        };
        assert_eq!(
            reply(ElicitationAction::Accept, Some(json!({"choice": "once"}))),
            Answer::Decided(Choice::Once)
        );
        assert_eq!(
            reply(ElicitationAction::Accept, Some(json!({"choice": "always"}))),
            Answer::Decided(Choice::Always)
        );
        assert_eq!(reply(ElicitationAction::Accept, Some(json!({"choice": "maybe"}))), Answer::Undecided);
        assert_eq!(reply(ElicitationAction::Accept, None), Answer::Undecided);
        assert_eq!(reply(ElicitationAction::Decline, None), Answer::Decided(Choice::Deny));
        assert_eq!(reply(ElicitationAction::Cancel, None), Answer::Undecided);
    }
}
