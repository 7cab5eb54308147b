//! The API client against a fake API server (a local HTTP server serving a
//! recorded PodList) and the parser against that PodList and broken copies.

use super::*;
use crate::kubewatch::{KubeWatcher, PodView, WatchConfig};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::sync::mpsc;

const FIXTURE: &str = include_str!("../tests/fixtures/podlist-node-a.json");

/// A fake API server answering one connection per scripted response; the
/// request lines it saw come back on the channel. `None` holds the
/// connection open without answering (a hung API server).
fn fake_api(responses: Vec<Option<String>>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for resp in responses {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
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
            match resp {
                Some(text) => {
                    s.write_all(text.as_bytes()).unwrap();
                }
                // wait until the client gives up and closes
                None => {
                    let mut sink = Vec::new();
                    let _ = r.read_to_end(&mut sink);
                }
            }
        }
    });
    (format!("http://{addr}"), rx)
}

fn chunked(status: &str, body: &str) -> String {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    for c in body.as_bytes().chunks(1000) {
        out.push_str(&format!("{:x}\r\n", c.len()));
        out.push_str(std::str::from_utf8(c).unwrap());
        out.push_str("\r\n");
    }
    out.push_str("0\r\n\r\n");
    out
}

fn sized(status: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn status_body(code: u16, reason: &str, message: &str) -> String {
    format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":"{message}","reason":"{reason}","code":{code}}}"#
    )
}

fn endpoint(url: &str) -> ApiEndpoint {
    ApiEndpoint::parse(url, Duration::from_millis(300)).unwrap()
}

#[test]
fn parses_the_recorded_pod_list() {
    let l = parse_pod_list(FIXTURE).unwrap();
    assert!(l.rejected.is_empty(), "{:?}", l.rejected);
    let names: Vec<String> = l
        .pods
        .iter()
        .map(|p| format!("{}/{}", p.namespace, p.name))
        .collect();
    assert_eq!(
        names,
        [
            "prod/redis-0",
            "prod/memcached-7d9f8b6c5-x2kq9",
            "batch/fio-writer-1",
            "prod/web-pending"
        ]
    );
    let redis = &l.pods[0];
    assert_eq!(redis.uid, "6d1b0c2e-93a4-4f7b-8c55-0e2f1a9b7c31");
    assert_eq!(redis.qos, Qos::Burstable);
    assert_eq!(redis.labels.get("app").map(String::as_str), Some("redis"));
    assert_eq!(redis.labels.len(), 5);
    assert_eq!(
        redis.container_ids,
        ["8a1f3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a"]
    );
    assert_eq!(l.pods[1].qos, Qos::Guaranteed);
    // init containers count; a container still being created has no ID
    assert_eq!(l.pods[2].qos, Qos::BestEffort);
    assert_eq!(l.pods[2].container_ids.len(), 2);
    assert!(l.pods[3].container_ids.is_empty());
}

