//! Approvals asked through the MCP client's own prompt (form elicitation): the request a person
//! sees for one pending call, the state the hub signs for that exact call, and the checks an
//! answer passes before the recorder sees it.
//!
//! The state is `v1.<run>.<pending>.<seq>.<nonce>.<expires>.<mac>`, the MAC an HMAC-SHA256 with
//! a per-hub key kept in `approval-key` in the hub home. A state counts once: its nonce is
//! written to `runs/<run>.nonces` under the run's lock before the decision is recorded, so a
//! crash between the two burns the nonce and records nothing (the person is asked again).

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use capabilities_core::approval::{Choice, PendingCall};
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, EnumSchema, MetaObject,
    PrimitiveSchemaDefinition, RequestMetaObject,
};
use sha2::{Digest, Sha256};

use crate::store::{Store, is_run_id};

/// The file in the hub home that holds the signing key.
pub const KEY_FILE: &str = "approval-key";
/// The most a prompt's message holds, in bytes.
pub const MESSAGE_BYTES: usize = 4096;
/// The `_meta` key that carries the signed state on an elicitation request.
pub const STATE_META: &str = "sh.capabilities/approvalState";
/// How long one prompt stays open at most, whatever the pending call's own expiry.
pub const ASK_MS: u64 = 30 * 60 * 1000;

const VERSION: &str = "v1";
const NONCE_BYTES: usize = 16;

/// The key the hub signs approval states with.
pub struct ApprovalKey {
    key: [u8; 32],
}

impl std::fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApprovalKey(..)")
    }
}

/// What a verified state names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub run_id: String,
    pub pending_id: String,
    pub seq: u32,
    pub nonce: String,
    pub expires_ms: u64,
}

/// Why a state does not count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    #[error("the approval state is malformed; ask again")]
    Malformed,
    #[error("the approval state was not signed by this hub; ask again")]
    BadSignature,
    #[error("the approval state expired; ask again")]
    Expired,
    #[error("the approval state names another call; ask again")]
    Mismatch,
    #[error("the approval state was already used; ask again")]
    Used,
}

impl ApprovalKey {
    pub fn from_bytes(key: [u8; 32]) -> ApprovalKey {
        ApprovalKey { key }
    }

    /// The hub's key from `<home>/approval-key`, created (32 random bytes, mode 600) on first
    /// use. Two processes creating it at once agree on one key: the file appears whole, by link.
    pub fn load_or_create(home: &Path) -> Result<ApprovalKey> {
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
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| anyhow!("no randomness available: {e}"))?;
        let mut tag = [0u8; 6];
        getrandom::fill(&mut tag).map_err(|e| anyhow!("no randomness available: {e}"))?;
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

    /// Signs the state for `pending` of run `run_id` with `nonce`, valid until `expires_ms`.
    pub fn sign(
        &self,
        run_id: &str,
        pending: &PendingCall,
        nonce: [u8; NONCE_BYTES],
        expires_ms: u64,
    ) -> String {
        let body =
            format!("{VERSION}.{run_id}.{}.{}.{}.{expires_ms}", pending.id, pending.seq, hex::encode(nonce));
        let mac = hmac_sha256(&self.key, body.as_bytes());
        format!("{body}.{}", hex::encode(mac))
    }

    /// Checks `state`'s signature and expiry at `now_ms`, and returns what it names.
    pub fn verify(&self, state: &str, now_ms: u64) -> Result<Claims, StateError> {
        let (body, mac) = state.rsplit_once('.').ok_or(StateError::Malformed)?;
        let mac = hex::decode(mac).map_err(|_| StateError::Malformed)?;
        if !constant_time_eq(&hmac_sha256(&self.key, body.as_bytes()), &mac) {
            return Err(StateError::BadSignature);
        }
        let parts: Vec<&str> = body.split('.').collect();
        let [version, run_id, pending_id, seq, nonce, expires] = parts[..] else {
            return Err(StateError::Malformed);
        };
        if version != VERSION || !is_run_id(run_id) || !is_pending_id(pending_id) {
            return Err(StateError::Malformed);
        }
        let seq = seq.parse().map_err(|_| StateError::Malformed)?;
        let expires_ms: u64 = expires.parse().map_err(|_| StateError::Malformed)?;
        if nonce.len() != NONCE_BYTES * 2 || hex::decode(nonce).is_err() {
            return Err(StateError::Malformed);
        }
        if now_ms >= expires_ms {
            return Err(StateError::Expired);
        }
        Ok(Claims {
            run_id: run_id.to_owned(),
            pending_id: pending_id.to_owned(),
            seq,
            nonce: nonce.to_owned(),
            expires_ms,
        })
    }

