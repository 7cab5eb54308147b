//! A small Kubernetes API client: the pods of this node, for selection by
//! namespace and label (labels are not on the node's disk; see
//! [`crate::kubepods`]).
//!
//! One request, `GET /api/v1/pods?fieldSelector=spec.nodeName=NODE`, whose
//! PodList gives each pod's uid, namespace, name, labels, QoS class and
//! container IDs. The uid and QoS class place the pod in the kubelet's
//! cgroup tree ([`crate::kubepods::pod_cgroup_path`]).
//!
//! **Plain HTTP only.** No TLS implementation is available to this build
//! offline (no rustls/openssl crate in the registry cache), so the daemon
//! talks to the API server through a `kubectl proxy` sidecar on
//! `127.0.0.1:8001` in the same pod, which holds the ServiceAccount token and
//! verifies the API server's certificate (`dist/kubernetes/memtamer.yaml`,
//! docs/kubernetes.md). An `https://` address is refused with
//! [`KubeError::TlsUnsupported`] rather than sent in the clear, and so is a
//! plain-HTTP address that is not a loopback one ([`KubeError::NotLoopback`]):
//! the pod list is cluster metadata.
//!
//! Parsing is pure ([`parse_pod_list`]) and the transport is a plain
//! `TcpStream`, so both are tested against a fake API server serving a
//! recorded PodList.

use crate::kubepods::Qos;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The largest response accepted (a PodList of ~110 pods, the kubelet's
/// default maximum, is well under 2 MiB).
pub const MAX_RESPONSE: usize = 32 << 20;

/// Why the pod list could not be had; each variant names its cause so a log
/// line says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The API address is not `http://HOST:PORT[/PREFIX]`.
    #[error("kubernetes api {url:?}: {why}")]
    BadUrl {
        /// The address as configured.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// An `https://` address: this build has no TLS (see the module docs).
    #[error("kubernetes api {url:?}: https needs TLS, which this build lacks; run the `kubectl proxy` sidecar and use http://127.0.0.1:8001 (docs/kubernetes.md)")]
    TlsUnsupported {
        /// The address as configured.
        url: String,
    },
    /// Plain HTTP to a host that is not loopback would expose pod metadata.
    #[error(
        "kubernetes api {url:?}: plain http only to a loopback address (the kubectl proxy sidecar)"
    )]
    NotLoopback {
        /// The address as configured.
        url: String,
    },
    /// No node name (`NODE_NAME` from the downward API) to select pods by.
    #[error("no node name: set NODE_NAME (the DaemonSet sets it from spec.nodeName)")]
    NoNode,
    /// Connecting, sending or receiving failed.
    #[error("kubernetes api {addr}: {op}: {source}")]
    Io {
        /// Where.
        addr: String,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// No answer within the timeout.
    #[error("kubernetes api {addr}: no answer within {timeout_ms} ms ({op})")]
    Timeout {
        /// Where.
        addr: String,
        /// What was being done.
        op: &'static str,
        /// The timeout.
        timeout_ms: u64,
    },
    /// 401: the proxy's (ServiceAccount's) credentials were refused.
    #[error("kubernetes api: 401 Unauthorized ({message}); is the ServiceAccount token mounted in the proxy sidecar?")]
    Unauthorized {
        /// The API server's message.
        message: String,
    },
    /// 403: the ServiceAccount may not list pods.
    #[error("kubernetes api: 403 Forbidden ({message}); the ClusterRole must allow get/list/watch on pods")]
    Forbidden {
        /// The API server's message.
        message: String,
    },
    /// Any other non-2xx status.
    #[error("kubernetes api: HTTP {code} ({message})")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The API server's message or the body's start.
        message: String,
    },
    /// The response is not HTTP/1.x as expected.
    #[error("kubernetes api: malformed HTTP response: {why}")]
    Http {
        /// What is wrong.
        why: String,
    },
    /// The body is not a PodList (JSON syntax or shape), with its position.
    #[error("kubernetes api: PodList JSON line {line} column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's description.
        message: String,
    },
    /// The body is JSON but of another kind (e.g. a Status object).
    #[error("kubernetes api: expected kind PodList, got {kind:?}")]
    WrongKind {
        /// The `kind` found.
        kind: String,
    },
}

/// One pod whose record could not be used (the rest of the list still is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodError {
    /// `status.qosClass` is not one of the kubelet's three classes: the pod's
    /// cgroup cannot be placed.
    #[error(
        "pod {pod}: unknown qosClass {value:?} (expected Guaranteed, Burstable or BestEffort)"
    )]
    UnknownQos {
        /// `NAMESPACE/NAME`.
        pod: String,
        /// The value found.
        value: String,
    },
    /// A field every pod has is missing or empty.
    #[error("pod {pod}: missing {field}")]
    Missing {
        /// `NAMESPACE/NAME` (or the index in the list).
        pod: String,
        /// The field, e.g. `metadata.uid`.
        field: &'static str,
    },
}

