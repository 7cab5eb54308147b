//! The `perf_event_open` system call and counting groups.
//!
//! Why a module of its own: the sampling reader ([`crate::perf`], used by
//! `memtamer-sense` and `memtamer-tier`) and the OMPT tool's per-task
//! counters (`memtamer-omp`, thesis §4.3.4: IPC and LLC miss rate of each
//! task) both open perf events. The raw attribute layout and the system
//! call live here once, so there is one wrapper, not two; the OMPT tool
//! depends on this crate only, not on the sensing crate (its disassembler
//! and C APIs).
//!
//! A [`CounterGroup`] counts several events on the calling thread as one
//! perf group (`PERF_FORMAT_GROUP`): they are scheduled onto the PMU
//! together, so their ratios (IPC, miss rate) are taken over the same
//! time, and one `read()` returns all of them (no system call per counter).

use std::io;

/// `perf_event_attr` up to `aux_watermark` (PERF_ATTR_SIZE_VER5, 112
/// bytes, `linux/perf_event.h`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfEventAttr {
    /// PERF_TYPE_*.
    pub type_: u32,
    /// Size of this struct.
    pub size: u32,
    /// Event within the type.
    pub config: u64,
    /// Sampling period (union with frequency).
    pub sample_period: u64,
    /// PERF_SAMPLE_* bits.
    pub sample_type: u64,
    /// PERF_FORMAT_* bits.
    pub read_format: u64,
    /// The attribute bit field (disabled, inherit, exclude_*, ...).
    pub flags: u64,
    /// Wake up every n events (union with watermark).
    pub wakeup_events: u32,
    /// Breakpoint type.
    pub bp_type: u32,
    /// Extension of config.
    pub config1: u64,
    /// Extension of config1.
    pub config2: u64,
    /// Branch sampling filter.
    pub branch_sample_type: u64,
    /// User registers to sample.
    pub sample_regs_user: u64,
    /// User stack bytes to sample.
    pub sample_stack_user: u32,
    /// Clock for timestamps.
    pub clockid: i32,
    /// Interrupt registers to sample.
    pub sample_regs_intr: u64,
    /// AUX buffer watermark.
    pub aux_watermark: u32,
    /// Call-chain depth.
    pub sample_max_stack: u16,
    /// Reserved.
    pub reserved_2: u16,
}

/// `PERF_TYPE_HARDWARE`.
pub const TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const TYPE_SOFTWARE: u32 = 1;
/// `attr.disabled`.
pub const FLAG_DISABLED: u64 = 1 << 0;
/// `attr.exclude_kernel`.
pub const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
/// `attr.exclude_hv`.
pub const FLAG_EXCLUDE_HV: u64 = 1 << 6;
/// `PERF_FORMAT_GROUP`: a read of the leader returns every member.
pub const FORMAT_GROUP: u64 = 1 << 3;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_EVENT_IOC_ENABLE`.
pub const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_IOC_FLAG_GROUP`: the ioctl applies to the whole group.
const IOC_FLAG_GROUP: libc::c_ulong = 1;

/// The perf_event_open system call, close-on-exec. `group_fd` -1 starts a
/// new group (or opens an event alone).
pub fn perf_event_open(
    attr: &PerfEventAttr,
    pid: libc::c_int,
    cpu: libc::c_int,
    group_fd: libc::c_int,
) -> io::Result<libc::c_int> {
    // SAFETY: attr is a valid perf_event_attr of the size it states.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            group_fd,
            PERF_FLAG_FD_CLOEXEC,
        )
    } as libc::c_int;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// One counting event of a [`CounterGroup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountSpec {
    /// perf's name for it, for messages (`instructions`, `task-clock`).
    pub name: &'static str,
    /// PERF_TYPE_*.
    pub type_: u32,
    /// Event within the type.
    pub config: u64,
}

