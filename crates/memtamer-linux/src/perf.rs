//! perf_event sampling: open an event, map its ring buffer, and decode the
//! samples (IP, pid/tid, time, data address, CPU, period).
//!
//! The same reader serves the KIT thesis's PEBS store sampling
//! (`EventSpec::pebs_stores`, precise, one event per CPU) and the software
//! events that carry data addresses on machines without a PMU (page faults),
//! which is how the pipeline is tested here.
//!
//! It lives in `memtamer-linux` (was `memtamer-sense`) so that the tier
//! runtime's PEBS access source uses the same wrapper;
//! `memtamer_sense::perf` re-exports it.

use std::os::unix::io::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::shmfile::SharedMap;

use crate::perf_event::{
    perf_event_open, PerfEventAttr, FLAG_DISABLED, FLAG_EXCLUDE_HV, FLAG_EXCLUDE_KERNEL,
    IOC_ENABLE, TYPE_SOFTWARE as PERF_TYPE_SOFTWARE,
};

const PERF_TYPE_HARDWARE_RAW: u32 = 4; // PERF_TYPE_RAW
const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;

const FLAG_COMM: u64 = 1 << 9;
const FLAG_TASK: u64 = 1 << 13;
const FLAG_COMM_EXEC: u64 = 1 << 24;
const PRECISE_SHIFT: u64 = 15;

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const MISC_COMM_EXEC: u16 = 1 << 13;
const RECORD_SAMPLE: u32 = 9;

const IOC_DISABLE: libc::c_ulong = 0x2401;

/// What to sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// Human name, for messages.
    pub name: &'static str,
    kind: u32,
    config: u64,
    /// One sample every `period` events.
    pub period: u64,
    precise: u8,
}

impl EventSpec {
    /// PEBS store sampling as in the KIT thesis: MEM_INST_RETIRED.ALL_STORES
    /// (event 0xD0, umask 0x82 on Skylake-SP / Cascade Lake), precise
    /// (no skid, data address exact), user space only. Default period 9973.
    pub fn pebs_stores(period: u64) -> EventSpec {
        EventSpec {
            name: "MEM_INST_RETIRED.ALL_STORES (raw 0x82d0, precise)",
            kind: PERF_TYPE_HARDWARE_RAW,
            config: 0x82d0,
            period: period.max(1),
            precise: 3,
        }
    }

    /// PEBS sampling of every retired load: MEM_INST_RETIRED.ALL_LOADS
    /// (event 0xD0, umask 0x81 on Skylake-SP / Cascade Lake; Intel SDM
    /// vol. 3B ch. 19, "Performance Monitoring Events for Intel Xeon
    /// Processor Scalable Family", and perfmon's SKX/CLX core event list,
    /// where it is PEBS-capable), precise, user space only. The load half
    /// of Unimem's access source (`memtamer-tier`'s `pebs` module): a
    /// sample's data address names the object a load touched, wherever it
    /// was served from, unlike [`EventSpec::pebs_pm_loads`] (PM loads only).
    pub fn pebs_loads(period: u64) -> EventSpec {
        EventSpec {
            name: "MEM_INST_RETIRED.ALL_LOADS (raw 0x81d0, precise)",
            kind: PERF_TYPE_HARDWARE_RAW,
            config: 0x81d0,
            period: period.max(1),
            precise: 3,
        }
    }

    /// PEBS sampling of loads that missed the last-level cache:
    /// MEM_LOAD_RETIRED.L3_MISS (event 0xD1, umask 0x20 on Skylake-SP /
    /// Cascade Lake; Intel SDM vol. 3B ch. 19, PEBS-capable), precise, user
    /// space only: the event Unimem's thesis samples (§3.4 Step 1, "last
    /// level cache miss"), i.e. main-memory loads.
    pub fn pebs_l3_miss_loads(period: u64) -> EventSpec {
        EventSpec {
            name: "MEM_LOAD_RETIRED.L3_MISS (raw 0x20d1, precise)",
            kind: PERF_TYPE_HARDWARE_RAW,
            config: 0x20d1,
            period: period.max(1),
            precise: 3,
        }
    }

    /// PEBS PM-load sampling where the CPU has it: MEM_LOAD_RETIRED.LOCAL_PMM
    /// (event 0xD1, umask 0x80 on Cascade Lake), precise, user space only.
    pub fn pebs_pm_loads(period: u64) -> EventSpec {
        EventSpec {
            name: "MEM_LOAD_RETIRED.LOCAL_PMM (raw 0x80d1, precise)",
            kind: PERF_TYPE_HARDWARE_RAW,
            config: 0x80d1,
            period: period.max(1),
            precise: 3,
        }
    }

