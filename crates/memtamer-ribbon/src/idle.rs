//! How many hardware threads this process may use: the cores minus what
//! other processes keep busy (thesis §6.3.1: "if idle hardware threads
//! are insufficient, concurrency control turns off"). Read from
//! /proc/stat (all CPUs) and /proc/self/stat (this process), so that our
//! own flushers spinning do not count as someone else's load.

/// Cumulative CPU time, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Busy ticks of all CPUs together (everything but idle and iowait).
    pub busy: u64,
    /// All ticks of all CPUs together.
    pub total: u64,
    /// Busy ticks of this process (utime + stime).
    pub own: u64,
}

/// Parses the aggregate `cpu ` line of /proc/stat: (busy, total) ticks.
pub fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    if v.len() < 5 {
        return None;
    }
    let total: u64 = v.iter().sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// Parses /proc/self/stat: utime + stime ticks (fields 14 and 15; the
/// command name in parentheses may contain spaces).
pub fn parse_self_stat(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // after ")" field 3 (state) is f[0], so field n is f[n - 3]
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Hardware threads not kept busy by other processes between two
/// samples: `cores × (1 − others' busy share)`.
pub fn available(cores: usize, a: CpuTimes, b: CpuTimes) -> Option<f64> {
    let total = b.total.checked_sub(a.total)?;
    if total == 0 {
        return None;
    }
    let busy = b.busy.saturating_sub(a.busy);
    let own = b.own.saturating_sub(a.own);
    let others = busy.saturating_sub(own) as f64 / total as f64;
    Some(cores as f64 * (1.0 - others.min(1.0)))
}

/// Reads the current times (None where /proc is missing).
pub fn sample() -> Option<CpuTimes> {
    let (busy, total) = parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)?;
    let own = parse_self_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    Some(CpuTimes { busy, total, own })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat_and_self_stat() {
        let stat = "cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 50 2 25 400 10 0 1 1 0 0\n";
        assert_eq!(parse_proc_stat(stat), Some((161, 981)));
        assert_eq!(parse_proc_stat("intr 1 2"), None);
        let me = "1234 (my prog) R 1 1234 1234 0 -1 4194304 100 0 0 0 70 30 0 0 20 0 3 0";
        assert_eq!(parse_self_stat(me), Some(100));
        assert_eq!(parse_self_stat("garbage"), None);
    }

    #[test]
    fn others_load_is_subtracted_but_our_own_is_not() {
        let a = CpuTimes {
            busy: 0,
            total: 0,
            own: 0,
        };
        // 2 cores, 200 ticks: 150 busy, 50 of them ours -> others use half
        let b = CpuTimes {
            busy: 150,
            total: 200,
            own: 50,
        };
        assert_eq!(available(2, a, b), Some(1.0));
        // only we are busy: both cores are ours
        let b = CpuTimes {
            busy: 200,
            total: 200,
            own: 200,
        };
        assert_eq!(available(2, a, b), Some(2.0));
        assert_eq!(available(2, a, a), None);
    }

    #[test]
    fn sampling_this_machine_works() {
        if std::path::Path::new("/proc/stat").exists() {
            let s = sample().unwrap();
            assert!(s.total >= s.busy);
        }
    }
}
