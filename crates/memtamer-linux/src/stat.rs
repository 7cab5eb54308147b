//! `/proc/PID/stat`, `/proc/PID/task/TID/stat` and `schedstat` (proc(5)).
//!
//! The comm (field 2) is whatever the program named itself: up to 15 bytes
//! that may contain spaces, `(` and `)`. The only safe split point is the
//! LAST `)` of the line; everything after it is space-separated numbers.

use crate::{field, ParseError};

/// `PF_KTHREAD` from the kernel's `include/linux/sched.h`: set in the `flags`
/// field of `stat` for kernel threads, which are never managed.
pub const PF_KTHREAD: u32 = 0x0020_0000;

/// Fields after the comm that [`parse_stat`] needs: up to field 22.
const STAT_NEEDED: usize = 20;
/// Fields after the comm that [`parse_task_sched`] needs: up to field 39.
const SCHED_NEEDED: usize = 37;

/// The fields of `stat` that memtamer uses (the daemon's scan, process
/// identity, liveness).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Field 1.
    pub pid: i32,
    /// Field 2, without the parentheses.
    pub comm: String,
    /// Field 3: R, S, D, T, t, Z, X, I...
    pub state: char,
    /// Field 4.
    pub ppid: i32,
    /// Field 9 (`PF_*` flags).
    pub flags: u32,
    /// Field 14: user CPU time in clock ticks.
    pub utime: u64,
    /// Field 15: system CPU time in clock ticks.
    pub stime: u64,
    /// Field 20, threads in the process.
    pub num_threads: u32,
    /// Field 22, start time in clock ticks since boot: with the pid, the
    /// identity of a process across pid reuse.
    pub start_time: u64,
}

impl Stat {
    /// A kernel thread (`PF_KTHREAD` set).
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// A zombie (`Z`) or dead (`X`) task: it can no longer be changed.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X')
    }
}

/// The fields of a `stat` line after the comm, which ends at byte `close`
/// (the LAST `)`); at least `needed` of them.
fn fields_after(text: &str, close: usize, needed: usize) -> Result<Vec<&str>, ParseError> {
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    if rest.len() < needed {
        return Err(ParseError::StatTooShort {
            found: rest.len(),
            needed,
        });
    }
    Ok(rest)
}

/// Parses `stat`. The comm spans from the first `(` to the LAST `)`; the rest
/// is split on whitespace. Field N after the comm is `rest[N - 3]`.
pub fn parse_stat(text: &str) -> Result<Stat, ParseError> {
    let open = text.find('(').ok_or(ParseError::StatNoComm)?;
    let close = text.rfind(')').ok_or(ParseError::StatNoComm)?;
    if close < open {
        return Err(ParseError::StatNoComm);
    }
    let pid = field("pid", text[..open].trim())?;
    let comm = text[open + 1..close].to_string();
    let rest = fields_after(text, close, STAT_NEEDED)?;
    let mut state_chars = rest[0].chars();
    let state = match (state_chars.next(), state_chars.next()) {
        (Some(c), None) => c,
        _ => {
            return Err(ParseError::BadField {
                field: "state",
                value: rest[0].to_string(),
            })
        }
    };
    Ok(Stat {
        pid,
        comm,
        state,
        ppid: field("ppid", rest[1])?,
        flags: field("flags", rest[6])?,
        utime: field("utime", rest[11])?,
        stime: field("stime", rest[12])?,
        num_threads: field("num_threads", rest[17])?,
        start_time: field("starttime", rest[19])?,
    })
}

/// Only the state (field 3) of a `stat` line: the first character after the
/// LAST `)`. For liveness checks that need nothing else (a zombie `Z` or
/// dead `X` task is gone), so it asks nothing of the other fields.
pub fn parse_state(text: &str) -> Result<char, ParseError> {
    let (_, rest) = text.rsplit_once(')').ok_or(ParseError::StatNoComm)?;
    rest.trim_start()
        .chars()
        .next()
        .ok_or(ParseError::StatTooShort {
            found: 0,
            needed: 1,
        })
}

