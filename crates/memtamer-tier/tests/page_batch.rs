//! The batched page-move API on this host's first NUMA node.

use memtamer_tier::backing::{move_page_batch, nodes_of_pages, AnonMap};

#[test]
fn batch_moves_touched_pages_and_counts_untouched_ones() {
    let page = 4096usize;
    let map = AnonMap::new(8 * page, "page_batch test").unwrap();
    let base = map.addr();
    for i in 0..4 {
        // SAFETY: inside the mapping.
        unsafe { *((base + i * page) as *mut u8) = i as u8 + 1 };
    }
    let node = nodes_of_pages(base, page).unwrap()[0];
    assert!(node >= 0, "first page must be resident");
    // Unaligned addresses round down to their page.
    let pages: Vec<usize> = (0..6).map(|i| base + i * page + 7).collect();
    let r = move_page_batch(&pages, node as u32).unwrap();
    assert_eq!(r.requested, 6);
    assert_eq!(r.on_node, 4);
    assert_eq!(r.failed, 2);
    for i in 0..4 {
        // SAFETY: inside the mapping; contents never change.
        assert_eq!(unsafe { *((base + i * page) as *const u8) }, i as u8 + 1);
    }
    assert_eq!(move_page_batch(&[], 0).unwrap().requested, 0);
    drop(map);
}
