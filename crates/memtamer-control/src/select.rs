//! Pure job selection: which running processes belong to which configured job.
//!
//! Everything here is free of I/O so the daemon's most consequential choice
//! (which processes it may touch) is exhaustively unit-testable. Processes
//! matching no job are never managed: the daemon must not touch them.
//!
//! # Glob syntax
//!
//! The `cgroup`, `unit`, `comm` and `exe` selectors are shell-like globs
//! matched against the whole string (anchored at both ends):
//!
//! * `*` matches any run of characters, **including `/`** (so
//!   `/system.slice/*` also matches nested cgroups);
//! * `?` matches exactly one character;
//! * `[abc]`, `[a-z]` match one character from the class; `[!a-z]` or
//!   `[^a-z]` negate it. A `]` right after the opening bracket (or after
//!   the `!`/`^`) is literal, and so is a `-` first or last in the class;
//! * there is **no escape character**: a backslash is literal, because
//!   systemd escapes characters in unit and cgroup names as `\x2d`. Write a
//!   literal metacharacter as a one-character class: `[*]`, `[?]`, `[[]`.

use crate::procfs::{Parts, ProcessInfo};
use std::collections::HashMap;
use std::fmt;

/// Why a glob pattern was rejected; carries the pattern so the config error
/// can quote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// A `[` class was never closed.
    #[error("glob {pattern:?}: unclosed '[' at character {position}")]
    UnclosedClass {
        /// The offending pattern.
        pattern: String,
        /// Character index of the `[`.
        position: usize,
    },
    /// A class range such as `[z-a]` runs backwards.
    #[error("glob {pattern:?}: range {lo}-{hi} is reversed")]
    ReversedRange {
        /// The offending pattern.
        pattern: String,
        /// Range start.
        lo: char,
        /// Range end.
        hi: char,
    },
    /// An empty pattern matches only the empty string, which no process has;
    /// almost certainly a mistake.
    #[error("empty glob pattern matches nothing")]
    Empty,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyChar,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A compiled glob pattern (see the module docs for the syntax). Compiled once
/// at config load so a bad pattern is reported with its config location
/// instead of silently matching nothing at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

impl Glob {
    /// Compiles `pattern`; fails on unclosed or reversed classes and on the
    /// empty pattern.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => {
                    // Consecutive stars are equivalent to one.
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                    i += 1;
                }
                '?' => {
                    tokens.push(Token::AnyChar);
                    i += 1;
                }
                '[' => {
                    let (token, next) = parse_class(pattern, &chars, i)?;
                    tokens.push(token);
                    i = next;
                }
                c => {
                    tokens.push(Token::Literal(c));
                    i += 1;
                }
            }
        }
        Ok(Glob {
            source: pattern.to_string(),
            tokens,
        })
    }

    /// The pattern as written, for logs and error messages.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the whole of `text` matches the pattern.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let tokens = &self.tokens;
        let (mut t, mut p) = (0usize, 0usize);
        // Backtracking point: position of the last `*` and the text position
        // it is currently assumed to have consumed up to. Only the last star
        // needs remembering, which keeps matching O(len(text) * len(pattern)).
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            match tokens.get(p) {
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(tok) if single_matches(tok, text[t]) => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
            match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            }
        }
        tokens[p..].iter().all(|tok| *tok == Token::Star)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn single_matches(tok: &Token, c: char) -> bool {
    match tok {
        Token::Literal(l) => *l == c,
        Token::AnyChar => true,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
        Token::Star => false,
    }
}

/// Parses a class starting at `chars[start] == '['`; returns the token and the
/// index just past the closing `]`.
fn parse_class(pattern: &str, chars: &[char], start: usize) -> Result<(Token, usize), GlobError> {
    let unclosed = || GlobError::UnclosedClass {
        pattern: pattern.to_string(),
        position: start,
    };
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!') | Some('^'));
    if negated {
        i += 1;
    }
    let first = i;
    let mut ranges = Vec::new();
    loop {
        let c = *chars.get(i).ok_or_else(unclosed)?;
        if c == ']' && i > first {
            return Ok((Token::Class { negated, ranges }, i + 1));
        }
        // `a-z` range, unless the `-` is the last character of the class.
        match (chars.get(i + 1), chars.get(i + 2)) {
            (Some('-'), Some(&hi)) if hi != ']' => {
                if hi < c {
                    return Err(GlobError::ReversedRange {
                        pattern: pattern.to_string(),
                        lo: c,
                        hi,
                    });
                }
                ranges.push((c, hi));
                i += 3;
            }
            _ => {
                ranges.push((c, c));
                i += 1;
            }
        }
    }
}

