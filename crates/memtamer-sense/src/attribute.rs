//! From samples to "who touched PM, where, how much": address -> the
//! process's mapping (cached `/proc/PID/maps`, re-read once on a miss) ->
//! is that mapping PM -> per-thread, per-process and per-mapping totals,
//! extrapolated by each sample's period.

use std::collections::HashMap;

use crate::maps::{self, Region};
use memtamer_linux::ProcRoot;

/// A window's results, taken with [`Attributor::take_window`].
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// PM samples per (pid, tid).
    pub threads: HashMap<(u32, u32), Tally>,
    /// PM samples per process and mapping path.
    pub mappings: HashMap<u32, HashMap<String, (PmKind, Tally)>>,
    /// Samples that were not PM, and why.
    pub unattributed: Unattributed,
}
use crate::mounts::{PmClassifier, PmKind};
use crate::perf::{Record, Sample};

/// The NUMA node holding the page at `addr` in process `pid`, if resident
/// (`move_pages` with no target nodes only reports where pages are).
pub fn node_of(pid: u32, addr: u64) -> Option<u32> {
    let page = (addr & !(crate::perf::page_size() as u64 - 1)) as *mut libc::c_void;
    let mut status: libc::c_int = -1;
    // SAFETY: one page pointer in, one status out; nodes NULL means query.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::c_long,
            1 as libc::c_ulong,
            &page as *const *mut libc::c_void,
            std::ptr::null::<libc::c_int>(),
            &mut status as *mut libc::c_int,
            0 as libc::c_int,
        )
    };
    (rc == 0 && status >= 0).then_some(status as u32)
}

/// Pages whose NUMA node is cached at most.
const MAX_CACHED_PAGES: usize = 1 << 16;

/// Processes whose maps are cached at most (the least recently used is
/// dropped first), which bounds memory with thousands of processes.
pub const MAX_CACHED_PROCESSES: usize = 1024;

/// Totals for one thread, process or mapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Samples seen.
    pub samples: u64,
    /// Events they stand for (sum of periods).
    pub events: u64,
    /// Samples whose store size was decoded.
    pub sized: u64,
    /// Estimated bytes of the sized samples: store size x period.
    pub bytes: u64,
}

impl Tally {
    fn add(&mut self, s: &Sample) {
        self.samples += 1;
        self.events += s.period.max(1);
    }

    fn add_sized(&mut self, s: &Sample, size: Option<u32>) {
        self.add(s);
        if let Some(b) = size {
            self.sized += 1;
            self.bytes += u64::from(b) * s.period.max(1);
        }
    }
}

/// Where samples that could not be attributed to PM went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unattributed {
    /// The address is mapped, but not to PM (DRAM, files, stack).
    pub not_pm: Tally,
    /// No mapping contains the address, even after re-reading the maps
    /// (unmapped between the access and the lookup).
    pub unmapped: Tally,
    /// The process was gone before its maps could be read.
    pub gone: Tally,
}

struct ProcMaps {
    regions: Vec<Region>,
    /// Each region's PM kind, classified once when the maps are read.
    kinds: Vec<Option<PmKind>>,
    last_use: u64,
}

/// Attributes samples; one per sensing thread.
pub struct Attributor {
    classifier: PmClassifier,
    proc_root: ProcRoot,
    procs: HashMap<u32, ProcMaps>,
    clock: u64,
    /// PM samples per (pid, tid).
    pub threads: HashMap<(u32, u32), Tally>,
    /// PM samples per process and mapping path.
    pub mappings: HashMap<u32, HashMap<String, (PmKind, Tally)>>,
    /// Samples that were not PM, and why.
    pub unattributed: Unattributed,
    /// Times a process's maps were (re-)read.
    pub maps_reads: u64,
    decoder: Option<crate::decode::Decoder>,
    /// (pid, page) -> node, for slow-node classification.
    nodes: HashMap<(u32, u64), Option<u32>>,
    /// `page size - 1`: the bits below a page ([`crate::perf::page_size`]).
    page_mask: u64,
}

