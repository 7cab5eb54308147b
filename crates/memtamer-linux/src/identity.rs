//! Process identity that survives pid reuse.

use crate::stat::Stat;
use serde::{Deserialize, Serialize};

/// A process identity that survives pid reuse: the pid plus its start time
/// in clock ticks since boot (field 22 of `/proc/PID/stat`). Two processes
/// can share a pid over time, never both; every change memtamer makes is
/// keyed by this, so a recycled pid is never mistaken for the process that
/// was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProcessKey {
    /// The process id (thread-group id).
    pub pid: i32,
    /// Field 22 of `/proc/PID/stat`.
    pub start_time: u64,
}

impl ProcessKey {
    /// Identifies the process now running as `pid` on this host (the live
    /// `/proc`; [`crate::ProcRoot::process_key`] reads another root).
    pub fn of(pid: i32) -> Result<ProcessKey, crate::Error> {
        crate::ProcRoot::default().process_key(pid)
    }

    /// Whether this very process still exists on this host (same pid and
    /// start time) and is not a zombie, which can no longer be changed or
    /// restored ([`crate::ProcRoot::is_alive`] reads another root).
    pub fn is_alive(&self) -> bool {
        crate::ProcRoot::default().is_alive(*self)
    }

    /// The identity of the process a `stat` was read from.
    pub fn of_stat(stat: &Stat) -> ProcessKey {
        ProcessKey {
            pid: stat.pid,
            start_time: stat.start_time,
        }
    }

    /// Whether `stat` (read now for this pid) shows this very process, still
    /// able to be changed: same start time, and not a zombie.
    pub fn matches_live(&self, stat: &Stat) -> bool {
        stat.pid == self.pid && stat.start_time == self.start_time && !stat.is_dead()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stat::parse_stat;

    const TAIL: &str = "1 1 1 0 -1 4194560 0 0 0 0 1 2 0 0 20 0 1 0 777 0 0";

    #[test]
    fn identity_and_liveness() {
        let live = parse_stat(&format!("5 (a b) S {TAIL}")).unwrap();
        let key = ProcessKey::of_stat(&live);
        assert_eq!(
            key,
            ProcessKey {
                pid: 5,
                start_time: 777
            }
        );
        assert!(key.matches_live(&live));
        let zombie = parse_stat(&format!("5 (a b) Z {TAIL}")).unwrap();
        assert!(!key.matches_live(&zombie), "a zombie cannot be changed");
        let reused = parse_stat(&format!("5 (a b) S {}", TAIL.replace("777", "778"))).unwrap();
        assert!(!key.matches_live(&reused), "same pid, another process");
        let other = parse_stat(&format!("6 (a b) S {TAIL}")).unwrap();
        assert!(!key.matches_live(&other));
    }

    #[test]
    fn own_process() {
        let pid = std::process::id() as i32;
        let key = ProcessKey::of(pid).unwrap();
        assert!(key.is_alive());
        let other = ProcessKey {
            pid,
            start_time: key.start_time + 1,
        };
        assert!(!other.is_alive());
        assert!(ProcessKey::of(i32::MAX).unwrap_err().is_gone());
    }

    /// Keys order by pid, then start time (the daemon keeps them in sets).
    #[test]
    fn ordering() {
        let a = ProcessKey {
            pid: 1,
            start_time: 9,
        };
        let b = ProcessKey {
            pid: 2,
            start_time: 1,
        };
        assert!(a < b);
    }
}