/// The systemd unit a cgroup path belongs to: its last component ending in
/// `.service` or `.scope` (so a sub-cgroup such as
/// `/system.slice/docker.service/payload` still belongs to `docker.service`).
/// `None` for cgroups outside any unit (e.g. `/` or `/user.slice`).
pub fn systemd_unit(cgroup_path: &str) -> Option<&str> {
    cgroup_path.rsplit('/').find(|c| {
        [".service", ".scope"]
            .iter()
            .any(|suffix| c.len() > suffix.len() && c.ends_with(suffix))
    })
}

/// The cgroup path a process is matched by: the cgroup v2 entry (`0::/path`)
/// when present and non-empty, else the v1 `name=systemd` path, else the v1
/// `cpuset` path. One exception: a v2 path of exactly `/` while a v1 path
/// exists is skipped, because on hybrid hosts where cgroup2 is mounted but
/// unused every process sits at `/` there and the v1 path is the real one.
pub fn match_cgroup_path(process: &ProcessInfo) -> Option<&str> {
    let v1 = |controller: &str| {
        process
            .cgroups
            .iter()
            .find(|c| c.hierarchy_id != 0 && c.controllers.iter().any(|n| n == controller))
            .map(|c| c.path.as_str())
            .filter(|p| !p.is_empty())
    };
    let v1_path = v1("name=systemd").or_else(|| v1("cpuset"));
    let v2_path = process
        .cgroups
        .iter()
        .find(|c| c.hierarchy_id == 0 && c.controllers.is_empty())
        .map(|c| c.path.as_str())
        .filter(|p| !p.is_empty());
    match (v2_path, v1_path) {
        (Some("/"), Some(v1)) => Some(v1),
        (Some(v2), _) => Some(v2),
        (None, v1) => v1,
    }
}

/// Why a job's match table could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// No selector at all: such a job would silently manage nothing.
    #[error(
        "no selector given; set at least one of cgroup, unit, comm, exe, pid, pod, namespace, labels"
    )]
    NoSelector,
    /// A `labels` entry is not a valid Kubernetes label (or is a set-based
    /// expression, which is not supported).
    #[error("labels.{key}: {why}")]
    Label {
        /// The label key as written.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// One of the glob selectors is malformed.
    #[error("{field}: {source}")]
    Glob {
        /// Which selector (`cgroup`, `unit`, `comm`, `exe`).
        field: &'static str,
        /// What is wrong with it.
        #[source]
        source: GlobError,
    },
}

/// `[job.match]`: which processes form a job. A process matches if ANY given
/// selector matches; at least one is required.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobMatch {
    /// `cgroup`: glob on the process's cgroup path (v2 path, else v1
    /// `name=systemd`, else v1 `cpuset`).
    pub cgroup: Option<String>,
    /// `unit`: glob on the systemd unit, i.e. the cgroup path's last
    /// `*.service`/`*.scope` component, suffix included.
    pub unit: Option<String>,
    /// `comm`: glob on `/proc/PID/comm`.
    pub comm: Option<String>,
    /// `exe`: glob on the `/proc/PID/exe` link target.
    pub exe: Option<String>,
    /// `pid`: exact pids (each > 0); an empty list selects nothing.
    pub pid: Vec<i32>,
    /// `pod`: glob on `NAMESPACE/NAME` of the Kubernetes pod the process runs
    /// in (its cgroup path gives the pod UID, /var/log/pods the name; see
    /// `kubepods`).
    pub pod: Option<String>,
    /// `namespace`: glob on the pod's namespace (from the API server, else
    /// /var/log/pods).
    pub namespace: Option<String>,
    /// `labels`: equality selectors on the pod's labels, all of which must
    /// hold (`labels = { app = "redis" }`); needs the API server.
    pub labels: std::collections::BTreeMap<String, String>,
}

