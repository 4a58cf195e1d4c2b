//! A stdio server's stdout, read by whichever thread waits on it.
//!
//! The pump, a task on the pool's runtime, reads it while no run thread waits for an answer
//! there. A run thread that made a call in place (see `lane.rs`) and waits for its answer takes
//! the reading over: it waits for stdout itself and reads its answer as soon as the server
//! writes it. Otherwise the pump's thread would wake, read the answer and wake the run thread in
//! turn, one wake-up more on every call (about 40 µs on this project's two-core machines).
//!
//! The pump waits on stdout through an epoll instance of the hub's own (the gate), itself on the
//! pump's reactor. A run thread that takes the reading turns stdout off in the gate, so the
//! server's answer wakes that thread alone: otherwise the pump's thread woke too, often on the
//! other core, which the server paid for inside its write (about 30 µs a call here). Giving
//! the reading back turns stdout on again, and bytes already waiting then wake the pump.
//!
//! One reader at a time, under one lock. Whoever reads splits the bytes into lines and sends each
//! whole line on at once: an answer to a lane call goes to that call's slot; anything else
//! (rmcp's own answers, the server's requests and notifications) goes to a queue that only the
//! pump empties, into the rmcp client, so those keep their order. While a run thread reads, the
//! pump only forwards what it queues. When the run thread stops, it tells the pump, which then
//! reads whatever came meanwhile: nothing waits for a wake-up that went to the other thread.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use serde_json::Value;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, oneshot};

use super::lane::Waiting;
use super::pool::lock;
use super::stderr::shorten;
use super::stdio::Noise;

/// Longest stdout line forwarded to the client; longer ones are dropped and noted.
pub(super) const MAX_LINE: usize = 16 * 1024 * 1024;

/// At most this much is read in one go, so a server that never stops writing cannot keep a
/// reader from looking at its own answer.
const BATCH: usize = 1024 * 1024;

/// A run thread stops reading once this many lines wait for the pump: they wait for the rmcp
/// client, and the pump's slower pace then holds the server back, as a full pipe does.
const MAX_QUEUED: usize = 256;

/// A line for the rmcp client: the message parsed, and its text.
pub(super) struct ForClient {
    pub(super) message: Value,
    pub(super) text: Vec<u8>,
}

/// The server's stdout, shared by the pump and the lane.
pub(super) struct Stdout {
    /// The pipe's read end, non-blocking. Each waiter registers a duplicate with its own
    /// runtime; reads go through this one.
    fd: OwnedFd,
    /// The pump's view of `fd`: stdout is in it while no run thread reads.
    gate: Epoll,
    reading: Mutex<Reading>,
    for_client: Mutex<VecDeque<ForClient>>,
    /// Set while a run thread reads.
    taken: AtomicBool,
    /// Set once stdout has ended or failed, by the reader holding `reading`; the pump looks
    /// without that lock.
    ended: AtomicBool,
    /// Wakes the pump: a run thread stopped reading, or queued lines for the client.
    pump: Notify,
    waiting: Arc<Waiting>,
    noise: Arc<Mutex<Noise>>,
    /// Answers a waiting thread read itself.
    #[cfg(test)]
    read_by_waiter: std::sync::atomic::AtomicUsize,
    /// Times a run thread giving the reading back woke the pump.
    #[cfg(test)]
    pump_told: std::sync::atomic::AtomicUsize,
    /// Times stdout's readiness woke the pump while a run thread read.
    #[cfg(test)]
    pump_woken_taken: std::sync::atomic::AtomicUsize,
}

