//! A hub's child process as a target holds it: the process, and its stderr collected on a
//! thread of its own into one buffer that every restart keeps writing to, so a failing case
//! shows what each run of the hub wrote.

use std::io::Read;
use std::process::Child;
use std::sync::{Arc, Mutex};

/// Where a child's stderr collects.
pub(crate) type Sink = Arc<Mutex<Vec<u8>>>;

pub(crate) struct Process {
    child: Child,
    stderr: Sink,
}

impl Process {
    /// `child`, whose stderr goes to `stderr` (see [`drain`]).
    pub(crate) fn new(child: Child, stderr: Sink) -> Process {
        Process { child, stderr }
    }

    /// The buffer to hand the next spawn of this hub, for [`Process::replace`].
    pub(crate) fn sink(&self) -> Sink {
        Arc::clone(&self.stderr)
    }

    /// Everything the process (and the ones before it) wrote to stderr.
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process and waits for it; nothing when it has already ended.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Ends this process and holds `child`, started with [`Process::sink`], instead.
    pub(crate) fn replace(&mut self, child: Child) {
        self.kill();
        self.child = child;
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Collects a pipe into `sink` on a thread of its own, so the child never blocks on it.
pub(crate) fn drain(mut pipe: impl Read + Send + 'static, sink: Sink) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
}