impl JobMatch {
    /// Whether any pod key (`pod`, `namespace`, `labels`) is given.
    pub fn selects_pods(&self) -> bool {
        self.pod.is_some() || self.namespace.is_some() || !self.labels.is_empty()
    }

    /// Whether any key that is not about pods is given.
    pub fn selects_non_pods(&self) -> bool {
        self.cgroup.is_some()
            || self.unit.is_some()
            || self.comm.is_some()
            || self.exe.is_some()
            || !self.pid.is_empty()
    }
}

/// `[job.require]`: conditions EVERY process of the job must meet besides
/// matching a selector (issue 22 item 5). comm and exe are chosen by whoever
/// starts a process, so with them alone any user's process named like an LC
/// job is pinned to its reserved CPUs, or one named like a BE job is
/// throttled; a uid or a cgroup (which only root or the cgroup's delegate
/// can move a process into) cannot be spoofed that way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobRequire {
    /// `uid`: the process's real AND effective uid must both be in this
    /// list (a setuid program started by another user does not qualify).
    pub uid: Vec<u32>,
    /// `cgroup`: glob the process's cgroup path (as the `cgroup` selector
    /// reads it) must match.
    pub cgroup: Option<String>,
}

/// `[job.require]` compiled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Require {
    /// Allowed uids (empty: any).
    pub uids: Vec<u32>,
    /// Glob on the cgroup path (none: any).
    pub cgroup: Option<Glob>,
}

impl Require {
    /// Whether `p` meets every requirement; a fact that was not read or
    /// could not be (uids, cgroup) fails a requirement on it.
    pub fn admits(&self, p: &ProcessInfo) -> bool {
        let uid_ok = self.uids.is_empty()
            || p.uids
                .is_some_and(|u| self.uids.contains(&u.real) && self.uids.contains(&u.effective));
        let cgroup_ok = match &self.cgroup {
            None => true,
            Some(g) => match_cgroup_path(p).is_some_and(|path| g.matches(path)),
        };
        uid_ok && cgroup_ok
    }

    /// Whether there is any requirement at all.
    pub fn is_empty(&self) -> bool {
        self.uids.is_empty() && self.cgroup.is_none()
    }
}

/// A job's compiled match table: a process belongs to the job if ANY of the
/// given selectors matches (they are alternatives, so one job can gather a
/// service by unit and a helper by comm) and it meets [`Selector::require`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// Glob on the process's cgroup path (see [`match_cgroup_path`]).
    pub cgroup: Option<Glob>,
    /// Glob on the systemd unit derived from that path (see [`systemd_unit`]).
    pub unit: Option<Glob>,
    /// Glob on `/proc/PID/comm`.
    pub comm: Option<Glob>,
    /// Glob on the `/proc/PID/exe` link target.
    pub exe: Option<Glob>,
    /// Exact pids.
    pub pids: Vec<i32>,
    /// `[job.require]`: what every selected process must also be.
    pub require: Require,
    /// Glob on the pod's `NAMESPACE/NAME`.
    pub pod: Option<Glob>,
    /// Glob on the pod's namespace.
    pub namespace: Option<Glob>,
    /// Labels the pod must carry with these values.
    pub labels: std::collections::BTreeMap<String, String>,
    /// The node's pods as of the last [`Selector::set_pods`] (empty unless
    /// the selector looks at pods).
    pub pods: crate::kubepods::PodIndex,
}