/// Bytes read and not yet a whole line.
struct Reading {
    partial: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`], dropped up to its newline.
    too_long: bool,
    buffer: Vec<u8>,
}

/// How a read went.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Read {
    /// Everything there was is read.
    Drained,
    /// A batch is read and more may be waiting.
    More,
    /// The server closed stdout, or it cannot be read.
    Ended,
}

/// A whole line, or the place of one that was too long.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Whole<'a> {
    Line(&'a [u8]),
    TooLong,
}

impl Stdout {
    /// `fd` is the pipe's read end; answers go to `waiting`, lines that are not JSON-RPC are
    /// noted in `noise`.
    pub(super) fn new(fd: OwnedFd, waiting: Arc<Waiting>, noise: Arc<Mutex<Noise>>) -> io::Result<Stdout> {
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL)?;
        let flags = nix::fcntl::OFlag::from_bits_retain(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(flags))?;
        let gate = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        gate.add(&fd, EpollEvent::new(EpollFlags::EPOLLIN, 0))?;
        let reading = Reading { partial: Vec::new(), too_long: false, buffer: vec![0; 64 * 1024] };
        Ok(Stdout {
            fd,
            gate,
            reading: Mutex::new(reading),
            for_client: Mutex::new(VecDeque::new()),
            taken: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            pump: Notify::new(),
            waiting,
            noise,
            #[cfg(test)]
            read_by_waiter: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            pump_told: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            pump_woken_taken: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Readiness of stdout on the current runtime, for a run thread: a duplicate of the read
    /// end, registered with its reactor.
    fn watch(&self) -> io::Result<AsyncFd<OwnedFd>> {
        register(self.fd.as_fd().try_clone_to_owned()?)
    }

    /// Readiness of the gate on the current runtime, for the pump: stdout's while no run thread
    /// reads it.
    pub(super) fn pump_watch(&self) -> io::Result<AsyncFd<OwnedFd>> {
        register(self.gate.0.as_fd().try_clone_to_owned()?)
    }

    /// Turns stdout on or off in the gate. Modifying an entry allocates nothing, so it fails
    /// only on a descriptor that is not what it should be; then the pump is told to look, as
    /// when the gate did not exist.
    fn gate(&self, open: bool) {
        let flags = if open { EpollFlags::EPOLLIN } else { EpollFlags::empty() };
        if self.gate.modify(&self.fd, &mut EpollEvent::new(flags, 0)).is_err() {
            self.pump.notify_one();
        }
    }

    /// Takes back what the gate says is ready, once stdout is read dry, so it wakes the pump
    /// again only for bytes that come after.
    fn drain_gate(&self) {
        let mut events = [EpollEvent::empty()];
        let _ = self.gate.wait(&mut events, EpollTimeout::ZERO);
    }

    /// Reads what stdout holds, up to a batch, and sends each whole line on.
    fn read(&self) -> Read {
        let mut reading = lock(&self.reading);
        if self.ended.load(Ordering::Acquire) {
            return Read::Ended;
        }
        let mut read = 0;
        let result = loop {
            if read >= BATCH {
                break Read::More;
            }
            let Reading { buffer, .. } = &mut *reading;
            match nix::unistd::read(&self.fd, buffer) {
                Ok(0) => {
                    self.ended.store(true, Ordering::Release);
                    let Reading { partial, too_long, .. } = &mut *reading;
                    if *too_long {
                        self.send_on(Whole::TooLong);
                    } else if !partial.is_empty() {
                        self.send_on(Whole::Line(partial));
                    }
                    partial.clear();
                    break Read::Ended;
                }
                Ok(n) => {
                    read += n;
                    let Reading { partial, too_long, buffer, .. } = &mut *reading;
                    split(partial, too_long, &buffer[..n], MAX_LINE, |whole| self.send_on(whole));
                }
                Err(nix::errno::Errno::EAGAIN) => break Read::Drained,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => {
                    self.ended.store(true, Ordering::Release);
                    break Read::Ended;
                }
            }
        };
        drop(reading);
        if !lock(&self.for_client).is_empty() && self.taken.load(Ordering::Acquire) {
            self.pump.notify_one();
        }
        result
    }

    /// A whole line to its lane call, to the client's queue, or to the noise.
    fn send_on(&self, whole: Whole<'_>) {
        let text = match whole {
            Whole::Line(line) => line.trim_ascii(),
            Whole::TooLong => return self.note(format!("a line longer than {MAX_LINE} bytes")),
        };
        if text.is_empty() {
            return;
        }
        match serde_json::from_slice::<Value>(text) {
            Ok(message) if message.is_object() || message.is_array() => {
                if let Some(message) = self.waiting.take_answer(message) {
                    lock(&self.for_client).push_back(ForClient { message, text: text.to_vec() });
                }
            }
            _ => self.note(shorten(&String::from_utf8_lossy(text), 200)),
        }
    }

    fn note(&self, sample: String) {
        let mut noise = lock(&self.noise);
        noise.lines += 1;
        noise.first.get_or_insert(sample);
    }

    /// The pump's side: the next line for the rmcp client, read as needed; `None` once stdout
    /// has ended and every line is forwarded. `watch` is the gate's readiness on the pump's
    /// runtime ([`Stdout::pump_watch`]).
    pub(super) async fn next_for_client(&self, watch: &AsyncFd<OwnedFd>) -> Option<ForClient> {
        loop {
            if let Some(line) = lock(&self.for_client).pop_front() {
                return Some(line);
            }
            // Without the reading lock, which a run thread may hold while it reads.
            if self.ended.load(Ordering::Acquire) {
                // A reader may have queued lines after the end was seen.
                return lock(&self.for_client).pop_front();
            }
            tokio::select! {
                ready = watch.readable() => {
                    let Ok(mut ready) = ready else { return None };
                    // A run thread took the reading after this readiness came: it reads, and
                    // tells the pump when it stops.
                    if self.taken.load(Ordering::Acquire) {
                        #[cfg(test)]
                        self.pump_woken_taken.fetch_add(1, Ordering::Relaxed);
                        self.drain_gate();
                        ready.clear_ready();
                        continue;
                    }
                    if self.read() == Read::Drained {
                        self.drain_gate();
                        ready.clear_ready();
                    }
                }
                () = self.pump.notified() => {
                    if !self.taken.load(Ordering::Acquire) {
                        self.read();
                    }
                }
            }
        }
    }

    /// The lane's side: waits for `answered`, reading stdout on this thread while no one else
    /// does. `None` when the slot was dropped (stdout ended).
    pub(super) async fn answer(&self, answered: &mut oneshot::Receiver<Value>) -> Option<Value> {
        if let Some(reader) = Taken::take(self) {
            if let Some(answer) = reader.read_until(answered).await {
                return Some(answer);
            }
            // Dropped here: the pump reads again.
        }
        answered.await.ok()
    }
}

/// A run thread's turn at reading; given back, with the pump told, when dropped however the
/// wait ends (an answer, a timeout, the run cancelled).
struct Taken<'a>(&'a Stdout);

impl<'a> Taken<'a> {
    fn take(stdout: &'a Stdout) -> Option<Taken<'a>> {
        let taken = stdout.taken.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if taken {
            stdout.gate(false);
        }
        taken.then_some(Taken(stdout))
    }

    /// Reads until `answered` holds the answer; `None` to leave the reading to the pump
    /// (stdout ended or failed, or lines pile up for the client).
    async fn read_until(&self, answered: &mut oneshot::Receiver<Value>) -> Option<Value> {
        let stdout = self.0;
        let watch = stdout.watch().ok()?;
        loop {
            match answered.try_recv() {
                Ok(answer) => {
                    #[cfg(test)]
                    stdout.read_by_waiter.fetch_add(1, Ordering::Relaxed);
                    return Some(answer);
                }
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            if lock(&stdout.for_client).len() >= MAX_QUEUED {
                return None;
            }
            tokio::select! {
                biased;
                // The pump was partway through a read when this thread took over.
                answer = &mut *answered => return answer.ok(),
                ready = watch.readable() => {
                    let mut ready = ready.ok()?;
                    match stdout.read() {
                        Read::Drained => ready.clear_ready(),
                        Read::More => {}
                        Read::Ended => return None,
                    }
                }
            }
        }
    }
}

impl Drop for Taken<'_> {
    /// Gives the reading back. Lines may have come since this thread last read: this thread
    /// reads once more, so the pump is woken only when something is left for it (lines for the
    /// client, more to read, or the end), not after every call. Bytes that come after that
    /// read wake the pump through the gate, open again.
    fn drop(&mut self) {
        let stdout = self.0;
        stdout.taken.store(false, Ordering::Release);
        let read = stdout.read();
        stdout.gate(true);
        if read != Read::Drained || !lock(&stdout.for_client).is_empty() {
            #[cfg(test)]
            stdout.pump_told.fetch_add(1, Ordering::Relaxed);
            stdout.pump.notify_one();
        }
    }
}

/// `fd` on the current runtime's reactor, for reading.
#[expect(unsafe_code, reason = "registering a descriptor with the reactor; see the SAFETY note")]
fn register(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns `fd`, a duplicate this process just made, so it stays open and
    // names the same pipe or epoll instance until the `AsyncFd` is dropped, and
    // `OwnedFd::as_raw_fd` always returns that descriptor.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|error| error.into_parts().1)
}

/// Appends `bytes` to the line in `partial` and calls `each` for every line they complete, its
/// newline included. A line longer than `max`, newline counted, is dropped and called as
/// [`Whole::TooLong`] once its end is read. The stdin pump (`stdio.rs`) splits with it too.
pub(super) fn split(
    partial: &mut Vec<u8>,
    too_long: &mut bool,
    bytes: &[u8],
    max: usize,
    mut each: impl FnMut(Whole<'_>),
) {
    let mut rest = bytes;
    while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
        let (head, tail) = rest.split_at(newline + 1);
        rest = tail;
        if std::mem::take(too_long) || partial.len() + head.len() > max {
            partial.clear();
            each(Whole::TooLong);
        } else if partial.is_empty() {
            each(Whole::Line(head));
        } else {
            partial.extend_from_slice(head);
            each(Whole::Line(partial));
            partial.clear();
        }
    }
    if *too_long {
        return;
    }
    if partial.len() + rest.len() > max {
        partial.clear();
        *too_long = true;
    } else {
        partial.extend_from_slice(rest);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn lines(chunks: &[&[u8]], max: usize) -> Vec<Option<String>> {
        let (mut partial, mut too_long, mut out) = (Vec::new(), false, Vec::new());
        for chunk in chunks {
            split(&mut partial, &mut too_long, chunk, max, |whole| {
                out.push(match whole {
                    Whole::Line(line) => Some(String::from_utf8(line.to_vec()).unwrap()),
                    Whole::TooLong => None,
                });
            });
        }
        out
    }

    #[test]
    fn lines_are_whole_and_bounded_however_the_bytes_come() {
        let input: &[u8] = b"ab\nabcdefghij\n\nxyz\nabcdef\nabcde\n";
        let want = vec![
            Some("ab\n".to_owned()),
            None,
            Some("\n".to_owned()),
            Some("xyz\n".to_owned()),
            // Six bytes and the newline: over a limit of six.
            None,
            Some("abcde\n".to_owned()),
        ];
        assert_eq!(lines(&[input], 6), want);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(lines(&bytes, 6), want);
        let threes: Vec<&[u8]> = input.chunks(3).collect();
        assert_eq!(lines(&threes, 6), want);
    }

    /// A server's stdout over a real pipe, its pump on a runtime of its own as the pool's is.
    struct Server {
        stdout: Arc<Stdout>,
        waiting: Arc<Waiting>,
        noise: Arc<Mutex<Noise>>,
        writes: std::fs::File,
        forwarded: std::sync::mpsc::Receiver<Value>,
        _pumps: tokio::runtime::Runtime,
    }

    fn server() -> Server {
        let (read, write) = nix::unistd::pipe().unwrap();
        let waiting = Arc::new(Waiting::default());
        let noise = Arc::new(Mutex::new(Noise::default()));
        let stdout = Arc::new(Stdout::new(read, Arc::clone(&waiting), Arc::clone(&noise)).unwrap());
        let pumps =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let (forward, forwarded) = std::sync::mpsc::channel();
        let (pumped, closing) = (Arc::clone(&stdout), Arc::clone(&waiting));
        pumps.spawn(async move {
            let watch = pumped.pump_watch().unwrap();
            while let Some(line) = pumped.next_for_client(&watch).await {
                assert_eq!(serde_json::from_slice::<Value>(&line.text).unwrap(), line.message);
                forward.send(line.message).unwrap();
            }
            closing.close();
        });
        Server { stdout, waiting, noise, writes: std::fs::File::from(write), forwarded, _pumps: pumps }
    }

    fn run_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// The answer to call `lane-0`, which the server writes within `text` once a run thread
    /// waits for it on the pipe.
    fn answer_within(server: &Server, text: &'static str) -> Value {
        let mut answered = server.waiting.slot("lane-0");
        let mut writes = server.writes.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            writes.write_all(text.as_bytes()).unwrap();
        });
        let answer = run_thread().block_on(server.stdout.answer(&mut answered)).unwrap();
        writer.join().unwrap();
        answer
    }

    #[test]
    fn a_waiting_thread_reads_its_own_answer_and_the_client_gets_the_rest_in_order() {
        let mut server = server();
        let text = concat!(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":1}}\n",
            "not json\n",
            "{\"jsonrpc\":\"2.0\",\"id\":\"lane-0\",\"result\":{\"ok\":true}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n",
        );
        let answer = answer_within(&server, text);
        assert_eq!(answer["result"], json!({"ok": true}));
        assert_eq!(server.stdout.read_by_waiter.load(Ordering::Relaxed), 1, "read on the waiting thread");
        assert!(!server.stdout.taken.load(Ordering::Acquire), "the turn at reading is given back");
        let first = server.forwarded.recv_timeout(Duration::from_secs(5)).unwrap();
        let second = server.forwarded.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(first["params"]["n"], 1);
        assert_eq!(second["id"], 7);
        assert_eq!(lock(&server.noise).lines, 1);
        assert_eq!(lock(&server.noise).first.as_deref(), Some("not json"));
        // Lines written after the run thread stopped reading reach the client too.
        server.writes.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n").unwrap();
        assert_eq!(server.forwarded.recv_timeout(Duration::from_secs(5)).unwrap()["id"], 8);
    }

    /// A call whose answer is all the server wrote leaves nothing for the pump: giving the
    /// reading back does not wake it, and it still forwards what comes afterwards.
    #[test]
    fn giving_the_reading_back_wakes_the_pump_only_for_what_is_left() {
        let mut server = server();
        let answer = answer_within(&server, "{\"jsonrpc\":\"2.0\",\"id\":\"lane-0\",\"result\":{}}\n");
        assert_eq!(answer["id"], "lane-0");
        assert_eq!(server.stdout.read_by_waiter.load(Ordering::Relaxed), 1);
        assert_eq!(server.stdout.pump_told.load(Ordering::Relaxed), 0, "nothing was left for the pump");
        assert_eq!(
            server.stdout.pump_woken_taken.load(Ordering::Relaxed),
            0,
            "the answer, written while the run thread read, did not wake the pump"
        );
        server.writes.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n").unwrap();
        assert_eq!(server.forwarded.recv_timeout(Duration::from_secs(5)).unwrap()["id"], 9);
    }

    /// Calls from two run threads, each answer written with a line for the client around it,
    /// in many rounds: every answer reaches its call, every other line the client, in order,
    /// whoever read it. A wake-up lost between the pump and a run thread hangs a call, which
    /// the timeout turns into a failure.
    #[test]
    fn no_line_is_lost_or_reordered_between_the_readers() {
        let server = server();
        let rounds = 400;
        let calls: Vec<_> = (0..2)
            .map(|thread| {
                let (stdout, waiting) = (Arc::clone(&server.stdout), Arc::clone(&server.waiting));
                let mut writes = server.writes.try_clone().unwrap();
                std::thread::spawn(move || {
                    let runtime = run_thread();
                    for round in 0..rounds {
                        let id = format!("lane-{thread}-{round}");
                        let mut answered = waiting.slot(&id);
                        let text = format!(
                            "{{\"method\":\"n\",\"params\":{{\"t\":{thread},\"r\":{round}}}}}\n{{\"id\":\"{id}\",\"result\":{round}}}\n"
                        );
                        let asked = async {
                            // The answer comes while this thread waits, or before it looks.
                            if round % 3 == 0 {
                                tokio::task::yield_now().await;
                            }
                            writes.write_all(text.as_bytes()).unwrap();
                            tokio::time::timeout(Duration::from_secs(10), stdout.answer(&mut answered)).await
                        };
                        let answer = runtime.block_on(asked).expect("an answer was lost").unwrap();
                        assert_eq!(answer["result"], round);
                    }
                })
            })
            .collect();
        for call in calls {
            call.join().unwrap();
        }
        // Most answers are read by the thread waiting for them (the rest by the other thread, or
        // by the pump when the answer came before its call looked).
        let read_by_waiter = server.stdout.read_by_waiter.load(Ordering::Relaxed);
        assert!(
            read_by_waiter > rounds / 2,
            "{read_by_waiter} of {} answers read by a waiting thread",
            2 * rounds
        );
        let mut next = [0; 2];
        for _ in 0..2 * rounds {
            let line = server.forwarded.recv_timeout(Duration::from_secs(10)).expect("a line was lost");
            let thread = line["params"]["t"].as_u64().unwrap() as usize;
            assert_eq!(line["params"]["r"], next[thread], "in order");
            next[thread] += 1;
        }
        assert_eq!(next, [rounds, rounds]);
    }

    #[test]
    fn a_call_waiting_when_stdout_ends_ends_as_closed() {
        let server = server();
        let mut answered = server.waiting.slot("lane-0");
        let Server { writes, stdout, .. } = server;
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let mut writes = writes;
            writes.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"last\"}\n{\"partial").unwrap();
            drop(writes);
        });
        let answer = run_thread().block_on(async {
            tokio::time::timeout(Duration::from_secs(10), stdout.answer(&mut answered)).await
        });
        closer.join().unwrap();
        assert_eq!(answer.expect("the end was not seen"), None);
        assert_eq!(server.forwarded.recv_timeout(Duration::from_secs(5)).unwrap()["method"], "last");
    }
}
