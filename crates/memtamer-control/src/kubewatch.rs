//! Keeps the node's pods from the API server current without ever blocking
//! the daemon's loop: a thread asks [`crate::kubeapi`] every
//! `interval` and publishes the result; the loop reads the last published
//! view at each rescan.
//!
//! A failed poll (timeout, connection refused, 401/403, 5xx, bad JSON)
//! keeps the **last good view**: pods do not vanish from selection because
//! the API server restarted. The error is kept in the view (for `status`)
//! and logged once per distinct cause.

use crate::kubeapi::{ApiEndpoint, KubeError, Pod, PodError, PodList};
use crate::kubepods::{pod_log_dir, PodIndex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Environment variable with the API address (the sidecar's
/// `http://127.0.0.1:8001`); unset, the API is not used.
pub const API_ENV: &str = "MEMTAMER_KUBE_API";
/// Environment variable with the node name (downward API `spec.nodeName`).
pub const NODE_ENV: &str = "NODE_NAME";
/// Environment variable with the poll interval in seconds (default 10).
pub const INTERVAL_ENV: &str = "MEMTAMER_KUBE_POLL_S";

/// Where and how often to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchConfig {
    /// The API (through the proxy sidecar).
    pub endpoint: ApiEndpoint,
    /// This node's name.
    pub node: String,
    /// Time between polls.
    pub interval: Duration,
}

impl WatchConfig {
    /// From the environment ([`API_ENV`], [`NODE_ENV`], [`INTERVAL_ENV`]):
    /// None when [`API_ENV`] is unset; an error names a bad value.
    pub fn from_env() -> Result<Option<WatchConfig>, KubeError> {
        let get = |k| std::env::var(k).ok().filter(|v: &String| !v.is_empty());
        WatchConfig::from_values(get(API_ENV), get(NODE_ENV), get(INTERVAL_ENV))
    }

    /// Pure part of [`WatchConfig::from_env`].
    pub fn from_values(
        api: Option<String>,
        node: Option<String>,
        interval_s: Option<String>,
    ) -> Result<Option<WatchConfig>, KubeError> {
        let Some(api) = api else {
            return Ok(None);
        };
        let node = node.ok_or(KubeError::NoNode)?;
        let interval = match interval_s {
            None => Duration::from_secs(10),
            Some(s) => match s.parse::<u64>() {
                Ok(n) if n >= 1 => Duration::from_secs(n),
                _ => {
                    return Err(KubeError::BadUrl {
                        url: format!("{INTERVAL_ENV}={s}"),
                        why: "not a whole number of seconds >= 1",
                    })
                }
            },
        };
        // a poll must end well before the next one is due
        let timeout = (interval / 2).min(Duration::from_secs(5));
        Ok(Some(WatchConfig {
            endpoint: ApiEndpoint::parse(&api, timeout)?,
            node,
            interval,
        }))
    }
}

/// The pods as last seen, and how the last poll went.
#[derive(Debug, Clone, Default)]
pub struct PodView {
    /// Pods of the last successful poll.
    pub pods: Vec<Pod>,
    /// Records of that poll that could not be used.
    pub rejected: Vec<PodError>,
    /// Successful polls so far (0: the API has never answered).
    pub good_polls: u64,
    /// Failed polls since the last good one.
    pub failing_for: u32,
    /// The last poll's error, if it failed.
    pub last_error: Option<String>,
}

impl PodView {
    /// Pure: folds one poll's result in. Success replaces the pods; failure
    /// keeps them and records why.
    pub fn update(&mut self, result: Result<PodList, KubeError>) {
        match result {
            Ok(list) => {
                self.pods = list.pods;
                self.rejected = list.rejected;
                self.good_polls += 1;
                self.failing_for = 0;
                self.last_error = None;
            }
            Err(e) => {
                self.failing_for = self.failing_for.saturating_add(1);
                self.last_error = Some(e.to_string());
            }
        }
    }

    /// The selection index of these pods.
    pub fn index(&self) -> PodIndex {
        crate::kubeapi::index(&self.pods)
    }
}

/// The polling thread; stopped and joined on drop.
#[derive(Debug)]
pub struct KubeWatcher {
    view: Arc<Mutex<PodView>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl KubeWatcher {
    /// Starts polling at once, then every `cfg.interval`.
    pub fn start(cfg: WatchConfig) -> KubeWatcher {
        KubeWatcher::start_with(cfg.interval, move || cfg.endpoint.node_pods(&cfg.node))
    }

    /// Starts polling with any source of pod lists (tests).
    pub fn start_with(
        interval: Duration,
        mut poll: impl FnMut() -> Result<PodList, KubeError> + Send + 'static,
    ) -> KubeWatcher {
        let view = Arc::new(Mutex::new(PodView::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (v, s) = (view.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("memtamer-kube".into())
            .spawn(move || {
                let mut last_logged: Option<String> = None;
                while !s.load(Ordering::Relaxed) {
                    let result = poll();
                    let msg = match &result {
                        Ok(l) => {
                            for r in &l.rejected {
                                eprintln!("memtamer: kubernetes: {r}");
                            }
                            None
                        }
                        Err(e) => Some(e.to_string()),
                    };
                    if msg != last_logged {
                        match &msg {
                            Some(m) => eprintln!(
                                "memtamer: kubernetes: {m}; keeping the last good pod list"
                            ),
                            None if last_logged.is_some() => {
                                eprintln!("memtamer: kubernetes: API answers again")
                            }
                            None => {}
                        }
                        last_logged = msg;
                    }
                    if let Ok(mut g) = v.lock() {
                        g.update(result);
                    }
                    // sleep in short steps so that drop does not wait long
                    let mut slept = Duration::ZERO;
                    while slept < interval && !s.load(Ordering::Relaxed) {
                        let step = Duration::from_millis(50).min(interval - slept);
                        std::thread::sleep(step);
                        slept += step;
                    }
                }
            })
            .ok();
        if handle.is_none() {
            if let Ok(mut g) = view.lock() {
                g.last_error = Some("cannot start the kubernetes polling thread".into());
            }
        }
        KubeWatcher { view, stop, handle }
    }

    /// A copy of the current view.
    pub fn view(&self) -> PodView {
        self.view.lock().map(|g| g.clone()).unwrap_or_default()
    }
}

impl Drop for KubeWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The node's pods as the daemon's selectors see them: the API server's view
/// (labels) when [`API_ENV`] is set, filled in with the kubelet's log
/// directory (names and namespaces of pods the API has not shown yet).
#[derive(Debug)]
pub struct NodePods {
    watcher: Option<KubeWatcher>,
    log_dir: std::path::PathBuf,
}

impl NodePods {
    /// Starts watching if the environment names an API; the strings are
    /// warnings for the log (a label selector without an API never matches).
    pub fn start(selectors: &[crate::select::Selector]) -> (NodePods, Vec<String>) {
        let mut warnings = Vec::new();
        let watcher = match WatchConfig::from_env() {
            Ok(Some(cfg)) => Some(KubeWatcher::start(cfg)),
            Ok(None) => None,
            Err(e) => {
                warnings.push(format!("{e}; selecting pods from /var/log/pods only"));
                None
            }
        };
        if watcher.is_none() && selectors.iter().any(|s| !s.labels.is_empty()) {
            warnings.push(format!(
                "a job selects pods by label, but {API_ENV} is not set: labels come only from the API server, so no pod matches (docs/kubernetes.md)"
            ));
        }
        let pods = NodePods {
            watcher,
            log_dir: pod_log_dir(),
        };
        (pods, warnings)
    }

    /// The index for this rescan.
    pub fn index(&self) -> PodIndex {
        let from_disk = PodIndex::read(&self.log_dir);
        match &self.watcher {
            None => from_disk,
            Some(w) => {
                let mut idx = w.view().index();
                idx.fill_from(&from_disk);
                idx
            }
        }
    }

    /// The API view, if the API is used (for status).
    pub fn view(&self) -> Option<PodView> {
        self.watcher.as_ref().map(KubeWatcher::view)
    }
}