impl Attributor {
    /// An attributor classifying with `classifier`, reading maps under
    /// `/proc`.
    pub fn new(classifier: PmClassifier) -> Attributor {
        Attributor::with_root(classifier, "/proc")
    }

    /// The same with another proc root (tests use a fake one).
    pub fn with_root(classifier: PmClassifier, root: impl Into<std::path::PathBuf>) -> Attributor {
        Attributor {
            classifier,
            proc_root: ProcRoot::new(root),
            procs: HashMap::new(),
            clock: 0,
            threads: HashMap::new(),
            mappings: HashMap::new(),
            unattributed: Unattributed::default(),
            maps_reads: 0,
            decoder: None,
            nodes: HashMap::new(),
            page_mask: crate::perf::page_size() as u64 - 1,
        }
    }

    /// Also decodes each PM sample's instruction to estimate bytes (PEBS
    /// store samples; page-fault samples have no store to decode).
    pub fn with_decoder(mut self, decoder: crate::decode::Decoder) -> Attributor {
        self.decoder = Some(decoder);
        self
    }

    fn load(&mut self, pid: u32) -> bool {
        self.maps_reads += 1;
        let regions = match self.proc_root.maps(pid as i32) {
            Ok(r) => r,
            // readable but not understood: no mapping known (samples count
            // as unmapped), as before the parser moved to memtamer-linux
            Err(memtamer_linux::Error::Parse { .. }) => Vec::new(),
            Err(_) => {
                self.procs.remove(&pid);
                return false;
            }
        };
        let kinds = regions
            .iter()
            .map(|r| self.classifier.classify(&r.path))
            .collect();
        if self.procs.len() >= MAX_CACHED_PROCESSES && !self.procs.contains_key(&pid) {
            if let Some(oldest) = self
                .procs
                .iter()
                .min_by_key(|(_, p)| p.last_use)
                .map(|(k, _)| *k)
            {
                self.procs.remove(&oldest);
            }
        }
        self.procs.insert(
            pid,
            ProcMaps {
                regions,
                kinds,
                last_use: self.clock,
            },
        );
        true
    }

    /// Attributes one sample.
    pub fn ingest(&mut self, s: &Sample) {
        self.clock += 1;
        let mut fresh = false;
        if !self.procs.contains_key(&s.pid) {
            if !self.load(s.pid) {
                self.unattributed.gone.add(s);
                return;
            }
            fresh = true;
        }
        loop {
            let clock = self.clock;
            let Some(p) = self.procs.get_mut(&s.pid) else {
                self.unattributed.gone.add(s);
                return;
            };
            p.last_use = clock;
            let i = p.regions.partition_point(|r| r.start <= s.addr);
            if i > 0 && s.addr < p.regions[i - 1].end {
                let mut kind = p.kinds[i - 1];
                if kind.is_none() && !self.classifier.slow_nodes().is_empty() {
                    let page = s.addr & !self.page_mask;
                    if self.nodes.len() >= MAX_CACHED_PAGES {
                        self.nodes.clear();
                    }
                    let node = *self
                        .nodes
                        .entry((s.pid, page))
                        .or_insert_with(|| node_of(s.pid, page));
                    if node.is_some_and(|n| self.classifier.slow_nodes().contains(&n)) {
                        kind = Some(PmKind::SlowNode);
                    }
                }
                match kind {
                    Some(kind) => {
                        let size = self.decoder.as_mut().and_then(|d| {
                            let code = maps::find(&p.regions, s.ip)?;
                            d.at(s.pid, s.ip, code)?.bytes()
                        });
                        self.threads
                            .entry((s.pid, s.tid))
                            .or_default()
                            .add_sized(s, size);
                        let per_proc = self.mappings.entry(s.pid).or_default();
                        let path = &p.regions[i - 1].path;
                        match per_proc.get_mut(path.as_str()) {
                            Some(m) => m.1.add_sized(s, size),
                            None => {
                                let mut t = Tally::default();
                                t.add_sized(s, size);
                                per_proc.insert(path.clone(), (kind, t));
                            }
                        }
                    }
                    None => self.unattributed.not_pm.add(s),
                }
                return;
            }
            // a mapping made after the cache was filled: re-read once
            if fresh || !self.load(s.pid) {
                if self.procs.contains_key(&s.pid) {
                    self.unattributed.unmapped.add(s);
                } else {
                    self.unattributed.gone.add(s);
                }
                return;
            }
            fresh = true;
        }
    }

