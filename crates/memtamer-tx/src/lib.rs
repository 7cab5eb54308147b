//! memtamer-tx: ArchTM, architecture-aware persistent-memory transactions
//! (thesis ch. 5; digest `shared/design/thesis-archtm-ribbon.md` §2).
//!
//! Logless copy-on-write with snapshot isolation (Algorithms 1-2): object
//! metadata lives in a DRAM lookup table, each object header on PM carries
//! its creator's TxID, and recovery rebuilds everything from one scan.
//!
//! ```no_run
//! use memtamer_tx::{Pool, PoolOptions};
//! let pool = Pool::create("/dev/shm/demo.pool", &PoolOptions::default())?;
//! let root = pool.root_id();
//! pool.transaction(|tx| {
//!     let mut n = [0u8; 8];
//!     tx.read_at(root, 0, &mut n)?;
//!     let v = u64::from_le_bytes(n) + 1;
//!     tx.write_at(root, 0, &v.to_le_bytes())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod alloc;
pub mod bench;
pub mod capi;
pub mod chkp;
pub mod chkp_bench;
pub mod crash;
pub mod defrag;
pub mod dirty;
pub mod error;
pub mod kv;
pub mod layout;
#[cfg(has_pmdk)]
pub mod pmdk;
pub mod pool;
pub use pool::{checkpoint, recover};
pub mod rbtree;
pub mod region;
pub mod rows;
pub mod shim_counts;
pub mod table;
pub mod tatp;
pub mod tpcc;
pub mod trace;
pub mod tx;

pub use checkpoint::{CheckpointReport, CheckpointStats};
pub use error::{PoolError, TxError};
pub use pool::{Pool, PoolOptions, PoolStats, RecoveryMode, RecoveryReport};
pub use region::{PersistHook, PersistMode};
pub use trace::TraceRecorder;
pub use tx::Tx;
