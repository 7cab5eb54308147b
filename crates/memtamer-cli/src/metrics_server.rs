//! A minimal HTTP/1.1 endpoint for Prometheus scrapes: answers `GET /metrics`
//! with the latest rendered text and anything else with 404. One request per
//! connection (`Connection: close`); a scrape is the only client
//! (Prometheus text format 0.0.4).
//!
//! Any user on the host can connect, so no client may hold the endpoint
//! (issue 22 item 6: the old loop served one connection at a time, and 8
//! idle connections stopped scrapes). One thread multiplexes every
//! connection with `poll(2)`, all sockets non-blocking: a client that sends
//! nothing, or one byte a second, or never reads its answer, only occupies
//! its own slot until its [`Limits::deadline`]; when [`Limits::max_conns`]
//! are open the oldest is dropped to make room. No HTTP crate is in the
//! offline registry this project builds from, and the protocol needed here
//! (one GET, one answer) is small enough to keep in one file.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The text served at /metrics, replaced by the sampler after each window.
pub type Page = Arc<Mutex<String>>;

/// Bounds on what one client may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once; the oldest is dropped for a new one.
    pub max_conns: usize,
    /// Time from accept to the last byte of the answer: a client slower
    /// than this is dropped. Prometheus's default scrape timeout is 10 s.
    pub deadline: Duration,
    /// Longest request head read; a longer one is answered as it stands.
    pub max_head: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_conns: 256,
            deadline: Duration::from_secs(5),
            max_head: 4096,
        }
    }
}