/// Where a thread runs and how much CPU it has used: what placement needs
/// (Ahn §3.3 balances by CPU load and places by current CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSched {
    /// CPU it last ran on (field 39).
    pub processor: u32,
    /// Field 14, clock ticks.
    pub utime: u64,
    /// Field 15, clock ticks.
    pub stime: u64,
}

/// Parses the scheduling fields of `/proc/PID/task/TID/stat` (needs the
/// line up to field 39; only the closing `)` of the comm is required).
pub fn parse_task_sched(text: &str) -> Result<TaskSched, ParseError> {
    let close = text.rfind(')').ok_or(ParseError::StatNoComm)?;
    let rest = fields_after(text, close, SCHED_NEEDED)?;
    Ok(TaskSched {
        utime: field("utime", rest[11])?,
        stime: field("stime", rest[12])?,
        processor: field("processor", rest[36])?,
    })
}

/// Parses `/proc/PID/task/TID/schedstat` (run time ns, wait time ns,
/// timeslices) and returns the run time: far finer than stat's ticks, where
/// the kernel has it (CONFIG_SCHED_INFO).
pub fn parse_schedstat(text: &str) -> Result<u64, ParseError> {
    field("run_ns", text.split_ascii_whitespace().next().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_line(pid: &str, comm: &str, tail: &str) -> String {
        format!("{pid} ({comm}) {tail}")
    }
    // Fields 3..=52 as the kernel prints them: utime 12, stime 34,
    // num_threads 3, starttime 987654, processor 3.
    const TAIL: &str = "S 1 1234 1234 0 -1 4194560 1000 0 0 0 12 34 0 0 20 0 3 0 987654 123456 789 18446744073709551615 1 1 0 0 0 0 0 4096 1 0 0 0 17 3 0 0 0 0 0";

    #[test]
    fn plain() {
        let s = parse_stat(&stat_line("42", "memcached", TAIL)).unwrap();
        assert_eq!(
            s,
            Stat {
                pid: 42,
                comm: "memcached".into(),
                state: 'S',
                ppid: 1,
                flags: 4194560,
                utime: 12,
                stime: 34,
                num_threads: 3,
                start_time: 987654
            }
        );
        assert!(!s.is_kernel_thread());
        assert!(!s.is_dead());
    }

    #[test]
    fn comm_with_spaces_parens_and_digits() {
        for comm in [
            "a b",
            "x) S 9 9",
            ") R 1 2 3 (",
            "my (weird) proc",
            "(",
            ")",
            "()",
            ") (",
            "",
            "tmux: server",
            "a\nb",
        ] {
            let s = parse_stat(&stat_line("7", comm, TAIL)).unwrap();
            assert_eq!(s.comm, comm);
            assert_eq!(s.state, 'S', "{comm:?}");
            assert_eq!(s.ppid, 1, "{comm:?}");
            assert_eq!(s.start_time, 987654, "{comm:?}");
            let t = parse_task_sched(&stat_line("7", comm, TAIL)).unwrap();
            assert_eq!(t.processor, 3, "{comm:?}");
        }
    }

    #[test]
    fn zombie_and_kernel_thread() {
        let z = parse_stat(&stat_line("9", "defunct", &TAIL.replacen("S 1", "Z 1", 1))).unwrap();
        assert!(z.is_dead());
        let x = parse_stat(&stat_line("9", "x", &TAIL.replacen("S 1", "X 1", 1))).unwrap();
        assert!(x.is_dead());
        // kthreadd's child: PF_KTHREAD | PF_NOFREEZE | ..., ppid 2, state I
        let tail = TAIL
            .replacen("S 1", "I 2", 1)
            .replacen("4194560", "2129984", 1);
        let k = parse_stat(&stat_line("3", "rcu_gp", &tail)).unwrap();
        assert!(k.is_kernel_thread());
        assert_eq!(k.ppid, 2);
        assert_eq!(k.state, 'I');
    }

    #[test]
    fn trailing_newline_and_exact_length() {
        let exact: Vec<&str> = TAIL.split(' ').take(20).collect();
        let s = parse_stat(&format!("1 (init) {}\n", exact.join(" "))).unwrap();
        assert_eq!(s.start_time, 987654);
    }

    #[test]
    fn errors() {
        assert_eq!(parse_stat(""), Err(ParseError::StatNoComm));
        assert_eq!(parse_stat("12 (x"), Err(ParseError::StatNoComm));
        assert_eq!(parse_stat("1 init S 0"), Err(ParseError::StatNoComm));
        assert_eq!(parse_stat("1 )x( S"), Err(ParseError::StatNoComm));
        assert_eq!(
            parse_stat("1 (x) S 0 1"),
            Err(ParseError::StatTooShort {
                found: 3,
                needed: 20
            })
        );
        let short: Vec<&str> = TAIL.split(' ').take(19).collect();
        assert!(matches!(
            parse_stat(&stat_line("1", "x", &short.join(" "))),
            Err(ParseError::StatTooShort { found: 19, .. })
        ));
        let bad = |from: &str, to: &str, n: usize| {
            parse_stat(&stat_line("1", "x", &TAIL.replacen(from, to, n)))
        };
        assert!(matches!(
            parse_stat(&stat_line("x", "x", TAIL)),
            Err(ParseError::BadField { field: "pid", .. })
        ));
        assert!(matches!(
            bad("S 1", "SS 1", 1),
            Err(ParseError::BadField { field: "state", .. })
        ));
        assert!(matches!(
            bad("S 1", "S -", 1),
            Err(ParseError::BadField { field: "ppid", .. })
        ));
        assert!(matches!(
            bad("987654", "-5", 1),
            Err(ParseError::BadField {
                field: "starttime",
                ..
            })
        ));
        assert!(matches!(
            bad("4194560", "x", 1),
            Err(ParseError::BadField { field: "flags", .. })
        ));
        assert!(matches!(
            bad(" 12 34 ", " abc 34 ", 1),
            Err(ParseError::BadField { field: "utime", .. })
        ));
    }

    #[test]
    fn state_alone() {
        assert_eq!(parse_state("5 (a) b) Z"), Ok('Z'));
        assert_eq!(parse_state(&stat_line("7", ") R 1 (", TAIL)), Ok('S'));
        assert_eq!(parse_state("5 (x)\tX 1"), Ok('X'));
        assert_eq!(parse_state("5 (x"), Err(ParseError::StatNoComm));
        assert!(matches!(
            parse_state("5 (x)  "),
            Err(ParseError::StatTooShort { found: 0, .. })
        ));
    }

    #[test]
    fn task_sched() {
        let s = parse_task_sched(&stat_line("42", "a) b", TAIL)).unwrap();
        assert_eq!(
            s,
            TaskSched {
                processor: 3,
                utime: 12,
                stime: 34
            }
        );
        assert!(matches!(
            parse_task_sched("1 (x) S 1 2 3"),
            Err(ParseError::StatTooShort {
                found: 4,
                needed: 37
            })
        ));
        assert_eq!(parse_task_sched("no comm"), Err(ParseError::StatNoComm));
        let bad = stat_line("42", "x", &TAIL.replace(" 17 3 0", " 17 x 0"));
        assert!(matches!(
            parse_task_sched(&bad),
            Err(ParseError::BadField {
                field: "processor",
                ..
            })
        ));
        assert_eq!(parse_schedstat("167579456 9725208 399\n"), Ok(167579456));
        assert!(parse_schedstat("").is_err());
        assert!(parse_schedstat("x 1 2").is_err());
    }
}
