//! The uncore's parts a platform chooses by name (`[uncore]` keys): the
//! request tables' scope, where remote requests are tracked, and the
//! coherence directory. Split from `platform.rs` (file size).

use serde::{Deserialize, Serialize};

/// Where a remote request's home-side entry lives (see
/// [`super::UncoreParams::remote_tracker`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RemoteTracker {
    /// The request table of the home memory controller (or of the home
    /// socket with `request_table_scope = "socket"`).
    #[default]
    Imc,
    /// The home socket's caching/home agents (CHA): Intel Xeon Scalable
    /// Uncore Performance Monitoring Reference Manual, CHA chapter: each CHA
    /// is the home agent of a hashed slice of all of the socket's memory and
    /// tracks every request, those arriving over UPI included, in its table
    /// of requests (TOR). So a remote request holds an entry of a
    /// socket-wide tracker (`request_table` entries), not of its iMC's, and
    /// while that tracker is full no new request of the socket, local or
    /// remote, is taken in (head-of-line at the CHA ingress).
    Cha,
}

impl RemoteTracker {
    pub(super) fn is_imc(&self) -> bool {
        *self == RemoteTracker::Imc
    }
}

/// The multi-socket coherence directory (see [`super::UncoreParams::directory`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MemoryDirectory {
    /// No directory traffic (ablation: the model before issue 24 item 2).
    #[default]
    None,
    /// Intel's in-memory directory (Intel 64 and IA-32 Architectures
    /// Optimization Reference Manual, §2.1.31 as quoted by Stack Overflow
    /// question 65316397: "a
    /// distributed in-memory directory, with the coherence state of each cache
    /// line stored in metadata within the line itself in memory"): a read
    /// from another socket that memory serves is granted the line exclusive
    /// (an RFO always is), so the home marks the line "remote-owned" in that
    /// metadata, which is a write of the whole line at home (McCalpin, Intel
    /// Community forum, Skylake-SP memory directory). A line already marked
    /// needs no write; any write of the line's data to memory carries the
    /// new state and clears the mark.
    Memory,
}

impl MemoryDirectory {
    pub(super) fn is_none(&self) -> bool {
        *self == MemoryDirectory::None
    }
}

/// Which requests share one request table (see
/// [`super::UncoreParams::request_table_scope`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RequestTableScope {
    /// One table per socket (ablation: the model before issue 24).
    Socket,
    /// One table per memory controller (Intel uncore manual: one home agent,
    /// on Skylake-SP one M2M, per iMC, each holding its own tracker and
    /// the credits of its channels' RPQ/WPQ).
    #[default]
    Imc,
}

impl RequestTableScope {
    pub(super) fn is_imc(&self) -> bool {
        *self == RequestTableScope::Imc
    }
}

/// Where a remote request holds its request-table entry (see
/// [`super::UncoreParams::remote_tracking`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RemoteTracking {
    /// The issuing socket's table, across the link and back (ablation: with
    /// it, remote writers leave the home socket's DRAM traffic alone).
    Requester,
    /// The table of the socket whose memory it accesses (its home agent).
    #[default]
    Home,
}

impl RemoteTracking {
    pub(super) fn is_home(&self) -> bool {
        *self == RemoteTracking::Home
    }
}