#[test]
fn an_unknown_qos_class_rejects_that_pod_only() {
    let body = FIXTURE.replace("\"BestEffort\"", "\"Platinum\"");
    let l = parse_pod_list(&body).unwrap();
    assert_eq!(l.pods.len(), 3);
    assert_eq!(
        l.rejected,
        [PodError::UnknownQos {
            pod: "batch/fio-writer-1".into(),
            value: "Platinum".into()
        }]
    );
    assert!(l.rejected[0].to_string().contains("unknown qosClass"));
    let body = FIXTURE.replace(r#""qosClass": "Guaranteed""#, r#""qosClassX": 1"#);
    let l = parse_pod_list(&body).unwrap();
    assert_eq!(
        l.rejected,
        [PodError::Missing {
            pod: "prod/memcached-7d9f8b6c5-x2kq9".into(),
            field: "status.qosClass"
        }]
    );
}

#[test]
fn bad_json_and_other_kinds_are_typed_errors() {
    let cut = &FIXTURE[..FIXTURE.len() / 2];
    match parse_pod_list(cut) {
        Err(KubeError::Json { line, .. }) => assert!(line > 50, "line {line}"),
        other => panic!("{other:?}"),
    }
    let e = parse_pod_list(&status_body(500, "InternalError", "x")).unwrap_err();
    assert!(
        matches!(&e, KubeError::WrongKind { kind } if kind == "Status"),
        "{e}"
    );
    // a field of the wrong type names its place
    let body = FIXTURE.replacen(r#""app": "redis""#, r#""app": 7"#, 1);
    let e = parse_pod_list(&body).unwrap_err();
    assert!(
        e.to_string()
            .contains("line 17 column 18: invalid type: integer `7`"),
        "{e}"
    );
}

#[test]
fn lists_the_nodes_pods_from_a_fake_api_server() {
    let (url, seen) = fake_api(vec![
        Some(chunked("200 OK", FIXTURE)),
        Some(sized("200 OK", FIXTURE)),
    ]);
    let ep = endpoint(&url);
    let l = ep.node_pods("node-a").unwrap();
    assert_eq!(l.pods.len(), 4);
    assert_eq!(
        seen.recv().unwrap(),
        "GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a HTTP/1.1"
    );
    assert_eq!(ep.node_pods("node-a").unwrap(), l);
    assert!(matches!(ep.node_pods(""), Err(KubeError::NoNode)));
}

#[test]
fn http_errors_are_typed_and_carry_the_api_message() {
    let (url, _seen) = fake_api(vec![
        Some(sized("401 Unauthorized", &status_body(401, "Unauthorized", "Unauthorized"))),
        Some(sized(
            "403 Forbidden",
            &status_body(
                403,
                "Forbidden",
                "pods is forbidden: User \\\"system:serviceaccount:memtamer:memtamer\\\" cannot list resource \\\"pods\\\"",
            ),
        )),
        Some(sized("503 Service Unavailable", "upstream connect error")),
        Some("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n{\"kind\":".into()),
        Some("SSH-2.0-OpenSSH_9.6\r\n\r\n".into()),
        None,
    ]);
    let ep = endpoint(&url);
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(
        matches!(&e, KubeError::Unauthorized { message } if message == "Unauthorized"),
        "{e}"
    );
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(matches!(&e, KubeError::Forbidden { .. }), "{e}");
    assert!(e.to_string().contains("cannot list resource"), "{e}");
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(
        matches!(&e, KubeError::Status { code: 503, message } if message == "upstream connect error"),
        "{e}"
    );
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(matches!(&e, KubeError::Http { .. }), "{e}");
    // a server that accepts and never answers
    let e = ep.node_pods("node-a").unwrap_err();
    assert!(
        matches!(
            &e,
            KubeError::Timeout {
                op: "read response",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_closed_port_is_a_connect_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = endpoint(&format!("http://127.0.0.1:{port}"))
        .node_pods("node-a")
        .unwrap_err();
    assert!(matches!(&e, KubeError::Io { op: "connect", .. }), "{e}");
}

#[test]
fn endpoint_addresses() {
    let t = Duration::from_secs(1);
    let ep = ApiEndpoint::parse("http://127.0.0.1:8001/", t).unwrap();
    assert_eq!(
        (ep.authority.as_str(), ep.prefix.as_str()),
        ("127.0.0.1:8001", "")
    );
    let ep = ApiEndpoint::parse("http://localhost:8001/k8s", t).unwrap();
    assert_eq!(ep.prefix, "/k8s");
    assert!(ApiEndpoint::parse("http://[::1]:8001", t).is_ok());
    assert!(matches!(
        ApiEndpoint::parse("https://10.96.0.1:443", t),
        Err(KubeError::TlsUnsupported { .. })
    ));
    assert!(matches!(
        ApiEndpoint::parse("http://10.96.0.1:80", t),
        Err(KubeError::NotLoopback { .. })
    ));
    assert!(matches!(
        ApiEndpoint::parse("http://127.0.0.1", t),
        Err(KubeError::BadUrl {
            why: "no :PORT",
            ..
        })
    ));
    assert!(matches!(
        ApiEndpoint::parse("127.0.0.1:8001", t),
        Err(KubeError::BadUrl { .. })
    ));
}

#[test]
fn watch_config_from_the_environment_values() {
    let s = |v: &str| Some(v.to_string());
    assert_eq!(WatchConfig::from_values(None, s("n"), None).unwrap(), None);
    let c = WatchConfig::from_values(s("http://127.0.0.1:8001"), s("node-a"), s("4"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.node.as_str(), c.interval),
        ("node-a", Duration::from_secs(4))
    );
    assert_eq!(c.endpoint.timeout, Duration::from_secs(2));
    assert!(matches!(
        WatchConfig::from_values(s("http://127.0.0.1:8001"), None, None),
        Err(KubeError::NoNode)
    ));
    assert!(WatchConfig::from_values(s("http://127.0.0.1:8001"), s("n"), s("0")).is_err());
}

#[test]
fn a_failed_poll_keeps_the_last_good_view() {
    let mut v = PodView::default();
    v.update(parse_pod_list(FIXTURE));
    v.update(Err(KubeError::Status {
        code: 500,
        message: "etcd".into(),
    }));
    v.update(parse_pod_list("{"));
    assert_eq!((v.pods.len(), v.good_polls, v.failing_for), (4, 1, 2));
    assert!(v.last_error.as_deref().unwrap().contains("JSON line 1"));
    assert_eq!(
        v.index().name_of("6d1b0c2e-93a4-4f7b-8c55-0e2f1a9b7c31"),
        Some("prod/redis-0")
    );
    v.update(Ok(PodList::default()));
    assert_eq!(
        (v.pods.len(), v.failing_for, v.last_error.is_none()),
        (0, 0, true)
    );
}

#[test]
fn the_watcher_thread_publishes_and_keeps_the_last_good_view() {
    // against the fake server: good, then 500, then garbage
    let (url, _seen) = fake_api(vec![
        Some(chunked("200 OK", FIXTURE)),
        Some(sized(
            "500 Internal Server Error",
            &status_body(500, "InternalError", "etcdserver: request timed out"),
        )),
        Some(sized("200 OK", "<html>proxy error</html>")),
    ]);
    let ep = endpoint(&url);
    let (tx, rx) = mpsc::sync_channel::<()>(0);
    let (entered_tx, entered) = mpsc::channel::<()>();
    let w = KubeWatcher::start_with(Duration::from_millis(1), move || {
        // entering poll k+1 means poll k is published; then one request per
        // token the test hands over
        let _ = entered_tx.send(());
        rx.recv().map_err(|_| KubeError::NoNode)?;
        ep.node_pods("node-a")
    });
    for _ in 0..3 {
        entered.recv().unwrap();
        tx.send(()).unwrap();
    }
    // the fourth poll has begun (and waits for a token): three are published
    entered.recv().unwrap();
    let v = w.view();
    assert_eq!((v.good_polls, v.failing_for, v.pods.len()), (1, 2, 4));
    assert!(
        v.last_error.as_deref().unwrap().contains("JSON"),
        "{:?}",
        v.last_error
    );
    drop(tx);
    drop(w);
}