/// A pod as the API server describes it, what selection and in-place
/// actuation need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// `metadata.uid` (with dashes, as in the cgroup path's pod level).
    pub uid: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `status.qosClass`: the cgroup tree level of the pod.
    pub qos: Qos,
    /// `status.containerStatuses[].containerID` without the runtime prefix
    /// (`containerd://ID` -> `ID`): the container cgroups' names contain it.
    pub container_ids: Vec<String>,
}

/// A parsed PodList: the usable pods and the records that were not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodList {
    /// Pods with everything needed.
    pub pods: Vec<Pod>,
    /// One error per unusable record.
    pub rejected: Vec<PodError>,
}

#[derive(Deserialize)]
struct RawList {
    kind: Option<String>,
    #[serde(default)]
    items: Vec<RawPod>,
}

#[derive(Deserialize)]
struct RawPod {
    #[serde(default)]
    metadata: RawMeta,
    #[serde(default)]
    status: RawStatus,
}

#[derive(Deserialize, Default)]
struct RawMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawStatus {
    qos_class: Option<String>,
    #[serde(default)]
    container_statuses: Vec<RawContainer>,
    #[serde(default)]
    init_container_statuses: Vec<RawContainer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawContainer {
    #[serde(rename = "containerID")]
    container_id: Option<String>,
}

/// The selection index of `pods` (namespace, name, labels by uid).
pub fn index(pods: &[Pod]) -> crate::kubepods::PodIndex {
    crate::kubepods::PodIndex::from_api(pods.iter().map(|p| {
        (
            p.uid.as_str(),
            p.namespace.as_str(),
            p.name.as_str(),
            &p.labels,
        )
    }))
}

/// The QoS class from `status.qosClass`.
pub fn parse_qos(value: &str) -> Option<Qos> {
    match value {
        "Guaranteed" => Some(Qos::Guaranteed),
        "Burstable" => Some(Qos::Burstable),
        "BestEffort" => Some(Qos::BestEffort),
        _ => None,
    }
}

/// Pure: parses a PodList body. Bad JSON or another kind fails the whole
/// list; a pod lacking its uid, namespace, name or a known QoS class is
/// listed in [`PodList::rejected`] and left out.
pub fn parse_pod_list(body: &str) -> Result<PodList, KubeError> {
    let raw: RawList = serde_json::from_str(body).map_err(|e| {
        let at = format!(" at line {} column {}", e.line(), e.column());
        let text = e.to_string();
        KubeError::Json {
            line: e.line(),
            column: e.column(),
            message: text.strip_suffix(&at).unwrap_or(&text).to_string(),
        }
    })?;
    match raw.kind.as_deref() {
        Some("PodList") => {}
        other => {
            return Err(KubeError::WrongKind {
                kind: other.unwrap_or("").to_string(),
            })
        }
    }
    let mut out = PodList::default();
    for (i, p) in raw.items.into_iter().enumerate() {
        let m = p.metadata;
        let who = if m.name.is_empty() {
            format!("items[{i}]")
        } else {
            format!("{}/{}", m.namespace, m.name)
        };
        let missing = |field| PodError::Missing {
            pod: who.clone(),
            field,
        };
        let check = [
            (m.uid.is_empty(), "metadata.uid"),
            (m.namespace.is_empty(), "metadata.namespace"),
            (m.name.is_empty(), "metadata.name"),
        ];
        if let Some((_, field)) = check.iter().find(|(bad, _)| *bad) {
            out.rejected.push(missing(field));
            continue;
        }
        let Some(q) = p.status.qos_class else {
            out.rejected.push(missing("status.qosClass"));
            continue;
        };
        let Some(qos) = parse_qos(&q) else {
            out.rejected
                .push(PodError::UnknownQos { pod: who, value: q });
            continue;
        };
        let container_ids = p
            .status
            .container_statuses
            .iter()
            .chain(&p.status.init_container_statuses)
            .filter_map(|c| c.container_id.as_deref())
            .map(|id| id.rsplit("://").next().unwrap_or(id).to_string())
            .filter(|id| !id.is_empty())
            .collect();
        out.pods.push(Pod {
            uid: m.uid,
            namespace: m.namespace,
            name: m.name,
            labels: m.labels.unwrap_or_default(),
            qos,
            container_ids,
        });
    }
    Ok(out)
}

/// Where the API is and how long to wait for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiEndpoint {
    /// `host:port` to connect to.
    pub authority: String,
    /// Path prefix (empty, or e.g. `/k8s` behind a path-routing proxy).
    pub prefix: String,
    /// Connect, write and read timeout.
    pub timeout: Duration,
}

impl ApiEndpoint {
    /// Parses `http://HOST:PORT[/PREFIX]`; refuses https (no TLS here) and
    /// non-loopback hosts (see the module docs).
    pub fn parse(url: &str, timeout: Duration) -> Result<ApiEndpoint, KubeError> {
        if url.starts_with("https://") {
            return Err(KubeError::TlsUnsupported { url: url.into() });
        }
        let rest = url.strip_prefix("http://").ok_or(KubeError::BadUrl {
            url: url.into(),
            why: "must start with http://",
        })?;
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let (host, port) = authority.rsplit_once(':').ok_or(KubeError::BadUrl {
            url: url.into(),
            why: "no :PORT",
        })?;
        if port.parse::<u16>().is_err() {
            return Err(KubeError::BadUrl {
                url: url.into(),
                why: "port is not a number 0-65535",
            });
        }
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !loopback {
            return Err(KubeError::NotLoopback { url: url.into() });
        }
        Ok(ApiEndpoint {
            authority: authority.to_string(),
            prefix: prefix.to_string(),
            timeout,
        })
    }