    /// Returns the tallies so far and starts a new window: the tallies stay
    /// bounded by the threads active in one window.
    pub fn take_window(&mut self) -> Window {
        Window {
            threads: std::mem::take(&mut self.threads),
            mappings: std::mem::take(&mut self.mappings),
            unattributed: std::mem::take(&mut self.unattributed),
        }
    }

    /// Handles one ring-buffer record: samples are attributed; an exec or
    /// the exit of a process's main thread drops its cached maps, so no
    /// later sample is matched against an address space that is gone.
    pub fn apply(&mut self, record: &Record) {
        match *record {
            Record::Sample(ref s) => self.ingest(s),
            Record::Exec { pid, .. } => self.forget(pid),
            Record::Exit { pid, tid } if pid == tid => self.forget(pid),
            Record::Exit { .. } => {}
        }
    }

    /// Forgets a process (it exited, or exec'd: its old maps are wrong).
    pub fn forget(&mut self, pid: u32) {
        self.procs.remove(&pid);
        self.nodes.retain(|(p, _), _| *p != pid);
    }

    /// PM totals of one process.
    pub fn process(&self, pid: u32) -> Tally {
        self.threads.iter().filter(|((p, _), _)| *p == pid).fold(
            Tally::default(),
            |mut acc, (_, t)| {
                acc.samples += t.samples;
                acc.events += t.events;
                acc
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_proc(dir: &std::path::Path, pid: u32, maps: &str) {
        let d = dir.join(pid.to_string());
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join("maps"), maps).expect("write maps");
    }

    fn sample(pid: u32, tid: u32, addr: u64) -> Sample {
        Sample {
            pid,
            tid,
            addr,
            period: 10,
            ..Default::default()
        }
    }

    #[test]
    fn samples_go_to_the_right_thread_and_mapping_and_misses_are_explained() {
        let root = std::env::temp_dir().join(format!("mt-proc-{}", std::process::id()));
        fake_proc(
            &root,
            42,
            "1000-2000 rw-s 0 0:1 5 /dev/shm/pm-a\n3000-4000 rw-p 0 0:0 0 [heap]\n",
        );
        let mut a = Attributor::with_root(PmClassifier::new("", &["/dev/shm/pm-".into()]), &root);
        a.ingest(&sample(42, 43, 0x1800));
        a.ingest(&sample(42, 44, 0x1000));
        a.ingest(&sample(42, 43, 0x3800)); // heap: not PM
        a.ingest(&sample(42, 43, 0x9000)); // nowhere
        a.ingest(&sample(77, 77, 0x1000)); // no such process
        assert_eq!(
            a.threads[&(42, 43)],
            Tally {
                samples: 1,
                events: 10,
                ..Default::default()
            }
        );
        assert_eq!(a.threads[&(42, 44)].samples, 1);
        assert_eq!(a.process(42).events, 20);
        assert_eq!(a.mappings[&42]["/dev/shm/pm-a"].1.samples, 2);
        assert_eq!(a.unattributed.not_pm.samples, 1);
        assert_eq!(a.unattributed.unmapped.samples, 1);
        assert_eq!(a.unattributed.gone.samples, 1);
        // a new mapping appears: one re-read finds it
        fake_proc(
            &root,
            42,
            "1000-2000 rw-s 0 0:1 5 /dev/shm/pm-a\n9000-a000 rw-s 0 0:1 6 /dev/shm/pm-b\n",
        );
        let reads = a.maps_reads;
        a.ingest(&sample(42, 43, 0x9800));
        assert_eq!(a.maps_reads, reads + 1);
        assert_eq!(a.mappings[&42]["/dev/shm/pm-b"].1.samples, 1);
        let w = a.take_window();
        assert_eq!(w.threads[&(42, 43)].samples, 2);
        assert!(a.threads.is_empty() && a.mappings.is_empty());
        // exec: the cached maps are dropped and re-read for the next sample
        let reads = a.maps_reads;
        a.apply(&Record::Exec { pid: 42, tid: 43 });
        a.apply(&Record::Sample(sample(42, 43, 0x1800)));
        assert_eq!(a.maps_reads, reads + 1);
        a.apply(&Record::Exit { pid: 42, tid: 44 }); // another thread: keep the maps
        a.apply(&Record::Sample(sample(42, 43, 0x1800)));
        assert_eq!(a.maps_reads, reads + 1);
        let _ = a.take_window();
        // the process exits: its samples count as gone, never as someone else's
        std::fs::remove_dir_all(root.join("42")).expect("rm");
        a.forget(42);
        a.ingest(&sample(42, 43, 0x1800));
        assert_eq!(a.unattributed.gone.samples, 1); // a new window
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn pages_on_a_slow_numa_node_count_as_pm() {
        // this process's anonymous page, on whatever node holds it
        let buf = vec![1u8; 8192];
        let addr = buf.as_ptr() as u64;
        let me = std::process::id();
        let node = node_of(me, addr).expect("a resident page has a node");
        let s = Sample {
            pid: me,
            tid: me,
            addr,
            period: 1,
            ..Default::default()
        };
        let classifier = || PmClassifier::new("", &[]);
        let mut slow = Attributor::new(classifier().with_slow_nodes(&[node]));
        slow.ingest(&s);
        assert_eq!(slow.threads[&(me, me)].samples, 1);
        assert!(slow.mappings[&me]
            .values()
            .all(|(k, _)| *k == PmKind::SlowNode));
        let mut fast = Attributor::new(classifier().with_slow_nodes(&[node + 1]));
        fast.ingest(&s);
        assert!(fast.threads.is_empty());
        assert_eq!(fast.unattributed.not_pm.samples, 1);
        std::hint::black_box(&buf);
    }

    #[test]
    fn a_decoder_turns_store_samples_into_bytes() {
        let root = std::env::temp_dir().join(format!("mt-proc-dec-{}", std::process::id()));
        std::fs::create_dir_all(&root).expect("mkdir");
        let bin = root.join("app");
        let mut code = vec![0x90u8; 0x20];
        code[0x10..0x14].copy_from_slice(&[0xc5, 0xfd, 0xe7, 0x07]); // vmovntdq [rdi], ymm0
        std::fs::write(&bin, &code).expect("write");
        fake_proc(
            &root,
            9,
            &format!(
                "400000-401000 r-xp 00000000 08:01 555 {}\n1000-2000 rw-s 0 0:1 5 /dev/shm/pm-a\n",
                bin.display()
            ),
        );
        let mut a = Attributor::with_root(PmClassifier::new("", &["/dev/shm/pm-".into()]), &root)
            .with_decoder(crate::decode::Decoder::new().expect("capstone"));
        let s = Sample {
            ip: 0x400010,
            pid: 9,
            tid: 9,
            addr: 0x1040,
            period: 9973,
            ..Default::default()
        };
        a.ingest(&s);
        a.ingest(&Sample { ip: 0x400000, ..s }); // a nop: counted, not sized
        let t = a.threads[&(9, 9)];
        assert_eq!((t.samples, t.sized, t.bytes), (2, 1, 32 * 9973));
        let _ = std::fs::remove_dir_all(&root);
    }
}
