//! Standard input and output as the MCP client hands them over, read and written on the
//! server's own runtime. Tokio's `Stdin` and `Stdout` send every read and write to a thread of
//! the blocking pool and back, a hand-off per message each way that cost more than the rest of
//! a short `execute` (about 0.25 ms a message on this project's two-core machines).
//!
//! - Pipes (what Rust, Go and Python clients spawn with): rmcp's `stdio_pipes`, which reopens
//!   them with their own non-blocking open file descriptions.
//! - Unix sockets (what Node clients spawn with: libuv's `'pipe'` is a socket pair, so Claude
//!   Code and the TypeScript SDK client hand a server sockets): each read and write asks for
//!   no wait itself (`MSG_DONTWAIT`) and waits for readiness on the runtime's reactor. The
//!   descriptions' flags stay as they are, so a stderr that shares them still blocks. Output
//!   is on the reactor only while a write waits for room: a socket wakes whoever watches it
//!   for room each time the client reads from it, and that woke the server's thread on the
//!   client's core after every answer.
//! - Anything else (a terminal, a file): Tokio's blocking handles.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use nix::sys::socket::{MsgFlags, recv, send};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

/// The server's input and output.
pub type Input = Pin<Box<dyn AsyncRead + Send>>;
pub type Output = Pin<Box<dyn AsyncWrite + Send>>;

/// Standard input and output, each on the runtime's reactor when it can be. Must be called
/// inside a runtime with I/O enabled.
pub fn stdio() -> (Input, Output) {
    let input =
        socket(io::stdin().as_fd().try_clone_to_owned()).and_then(|fd| register(fd, Interest::READABLE));
    let output = socket(io::stdout().as_fd().try_clone_to_owned()).map(SocketOutput::new);
    match (input, output) {
        (Some(input), Some(output)) => (Box::pin(SocketHalf(input)), Box::pin(output)),
        (Some(input), None) => (Box::pin(SocketHalf(input)), Box::pin(tokio::io::stdout())),
        (None, Some(output)) => (Box::pin(tokio::io::stdin()), Box::pin(output)),
        // Pipes, or a terminal or file: rmcp tells them apart.
        (None, None) => {
            let (input, output) = rmcp::transport::stdio_pipes();
            (Box::pin(input), Box::pin(output))
        }
    }
}

/// `fd` when it is a socket.
fn socket(fd: io::Result<OwnedFd>) -> Option<OwnedFd> {
    let fd = fd.ok()?;
    let is_socket = fd
        .try_clone()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|meta| meta.file_type().is_socket());
    is_socket.then_some(fd)
}

#[expect(unsafe_code, reason = "registering a descriptor with the reactor; see the SAFETY note")]
fn register(fd: OwnedFd, interest: Interest) -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: the `AsyncFd` owns `fd`, a descriptor this process opened (a duplicate of a
    // standard stream), so it stays open and names the same description until it is dropped,
    // and `OwnedFd::as_raw_fd` always returns that descriptor.
    unsafe { AsyncFd::register_with_interest(fd, interest) }.ok()
}

/// The reading side of a socket, each read made without waiting and the wait left to the
/// reactor.
struct SocketHalf(AsyncFd<OwnedFd>);

impl AsyncRead for SocketHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut ready = ready!(self.0.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match ready.try_io(|fd| Ok(recv(fd.as_raw_fd(), unfilled, MsgFlags::MSG_DONTWAIT)?)) {
                Ok(Ok(read)) => {
                    buf.advance(read);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                // Not ready after all: the readiness was cleared, wait again.
                Err(_would_block) => {}
            }
        }
    }
}

/// The writing side of a socket: each write made without waiting, and the socket put on the
/// reactor only when one finds no room, until a write goes through again. Writes may come from
/// a run thread outside the runtime, so the reactor is named here.
struct SocketOutput {
    fd: OwnedFd,
    watch: Option<AsyncFd<OwnedFd>>,
    runtime: tokio::runtime::Handle,
}

impl SocketOutput {
    /// Must be called inside a runtime with I/O enabled.
    fn new(fd: OwnedFd) -> SocketOutput {
        SocketOutput { fd, watch: None, runtime: tokio::runtime::Handle::current() }
    }

    fn send(fd: &OwnedFd, bytes: &[u8]) -> io::Result<usize> {
        Ok(send(fd.as_raw_fd(), bytes, MsgFlags::MSG_DONTWAIT)?)
    }
}

impl AsyncWrite for SocketOutput {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        loop {
            let Some(watch) = &this.watch else {
                match SocketOutput::send(&this.fd, bytes) {
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                    written => return Poll::Ready(written),
                }
                // No room: wait for some on the reactor. Room made before the registration is
                // reported by it, so no wake-up is lost in between.
                let fd = this.fd.try_clone()?;
                let _entered = this.runtime.enter();
                let watch = register(fd, Interest::WRITABLE)
                    .ok_or_else(|| io::Error::other("stdout cannot be watched"))?;
                this.watch = Some(watch);
                continue;
            };
            let mut ready = ready!(watch.poll_write_ready(cx))?;
            if let Ok(written) = ready.try_io(|fd| SocketOutput::send(fd.get_ref(), bytes)) {
                drop(ready);
                // Through again: off the reactor, so the client's reads wake nobody.
                this.watch = None;
                return Poll::Ready(written);
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Nothing is buffered here: each write went to the socket.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The client sees the end when the process exits; standard output is not half-closed.
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A socket whose description stays blocking is read and written without blocking the
    /// runtime, and its flags are left as they were.
    #[tokio::test]
    async fn a_blocking_socket_is_read_and_written_on_the_reactor() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let reader =
            register(socket(ours.as_fd().try_clone_to_owned()).unwrap(), Interest::READABLE).unwrap();
        let writer = SocketOutput::new(socket(ours.as_fd().try_clone_to_owned()).unwrap());
        let (mut reader, mut writer) = (SocketHalf(reader), writer);
        let peer = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut theirs = theirs;
            theirs.write_all(b"ping\n").unwrap();
            let mut got = [0u8; 5];
            theirs.read_exact(&mut got).unwrap();
            got
        });
        let mut got = [0u8; 5];
        reader.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping\n");
        writer.write_all(b"pong\n").await.unwrap();
        assert_eq!(&peer.join().unwrap(), b"pong\n");
        let flags = nix::fcntl::fcntl(&ours, nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_eq!(flags & nix::libc::O_NONBLOCK, 0, "the description's flags are unchanged");
    }

    /// A write that finds no room waits on the reactor until the client reads, goes through
    /// whole, and leaves the output off the reactor again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_full_socket_is_waited_for_then_left_off_the_reactor() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let mut writer = SocketOutput::new(socket(ours.as_fd().try_clone_to_owned()).unwrap());
        let message = vec![b'x'; 4 * 1024 * 1024];
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            // Let the writer fill the socket first.
            std::thread::sleep(std::time::Duration::from_millis(100));
            let mut got = Vec::new();
            (&theirs).take(4 * 1024 * 1024).read_to_end(&mut got).unwrap();
            got.len()
        });
        writer.write_all(&message).await.unwrap();
        assert!(writer.watch.is_none(), "off the reactor once a write went through");
        assert_eq!(reader.join().unwrap(), message.len());
    }

    #[test]
    fn a_file_is_not_taken_for_a_socket() {
        let file = tempfile::tempfile().unwrap();
        assert!(socket(Ok(OwnedFd::from(file))).is_none());
    }
}
