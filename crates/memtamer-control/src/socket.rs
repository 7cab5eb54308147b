//! The daemon's control socket: a Unix stream socket that answers `status`
//! with a JSON document. Only root may connect: the socket file is mode 0600
//! and every peer's credentials (SO_PEERCRED) are checked, because the status
//! names processes and their cgroups.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Errors of the control socket.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Creating, binding or connecting failed.
    #[error("control socket {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The daemon answered something that is not a status document.
    #[error("control socket {path}: bad reply: {why}")]
    BadReply {
        /// The socket path.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SocketError + '_ {
    move |source| SocketError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The status document, shared by the control loop (which writes it) and
/// the socket (which serves it). The loop rebuilds the document only when a
/// reader asks for it: building it every window would cost a 1 ms loop more
/// than its sensing and policies together.
#[derive(Debug, Default)]
pub struct StatusBoard {
    /// Generation and text of the latest document.
    doc: Mutex<(u64, String)>,
    /// Set by a reader, cleared by the loop when it publishes.
    wanted: AtomicBool,
    /// Signalled on every publish.
    fresh: Condvar,
}

impl StatusBoard {
    /// A board holding `initial` until the first publish.
    pub fn new(initial: &str) -> StatusBoard {
        StatusBoard {
            doc: Mutex::new((0, initial.to_string())),
            ..Default::default()
        }
    }

    /// Whether a reader waits for a fresh document (the loop's cheap check,
    /// once per window).
    pub fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Stores a fresh document and wakes the readers waiting for one.
    pub fn publish(&self, doc: String) {
        self.wanted.store(false, Ordering::Relaxed);
        if let Ok(mut d) = self.doc.lock() {
            d.0 += 1;
            d.1 = doc;
        }
        self.fresh.notify_all();
    }

    /// Asks the loop for a fresh document and waits up to `wait` for it; a
    /// loop that does not answer in time (stopped, or busy restoring) gets
    /// its previous document served instead.
    pub fn fetch(&self, wait: Duration) -> Option<String> {
        let deadline = Instant::now() + wait;
        let mut d = self.doc.lock().ok()?;
        let seen = d.0;
        self.wanted.store(true, Ordering::Relaxed);
        while d.0 == seen {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            d = self.fresh.wait_timeout(d, left).ok()?.0;
        }
        Some(d.1.clone())
    }
}

/// How long a `status` request waits for the loop to publish a fresh
/// document before it is served the previous one.
pub const STATUS_WAIT: Duration = Duration::from_millis(500);

/// Uid of the process at the other end of `stream`.
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0).then_some(cred.uid)
}

/// The serving side: a thread that answers each connection with a status
/// document the daemon publishes on request.
pub struct ControlServer {
    path: PathBuf,
    /// Shared with the serving thread so that `drop` can shut it down while
    /// the thread blocks in `accept` (the fd stays open until both let go).
    listener: Arc<UnixListener>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ControlServer {
    /// Binds `path` (replacing a stale socket file), mode 0600, and serves
    /// `status` from `board`. Peers whose uid differs from ours are refused.
    pub fn start(path: &Path, board: Arc<StatusBoard>) -> Result<ControlServer, SocketError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(path))?;
        }
        // only a stale socket is replaced: `socket` naming a regular file
        // (a typo, or /etc/passwd) must not delete it (issue 22 item 3)
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                std::fs::remove_file(path).map_err(io(path))?;
            }
            Ok(m) => {
                return Err(io(path)(std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    format!(
                        "exists and is not a socket ({}); refusing to replace it",
                        kind_of(&m.file_type())
                    ),
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(path)(e)),
        }
        let listener = UnixListener::bind(path).map_err(io(path))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io(path))?;
        // blocking accept: no wake-ups while nobody asks (drop shuts it down)
        let listener = Arc::new(listener);
        let serving = listener.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let thread = std::thread::Builder::new()
            .name("memtamer-control".into())
            .spawn(move || {
                while !stop2.load(Ordering::Relaxed) {
                    match serving.accept() {
                        Ok((stream, _)) => serve(stream, me, &board),
                        // shut down by drop, or a transient error: look at
                        // `stop`, and do not spin on a persistent error
                        Err(_) => std::thread::sleep(Duration::from_millis(20)),
                    }
                }
            })
            .map_err(io(path))?;
        Ok(ControlServer {
            path: path.to_path_buf(),
            listener,
            stop,
            thread: Some(thread),
        })
    }
}