    /// Page faults: a software event whose samples carry the faulting
    /// address. Available without a PMU (the test and fallback path).
    pub fn page_faults(period: u64) -> EventSpec {
        EventSpec {
            name: "page faults (software)",
            kind: PERF_TYPE_SOFTWARE,
            config: PERF_COUNT_SW_PAGE_FAULTS,
            period: period.max(1),
            precise: 0,
        }
    }
}

/// Whose events: one task (`pid`, any CPU) or everything on one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A process or thread id.
    Task(u32),
    /// A CPU (needs CAP_PERFMON or perf_event_paranoid <= 0).
    Cpu(u32),
}

/// Why an event could not be opened or mapped.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// perf_event_open failed.
    #[error("perf_event_open({what}): {source}{hint}")]
    Open {
        /// Which event.
        what: String,
        /// The OS error.
        source: std::io::Error,
        /// What usually causes it.
        hint: &'static str,
    },
    /// mmap of the ring buffer failed.
    #[error("mapping the perf ring buffer: {0}")]
    Map(std::io::Error),
}

/// One decoded sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Instruction pointer.
    pub ip: u64,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Timestamp (perf clock, ns).
    pub time: u64,
    /// Data address.
    pub addr: u64,
    /// CPU.
    pub cpu: u32,
    /// Events this sample stands for.
    pub period: u64,
}

/// One record from the ring buffer that the attributor cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A sample.
    Sample(Sample),
    /// The task exec'd: its address space is new.
    Exec {
        /// Process.
        pid: u32,
        /// Thread.
        tid: u32,
    },
    /// The task exited.
    Exit {
        /// Process.
        pid: u32,
        /// Thread.
        tid: u32,
    },
}

/// Size of one decoded sample body (ip, pid/tid, time, addr, cpu/res, period).
const SAMPLE_BODY: usize = 8 * 6;

/// Decodes one `PERF_RECORD_SAMPLE` body laid out for our sample_type.
pub fn decode_sample(body: &[u8]) -> Option<Sample> {
    if body.len() < SAMPLE_BODY {
        return None;
    }
    let u64_at = |i: usize| u64::from_ne_bytes(body[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| u32::from_ne_bytes(body[i..i + 4].try_into().unwrap_or([0; 4]));
    Some(Sample {
        ip: u64_at(0),
        pid: u32_at(8),
        tid: u32_at(12),
        time: u64_at(16),
        addr: u64_at(24),
        cpu: u32_at(32),
        period: u64_at(40),
    })
}

/// An open event with its ring buffer.
pub struct Sampler {
    // the ring is unmapped before the descriptor closes (field order)
    ring: SharedMap,
    fd: OwnedFd,
    data_len: usize,
    /// Samples the kernel dropped because the buffer was full.
    pub lost: u64,
}

/// The kernel's page size (`sysconf(_SC_PAGESIZE)`): the perf ring is one
/// control page plus 2^n data pages of this size, and arm64/ppc64 hosts use
/// 16 or 64 KiB pages, where a 4 KiB assumption maps the wrong length.
/// 4 KiB only if sysconf fails, which POSIX allows for no reason here.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

impl Sampler {
    /// Opens `spec` on `target` with a ring buffer of 2^`pages_log2` pages,
    /// enabled at once. Kernel and hypervisor events are excluded.
    pub fn open(spec: EventSpec, target: Target, pages_log2: u32) -> Result<Sampler, PerfError> {
        let mut attr = PerfEventAttr {
            type_: spec.kind,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: spec.config,
            sample_period: spec.period,
            sample_type: SAMPLE_IP
                | SAMPLE_TID
                | SAMPLE_TIME
                | SAMPLE_ADDR
                | SAMPLE_CPU
                | SAMPLE_PERIOD,
            // COMM (with the exec flag) and EXIT records tell the attributor
            // when a process's cached maps stop being true
            flags: FLAG_DISABLED
                | FLAG_COMM
                | FLAG_COMM_EXEC
                | FLAG_TASK
                | FLAG_EXCLUDE_KERNEL
                | FLAG_EXCLUDE_HV
                | (u64::from(spec.precise.min(3)) << PRECISE_SHIFT),
            wakeup_events: 0,
            ..Default::default()
        };
        if spec.kind == PERF_TYPE_SOFTWARE {
            // software events fire in the kernel on behalf of the task
            attr.flags &= !FLAG_EXCLUDE_KERNEL;
        }
        let (pid, cpu) = match target {
            Target::Task(pid) => (pid as libc::c_int, -1),
            Target::Cpu(cpu) => (-1, cpu as libc::c_int),
        };
        let fd = match perf_event_open(&attr, pid, cpu, -1) {
            Ok(fd) => fd,
            Err(source) => {
                let hint = match source.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => {
                        " (no such event here: no hardware PMU, or another CPU model)"
                    }
                    Some(libc::EACCES) | Some(libc::EPERM) => {
                        " (needs CAP_PERFMON or a lower /proc/sys/kernel/perf_event_paranoid)"
                    }
                    _ => "",
                };
                return Err(PerfError::Open {
                    what: format!("{}, {target:?}", spec.name),
                    source,
                    hint,
                });
            }
        };
        let page = page_size();
        let data_len = page << pages_log2.min(16);
        let map_len = page + data_len;
        // SAFETY: perf_event_open returned a descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // the event's ring buffer, mapped as the perf ABI describes (on
        // failure `fd` closes as it drops)
        let ring = SharedMap::of_fd(fd.as_fd(), map_len).map_err(PerfError::Map)?;
        let sampler = Sampler {
            ring,
            fd,
            data_len,
            lost: 0,
        };
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(sampler.fd.as_raw_fd(), IOC_ENABLE, 0) };
        Ok(sampler)
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head lives at byte 1024 of the control page.
        unsafe { &*(self.ring.base().add(1024) as *const AtomicU64) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: data_tail lives at byte 1032 of the control page.
        unsafe { &*(self.ring.base().add(1032) as *const AtomicU64) }
    }

    /// Stops counting (the buffer can still be drained).
    pub fn disable(&self) {
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), IOC_DISABLE, 0) };
    }

    /// Starts counting again.
    pub fn enable(&self) {
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), IOC_ENABLE, 0) };
    }

    /// Decodes every complete record in the buffer, calling `f` per sample,
    /// exec and exit, and frees the space. Returns the number of samples.
    pub fn drain(&mut self, f: impl FnMut(&Record)) -> usize {
        let head = self.head().load(Ordering::Acquire);
        let tail = self.tail().load(Ordering::Relaxed);
        // SAFETY: the data area follows the control page (of the kernel's
        // page size, not always 4 KiB).
        let data = unsafe {
            std::slice::from_raw_parts(
                self.ring.base().add(self.ring.len() - self.data_len),
                self.data_len,
            )
        };
        let (tail, n) = parse_ring(data, tail, head, &mut self.lost, f);
        fence(Ordering::Release);
        self.tail().store(tail, Ordering::Release);
        n
    }
}

