//! The C ABI (`include/memtamer_tx.h`). Every function matches a
//! declaration there; none panics across the boundary. Status codes:
//! 0 success, -1 error (text from `mtx_last_error`), -2 write conflict
//! (abort the transaction and run it again).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::{Pool, PoolOptions, Tx, TxError};

thread_local! {
    static LAST: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_err(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST.with(|l| *l.borrow_mut() = Some(c));
}

fn code(e: TxError) -> c_int {
    let conflict = matches!(e, TxError::Conflict { .. });
    set_err(e.to_string());
    if conflict {
        -2
    } else {
        -1
    }
}

/// The calling thread's last error message, or NULL.
#[no_mangle]
pub extern "C" fn mtx_last_error() -> *const c_char {
    LAST.with(|l| l.borrow().as_ref().map_or(std::ptr::null(), |c| c.as_ptr()))
}

fn path_of(p: *const c_char) -> Option<std::path::PathBuf> {
    if p.is_null() {
        set_err("path is NULL".into());
        return None;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    match s.to_str() {
        Ok(s) => Some(s.into()),
        Err(_) => {
            set_err("path is not UTF-8".into());
            None
        }
    }
}

/// Creates a pool file of `size` bytes with a root of `root_size` bytes.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mtx_pool_create(
    path: *const c_char,
    size: u64,
    root_size: u32,
) -> *mut Pool {
    let Some(p) = path_of(path) else {
        return std::ptr::null_mut();
    };
    match Pool::create(
        &p,
        &PoolOptions {
            size,
            root_size,
            ..PoolOptions::default()
        },
    ) {
        Ok(pool) => Box::into_raw(Box::new(pool)),
        Err(e) => {
            set_err(e.to_string());
            std::ptr::null_mut()
        }
    }
}

/// Opens (and recovers) a pool file.
///
/// # Safety
/// `path` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mtx_pool_open(path: *const c_char) -> *mut Pool {
    let Some(p) = path_of(path) else {
        return std::ptr::null_mut();
    };
    match Pool::open(&p, &PoolOptions::default()) {
        Ok(pool) => Box::into_raw(Box::new(pool)),
        Err(e) => {
            set_err(e.to_string());
            std::ptr::null_mut()
        }
    }
}

/// Closes a pool (no transaction of it may be running).
///
/// # Safety
/// `pool` comes from `mtx_pool_create`/`mtx_pool_open` and is closed once.
#[no_mangle]
pub unsafe extern "C" fn mtx_pool_close(pool: *mut Pool) {
    if !pool.is_null() {
        // SAFETY: per the contract, a live pool box.
        let p = unsafe { Box::from_raw(pool) };
        p.collect();
        // a checkpoint at close: the next open scans nothing
        let _ = p.checkpoint();
    }
}

/// Takes an incremental checkpoint of the lookup table (0, or -1 with
/// `mtx_last_error`), so that the next open recovers from it.
///
/// # Safety
/// `pool` is a live pool; no transaction of this thread is running on it.
#[no_mangle]
pub unsafe extern "C" fn mtx_pool_checkpoint(pool: *const Pool) -> c_int {
    // SAFETY: per the contract.
    let Some(p) = (unsafe { pool.as_ref() }) else {
        set_err("mtx_pool_checkpoint: NULL pool".into());
        return -1;
    };
    match p.checkpoint() {
        Ok(_) => 0,
        Err(e) => {
            set_err(e.to_string());
            -1
        }
    }
}

/// The root object's id.
///
/// # Safety
/// `pool` is a live pool.
#[no_mangle]
pub unsafe extern "C" fn mtx_root(pool: *const Pool) -> u32 {
    // SAFETY: per the contract.
    match unsafe { pool.as_ref() } {
        Some(p) => p.root_id(),
        None => {
            set_err("mtx_root: pool is NULL (0 is never an object id)".into());
            0
        }
    }
}

