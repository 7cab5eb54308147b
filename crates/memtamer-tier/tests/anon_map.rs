//! `AnonMap`, the one RAII anonymous mapping: usable while it lives, gone
//! after drop, kept by `into_raw`. Its own test binary with one test, so no
//! other test thread maps memory at the freed address between the drop
//! and the check.

use memtamer_tier::backing::{nodes_of_pages, AnonMap};

/// `move_pages` reports an address with no mapping as -EFAULT and a mapped
/// but untouched page as -ENOENT.
fn state(addr: usize) -> i32 {
    nodes_of_pages(addr, 1).unwrap()[0]
}

#[test]
fn a_mapping_lives_until_drop_and_into_raw_keeps_it() {
    let page = memtamer_tier::guard::page_size();
    let m = AnonMap::new(4 * page, "anon_map test").unwrap();
    assert_eq!(m.len(), 4 * page);
    assert!(!m.is_empty());
    assert_eq!(m.as_ptr() as usize, m.addr());
    assert_eq!(m.addr() % page, 0);
    assert_eq!(state(m.addr()), -libc::ENOENT, "mapped, not yet touched");
    // SAFETY: inside the mapping, which is read-write.
    unsafe {
        *m.as_ptr().add(3 * page) = 7;
        assert_eq!(*m.as_ptr().add(3 * page), 7);
        assert_eq!(*m.as_ptr(), 0, "anonymous pages read as zero");
    }
    assert!(state(m.addr() + 3 * page) >= 0, "touched page is resident");
    let a = m.addr();
    drop(m);
    assert_eq!(state(a), -libc::EFAULT, "drop unmapped it");

    let m = AnonMap::new(page, "anon_map test").unwrap();
    let a = m.into_raw();
    assert_eq!(state(a), -libc::ENOENT, "into_raw kept the mapping");
    // SAFETY: the mapping into_raw handed over.
    assert_eq!(unsafe { libc::munmap(a as *mut libc::c_void, page) }, 0);

    let e = AnonMap::new(0, "empty").unwrap_err().to_string();
    assert!(e.starts_with("mmap DRAM 0 B for 'empty': "), "{e}");
}
