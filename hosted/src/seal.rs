//! Credential values at rest: ChaCha20-Poly1305 with a key derived from a Worker secret, a
//! random nonce per value, and the tenant, namespace and connection bound in as associated
//! data, so a sealed value moved to another record does not open.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

/// A sealing key. `Debug` never prints it.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// Why a sealed value did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    #[error("the sealing secret is empty; set HUB_SECRETS_KEY on the Worker")]
    NoKey,
    #[error(
        "a sealed value for `{0}` does not open: the key changed or the record was moved; push the secrets again"
    )]
    Open(String),
}

impl SealKey {
    /// The key for `secret` (the Worker secret's text).
    pub fn derive(secret: &str) -> Result<SealKey, SealError> {
        if secret.is_empty() {
            return Err(SealError::NoKey);
        }
        let mut hash = Sha256::new();
        hash.update(b"capabilities-hosted/seal/v1\0");
        hash.update(secret.as_bytes());
        Ok(SealKey(hash.finalize().into()))
    }

    /// Seals `plain` for record `label` with `nonce` (12 fresh random bytes).
    pub fn seal(&self, label: &str, nonce: [u8; 12], plain: &[u8]) -> String {
        let cipher = ChaCha20Poly1305::new(&Key::from(self.0));
        let sealed = cipher
            .encrypt(&Nonce::from(nonce), Payload { msg: plain, aad: label.as_bytes() })
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend(sealed);
        STANDARD.encode(out)
    }

    /// Opens what [`SealKey::seal`] sealed for `label`.
    pub fn open(&self, label: &str, sealed: &str) -> Result<Vec<u8>, SealError> {
        let bytes = STANDARD.decode(sealed).map_err(|_| SealError::Open(label.to_owned()))?;
        if bytes.len() < 12 + 16 {
            return Err(SealError::Open(label.to_owned()));
        }
        let (nonce, body) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().map_err(|_| SealError::Open(label.to_owned()))?;
        ChaCha20Poly1305::new(&Key::from(self.0))
            .decrypt(&Nonce::from(nonce), Payload { msg: body, aad: label.as_bytes() })
            .map_err(|_| SealError::Open(label.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_label() {
        let key = SealKey::derive("worker secret").unwrap();
        let sealed = key.seal("acme/github/work", [7; 12], b"Bearer ghp_123");
        assert!(!sealed.contains("ghp_123"));
        assert_eq!(key.open("acme/github/work", &sealed).unwrap(), b"Bearer ghp_123");
        assert!(key.open("other/github/work", &sealed).is_err());
        assert!(SealKey::derive("another").unwrap().open("acme/github/work", &sealed).is_err());
        assert!(key.open("acme/github/work", "AAAA").is_err());
        assert_eq!(SealKey::derive("").unwrap_err(), SealError::NoKey);
        assert_eq!(format!("{key:?}"), "SealKey(..)");
    }
}