/// An opaque running transaction.
pub struct MtxTx(Tx<'static>);

/// Begins a transaction on this thread (NULL on error).
///
/// # Safety
/// `pool` is a live pool that outlives the transaction.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_begin(pool: *const Pool) -> *mut MtxTx {
    // SAFETY: per the contract the pool outlives the transaction, which is
    // what the 'static lifetime stands for here.
    let Some(p) = (unsafe { pool.as_ref::<'static>() }) else {
        set_err("pool is NULL".into());
        return std::ptr::null_mut();
    };
    match p.begin() {
        Ok(tx) => Box::into_raw(Box::new(MtxTx(tx))),
        Err(e) => {
            code(e);
            std::ptr::null_mut()
        }
    }
}

fn with_tx<R>(
    tx: *mut MtxTx,
    f: impl FnOnce(&mut Tx<'static>) -> Result<R, TxError>,
) -> Result<R, c_int> {
    // SAFETY: the caller passes a live transaction from mtx_tx_begin.
    let Some(t) = (unsafe { tx.as_mut() }) else {
        set_err("transaction is NULL".into());
        return Err(-1);
    };
    f(&mut t.0).map_err(code)
}

/// `p`, or a dangling non-null pointer for NULL (only passed with length 0).
fn nonnull(p: *mut u8) -> *mut u8 {
    if p.is_null() {
        std::ptr::NonNull::dangling().as_ptr()
    } else {
        p
    }
}

/// Copies `len` bytes at `off` of object `id` into `out`.
///
/// # Safety
/// `tx` is live; `out` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_read(
    tx: *mut MtxTx,
    id: u32,
    off: usize,
    out: *mut c_void,
    len: usize,
) -> c_int {
    if out.is_null() && len > 0 {
        set_err("out is NULL".into());
        return -1;
    }
    // SAFETY: per the contract; a NULL `out` with `len` 0 becomes a
    // dangling non-null pointer (a slice may never be built on NULL).
    let buf = unsafe { std::slice::from_raw_parts_mut(nonnull(out.cast()), len) };
    with_tx(tx, |t| t.read_at(id, off, buf)).map_or_else(|c| c, |_| 0)
}

/// Writes `len` bytes from `data` at `off` of object `id` (copy-on-write).
///
/// # Safety
/// `tx` is live; `data` is valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_write(
    tx: *mut MtxTx,
    id: u32,
    off: usize,
    data: *const c_void,
    len: usize,
) -> c_int {
    if data.is_null() && len > 0 {
        set_err("data is NULL".into());
        return -1;
    }
    // SAFETY: per the contract; NULL with `len` 0 as in `mtx_tx_read`.
    let buf = unsafe { std::slice::from_raw_parts(nonnull(data as *mut u8), len) };
    with_tx(tx, |t| t.write_at(id, off, buf)).map_or_else(|c| c, |_| 0)
}

/// Allocates a zeroed object; writes its id to `*id`. A NULL `id` is
/// refused before anything is allocated: the object would be committed
/// with no way to name it, leaked in the pool for good.
///
/// # Safety
/// `tx` is live; `id` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_alloc(tx: *mut MtxTx, size: usize, id: *mut u32) -> c_int {
    if id.is_null() {
        set_err(format!(
            "mtx_tx_alloc: id is NULL; nothing was allocated (the {size}-byte object could never be named or freed)"
        ));
        return -1;
    }
    match with_tx(tx, |t| t.alloc(size)) {
        Ok(v) => {
            // SAFETY: per the contract, checked non-NULL above.
            unsafe { *id = v };
            0
        }
        Err(c) => c,
    }
}

/// Frees object `id` when the transaction commits. The root object
/// (`mtx_root`) is refused with -1 and frees nothing; like every -1 of
/// read, write, alloc and free, the transaction stays open (the handle is
/// still the caller's to commit or abort), which is what the message says.
///
/// # Safety
/// `tx` is live.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_free(tx: *mut MtxTx, id: u32) -> c_int {
    with_tx(tx, |t| t.free(id)).map_or_else(|c| c, |_| 0)
}

/// Commits and ends the transaction (the handle is consumed).
///
/// # Safety
/// `tx` is live and not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_commit(tx: *mut MtxTx) -> c_int {
    if tx.is_null() {
        set_err("transaction is NULL".into());
        return -1;
    }
    // SAFETY: per the contract.
    let t = unsafe { Box::from_raw(tx) };
    t.0.commit();
    0
}

