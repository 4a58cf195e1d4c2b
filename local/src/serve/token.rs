//! The bearer token of `hub serve --http`: 32 random bytes as hex in `http-token` in the hub
//! store, made on first use with mode 600, and compared in constant time.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use subtle::ConstantTimeEq;

use crate::platform::random_bytes;

/// The token file's name in the hub store.
pub const TOKEN_FILE: &str = "http-token";

/// Random bytes in a token; the file holds twice as many hex digits.
const TOKEN_BYTES: usize = 32;

/// The secret every HTTP request must present. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// Whether `presented` is this token, in time that does not depend on where they differ.
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(presented).into()
    }

    /// Reads the token from `home`'s token file, making the file first if there is none.
    /// Returns the token and the file's path.
    pub fn load_or_create(home: &Path) -> Result<(Token, PathBuf)> {
        let path = home.join(TOKEN_FILE);
        match read(&path)? {
            Some(token) => Ok((token, path)),
            None => Ok((create(&path)?, path)),
        }
    }
}

/// The token in `path`, or `None` when there is no such file.
fn read(path: &Path) -> Result<Option<Token>> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "{} has mode {mode:o}, so others may read the token: run `chmod 600 {}` (or delete the file \
             to make a new token) and start the server again",
            path.display(),
            path.display()
        );
    }
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let token = text.trim();
    if token.len() != TOKEN_BYTES * 2 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!(
            "{} does not hold a token ({} hex digits expected): delete it and start the server again \
             to make a new one",
            path.display(),
            TOKEN_BYTES * 2
        );
    }
    Ok(Some(Token(token.to_owned())))
}

/// Makes a new token file at `path`, mode 600 from the start. If another server made it first,
/// that token is used.
fn create(path: &Path) -> Result<Token> {
    let bytes: [u8; TOKEN_BYTES] = random_bytes()?;
    let token = hex::encode(bytes);
    let file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            return read(path)?.with_context(|| format!("{} vanished while being read", path.display()));
        }
        Err(err) => return Err(err).with_context(|| format!("creating {}", path.display())),
    };
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Token(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn made_once_then_read_back() {
        let dir = private_dir();
        let (first, path) = Token::load_or_create(dir.path()).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.trim().len(), 64);
        assert!(first.matches(text.trim().as_bytes()));
        let (second, _) = Token::load_or_create(dir.path()).unwrap();
        assert!(second.matches(first.0.as_bytes()));
        assert!(!second.matches(b""));
        assert!(!second.matches(&text.trim().as_bytes()[..63]));
        assert_eq!(format!("{second:?}"), "Token(…)");
    }

    #[test]
    fn loose_or_broken_files_are_refused() {
        let dir = private_dir();
        let (_, path) = Token::load_or_create(dir.path()).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = Token::load_or_create(dir.path()).unwrap_err().to_string();
        assert!(err.contains("has mode 644") && err.contains("chmod 600"), "{err}");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, "short\n").unwrap();
        let err = Token::load_or_create(dir.path()).unwrap_err().to_string();
        assert!(err.contains("does not hold a token"), "{err}");
    }
}