impl Selector {
    /// Compiles a match table; fails if no selector is given or a glob is bad.
    pub fn compile(m: &JobMatch) -> Result<Selector, SelectorError> {
        let glob = |field: &'static str, p: &Option<String>| {
            p.as_deref()
                .map(Glob::new)
                .transpose()
                .map_err(|source| SelectorError::Glob { field, source })
        };
        let s = Selector {
            cgroup: glob("cgroup", &m.cgroup)?,
            unit: glob("unit", &m.unit)?,
            comm: glob("comm", &m.comm)?,
            exe: glob("exe", &m.exe)?,
            pids: m.pid.clone(),
            require: Require::default(),
            pod: glob("pod", &m.pod)?,
            namespace: glob("namespace", &m.namespace)?,
            labels: m.labels.clone(),
            pods: Default::default(),
        };
        for (key, value) in &s.labels {
            crate::kubepods::check_label(key, value).map_err(|why| SelectorError::Label {
                key: key.clone(),
                why,
            })?;
        }
        if s.cgroup.is_none()
            && s.unit.is_none()
            && s.comm.is_none()
            && s.exe.is_none()
            && s.pids.is_empty()
            && !s.selects_pods()
        {
            return Err(SelectorError::NoSelector);
        }
        Ok(s)
    }

    /// Adds `[job.require]`; fails on a bad cgroup glob.
    pub fn with_require(mut self, r: &JobRequire) -> Result<Selector, SelectorError> {
        self.require = Require {
            uids: r.uid.clone(),
            cgroup: r
                .cgroup
                .as_deref()
                .map(Glob::new)
                .transpose()
                .map_err(|source| SelectorError::Glob {
                    field: "cgroup",
                    source,
                })?,
        };
        Ok(self)
    }

    /// Whether `p` belongs to this job: any selector matches and every
    /// requirement holds.
    pub fn matches(&self, p: &ProcessInfo) -> bool {
        self.selects(p) && self.require.admits(p)
    }

    /// Whether any selector matches `p` (requirements aside).
    fn selects(&self, p: &ProcessInfo) -> bool {
        if self.pids.contains(&p.pid) {
            return true;
        }
        if let Some(g) = &self.comm {
            if g.matches(&p.comm) {
                return true;
            }
        }
        if let (Some(g), Some(exe)) = (&self.exe, &p.exe) {
            if g.matches(&exe.to_string_lossy()) {
                return true;
            }
        }
        let path = match_cgroup_path(p);
        if let (Some(g), Some(path)) = (&self.cgroup, path) {
            if g.matches(path) {
                return true;
            }
        }
        if let (Some(g), Some(unit)) = (&self.unit, path.and_then(systemd_unit)) {
            if g.matches(unit) {
                return true;
            }
        }
        if self.selects_pods() {
            let meta = path
                .and_then(crate::kubepods::parse_pod_cgroup)
                .and_then(|pod| self.pods.get(&pod.uid));
            if meta.is_some_and(|m| self.pod_matches(m)) {
                return true;
            }
        }
        false
    }

    /// Whether the selector looks at pods (`pod`, `namespace`, `labels`).
    pub fn selects_pods(&self) -> bool {
        self.pod.is_some() || self.namespace.is_some() || !self.labels.is_empty()
    }

    /// The pod keys together are ONE alternative: every one given must
    /// hold (as in a Kubernetes selector, `namespace` and `labels` narrow
    /// each other). Labels match only pods the API server described.
    fn pod_matches(&self, m: &crate::kubepods::PodMeta) -> bool {
        let name_ok = self.pod.as_ref().is_none_or(|g| g.matches(&m.full_name));
        let ns_ok = self
            .namespace
            .as_ref()
            .is_none_or(|g| g.matches(m.namespace()));
        let labels_ok = self.labels.is_empty()
            || m.labels.as_ref().is_some_and(|have| {
                self.labels
                    .iter()
                    .all(|(k, v)| have.get(k).is_some_and(|h| h == v))
            });
        name_ok && ns_ok && labels_ok
    }

    /// Takes the node's current pods (a rescan reads them once for all
    /// selectors); a no-op for selectors that do not look at pods.
    pub fn set_pods(&mut self, pods: &crate::kubepods::PodIndex) {
        if self.selects_pods() {
            self.pods = pods.clone();
        }
    }
}

/// The optional parts of a process ([`Parts`]) that `selectors` look at: a
/// rescan reads no others (pids and comms come from `stat`, always read).
pub fn parts_read_by(selectors: &[Selector]) -> Parts {
    Parts {
        exe: selectors.iter().any(|s| s.exe.is_some()),
        cgroups: selectors.iter().any(|s| {
            s.cgroup.is_some() || s.unit.is_some() || s.require.cgroup.is_some() || s.selects_pods()
        }),
        cpus_allowed: false,
        uids: selectors.iter().any(|s| !s.require.uids.is_empty()),
    }
}