/// Decodes the complete records between `tail` and `head` (byte offsets
/// that only grow; the ring `data` wraps) as the perf ABI lays them out
/// for [`Sampler::open`]'s sample type, calling `f` per sample, exec and
/// exit and adding lost-record counts to `lost`. Returns the new tail (the
/// first byte not consumed: a record that is not complete yet stays) and
/// the number of samples. Pure, so that recorded ring images test it.
pub fn parse_ring(
    data: &[u8],
    mut tail: u64,
    head: u64,
    lost: &mut u64,
    mut f: impl FnMut(&Record),
) -> (u64, usize) {
    if data.is_empty() {
        return (tail, 0);
    }
    let mut n = 0;
    let mut record = Vec::with_capacity(64);
    let read = |at: u64, len: usize, out: &mut Vec<u8>| {
        for i in 0..len {
            out.push(data[((at + i as u64) % data.len() as u64) as usize]);
        }
    };
    while tail + 8 <= head {
        record.clear();
        read(tail, 8, &mut record);
        let kind = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
        let misc = u16::from_ne_bytes([record[4], record[5]]);
        let size = u16::from_ne_bytes([record[6], record[7]]) as u64;
        if size < 8 || tail + size > head {
            break; // malformed or not complete yet
        }
        record.clear();
        read(tail + 8, size as usize - 8, &mut record);
        let u32_at = |i: usize| {
            record
                .get(i..i + 4)
                .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        match kind {
            RECORD_SAMPLE => {
                if let Some(s) = decode_sample(&record) {
                    f(&Record::Sample(s));
                    n += 1;
                }
            }
            RECORD_COMM if misc & MISC_COMM_EXEC != 0 => f(&Record::Exec {
                pid: u32_at(0),
                tid: u32_at(4),
            }),
            RECORD_EXIT => f(&Record::Exit {
                pid: u32_at(0),
                tid: u32_at(8),
            }),
            RECORD_LOST if record.len() >= 16 => {
                *lost += u64::from_ne_bytes(record[8..16].try_into().unwrap_or([0; 8]));
            }
            _ => {}
        }
        tail += size;
    }
    (tail, n)
}

/// One `PERF_RECORD_SAMPLE` as the kernel writes it for [`Sampler::open`]'s
/// sample type (header, then ip, pid/tid, time, addr, cpu/res, period):
/// what recorded ring images in tests are built from.
pub fn encode_sample(s: &Sample) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + SAMPLE_BODY);
    out.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(&((8 + SAMPLE_BODY) as u16).to_ne_bytes());
    out.extend_from_slice(&s.ip.to_ne_bytes());
    out.extend_from_slice(&s.pid.to_ne_bytes());
    out.extend_from_slice(&s.tid.to_ne_bytes());
    out.extend_from_slice(&s.time.to_ne_bytes());
    out.extend_from_slice(&s.addr.to_ne_bytes());
    out.extend_from_slice(&s.cpu.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes()); // res
    out.extend_from_slice(&s.period.to_ne_bytes());
    out
}