    /// Verifies `state` and that it names exactly `pending` of run `run_id`.
    pub fn verify_for(
        &self,
        state: &str,
        run_id: &str,
        pending: &PendingCall,
        now_ms: u64,
    ) -> Result<Claims, StateError> {
        let claims = self.verify(state, now_ms)?;
        if claims.run_id != run_id || claims.pending_id != pending.id || claims.seq != pending.seq {
            return Err(StateError::Mismatch);
        }
        Ok(claims)
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
    Ok(ApprovalKey { key })
}

fn is_pending_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A fresh nonce for one prompt.
pub fn nonce() -> Result<[u8; NONCE_BYTES]> {
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::fill(&mut nonce).map_err(|e| anyhow!("no randomness available: {e}"))?;
    Ok(nonce)
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

/// HMAC-SHA256 (RFC 2104) over `message` with `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The four choices, as the prompt offers them.
const CHOICES: [(&str, &str); 4] = [
    ("once", "Allow once"),
    ("run", "Allow for the rest of this run"),
    ("always", "Always allow (a policy rule pinned to this tool's contract)"),
    ("deny", "Deny"),
];

/// The elicitation request for `pending` of run `run_id`, carrying `state`; the prompt closes
/// at `closes_ms`.
pub fn request(run_id: &str, pending: &PendingCall, state: &str, closes_ms: u64) -> ElicitRequestParams {
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

/// What a person sees: the call's address, connection, what the tool does, why it asks, when
/// the request expires (and the prompt closes, when sooner) and the redacted arguments, the
/// whole at most [`MESSAGE_BYTES`].
pub fn message(run_id: &str, pending: &PendingCall, closes_ms: u64) -> String {
    let mut expires = utc_time(pending.expires_ms);
    if closes_ms < pending.expires_ms {
        expires.push_str(&format!(
            " (this prompt closes at {}; later, `capabilities hub approve {run_id}`)",
            utc_time(closes_ms)
        ));
    }
    let head = format!(
        "Allow this tool call?\n\
         Tool: {}\n\
         Connection: {}\n\
         What it does: {}\n\
         Why it asks: {}\n\
         Expires: {}\n\
         Run: {run_id}\n\
         Arguments:\n",
        pending.address,
        pending.connection.as_deref().unwrap_or("default"),
        pending.summary,
        pending.reason,
        expires,
    );
    let full = format!("{head}{}", pending.preview);
    if full.len() <= MESSAGE_BYTES {
        return full;
    }
    const MARK: &str = "\n[truncated]";
    let mut end = MESSAGE_BYTES.saturating_sub(MARK.len());
    while !full.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &full[..end])
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM UTC`.
fn utc_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// A person's answer to one prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Accepted with one of the four choices; a decline reads as `Decided(Deny)`.
    Decided(Choice),
    /// Dismissed, or accepted without a choice the prompt offered: the call stays pending.
    Undecided,
}

/// Reads the client's reply.
pub fn answer(result: &ElicitResult) -> Answer {
    match result.action {
        ElicitationAction::Decline => Answer::Decided(Choice::Deny),
        ElicitationAction::Accept => result
            .content
            .as_ref()
            .and_then(|c| c.get("choice"))
            .and_then(|c| c.as_str())
            .and_then(Choice::parse)
            .map_or(Answer::Undecided, Answer::Decided),
        _ => Answer::Undecided,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use capabilities_core::approval::PendingKind;
    use capabilities_core::manifest::ContractDigest;
    use expect_test::expect;
    use serde_json::json;

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
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        expect!["5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"]
            .assert_eq(&hex::encode(mac));
        // A key longer than the block is hashed first (test case 6).
        let mac = hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First");
        expect!["60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"]
            .assert_eq(&hex::encode(mac));
    }

    #[test]
    fn a_signed_state_verifies_for_its_call_only() {
        let call = pending("p_0a0b0c", 3, "{}");
        let state = key().sign(RUN, &call, [1; 16], NOW + 500);
        expect!["v1.run_0123456789abcdef.p_0a0b0c.3.01010101010101010101010101010101.1800000000500"]
            .assert_eq(state.rsplit_once('.').unwrap().0);
        let claims = key().verify_for(&state, RUN, &call, NOW).expect("verifies");
        assert_eq!(claims.nonce, "01".repeat(16));
        assert_eq!(claims.expires_ms, NOW + 500);
        let other = pending("p_ffffff", 3, "{}");
        assert_eq!(key().verify_for(&state, RUN, &other, NOW), Err(StateError::Mismatch));
        let moved = pending("p_0a0b0c", 4, "{}");
        assert_eq!(key().verify_for(&state, RUN, &moved, NOW), Err(StateError::Mismatch));
        assert_eq!(key().verify_for(&state, "run_ffffffffffffffff", &call, NOW), Err(StateError::Mismatch));
    }

    #[test]
    fn an_expired_state_does_not_count() {
        let call = pending("p_1", 0, "{}");
        let state = key().sign(RUN, &call, [2; 16], NOW + 500);
        assert!(key().verify(&state, NOW + 499).is_ok());
        assert_eq!(key().verify(&state, NOW + 500), Err(StateError::Expired));
    }

    #[test]
    fn a_tampered_or_forged_state_does_not_count() {
        let call = pending("p_1", 0, "{}");
        let state = key().sign(RUN, &call, [2; 16], NOW + 500);
        // A later expiry, another call, another run: the MAC no longer matches.
        for tampered in [
            state.replace(".1800000000500.", ".1900000000500."),
            state.replace(".p_1.", ".p_2."),
            state.replace(RUN, "run_0123456789abcdee"),
        ] {
            assert_eq!(key().verify(&tampered, NOW), Err(StateError::BadSignature), "{tampered}");
        }
        // Signed with another key.
        let forged = ApprovalKey::from_bytes([8; 32]).sign(RUN, &call, [2; 16], NOW + 500);
        assert_eq!(key().verify(&forged, NOW), Err(StateError::BadSignature));
        for garbage in ["", ".", "v1", "v1.x.y", &format!("{state}.00"), "v1.a.b.c.d.e.zz"] {
            assert!(key().verify(garbage, NOW).is_err(), "{garbage}");
        }
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
        assert_eq!(first.key, second.key);
        let meta = fs::metadata(home.path().join(KEY_FILE)).expect("the key file");
        assert_eq!(meta.len(), 32);
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        fs::write(home.path().join(KEY_FILE), b"short").expect("write");
        assert!(ApprovalKey::load_or_create(home.path()).is_err());
    }

    #[test]
    fn the_message_names_the_call_and_fits_4_kb() {
        let call = pending("p_1", 0, "{\n  \"entities\": []\n}");
        expect![[r#"
            Allow this tool call?
            Tool: memory.createEntities
            Connection: default
            What it does: Create multiple new entities in the knowledge graph
            Why it asks: the tool may change data
            Expires: 2027-01-16 08:00 UTC
            Run: run_0123456789abcdef
            Arguments:
            {
              "entities": []
            }"#]]
        .assert_eq(&message(RUN, &call, call.expires_ms));
        let sooner = message(RUN, &call, NOW + 30 * 60 * 1000);
        expect!["Expires: 2027-01-16 08:00 UTC (this prompt closes at 2027-01-15 08:30 UTC; later, `capabilities hub approve run_0123456789abcdef`)"]
            .assert_eq(sooner.lines().find(|l| l.starts_with("Expires")).unwrap_or_default());
        let big = pending("p_1", 0, &"é".repeat(5000));
        let text = message(RUN, &big, NOW);
        assert!(text.len() <= MESSAGE_BYTES, "{}", text.len());
        assert!(text.ends_with("\n[truncated]"));
    }

    #[test]
    fn the_request_offers_four_titled_choices() {
        let call = pending("p_1", 0, "{}");
        let params = request(RUN, &call, "v1.state", NOW);
        let value = serde_json::to_value(&params).expect("serializes");
        expect![[r#"{"_meta":{"sh.capabilities/approvalState":"v1.state"},"mode":"form","choice":{"type":"string","title":"Decision","description":"What may this call do?","oneOf":[{"const":"once","title":"Allow once"},{"const":"run","title":"Allow for the rest of this run"},{"const":"always","title":"Always allow (a policy rule pinned to this tool's contract)"},{"const":"deny","title":"Deny"}]},"required":["choice"]}"#]]
        .assert_eq(
            &json!({
                "_meta": value["_meta"],
                "mode": value["mode"],
                "choice": value["requestedSchema"]["properties"]["choice"],
                "required": value["requestedSchema"]["required"],
            })
            .to_string(),
        );
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