/// The job index (config order) `p` belongs to: the first matching job wins,
/// so more specific jobs should be listed first.
pub fn job_of(p: &ProcessInfo, selectors: &[Selector]) -> Option<usize> {
    selectors.iter().position(|s| s.matches(p))
}

/// `(pid, job index)` for every process some job matches; processes matching
/// nothing are left out because the daemon must never touch them.
pub fn classify(processes: &[ProcessInfo], selectors: &[Selector]) -> Vec<(i32, usize)> {
    processes
        .iter()
        .filter_map(|p| job_of(p, selectors).map(|j| (p.pid, j)))
        .collect()
}

/// Like [`classify`] but keyed by [`ProcessKey`] and listing every scanned
/// process (`None` = matches no job), which is what [`diff`] needs to tell a
/// process that exited from one that merely left its job.
pub fn classify_keyed(
    processes: &[ProcessInfo],
    selectors: &[Selector],
) -> Vec<(ProcessKey, Option<usize>)> {
    processes
        .iter()
        .map(|p| (p.key(), job_of(p, selectors)))
        .collect()
}

/// Identifies a process across pid reuse (pid + start time): the type the
/// actuators and the journal use, so keys pass between them unchanged.
pub use memtamer_actuate::ProcessKey;

/// A managed process whose job changed (typically after an `exec`, which
/// keeps pid and start time but changes comm/exe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reclassified {
    /// The process.
    pub key: ProcessKey,
    /// Job it was in.
    pub from: usize,
    /// Job it is in now.
    pub to: usize,
}

/// What changed between two scans, so the daemon applies actions to new
/// processes, restores state of processes leaving a job, and forgets exited
/// ones. Every list is sorted by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessDiff {
    /// Newly managed: forked/started since the last scan, or an unmanaged
    /// process that now matches a job.
    pub appeared: Vec<(ProcessKey, usize)>,
    /// Previously managed processes that no longer exist (includes a pid
    /// reused by a new process: the old key exited).
    pub exited: Vec<(ProcessKey, usize)>,
    /// Still alive but no longer matching any job (e.g. exec'd into another
    /// program): the daemon must undo what it did to them.
    pub released: Vec<(ProcessKey, usize)>,
    /// Still alive and managed, but by a different job.
    pub reclassified: Vec<Reclassified>,
    /// Same process, same job.
    pub unchanged: Vec<(ProcessKey, usize)>,
}

impl ProcessDiff {
    /// True when nothing changed, letting the daemon skip re-actuation.
    pub fn is_quiet(&self) -> bool {
        self.appeared.is_empty()
            && self.exited.is_empty()
            && self.released.is_empty()
            && self.reclassified.is_empty()
    }
}

/// Compares the managed processes of the previous scan with all processes of
/// the current scan (as produced by [`classify_keyed`]). If a key appears more
/// than once in an input, its last occurrence counts.
pub fn diff(
    previous: &[(ProcessKey, usize)],
    current: &[(ProcessKey, Option<usize>)],
) -> ProcessDiff {
    let prev: HashMap<ProcessKey, usize> = previous.iter().copied().collect();
    let cur: HashMap<ProcessKey, Option<usize>> = current.iter().copied().collect();
    let mut d = ProcessDiff::default();
    for (&key, &job) in &prev {
        match cur.get(&key) {
            None => d.exited.push((key, job)),
            Some(None) => d.released.push((key, job)),
            Some(Some(now)) if *now == job => d.unchanged.push((key, job)),
            Some(Some(now)) => d.reclassified.push(Reclassified {
                key,
                from: job,
                to: *now,
            }),
        }
    }
    for (&key, &job) in &cur {
        if let (Some(job), false) = (job, prev.contains_key(&key)) {
            d.appeared.push((key, job));
        }
    }
    d.appeared.sort_unstable();
    d.exited.sort_unstable();
    d.released.sort_unstable();
    d.unchanged.sort_unstable();
    d.reclassified.sort_unstable_by_key(|r| r.key);
    d
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