fn serve(mut stream: UnixStream, me: u32, board: &StatusBoard) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let _ = stream.set_write_timeout(Some(Duration::from_millis(500)));
    let uid = peer_uid(&stream);
    if uid != Some(0) && uid != Some(me) {
        let _ = stream.write_all(b"{\"error\":\"permission denied: root only\"}\n");
        return;
    }
    let mut line = String::new();
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let reply = match line.trim() {
        "status" => board
            .fetch(STATUS_WAIT)
            .unwrap_or_else(|| "{\"error\":\"status unavailable\"}".into()),
        other => format!("{{\"error\":\"unknown request {:?}\"}}", other),
    };
    let _ = stream.write_all(reply.as_bytes());
    let _ = stream.write_all(b"\n");
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // SAFETY: the fd belongs to `self.listener`, alive until this
        // returns; shutting a listening socket down wakes a blocked accept
        unsafe {
            libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // ours unless replaced meanwhile: remove only a socket
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What a file is, in words, for the refusal above.
fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else {
        "not a socket"
    }
}

/// Asks the daemon at `path` for its status document (JSON).
pub fn request_status(path: &Path) -> Result<serde_json::Value, SocketError> {
    let mut s = UnixStream::connect(path).map_err(io(path))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(io(path))?;
    s.write_all(b"status\n").map_err(io(path))?;
    let mut buf = String::new();
    s.read_to_string(&mut buf).map_err(io(path))?;
    let v: serde_json::Value =
        serde_json::from_str(buf.trim()).map_err(|e| SocketError::BadReply {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(SocketError::BadReply {
            path: path.to_path_buf(),
            why: err.to_string(),
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_request_gets_the_document_the_loop_publishes_for_it() {
        let path = std::env::temp_dir().join(format!("memtamer-sock-{}", std::process::id()));
        let board = Arc::new(StatusBoard::new("{\"jobs\":[]}"));
        let server = ControlServer::start(&path, board.clone()).expect("start");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // a loop that publishes only when asked, as the daemon's does
        let stop = Arc::new(AtomicBool::new(false));
        let (b, st) = (board.clone(), stop.clone());
        let looper = std::thread::spawn(move || {
            let mut n = 0;
            while !st.load(Ordering::Relaxed) {
                if b.wanted() {
                    n += 1;
                    b.publish(format!("{{\"jobs\":[{n}]}}"));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            n
        });
        let v = request_status(&path).expect("status");
        assert_eq!(v["jobs"], serde_json::json!([1]));
        let v = request_status(&path).expect("status");
        assert_eq!(
            v["jobs"],
            serde_json::json!([2]),
            "each request gets a fresh document"
        );
        stop.store(true, Ordering::Relaxed);
        assert_eq!(looper.join().expect("loop"), 2, "nothing published unasked");
        // with no loop answering, the previous document is served (after
        // STATUS_WAIT)
        let v = request_status(&path).expect("status");
        assert_eq!(v["jobs"], serde_json::json!([2]));
        // an unknown request is answered with an error, not a hang
        let mut s = UnixStream::connect(&path).expect("connect");
        s.write_all(b"shutdown\n").expect("write");
        let mut buf = String::new();
        s.read_to_string(&mut buf).expect("read");
        assert!(buf.contains("unknown request"), "{buf}");
        drop(server);
        assert!(!path.exists(), "socket file removed on drop");
        assert!(request_status(&path).is_err());
    }

    /// Issue 22 item 3: `socket` naming a regular file deleted it.
    #[test]
    fn a_socket_path_naming_another_file_is_refused_not_deleted() {
        let dir = std::env::temp_dir().join(format!("memtamer-sock-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("precious");
        std::fs::write(&file, "keep me").expect("file");
        let board = Arc::new(StatusBoard::new("{}"));
        let err = ControlServer::start(&file, board.clone())
            .err()
            .expect("refused");
        assert!(
            err.to_string().contains("not a socket (a regular file)"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), "keep me");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        assert!(ControlServer::start(&link, board.clone()).is_err());
        assert_eq!(std::fs::read_to_string(&file).expect("kept"), "keep me");
        // a stale socket is still replaced
        let sock = dir.join("sock");
        drop(UnixListener::bind(&sock).expect("stale"));
        let server = ControlServer::start(&sock, board).expect("replaces a stale socket");
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