    /// GETs this node's pods and parses them.
    pub fn node_pods(&self, node: &str) -> Result<PodList, KubeError> {
        if node.is_empty() {
            return Err(KubeError::NoNode);
        }
        let path = format!(
            "{}/api/v1/pods?fieldSelector=spec.nodeName%3D{}",
            self.prefix,
            percent_encode(node)
        );
        let body = self.get(&path)?;
        parse_pod_list(&body)
    }

    fn io_err(&self, op: &'static str, source: std::io::Error) -> KubeError {
        if matches!(
            source.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ) {
            KubeError::Timeout {
                addr: self.authority.clone(),
                op,
                timeout_ms: self.timeout.as_millis() as u64,
            }
        } else {
            KubeError::Io {
                addr: self.authority.clone(),
                op,
                source,
            }
        }
    }

    /// One HTTP/1.1 GET with `Connection: close`; the body of a 2xx answer.
    fn get(&self, path: &str) -> Result<String, KubeError> {
        let addrs: Vec<SocketAddr> = self
            .authority
            .to_socket_addrs()
            .map_err(|e| self.io_err("resolve", e))?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, self.timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let mut s = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(self.io_err("connect", e)),
            (None, None) => {
                return Err(self.io_err(
                    "resolve",
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
                ))
            }
        };
        s.set_read_timeout(Some(self.timeout))
            .and_then(|()| s.set_write_timeout(Some(self.timeout)))
            .map_err(|e| self.io_err("configure socket", e))?;
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: memtamer\r\nConnection: close\r\n\r\n",
            self.authority
        );
        s.write_all(req.as_bytes())
            .map_err(|e| self.io_err("send request", e))?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 16 << 10];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    if raw.len() > MAX_RESPONSE {
                        return Err(KubeError::Http {
                            why: format!("response larger than {MAX_RESPONSE} bytes"),
                        });
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_err("read response", e)),
            }
        }
        let (code, body) = parse_response(&raw)?;
        match code {
            200..=299 => Ok(body),
            401 => Err(KubeError::Unauthorized {
                message: status_message(&body),
            }),
            403 => Err(KubeError::Forbidden {
                message: status_message(&body),
            }),
            code => Err(KubeError::Status {
                code,
                message: status_message(&body),
            }),
        }
    }
}

/// Percent-encodes a node name for the query (node names are DNS
/// subdomains, so this only guards against odd input).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// The `message` of a Kubernetes Status body, else the body's start.
fn status_message(body: &str) -> String {
    #[derive(Deserialize)]
    struct Status {
        message: Option<String>,
    }
    serde_json::from_str::<Status>(body)
        .ok()
        .and_then(|s| s.message)
        .unwrap_or_else(|| body.chars().take(200).collect())
}

/// Pure: splits an HTTP/1.x response into status code and body, undoing a
/// chunked transfer encoding and checking a Content-Length.
pub fn parse_response(raw: &[u8]) -> Result<(u16, String), KubeError> {
    let bad = |why: &str| KubeError::Http { why: why.into() };
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers (connection closed early?)"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("headers are not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    let mut parts = status.split(' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(bad(&format!("status line {status:?}")));
    }
    let code: u16 = parts
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad(&format!("status line {status:?}")))?;
    let mut chunked = false;
    let mut length = None;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            return Err(bad(&format!("header line {l:?}")));
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
        if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        } else if k == "content-length" {
            length = Some(
                v.parse::<usize>()
                    .map_err(|_| bad(&format!("Content-Length {v:?}")))?,
            );
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(n) = length {
        if rest.len() < n {
            return Err(bad(&format!(
                "body is {} bytes, Content-Length says {n} (truncated)",
                rest.len()
            )));
        }
        rest[..n].to_vec()
    } else {
        rest.to_vec()
    };
    let body = String::from_utf8(body).map_err(|_| bad("body is not UTF-8"))?;
    Ok((code, body))
}

/// Undoes `Transfer-Encoding: chunked`.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, KubeError> {
    let bad = |why: &str| KubeError::Http { why: why.into() };
    let mut out = Vec::new();
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("chunk size line not terminated"))?;
        let line = std::str::from_utf8(&rest[..eol]).map_err(|_| bad("chunk size not UTF-8"))?;
        let hex = line.split(';').next().unwrap_or("").trim();
        let n = usize::from_str_radix(hex, 16).map_err(|_| bad(&format!("chunk size {hex:?}")))?;
        rest = &rest[eol + 2..];
        if n == 0 {
            return Ok(out);
        }
        if rest.len() < n + 2 {
            return Err(bad("chunk truncated"));
        }
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n + 2..];
    }
}

#[cfg(test)]
#[path = "kubeapi_tests.rs"]
mod tests;
