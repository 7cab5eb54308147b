//! Page sampling on real memory: the shared SIGSEGV handler counts the
//! owner's touches, gives every faulting thread its access back, counts other
//! threads apart, and still lets a real crash crash.

use memtamer_tier::guard::page_size;
use memtamer_tier::pagesample::{current_tid, Memory, PageSampler};

/// An anonymous read-write mapping of `pages` pages with an unmapped page
/// on each side, so it touches no other mapping (a neighbour such as a
/// thread stack's guard page would make it unarmable). Leaked: tests only.
fn region(pages: usize) -> (*mut u8, usize) {
    let ps = page_size();
    // SAFETY: a fresh private anonymous mapping; its first and last page
    // are unmapped again at once, nothing refers to them.
    let p = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            (pages + 2) * ps,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        let p = p as *mut u8;
        libc::munmap(p as *mut libc::c_void, ps);
        libc::munmap(p.add((pages + 1) * ps) as *mut libc::c_void, ps);
        p.add(ps)
    };
    (p, ps)
}

/// One test at a time: each test maps, unmaps and re-protects pages and
/// arms them in the process-wide table, and `region`'s unmapped neighbours
/// are holes a concurrent test's mapping can fill. A `PROT_NONE` neighbour
/// below makes the region unarmable (`Mapping::guard_below`): CI once saw
/// `counts_owner_intervals_and_foreign_touches` arm 0 of 16 pages.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn maps() -> Memory {
    Memory::read().unwrap()
}

fn touch(p: *mut u8, ps: usize, i: usize, v: u8) {
    // SAFETY: page `i` of a live mapping of ours.
    unsafe { std::ptr::write_volatile(p.add(i * ps), v) };
}

fn read(p: *mut u8, ps: usize, i: usize) -> u8 {
    // SAFETY: as touch.
    unsafe { std::ptr::read_volatile(p.add(i * ps)) }
}

#[test]
fn counts_owner_intervals_and_foreign_touches() {
    let _one_at_a_time = serial();
    let (p, ps) = region(16);
    let first = p as u64 / ps as u64;
    let pages: Vec<u64> = (first..first + 16).collect();
    let mut s = PageSampler::arm(&pages, current_tid(), &maps(), ps).unwrap();
    assert_eq!(s.len(), 16);
    // Interval 1: pages 0..4 by the owner, twice each (one count per
    // interval); page 8 by another thread.
    for _ in 0..2 {
        for i in 0..4 {
            touch(p, ps, i, 1);
        }
    }
    let addr = p as usize;
    std::thread::spawn(move || touch(addr as *mut u8, ps, 8, 7))
        .join()
        .unwrap();
    // Interval 2: page 0 again.
    assert_eq!(s.rearm(), 5);
    touch(p, ps, 0, 2);
    let c = s.finish();
    assert_eq!(c.pages.len(), 16);
    assert_eq!(c.pages[&first], 2.0);
    assert_eq!(c.pages[&(first + 1)], 1.0);
    assert_eq!(c.pages[&(first + 8)], 0.0);
    assert_eq!(c.pages[&(first + 15)], 0.0);
    assert_eq!(c.foreign, 1);
    assert_eq!(c.armings, 21);
    // Every page readable and writable again, with its data.
    assert_eq!(read(p, ps, 0), 2);
    assert_eq!(read(p, ps, 8), 7);
    for i in 0..16 {
        touch(p, ps, i, 3);
    }
}

#[test]
fn read_only_and_foreign_mappings_are_not_armed() {
    let _one_at_a_time = serial();
    let (p, ps) = region(4);
    let first = p as u64 / ps as u64;
    // SAFETY: our mapping; page 1 made read-only.
    unsafe { libc::mprotect(p.add(ps) as *mut libc::c_void, ps, libc::PROT_READ) };
    let s = PageSampler::arm(&[first, first + 1, 12345], current_tid(), &maps(), ps).unwrap();
    assert_eq!(s.len(), 1, "only the read-write page of a known mapping");
    // A page has one owner at a time.
    let t = PageSampler::arm(&[first], current_tid(), &maps(), ps).unwrap();
    assert!(t.is_empty());
    touch(p, ps, 0, 1);
    assert_eq!(s.finish().pages[&first], 1.0);
}

/// A fault on a protected page that is not ours still kills the process.
#[test]
fn real_crash_next_to_sampled_pages_still_crashes() {
    let _one_at_a_time = serial();
    let (p, ps) = region(3);
    let first = p as u64 / ps as u64;
    let s = PageSampler::arm(&[first, first + 2], current_tid(), &maps(), ps).unwrap();
    // SAFETY: our mapping; the middle page is the program's own guard page.
    unsafe { libc::mprotect(p.add(ps) as *mut libc::c_void, ps, libc::PROT_NONE) };
    // SAFETY: the child touches a sampled page (handled), then the guard
    // page (must die), and exits; the parent waits for it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            touch(p, ps, 0, 1);
            touch(p, ps, 1, 1);
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
            "status {status:#x}"
        );
    }
    let c = s.finish();
    assert_eq!(c.pages[&first], 0.0, "the child's touch was its own");
}

/// Pages of an object the tiering registry owns are never armed, though
/// its mapping is plain anonymous memory: the registry protects and remaps
/// its objects itself, and a page the sampler armed, or gave back, during a
/// migration's copy would block the copying thread for good (a `PROT_NONE`
/// source page) or let a write land in the old copy (write permission given
/// back early). Unimem and the Tahoe tool share the handler in one process
/// (issue 20).
#[test]
fn pages_of_registry_objects_are_not_armed() {
    let _one_at_a_time = serial();
    use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
    let cfg = TierConfig::new(1 << 20, SlowTier::File("/dev/shm".into())).unwrap();
    let rt = TierRuntime::new(cfg).unwrap();
    let ps = page_size();
    let o = rt.alloc(4 * ps, "o", Tier::Dram).unwrap();
    let first = o as u64 / ps as u64;
    let mem = maps();
    assert!(
        mem.armable(o as usize, ps).is_some(),
        "the object's mapping alone would be armable"
    );
    let pages: Vec<u64> = (first..first + 4).collect();
    let s = PageSampler::arm(&pages, current_tid(), &mem, ps).unwrap();
    assert!(s.is_empty(), "armed {} pages of a registry object", s.len());
    drop(s);
    rt.free(o).unwrap();
}