impl CountSpec {
    /// `instructions` (PERF_COUNT_HW_INSTRUCTIONS): retired instructions.
    pub const INSTRUCTIONS: CountSpec = CountSpec {
        name: "instructions",
        type_: TYPE_HARDWARE,
        config: 1,
    };
    /// `cycles` (PERF_COUNT_HW_CPU_CYCLES): core cycles.
    pub const CYCLES: CountSpec = CountSpec {
        name: "cycles",
        type_: TYPE_HARDWARE,
        config: 0,
    };
    /// `cache-references` (PERF_COUNT_HW_CACHE_REFERENCES): last-level
    /// cache accesses on Intel and AMD (perf's generic mapping).
    pub const LLC_REFERENCES: CountSpec = CountSpec {
        name: "cache-references",
        type_: TYPE_HARDWARE,
        config: 2,
    };
    /// `cache-misses` (PERF_COUNT_HW_CACHE_MISSES): last-level cache misses.
    pub const LLC_MISSES: CountSpec = CountSpec {
        name: "cache-misses",
        type_: TYPE_HARDWARE,
        config: 3,
    };
    /// `cpu-clock` (PERF_COUNT_SW_CPU_CLOCK), ns: software, no PMU needed.
    pub const CPU_CLOCK: CountSpec = CountSpec {
        name: "cpu-clock",
        type_: TYPE_SOFTWARE,
        config: 0,
    };
    /// `task-clock` (PERF_COUNT_SW_TASK_CLOCK), ns: software.
    pub const TASK_CLOCK: CountSpec = CountSpec {
        name: "task-clock",
        type_: TYPE_SOFTWARE,
        config: 1,
    };
    /// `page-faults` (PERF_COUNT_SW_PAGE_FAULTS): software.
    pub const PAGE_FAULTS: CountSpec = CountSpec {
        name: "page-faults",
        type_: TYPE_SOFTWARE,
        config: 2,
    };
    /// `minor-faults` (PERF_COUNT_SW_PAGE_FAULTS_MIN): software.
    pub const MINOR_FAULTS: CountSpec = CountSpec {
        name: "minor-faults",
        type_: TYPE_SOFTWARE,
        config: 5,
    };
}

/// Most events in one [`CounterGroup`] (the read buffer is on the stack).
pub const MAX_GROUP: usize = 8;