/// Opens a counting (not sampling) event of PMU `pmu_type` with `config` on
/// `cpu` for every task: how uncore counters are read. Returns the fd.
pub fn open_counter(pmu_type: u32, config: u64, cpu: u32) -> std::io::Result<libc::c_int> {
    let attr = PerfEventAttr {
        type_: pmu_type,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        ..Default::default()
    };
    perf_event_open(&attr, -1, cpu as libc::c_int, -1)
}

/// Reads a counting event's value (None for fd < 0 or a failed read).
pub fn read_counter(fd: libc::c_int) -> Option<u64> {
    if fd < 0 {
        return None;
    }
    let mut value = 0u64;
    // SAFETY: reading 8 bytes into a u64 from our own descriptor.
    let n = unsafe { libc::read(fd, (&mut value as *mut u64).cast(), 8) };
    (n == 8).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_the_kernels() {
        let p = page_size();
        assert!(p.is_power_of_two() && p >= 4096, "{p}");
        // the same number the kernel reports to every process
        let auxv = std::fs::read("/proc/self/auxv").expect("auxv");
        let words: Vec<u64> = auxv
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect();
        let at_pagesz = words.chunks_exact(2).find(|kv| kv[0] == 6).map(|kv| kv[1]);
        assert_eq!(at_pagesz, Some(p as u64));
    }

    #[test]
    fn samples_decode_in_the_abi_order_and_short_bodies_are_refused() {
        let mut body = Vec::new();
        for v in [0x401000u64, (7u64 << 32) | 5, 99, 0xdead000, 3, 9973] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        let s = decode_sample(&body).expect("decodes");
        assert_eq!(
            (s.ip, s.pid, s.tid, s.time, s.addr, s.cpu, s.period),
            (0x401000, 5, 7, 99, 0xdead000, 3, 9973)
        );
        assert!(decode_sample(&body[..40]).is_none());
    }

    fn sample(addr: u64) -> Sample {
        Sample {
            ip: 0x401000,
            pid: 5,
            tid: 7,
            time: addr,
            addr,
            cpu: 1,
            period: 9973,
        }
    }

    #[test]
    fn a_recorded_ring_decodes_across_the_wrap_and_keeps_a_partial_record() {
        // 2 samples (56 bytes each) and a lost record in a 256-byte ring,
        // written from offset 100 so that records straddle the end
        let mut stream = Vec::new();
        stream.extend(encode_sample(&sample(0x1000)));
        let mut lost = Vec::new();
        lost.extend_from_slice(&RECORD_LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&1u64.to_ne_bytes()); // id
        lost.extend_from_slice(&4u64.to_ne_bytes()); // lost
        stream.extend(lost);
        stream.extend(encode_sample(&sample(0x2000)));
        let mut ring = vec![0u8; 256];
        let start = 200u64;
        for (i, b) in stream.iter().enumerate() {
            ring[(start as usize + i) % 256] = *b;
        }
        let head = start + stream.len() as u64;
        let (mut n_lost, mut got) = (0, Vec::new());
        let (tail, n) = parse_ring(&ring, start, head, &mut n_lost, |r| {
            if let Record::Sample(s) = r {
                got.push(s.addr)
            }
        });
        assert_eq!((tail, n, n_lost), (head, 2, 4));
        assert_eq!(got, vec![0x1000, 0x2000]);
        // a record whose end has not been written yet stays for later
        let (tail, n) = parse_ring(&ring, start, head - 1, &mut n_lost, |_| {});
        assert_eq!((tail, n), (start + 56 + 24, 1));
        assert_eq!(parse_ring(&[], 0, 64, &mut n_lost, |_| {}), (0, 0));
    }

    #[test]
    fn an_encoded_sample_decodes_to_itself() {
        let s = sample(0xdead_beef);
        let rec = encode_sample(&s);
        assert_eq!(rec.len(), 8 + SAMPLE_BODY);
        assert_eq!(decode_sample(&rec[8..]), Some(s));
    }

    #[test]
    fn pebs_is_reported_missing_here_with_a_reason() {
        // this VM has no hardware PMU; on a Cascade Lake host this opens
        match Sampler::open(
            EventSpec::pebs_stores(9973),
            Target::Task(std::process::id()),
            3,
        ) {
            Ok(_) => {}
            Err(e) => assert!(e.to_string().contains("perf_event_open"), "{e}"),
        }
    }
}