/// Pure: the full HTTP response to `request` (its first bytes) when the
/// current page is `metrics`.
pub fn response(request: &str, metrics: &str) -> String {
    let (status, body) = if request.starts_with("GET /metrics") {
        ("200 OK", metrics)
    } else {
        ("404 Not Found", "try /metrics\n")
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Pure: whether `head` is a complete request head (a request may arrive
/// in several segments, and answering the first alone would misroute it).
fn head_complete(head: &[u8], max: usize) -> bool {
    head.len() >= max || head.windows(4).any(|w| w == b"\r\n\r\n")
}

/// One client connection: reading its head, then writing its answer.
struct Conn {
    stream: TcpStream,
    accepted: Instant,
    head: Vec<u8>,
    /// The answer and how much of it was written.
    out: Option<(Vec<u8>, usize)>,
}

enum Step {
    Keep,
    Close,
}

impl Conn {
    /// Reads what is there; once the head is complete (or the client closed
    /// its side) the answer is prepared from the current page.
    fn on_readable(&mut self, page: &Page, max_head: usize) -> Step {
        let mut buf = [0u8; 1024];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.head.extend_from_slice(&buf[..n]);
                    if head_complete(&self.head, max_head) {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Keep,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
        let req = String::from_utf8_lossy(&self.head).into_owned();
        let text = page.lock().unwrap_or_else(|p| p.into_inner()).clone();
        self.out = Some((response(&req, &text).into_bytes(), 0));
        self.on_writable()
    }

    /// Writes what the socket takes; closes when all is written.
    fn on_writable(&mut self) -> Step {
        let Some((out, done)) = &mut self.out else {
            return Step::Keep;
        };
        while *done < out.len() {
            match self.stream.write(&out[*done..]) {
                Ok(0) => return Step::Close,
                Ok(n) => *done += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Step::Keep,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        Step::Close
    }
}

/// Answers connections on `listener` for ever with the default [`Limits`].
pub fn serve(listener: &TcpListener, page: &Page) {
    let never = AtomicBool::new(false);
    serve_until(listener, page, Limits::default(), &never);
}

/// Answers connections on `listener` until `stop` is set (checked at least
/// every 100 ms); a client that misbehaves only loses its own connection.
pub fn serve_until(listener: &TcpListener, page: &Page, limits: Limits, stop: &AtomicBool) {
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    let mut conns: Vec<Conn> = Vec::new();
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        conns.retain(|c| now.duration_since(c.accepted) < limits.deadline);
        let next_expiry = conns
            .iter()
            .map(|c| (c.accepted + limits.deadline).saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::MAX);
        let wait = next_expiry.min(Duration::from_millis(100));
        fds.clear();
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        for c in &conns {
            fds.push(libc::pollfd {
                fd: c.stream.as_raw_fd(),
                events: if c.out.is_some() {
                    libc::POLLOUT
                } else {
                    libc::POLLIN
                },
                revents: 0,
            });
        }
        let ms = i32::try_from(wait.as_millis().max(1)).unwrap_or(100);
        // SAFETY: `fds` is a live array of fds.len() pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc <= 0 {
            continue; // timeout, or EINTR: look at deadlines and the stop flag
        }
        // existing connections first (indices match `fds[1..]`)
        let mut keep = Vec::with_capacity(conns.len());
        for (mut c, p) in conns.drain(..).zip(fds[1..].iter()) {
            let step = if p.revents == 0 {
                Step::Keep
            } else if c.out.is_some() {
                c.on_writable()
            } else {
                c.on_readable(page, limits.max_head)
            };
            if matches!(step, Step::Keep) {
                keep.push(c);
            }
        }
        conns = keep;
        if fds[0].revents != 0 {
            accept_all(listener, &mut conns, limits.max_conns);
        }
    }
}

/// Accepts every pending connection; past `max` the oldest open one is
/// dropped, so a flood of idle clients cannot lock out the next scrape.
fn accept_all(listener: &TcpListener, conns: &mut Vec<Conn>, max: usize) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if conns.len() >= max.max(1) {
                    conns.remove(0); // accepted first: the oldest
                }
                conns.push(Conn {
                    stream,
                    accepted: Instant::now(),
                    head: Vec::new(),
                    out: None,
                });
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // WouldBlock: nothing more; other errors (EMFILE...): try later
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_and_not_found() {
        let ok = response("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "a 1\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(ok.contains("Content-Length: 4\r\n"));
        assert!(ok.ends_with("\r\n\r\na 1\n"));
        let nf = response("GET / HTTP/1.1\r\n\r\n", "a 1\n");
        assert!(nf.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(nf.ends_with("try /metrics\n"));
        assert!(head_complete(b"GET / HTTP/1.1\r\n\r\n", 4096));
        assert!(!head_complete(b"GET / HTTP/1.1\r\n", 4096));
        assert!(head_complete(&[b'x'; 16], 16));
    }

    /// A server on a free port, stopped on drop.
    struct Server {
        addr: std::net::SocketAddr,
        page: Page,
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Server {
        fn start(limits: Limits) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let page: Page = Arc::new(Mutex::new("memtamer_up 1\n".into()));
            let stop = Arc::new(AtomicBool::new(false));
            let (p, s) = (Arc::clone(&page), Arc::clone(&stop));
            let thread = std::thread::spawn(move || serve_until(&listener, &p, limits, &s));
            Server {
                addr,
                page,
                stop,
                thread: Some(thread),
            }
        }

        /// GET `path`, its request in two segments as a slow client may send it.
        fn get(&self, path: &str) -> String {
            let mut s = TcpStream::connect(self.addr).unwrap();
            // a generous bound on a scrape; the old server never answered
            // while a slow client dribbled its head
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(format!("GET {path}").as_bytes()).unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            s.write_all(b" HTTP/1.1\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).expect("the scrape was answered");
            out
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    #[test]
    fn serves_the_current_page_over_tcp() {
        let server = Server::start(Limits::default());
        assert!(server.get("/metrics").ends_with("memtamer_up 1\n"));
        *server.page.lock().unwrap() = "memtamer_up 2\n".into();
        assert!(server.get("/metrics").ends_with("memtamer_up 2\n"));
        assert!(server.get("/other").starts_with("HTTP/1.1 404"));
    }

    /// Issue 22 item 6: idle and dribbling clients (any user can open them)
    /// do not stop a scrape. Before, one connection was served at a time
    /// and a client sending a byte every 50 ms held it for ~50 s.
    #[test]
    fn idle_and_slow_clients_do_not_block_a_scrape() {
        let server = Server::start(Limits::default());
        let idle: Vec<TcpStream> = (0..16)
            .map(|_| TcpStream::connect(server.addr).unwrap())
            .collect();
        let done = Arc::new(AtomicBool::new(false));
        let dribblers: Vec<_> = (0..8)
            .map(|_| {
                let mut s = TcpStream::connect(server.addr).unwrap();
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    while !done.load(Ordering::Relaxed) {
                        if s.write_all(b"G").is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..3 {
            assert!(server.get("/metrics").ends_with("memtamer_up 1\n"));
        }
        done.store(true, Ordering::Relaxed);
        for d in dribblers {
            d.join().unwrap();
        }
        drop(idle);
    }

    #[test]
    fn a_flood_past_the_connection_bound_drops_the_oldest() {
        let server = Server::start(Limits {
            max_conns: 8,
            ..Limits::default()
        });
        let flood: Vec<TcpStream> = (0..32)
            .map(|_| TcpStream::connect(server.addr).unwrap())
            .collect();
        assert!(server.get("/metrics").ends_with("memtamer_up 1\n"));
        // the first of the flood was dropped: it reads end of file
        let mut first = &flood[0];
        first
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(first.read(&mut buf).unwrap_or(0), 0);
    }

    #[test]
    fn a_client_past_its_deadline_is_dropped() {
        let server = Server::start(Limits {
            deadline: Duration::from_millis(200),
            ..Limits::default()
        });
        let mut s = TcpStream::connect(server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /met").unwrap();
        let mut buf = [0u8; 16];
        // dropped without an answer once its 200 ms are up
        assert_eq!(s.read(&mut buf).unwrap_or(0), 0);
        assert!(server.get("/metrics").ends_with("memtamer_up 1\n"));
    }
}