/// Events that could not be opened, each with the OS's reason. Shown as
/// `a, b: reason; c: other reason` (events with the same reason together,
/// in open order), with a hint for the usual causes.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe(.missing))]
pub struct GroupError {
    /// (event name, error) per event that failed.
    pub missing: Vec<(&'static str, io::Error)>,
}

fn describe(missing: &[(&'static str, io::Error)]) -> String {
    let mut groups: Vec<(String, Option<i32>, Vec<&str>)> = Vec::new();
    for (name, e) in missing {
        let why = e.to_string();
        match groups.iter_mut().find(|g| g.0 == why) {
            Some(g) => g.2.push(name),
            None => groups.push((why, e.raw_os_error(), vec![name])),
        }
    }
    groups
        .iter()
        .map(|(why, code, names)| {
            let hint = match code {
                Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) => {
                    " (no such event here: no hardware PMU, e.g. a VM without one)"
                }
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    " (needs CAP_PERFMON or a lower /proc/sys/kernel/perf_event_paranoid)"
                }
                _ => "",
            };
            format!("{}: {why}{hint}", names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Several counting events on the calling thread, one perf group, read
/// with one system call. Counting starts when every member is open (the
/// leader is opened disabled and the group enabled as one: siblings added
/// to a running leader would only start at the thread's next context
/// switch, measured here); user-space only for
/// hardware events (what `perf_event_paranoid` 2 allows), software events
/// count whatever the kernel does for the thread. Closed on drop.
#[derive(Debug)]
pub struct CounterGroup {
    fds: Vec<libc::c_int>,
}

impl CounterGroup {
    /// Opens `specs` (at most [`MAX_GROUP`]) as one group on the calling
    /// thread. Every event is tried, so that the error names each one this
    /// host lacks (no hardware PMU in a VM: ENOENT or EOPNOTSUPP).
    pub fn open_thread(specs: &[CountSpec]) -> Result<CounterGroup, GroupError> {
        let mut g = CounterGroup { fds: Vec::new() };
        let mut missing = Vec::new();
        if specs.is_empty() || specs.len() > MAX_GROUP {
            missing.push((
                "group",
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("1..={MAX_GROUP} events"),
                ),
            ));
            return Err(GroupError { missing });
        }
        for s in specs {
            let mut flags = FLAG_EXCLUDE_HV;
            if g.fds.is_empty() {
                flags |= FLAG_DISABLED;
            }
            if s.type_ != TYPE_SOFTWARE {
                flags |= FLAG_EXCLUDE_KERNEL;
            }
            let attr = PerfEventAttr {
                type_: s.type_,
                size: std::mem::size_of::<PerfEventAttr>() as u32,
                config: s.config,
                read_format: FORMAT_GROUP,
                flags,
                ..Default::default()
            };
            let leader = g.fds.first().copied().unwrap_or(-1);
            match perf_event_open(&attr, 0, -1, leader) {
                Ok(fd) => g.fds.push(fd),
                Err(e) => missing.push((s.name, e)),
            }
        }
        if missing.is_empty() {
            // SAFETY: ioctl on our own perf descriptor.
            unsafe { libc::ioctl(g.fds[0], IOC_ENABLE, IOC_FLAG_GROUP) };
            Ok(g)
        } else {
            Err(GroupError { missing })
        }
    }

    /// Events in the group.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Always false: a group that opened has events.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Current counts in open order into `out` (one `read()` of the
    /// leader). None if the read failed or returned another member count.
    pub fn read(&self, out: &mut [u64]) -> Option<()> {
        let n = self.fds.len();
        let leader = *self.fds.first()?;
        let mut buf = [0u64; MAX_GROUP + 1];
        // SAFETY: reading at most the buffer's bytes from our own fd.
        let got = unsafe { libc::read(leader, buf.as_mut_ptr().cast(), (n + 1) * 8) };
        if got != ((n + 1) * 8) as isize || buf[0] != n as u64 {
            return None;
        }
        let k = out.len().min(n);
        out[..k].copy_from_slice(&buf[1..=k]);
        Some(())
    }
}

impl Drop for CounterGroup {
    fn drop(&mut self) {
        // siblings first, then the leader
        for &fd in self.fds.iter().rev() {
            // SAFETY: closing descriptors this group opened.
            unsafe { libc::close(fd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attr_is_the_size_the_kernel_expects() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112); // PERF_ATTR_SIZE_VER5
    }

    #[test]
    fn a_software_group_counts_this_thread_with_one_read() {
        let specs = [
            CountSpec::TASK_CLOCK,
            CountSpec::CPU_CLOCK,
            CountSpec::PAGE_FAULTS,
            CountSpec::MINOR_FAULTS,
        ];
        let g = match CounterGroup::open_thread(&specs) {
            Ok(g) => g,
            // perf_event_paranoid 3 (some distributions) or seccomp refuse
            // even software events: the error must say which
            Err(e) => {
                assert_eq!(e.missing.len(), 4, "{e}");
                assert!(e.to_string().starts_with("task-clock: "), "{e}");
                return;
            }
        };
        assert_eq!(g.len(), 4);
        let mut a = [0u64; 4];
        g.read(&mut a).expect("group read");
        // fault in fresh pages and burn time: the counts must grow
        let v: Vec<u8> = (0..(4 << 20)).map(|i| (i % 251) as u8).collect();
        let s: u64 = v.iter().map(|&x| u64::from(x)).sum();
        assert!(s > 0);
        let mut b = [0u64; 4];
        g.read(&mut b).expect("group read");
        assert!(b[0] > a[0] && b[1] > a[1], "{a:?} {b:?}");
        assert!(b[2] > a[2] && b[3] > a[3], "faults {a:?} {b:?}");
        // a shorter output takes the first events
        let mut one = [0u64; 1];
        g.read(&mut one).expect("group read");
        assert!(one[0] >= b[0]);
    }

    #[test]
    fn missing_events_are_named_and_empty_groups_refused() {
        let bogus = CountSpec {
            name: "no-such-event",
            type_: 0x7fff_0000,
            config: 0,
        };
        let e = CounterGroup::open_thread(&[bogus]).unwrap_err();
        assert_eq!(e.missing.len(), 1);
        assert!(e.to_string().starts_with("no-such-event: "), "{e}");
        assert!(CounterGroup::open_thread(&[]).is_err());
        // hardware events: present on a host with a PMU; on this KVM guest
        // without one, named in the error
        match CounterGroup::open_thread(&[CountSpec::INSTRUCTIONS, CountSpec::CYCLES]) {
            Ok(g) => assert_eq!(g.len(), 2),
            // one reason for both: named together
            Err(e) if e.missing.len() == 2 => {
                assert!(e.to_string().starts_with("instructions, cycles: "), "{e}")
            }
            Err(e) => assert!(e.to_string().contains("instructions"), "{e}"),
        }
        let two = GroupError {
            missing: vec![
                ("a", io::Error::from_raw_os_error(libc::ENOENT)),
                ("b", io::Error::from_raw_os_error(libc::EACCES)),
                ("c", io::Error::from_raw_os_error(libc::ENOENT)),
            ],
        }
        .to_string();
        assert!(two.starts_with("a, c: "), "{two}");
        assert!(
            two.contains("no hardware PMU") && two.contains("; b: "),
            "{two}"
        );
        assert!(two.ends_with("perf_event_paranoid)"), "{two}");
    }
}
