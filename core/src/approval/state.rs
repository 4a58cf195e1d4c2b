//! Approval state a hub signs for one pending call, the prompt a person sees for it, and the
//! reading of their answer. Shared by the local hub and the hosted Worker; each keeps its own
//! key, nonce store and clock, and passes time and nonce bytes in.
//!
//! The state is `v1.<run>.<pending>.<seq>.<nonce>.<expires>.<mac>`, the MAC an HMAC-SHA256 over
//! everything before it. The host spends the nonce in its own storage before recording a
//! decision, so a state counts once.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Choice, PendingCall};

/// The most a prompt's message holds, in bytes.
pub const MESSAGE_BYTES: usize = 4096;
/// The `_meta` key that carries the signed state on an elicitation request.
pub const STATE_META: &str = "sh.capabilities/approvalState";
/// How long one prompt stays open at most, whatever the pending call's own expiry.
pub const ASK_MS: u64 = 30 * 60 * 1000;
/// How many random bytes a state's nonce has.
pub const NONCE_BYTES: usize = 16;

const VERSION: &str = "v1";

/// The key a hub signs approval states with.
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

    /// A key derived from `secret` for `label`: HMAC-SHA256(secret, label). Distinct labels
    /// give unrelated keys, so one configured secret can serve several purposes.
    pub fn derive(secret: &[u8], label: &str) -> ApprovalKey {
        ApprovalKey { key: hmac_sha256(secret, label.as_bytes()) }
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

/// Whether `id` has the shape of a run id (`run_` and 16 lowercase hex digits).
pub fn is_run_id(id: &str) -> bool {
    id.len() == 20
        && id.starts_with("run_")
        && id[4..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn is_pending_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
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

/// Whether `a` and `b` are equal, in time that depends on their length only.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a person sees: the call's address, connection, what the tool does, why it asks, when
/// the request expires (and the prompt closes, when sooner, then `later`) and the redacted
/// arguments, the whole at most [`MESSAGE_BYTES`].
pub fn message(run_id: &str, pending: &PendingCall, closes_ms: u64, later: &str) -> String {
    let mut expires = utc_time(pending.expires_ms);
    if closes_ms < pending.expires_ms {
        expires.push_str(&format!(" (this prompt closes at {}; later, {later})", utc_time(closes_ms)));
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
pub fn utc_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (year, month, day) = civil_date((secs / 86_400) as i64);
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// The calendar date (year, month, day) of `days` since 1970-01-01, by Howard Hinnant's
/// algorithm.
pub fn civil_date(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// A person's answer to one prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// Accepted with one of the four choices; a decline reads as `Decided(Deny)`.
    Decided(Choice),
    /// Dismissed, or accepted without a choice the prompt offered: the call stays pending.
    Undecided,
}

/// Reads an elicitation reply: its `action` (`accept`, `decline`, `cancel`) and, when
/// accepted, its `content`.
pub fn answer(action: &str, content: Option<&Value>) -> Answer {
    match action {
        "decline" => Answer::Decided(Choice::Deny),
        "accept" => content
            .and_then(|c| c.get("choice"))
            .and_then(Value::as_str)
            .and_then(Choice::parse)
            .map_or(Answer::Undecided, Answer::Decided),
        _ => Answer::Undecided,
    }
}

/// Reads an elicitation reply as JSON (`{"action": ..., "content": {...}}`); anything else,
/// or an unknown action, decides nothing.
pub fn answer_value(reply: &Value) -> Answer {
    match reply.get("action").and_then(Value::as_str) {
        Some(action @ ("accept" | "decline" | "cancel")) => answer(action, reply.get("content")),
        _ => Answer::Undecided,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::approval::PendingKind;
    use crate::manifest::ContractDigest;
    use expect_test::expect;
    use serde_json::json;

    const RUN: &str = "run_0123456789abcdef";
    pub(crate) const NOW: u64 = 1_800_000_000_000;
    const LATER: &str = "`capabilities hub approve run_0123456789abcdef`";

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
        // Signed with another key, or a key derived for another label.
        let forged = ApprovalKey::from_bytes([8; 32]).sign(RUN, &call, [2; 16], NOW + 500);
        assert_eq!(key().verify(&forged, NOW), Err(StateError::BadSignature));
        let derived = ApprovalKey::derive(b"secret", "approvals");
        let state = derived.sign(RUN, &call, [2; 16], NOW + 500);
        assert!(ApprovalKey::derive(b"secret", "approvals").verify(&state, NOW).is_ok());
        assert_eq!(
            ApprovalKey::derive(b"secret", "sealing").verify(&state, NOW),
            Err(StateError::BadSignature)
        );
        for garbage in ["", ".", "v1", "v1.x.y", &format!("{state}.00"), "v1.a.b.c.d.e.zz"] {
            assert!(key().verify(garbage, NOW).is_err(), "{garbage}");
        }
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
        .assert_eq(&message(RUN, &call, call.expires_ms, LATER));
        let sooner = message(RUN, &call, NOW + 30 * 60 * 1000, LATER);
        expect!["Expires: 2027-01-16 08:00 UTC (this prompt closes at 2027-01-15 08:30 UTC; later, `capabilities hub approve run_0123456789abcdef`)"]
            .assert_eq(sooner.lines().find(|l| l.starts_with("Expires")).unwrap_or_default());
        let big = pending("p_1", 0, &"é".repeat(5000));
        let text = message(RUN, &big, NOW, LATER);
        assert!(text.len() <= MESSAGE_BYTES, "{}", text.len());
        assert!(text.ends_with("\n[truncated]"));
    }

    #[test]
    fn the_form_offers_four_titled_choices() {
        let call = pending("p_1", 0, "{}");
        let value = crate::surface::approval::form(RUN, &call, "v1.state", NOW, LATER);
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
        let check = |reply: Value, expected: Answer| assert_eq!(answer_value(&reply), expected, "{reply}");
        check(json!({"action": "accept", "content": {"choice": "once"}}), Answer::Decided(Choice::Once));
        check(json!({"action": "accept", "content": {"choice": "always"}}), Answer::Decided(Choice::Always));
        check(json!({"action": "accept", "content": {"choice": "maybe"}}), Answer::Undecided);
        check(json!({"action": "accept"}), Answer::Undecided);
        check(json!({"action": "decline"}), Answer::Decided(Choice::Deny));
        check(json!({"action": "cancel"}), Answer::Undecided);
        check(json!({"action": "deny"}), Answer::Undecided);
        check(json!("decline"), Answer::Undecided);
    }
}
