//! The API client through a real `kubectl proxy` started with the
//! DaemonSet's sidecar arguments (read from dist/kubernetes/memtamer.yaml),
//! in front of a fake API server serving the recorded PodList: the proxy
//! forwards the daemon's one request and refuses others. Skipped, saying
//! so, where no kubectl is installed.

use memtamer_control::kubeapi::ApiEndpoint;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const FIXTURE: &str = include_str!("fixtures/podlist-node-a.json");
const MANIFEST: &str = include_str!("../../../dist/kubernetes/memtamer.yaml");

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The api-proxy container's `args` in the manifest.
fn sidecar_args() -> Vec<String> {
    let mut lines = MANIFEST.lines().skip_while(|l| l.trim() != "- proxy");
    let mut args = vec![lines
        .next()
        .unwrap()
        .trim()
        .trim_start_matches("- ")
        .to_string()];
    args.extend(
        lines
            .take_while(|l| l.trim().starts_with("- --"))
            .map(|l| l.trim().trim_start_matches("- ").to_string()),
    );
    args
}

#[test]
fn through_kubectl_proxy_with_the_sidecars_arguments() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no kubectl on PATH");
        return;
    }
    let args = sidecar_args();
    assert!(args.len() >= 6 && args[0] == "proxy", "{args:?}");
    // fake API server: every request gets the PodList, its request line is recorded
    let upstream = TcpListener::bind("127.0.0.1:0").unwrap();
    let up = upstream.local_addr().unwrap();
    let (tx, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in upstream.incoming() {
            let Ok(mut s) = s else { return };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            let _ = tx.send(line.trim_end().to_string());
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{FIXTURE}",
                FIXTURE.len()
            );
        }
    });
    let dir = std::env::temp_dir().join(format!("memtamer-kproxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: f, cluster: {{server: \"http://{up}\"}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: c, context: {{cluster: f, user: u}}}}]\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    // the sidecar's arguments, on a free port instead of 8001
    let args: Vec<String> = args
        .into_iter()
        .map(|a| {
            if a.starts_with("--port=") {
                "--port=0".into()
            } else {
                a
            }
        })
        .collect();
    let mut child = Killed(
        Command::new("kubectl")
            .args(&args)
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line.trim().rsplit(':').next().unwrap().to_string();
    assert!(
        line.starts_with("Starting to serve on 127.0.0.1:"),
        "{line}"
    );
    let ep =
        ApiEndpoint::parse(&format!("http://127.0.0.1:{port}"), Duration::from_secs(5)).unwrap();
    let pods = ep.node_pods("node-a").unwrap();
    assert_eq!(pods.pods.len(), 4);
    // (kubectl itself may ask for /version at start)
    let forwarded = |seen: &std::sync::mpsc::Receiver<String>| -> Vec<String> {
        seen.try_iter()
            .filter(|l| !l.starts_with("GET /version"))
            .collect()
    };
    assert_eq!(
        forwarded(&seen),
        ["GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a HTTP/1.1"]
    );
    // anything else is refused by the proxy, never forwarded
    for req in [
        "GET /api/v1/secrets HTTP/1.1",
        "DELETE /api/v1/pods HTTP/1.1",
        "GET /api/v1/namespaces/prod/pods/redis-0/exec HTTP/1.1",
    ] {
        let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
        write!(s, "{req}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 403"), "{req}: {resp}");
    }
    assert!(
        seen.try_recv().is_err(),
        "the proxy forwarded a refused request"
    );
    let _ = std::fs::remove_dir_all(dir);
}