/// Aborts and ends the transaction (the handle is consumed).
///
/// # Safety
/// `tx` is live and not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn mtx_tx_abort(tx: *mut MtxTx) {
    if !tx.is_null() {
        // SAFETY: per the contract.
        let t = unsafe { Box::from_raw(tx) };
        t.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        let p = mtx_last_error();
        assert!(!p.is_null());
        // SAFETY: this thread's NUL-terminated message.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    /// Hostile-input sweep (docs/bad-input.md, 2026-11-27): a NULL id
    /// pointer allocated an object nobody could ever name (0 returned).
    #[test]
    fn alloc_with_a_null_id_is_refused_and_leaks_nothing() {
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 1 << 20,
            ..PoolOptions::default()
        })
        .unwrap();
        let pp: *const Pool = &pool;
        // SAFETY: a live pool; the transaction ends before it is dropped.
        unsafe {
            let tx = mtx_tx_begin(pp);
            assert!(!tx.is_null());
            assert_eq!(mtx_tx_alloc(tx, 64, std::ptr::null_mut()), -1);
            assert!(last().contains("id is NULL"), "{}", last());
            assert_eq!(
                mtx_tx_read(tx, pool.root_id(), 0, std::ptr::null_mut(), 0),
                0
            );
            assert_eq!(mtx_tx_write(tx, pool.root_id(), 0, std::ptr::null(), 0), 0);
            assert_eq!(mtx_tx_commit(tx), 0);
            assert_eq!(mtx_root(std::ptr::null()), 0);
            assert!(last().contains("mtx_root: pool is NULL"), "{}", last());
        }
        assert_eq!(pool.live_ids(), vec![pool.root_id()], "nothing leaked");
    }

    /// Leftover of the 2026-11-27 sweep (docs/bad-input.md):
    /// `mtx_tx_free(tx, root)` said "aborted by the application" while the
    /// transaction stayed open and committed its other writes; a caller
    /// that believed it and began another transaction got `Nested`. The
    /// call is refused (-1, nothing freed), the transaction stays usable
    /// and the message says so; commit and abort both still end it.
    #[test]
    fn freeing_the_root_is_refused_and_leaves_the_transaction_open() {
        let pool = Pool::create_in_memory(&PoolOptions {
            size: 1 << 20,
            root_size: 16,
            ..PoolOptions::default()
        })
        .unwrap();
        let pp: *const Pool = &pool;
        let root = pool.root_id();
        // SAFETY: a live pool; every transaction ends before it is dropped.
        unsafe {
            let tx = mtx_tx_begin(pp);
            assert_eq!(mtx_tx_write(tx, root, 0, b"before".as_ptr().cast(), 6), 0);
            assert_eq!(mtx_tx_free(tx, root), -1);
            let e = last();
            assert!(e.contains("root") && e.contains("nothing was freed"), "{e}");
            assert!(!e.contains("abort"), "the transaction was not aborted: {e}");
            // still open and usable: a later write commits with the earlier one
            assert_eq!(mtx_tx_write(tx, root, 6, b"+after".as_ptr().cast(), 6), 0);
            assert_eq!(mtx_tx_commit(tx), 0);
            let tx = mtx_tx_begin(pp);
            assert!(!tx.is_null(), "a new transaction begins: {}", last());
            let mut got = [0u8; 12];
            assert_eq!(mtx_tx_read(tx, root, 0, got.as_mut_ptr().cast(), 12), 0);
            assert_eq!(&got, b"before+after");
            // or aborted by the caller, dropping its writes
            assert_eq!(mtx_tx_write(tx, root, 0, b"XXXXXX".as_ptr().cast(), 6), 0);
            assert_eq!(mtx_tx_free(tx, root), -1);
            mtx_tx_abort(tx);
            let tx = mtx_tx_begin(pp);
            assert_eq!(mtx_tx_read(tx, root, 0, got.as_mut_ptr().cast(), 12), 0);
            assert_eq!(&got, b"before+after");
            assert_eq!(mtx_tx_commit(tx), 0);
        }
        assert_eq!(pool.live_ids(), vec![root]);
    }
}
