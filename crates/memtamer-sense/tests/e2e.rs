//! End to end without a PMU: a child process maps a /dev/shm file standing
//! in for PM and writes a known number of its pages; a page-fault software
//! event samples the child; the attributor must put exactly those touches
//! on the child's pid/tid and on that mapping, and the anonymous (DRAM)
//! touches elsewhere.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use memtamer_sense::attribute::Attributor;
use memtamer_sense::mounts::PmClassifier;
use memtamer_sense::perf::{EventSpec, Record, Sampler, Target};

const CHILD: &str = "MT_SENSE_E2E_CHILD";
const PM_PAGES: usize = 64;
const DRAM_PAGES: usize = 32;

/// Maps `len` bytes (of `path`, or anonymous) and writes each page once;
/// returns the mapping's address.
fn touch(len: usize, path: Option<&str>) -> usize {
    use std::os::unix::io::AsRawFd;
    let (fd, flags, _file) = match path {
        Some(p) => {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(p)
                .expect("pm file");
            f.set_len(len as u64).expect("size");
            (f.as_raw_fd(), libc::MAP_SHARED, Some(f))
        }
        None => (-1, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, None),
    };
    // SAFETY: a fresh mapping of `len` bytes, written page by page.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        for page in 0..len / 4096 {
            std::ptr::write_volatile(p.cast::<u8>().add(page * 4096), 1);
        }
        p as usize
    }
}

#[test]
fn child_entry() {
    let Ok(path) = std::env::var(CHILD) else {
        return;
    };
    // the harness may run this test on a thread of its own: say which
    // SAFETY: gettid cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    println!("READY {tid}");
    std::io::stdout().flush().expect("flush");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("go");
    let pm = touch(PM_PAGES * 4096, Some(&path));
    let dram = touch(DRAM_PAGES * 4096, None);
    println!("DONE {pm:x}");
    std::io::stdout().flush().expect("flush");
    line.clear();
    std::io::stdin().read_line(&mut line).expect("unmap");
    // SAFETY: unmapping the two mappings made above.
    unsafe {
        libc::munmap(pm as *mut libc::c_void, PM_PAGES * 4096);
        libc::munmap(dram as *mut libc::c_void, DRAM_PAGES * 4096);
    }
    let _ = std::fs::remove_file(&path);
    println!("UNMAPPED");
    std::io::stdout().flush().expect("flush");
    line.clear();
    let _ = std::io::stdin().read_line(&mut line); // stay alive until told
                                                   // finally become another program: the sampler must report the exec
    use std::os::unix::process::CommandExt;
    let err = Command::new("true").exec();
    panic!("exec true: {err}");
}

#[test]
fn page_touches_are_attributed_to_the_right_thread_and_mapping() {
    let prefix = format!("/dev/shm/memtamer-e2e-{}-", std::process::id());
    let path = format!("{prefix}pm");
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD, &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    while !line.contains("READY") {
        line.clear();
        assert!(out.read_line(&mut line).expect("read") > 0, "child died");
    }
    let tid: u32 = line
        .split("READY ")
        .nth(1)
        .unwrap_or("")
        .trim()
        .parse()
        .expect("tid");
    let mut sampler = Sampler::open(EventSpec::page_faults(1), Target::Task(tid), 6)
        .expect("software page-fault events need no PMU");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "go").expect("go");
    while !line.contains("DONE") {
        line.clear();
        assert!(out.read_line(&mut line).expect("read") > 0, "child died");
    }
    sampler.disable();
    // the harness may print "test child_entry ... " before the child's line
    let hex = line.split("DONE ").nth(1).unwrap_or("").trim();
    let pm_addr = u64::from_str_radix(hex, 16).expect("address");
    let mut samples = Vec::new();
    sampler.drain(|r| {
        if let Record::Sample(s) = r {
            samples.push(*s);
        }
    });
    assert_eq!(sampler.lost, 0);
    let mut a = Attributor::new(PmClassifier::from_system(std::slice::from_ref(&prefix)));
    for s in &samples {
        a.ingest(s);
    }
    // every PM page was written once: one fault each, sampled at period 1
    let thread = a.threads.get(&(pid, tid)).copied().unwrap_or_default();
    assert_eq!(
        thread.samples as usize, PM_PAGES,
        "PM touches on the child's thread"
    );
    assert_eq!(
        a.threads.len(),
        1,
        "nobody else touched PM: {:?}",
        a.threads
    );
    let mapping = a
        .mappings
        .get(&pid)
        .and_then(|m| m.get(path.as_str()))
        .map(|m| m.1)
        .unwrap_or_default();
    assert_eq!(
        mapping.samples as usize, PM_PAGES,
        "PM touches on the PM mapping"
    );
    assert!(
        a.unattributed.not_pm.samples as usize >= DRAM_PAGES,
        "{:?}",
        a.unattributed
    );
    // the child unmaps: a late sample at the old address must not be
    // attributed to PM (re-read maps, then "unmapped")
    writeln!(stdin, "unmap").expect("unmap");
    while !line.contains("UNMAPPED") {
        line.clear();
        assert!(out.read_line(&mut line).expect("read") > 0, "child died");
    }
    let late = memtamer_sense::perf::Sample {
        pid,
        tid,
        addr: pm_addr + 4096,
        period: 1,
        ..Default::default()
    };
    a.forget(pid);
    a.ingest(&late);
    assert_eq!(a.threads[&(pid, tid)].samples as usize, PM_PAGES);
    assert_eq!(a.unattributed.unmapped.samples, 1);
    sampler.enable();
    writeln!(stdin, "bye").expect("bye");
    drop(stdin);
    child.wait().expect("wait");
    let mut execs = 0;
    sampler.drain(|r| {
        if matches!(r, Record::Exec { pid: p, .. } if *p == pid) {
            execs += 1;
        }
        a.apply(r);
    });
    assert_eq!(execs, 1, "the child's exec was reported");
    // the new program's page faults were never put on the old PM mapping
    assert_eq!(a.threads[&(pid, tid)].samples as usize, PM_PAGES);
    // and once it is gone, its samples are "gone"
    a.forget(pid);
    let gone = a.unattributed.gone.samples;
    a.ingest(&late);
    assert_eq!(a.unattributed.gone.samples, gone + 1);
}
