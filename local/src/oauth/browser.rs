//! Opening the authorization URL: `$BROWSER` when set (a `:`-separated list of commands, `%s`
//! standing for the URL, else the URL as the last argument, as `xdg-open` and Python's
//! `webbrowser` read it), else the system's opener. The URL is always printed too, so a person
//! can open it by hand; `--no-browser` only prints it.

use std::process::{Command, Stdio};

pub(super) fn show(url: &str, no_browser: bool, at_most: &str) {
    eprintln!("To sign in, open this URL in a browser:\n  {url}");
    if no_browser {
        eprintln!("waiting for the sign-in to finish ({at_most} at most)…");
        return;
    }
    if open(url) {
        eprintln!("opened it in your browser; waiting for the sign-in to finish ({at_most} at most)…");
    } else {
        eprintln!("could not open a browser; open the URL yourself. Waiting ({at_most} at most)…");
    }
}

/// Starts a browser on `url` without waiting for it; whether one started.
fn open(url: &str) -> bool {
    if let Ok(browsers) = std::env::var("BROWSER") {
        for candidate in browsers.split(':').map(str::trim).filter(|c| !c.is_empty()) {
            let mut words: Vec<String> = candidate.split_whitespace().map(str::to_owned).collect();
            if words.iter().any(|w| w.contains("%s")) {
                for word in &mut words {
                    *word = word.replace("%s", url);
                }
            } else {
                words.push(url.to_owned());
            }
            if spawn(&words) {
                return true;
            }
        }
        return false;
    }
    let opener: &[&str] = if cfg!(target_os = "macos") { &["open"] } else { &["xdg-open"] };
    let mut words: Vec<String> = opener.iter().map(|w| (*w).to_owned()).collect();
    words.push(url.to_owned());
    spawn(&words)
}

fn spawn(words: &[String]) -> bool {
    let Some((program, args)) = words.split_first() else { return false };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn();
    match child {
        // Reaped on a thread of its own, so a browser that stays open never blocks the hub.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}
