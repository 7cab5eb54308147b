//! perf_event sampling: open an event, map its ring buffer, and decode the
//! samples (IP, pid/tid, time, data address, CPU, period).
//!
//! The same reader serves the KIT thesis's PEBS store sampling
//! (`EventSpec::pebs_stores`, precise, one event per CPU) and the software
//! events that carry data addresses on machines without a PMU (page faults),
//! which is how the pipeline is tested here.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use memtamer_linux::perf_event::{perf_event_open, PerfEventAttr};

const PERF_TYPE_HARDWARE_RAW: u32 = 4; // PERF_TYPE_RAW
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_CPU: u64 = 1 << 7;
const SAMPLE_PERIOD: u64 = 1 << 8;

const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_COMM: u64 = 1 << 9;
const FLAG_TASK: u64 = 1 << 13;
const FLAG_COMM_EXEC: u64 = 1 << 24;
const PRECISE_SHIFT: u64 = 15;

const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const MISC_COMM_EXEC: u16 = 1 << 13;
const RECORD_SAMPLE: u32 = 9;

const IOC_ENABLE: libc::c_ulong = 0x2400;
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
    fd: libc::c_int,
    base: *mut u8,
    map_len: usize,
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

// The mapping is owned by this value and only touched through &mut self.
unsafe impl Send for Sampler {}

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
        // SAFETY: mapping the event's ring buffer as the perf ABI describes.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(PerfError::Map(e));
        }
        let sampler = Sampler {
            fd,
            base: base.cast(),
            map_len,
            data_len,
            lost: 0,
        };
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(fd, IOC_ENABLE, 0) };
        Ok(sampler)
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: data_head lives at byte 1024 of the control page.
        unsafe { &*(self.base.add(1024) as *const AtomicU64) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: data_tail lives at byte 1032 of the control page.
        unsafe { &*(self.base.add(1032) as *const AtomicU64) }
    }

    /// Stops counting (the buffer can still be drained).
    pub fn disable(&self) {
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(self.fd, IOC_DISABLE, 0) };
    }

    /// Starts counting again.
    pub fn enable(&self) {
        // SAFETY: ioctl on our own perf descriptor.
        unsafe { libc::ioctl(self.fd, IOC_ENABLE, 0) };
    }

    /// Decodes every complete record in the buffer, calling `f` per sample,
    /// exec and exit, and frees the space. Returns the number of samples.
    pub fn drain(&mut self, mut f: impl FnMut(&Record)) -> usize {
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        // SAFETY: the data area follows the control page.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(4096), self.data_len) };
        let mut n = 0;
        let mut record = Vec::with_capacity(64);
        while tail + 8 <= head {
            record.clear();
            let read = |at: u64, len: usize, out: &mut Vec<u8>| {
                for i in 0..len {
                    out.push(data[((at + i as u64) as usize) % data.len()]);
                }
            };
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
                    self.lost += u64::from_ne_bytes(record[8..16].try_into().unwrap_or([0; 8]));
                }
                _ => {}
            }
            tail += size;
        }
        fence(Ordering::Release);
        self.tail().store(tail, Ordering::Release);
        n
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // SAFETY: unmapping and closing what `open` created.
        unsafe {
            libc::munmap(self.base.cast(), self.map_len);
            libc::close(self.fd);
        }
    }
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
