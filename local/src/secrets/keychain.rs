//! The OS keychain through the `keyring` crate: the Secret Service over D-Bus on Linux and the
//! BSDs, Keychain Services on macOS, the Credential Manager on Windows. Every call blocks.

use keyring::{Entry, Error};

use super::SERVICE;

/// Whether a keychain answers; the reason when it does not. Connects once per process.
pub(super) fn available() -> Result<(), String> {
    Entry::store_status().as_ref().map(|_| ()).map_err(describe)
}

/// The value stored for `account`, `None` when there is none.
pub(super) fn get(account: &str) -> Result<Option<String>, String> {
    match entry(account)?.get_password() {
        Ok(value) => Ok(Some(value)),
        Err(Error::NoEntry) => Ok(None),
        Err(err) => Err(describe(&err)),
    }
}

pub(super) fn set(account: &str, value: &str) -> Result<(), String> {
    entry(account)?.set_password(value).map_err(|e| describe(&e))
}

/// Deletes the value of `account`; whether there was one.
pub(super) fn delete(account: &str) -> Result<bool, String> {
    match entry(account)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(Error::NoEntry) => Ok(false),
        Err(err) => Err(describe(&err)),
    }
}

fn entry(account: &str) -> Result<Entry, String> {
    Entry::new(SERVICE, account).map_err(|e| describe(&e))
}

/// A keychain error in words. Never the stored bytes: some variants carry them.
fn describe(err: &Error) -> String {
    match err {
        Error::BadEncoding(_) => "the stored value is not UTF-8 text".to_owned(),
        Error::BadDataFormat(_, why) => format!("the stored value is malformed ({why})"),
        Error::Ambiguous(entries) => {
            format!("{} keychain items match one slot; delete the extra ones", entries.len())
        }
        Error::NoDefaultStore => "no keychain could be opened".to_owned(),
        other => other.to_string(),
    }
}
