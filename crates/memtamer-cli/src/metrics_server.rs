//! A minimal HTTP/1.1 endpoint for Prometheus scrapes: answers `GET /metrics`
//! with the latest rendered text and anything else with 404. One request per
//! connection (`Connection: close`); no dependencies, since a scrape is the
//! only client (Prometheus text format 0.0.4).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The text served at /metrics, replaced by the sampler after each window.
pub type Page = Arc<Mutex<String>>;

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

/// The request head (up to the blank line, at most 1 KiB): a request may
/// arrive in several segments, and answering the first alone would misroute it.
fn read_head(stream: &mut impl Read) -> String {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Answers connections on `listener` forever; a client that misbehaves
/// only loses its own connection.
pub fn serve(listener: &TcpListener, page: &Page) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let req = read_head(&mut stream);
        let text = page.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let _ = stream.write_all(response(&req, &text).as_bytes());
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
    }

    #[test]
    fn serves_the_current_page_over_tcp() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let page: Page = Arc::new(Mutex::new("memtamer_up 1\n".into()));
        let served = Arc::clone(&page);
        std::thread::spawn(move || serve(&listener, &served));
        let get = |path: &str| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            // in two segments, as a slow client may send it
            s.write_all(format!("GET {path}").as_bytes()).unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            s.write_all(b" HTTP/1.1\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        assert!(get("/metrics").ends_with("memtamer_up 1\n"));
        *page.lock().unwrap() = "memtamer_up 2\n".into();
        assert!(get("/metrics").ends_with("memtamer_up 2\n"));
        assert!(get("/other").starts_with("HTTP/1.1 404"));
    }
}
