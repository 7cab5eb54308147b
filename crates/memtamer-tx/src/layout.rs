//! The on-media format (pure: bytes in, values out; no I/O).
//!
//! ```text
//! 0      pool header (128 B, checksummed)          thesis Fig. 5.3 "metadata area"
//! 4096   TxState slots, one 64 B line each        thesis Fig. 5.3 "TxState list"
//! chkp   checkpoint area (version 2): two record lines, two CHKP-diff logs,
//!        the CHKP table (see `chkp`)                thesis Fig. 5.3 "CHKP"
//! data   user-data area, 64 B lines; every block starts with a 24 B object
//!        header (id, size, TxID, check) followed by the payload
//! ```
//! Object headers carry a check word keyed by the pool's random salt and the
//! block's own offset, so the recovery scan (thesis §5.4.5) recognises a
//! header only where one was written, never in stale or user bytes.

/// Cache line and allocation unit: the thesis's 64 B size class (§5.3).
pub const LINE: usize = 64;
/// Pool header magic.
pub const MAGIC: [u8; 8] = *b"MTXPOOL\0";
/// Format version this build reads and writes (2: checkpoint area; 3:
/// freed copies keep valid headers and deleted ids keep their deletion
/// record, which a version-2 reader's skipping scan would misread).
pub const VERSION: u32 = 3;
/// Lookup-table entries per CHKP line (15 x 4 B + a 4 B check).
pub const CHKP_PER_LINE: u32 = 15;
/// Bytes of one CHKP-diff log entry.
pub const LOG_ENTRY: u64 = 16;
/// Bytes of the pool header that are checksummed (the checksum follows).
pub const HEADER_LEN: usize = 128;
/// Where the TxState slots start.
pub const SLOTS_OFF: u64 = 4096;
/// Object header bytes at the start of every block.
pub const OBJ_HDR: usize = 24;
/// Flag in the size word: this block is a deletion record (tombstone).
pub const TOMBSTONE: u32 = 1 << 31;
/// Largest payload the size word encodes.
pub const MAX_OBJ: usize = (TOMBSTONE - 1) as usize;

/// The pool header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolHeader {
    /// Whole pool length in bytes.
    pub pool_len: u64,
    /// Number of TxState slots (maximum concurrent transactions).
    pub nslots: u32,
    /// Start of the data area.
    pub data_off: u64,
    /// Length of the data area (multiple of [`LINE`]).
    pub data_len: u64,
    /// Random key for object-header checks.
    pub salt: u64,
    /// Object id of the root object.
    pub root_id: u32,
    /// Payload bytes of the root object.
    pub root_size: u32,
    /// Start of the checkpoint area (record lines, then the logs, then CHKP).
    pub chkp_off: u64,
    /// Entries per CHKP-diff log (there are two, by epoch parity).
    pub log_cap: u32,
    /// Lines of the CHKP table ([`CHKP_PER_LINE`] ids each).
    pub chkp_lines: u32,
}

impl PoolHeader {
    /// Data lines.
    pub fn nlines(&self) -> u32 {
        (self.data_len / LINE as u64) as u32
    }
    /// Offset of checkpoint record `slot` (0 or 1).
    pub fn record_off(&self, slot: u64) -> usize {
        (self.chkp_off + (slot & 1) * LINE as u64) as usize
    }
    /// Offset of entry `i` of CHKP-diff log `parity` (0 or 1).
    pub fn log_off(&self, parity: u64, i: u32) -> usize {
        let log = self.chkp_off + 4096 + (parity & 1) * u64::from(self.log_cap) * LOG_ENTRY;
        (log + u64::from(i) * LOG_ENTRY) as usize
    }
    /// Offset of CHKP line `l`.
    pub fn chkp_line_off(&self, l: u32) -> usize {
        let t = self.chkp_off + 4096 + 2 * u64::from(self.log_cap) * LOG_ENTRY;
        (t + u64::from(l) * LINE as u64) as usize
    }
}

/// Why a header image was rejected (the pool layer adds the path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderFault {
    /// Fewer bytes than a header.
    Short(usize),
    /// Wrong magic.
    Magic([u8; 8]),
    /// Other version.
    Version(u32),
    /// Checksum mismatch (stored, computed).
    Checksum(u64, u64),
    /// A field out of range.
    Field(&'static str, String),
}

/// FNV-1a 64: a dependency-free checksum for the header.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn rd32(b: &[u8], o: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(a)
}
fn rd64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// Layout for a new pool of `pool_len` bytes with `nslots` slots, or why not.
pub fn plan(pool_len: u64, nslots: u32, salt: u64, root_size: u32) -> Result<PoolHeader, String> {
    if nslots == 0 || nslots > 1024 {
        return Err(format!("slots {nslots} not in 1..=1024"));
    }
    let slots_end = SLOTS_OFF + u64::from(nslots) * LINE as u64;
    let chkp_off = slots_end.div_ceil(4096) * 4096;
    // Each data line costs 64 B plus 4 B of CHKP: about 15/1024 lines per
    // byte left after the record page.
    let approx = pool_len.saturating_sub(chkp_off + 4096) * 15 / 1024;
    let log_cap = (approx / 64).clamp(64, 65_536).div_ceil(4) * 4;
    let chkp_lines = (approx + 2).div_ceil(u64::from(CHKP_PER_LINE)).max(1);
    if chkp_lines > u64::from(u32::MAX) {
        return Err(format!(
            "pool size {pool_len} needs too many checkpoint lines"
        ));
    }
    let table_off = chkp_off + 4096 + 2 * log_cap * LOG_ENTRY;
    let data_off = (table_off + chkp_lines * LINE as u64).div_ceil(4096) * 4096;
    if pool_len < data_off + 64 * 1024 {
        return Err(format!(
            "pool size {pool_len} below the minimum {}",
            data_off + 64 * 1024
        ));
    }
    let lines =
        ((pool_len - data_off) / LINE as u64).min(chkp_lines * u64::from(CHKP_PER_LINE) - 2);
    let data_len = lines * LINE as u64;
    if data_len / LINE as u64 > u64::from(u32::MAX - 1) {
        return Err(format!("data area {data_len} B exceeds 2^32 lines"));
    }
    if root_size as usize > MAX_OBJ || root_size == 0 {
        return Err(format!("root size {root_size} not in 1..={MAX_OBJ}"));
    }
    Ok(PoolHeader {
        pool_len,
        nslots,
        data_off,
        data_len,
        salt,
        root_id: 1,
        root_size,
        chkp_off,
        log_cap: log_cap as u32,
        chkp_lines: chkp_lines as u32,
    })
}

/// Serialises the header (with its checksum) into 128 bytes.
pub fn encode_header(h: &PoolHeader) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    b[16..24].copy_from_slice(&h.pool_len.to_le_bytes());
    b[24..32].copy_from_slice(&SLOTS_OFF.to_le_bytes());
    b[32..36].copy_from_slice(&h.nslots.to_le_bytes());
    b[40..48].copy_from_slice(&h.data_off.to_le_bytes());
    b[48..56].copy_from_slice(&h.data_len.to_le_bytes());
    b[56..64].copy_from_slice(&h.salt.to_le_bytes());
    b[64..68].copy_from_slice(&h.root_id.to_le_bytes());
    b[68..72].copy_from_slice(&h.root_size.to_le_bytes());
    b[72..80].copy_from_slice(&h.chkp_off.to_le_bytes());
    b[80..84].copy_from_slice(&h.log_cap.to_le_bytes());
    b[84..88].copy_from_slice(&h.chkp_lines.to_le_bytes());
    let sum = fnv1a(&b[..HEADER_LEN - 8]);
    b[HEADER_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
    b
}

/// Parses and validates a header image against the file length.
pub fn decode_header(b: &[u8], file_len: u64) -> Result<PoolHeader, HeaderFault> {
    if b.len() < HEADER_LEN {
        return Err(HeaderFault::Short(b.len()));
    }
    let mut magic = [0u8; 8];
    magic.copy_from_slice(&b[0..8]);
    if magic != MAGIC {
        return Err(HeaderFault::Magic(magic));
    }
    let version = rd32(b, 8);
    if version != VERSION {
        return Err(HeaderFault::Version(version));
    }
    let stored = rd64(b, HEADER_LEN - 8);
    let computed = fnv1a(&b[..HEADER_LEN - 8]);
    if stored != computed {
        return Err(HeaderFault::Checksum(stored, computed));
    }
    let field = |f: &'static str, why: String| HeaderFault::Field(f, why);
    if rd32(b, 12) as usize != HEADER_LEN {
        return Err(field(
            "header_len",
            format!("{} != {HEADER_LEN}", rd32(b, 12)),
        ));
    }
    if rd64(b, 24) != SLOTS_OFF {
        return Err(field(
            "slots_off",
            format!("{} != {SLOTS_OFF}", rd64(b, 24)),
        ));
    }
    let h = PoolHeader {
        pool_len: rd64(b, 16),
        nslots: rd32(b, 32),
        data_off: rd64(b, 40),
        data_len: rd64(b, 48),
        salt: rd64(b, 56),
        root_id: rd32(b, 64),
        root_size: rd32(b, 68),
        chkp_off: rd64(b, 72),
        log_cap: rd32(b, 80),
        chkp_lines: rd32(b, 84),
    };
    let expect = plan(h.pool_len, h.nslots, h.salt, h.root_size).map_err(|w| field("layout", w))?;
    if expect != h {
        return Err(field(
            "data_off/data_len",
            format!("{h:?} differs from the layout {expect:?}"),
        ));
    }
    if h.pool_len > file_len {
        return Err(field(
            "pool_len",
            format!("{} > file length {file_len}", h.pool_len),
        ));
    }
    Ok(h)
}

/// One object header as stored at the start of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjHeader {
    /// Object id (never 0).
    pub id: u32,
    /// Payload bytes; [`TOMBSTONE`] set for a deletion record.
    pub size: u32,
    /// Creator transaction's TxID (thesis §5.3 "annotation").
    pub txid: u64,
}

impl ObjHeader {
    /// Payload length without the tombstone flag.
    pub fn payload(&self) -> usize {
        (self.size & !TOMBSTONE) as usize
    }
    /// Whether this block records a deletion.
    pub fn is_tombstone(&self) -> bool {
        self.size & TOMBSTONE != 0
    }
    /// Lines the block spans (header + payload, rounded to 64 B).
    pub fn lines(&self) -> u32 {
        block_lines(self.payload())
    }
}

/// Lines a block with `payload` bytes spans.
pub fn block_lines(payload: usize) -> u32 {
    (OBJ_HDR + payload).div_ceil(LINE) as u32
}

/// The check word: keyed by salt and the block's line, so a header copied
/// elsewhere, a stale half-written one or user bytes never validate.
pub fn obj_check(salt: u64, line: u32, h: &ObjHeader) -> u64 {
    let mut x = salt ^ (u64::from(line) << 32 | u64::from(h.id));
    x = mix(x ^ u64::from(h.size).rotate_left(17));
    x = mix(x ^ h.txid);
    x | 1
}

pub(crate) fn mix(mut x: u64) -> u64 {
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Encodes an object header for the block at `line`.
pub fn encode_obj(salt: u64, line: u32, h: &ObjHeader) -> [u8; OBJ_HDR] {
    let mut b = [0u8; OBJ_HDR];
    b[0..4].copy_from_slice(&h.id.to_le_bytes());
    b[4..8].copy_from_slice(&h.size.to_le_bytes());
    b[8..16].copy_from_slice(&h.txid.to_le_bytes());
    b[16..24].copy_from_slice(&obj_check(salt, line, h).to_le_bytes());
    b
}

/// Decodes the header at `line` if one was validly written there.
pub fn decode_obj(salt: u64, line: u32, b: &[u8]) -> Option<ObjHeader> {
    if b.len() < OBJ_HDR {
        return None;
    }
    let h = ObjHeader {
        id: rd32(b, 0),
        size: rd32(b, 4),
        txid: rd64(b, 8),
    };
    (h.id != 0 && rd64(b, 16) == obj_check(salt, line, &h)).then_some(h)
}

/// The header's TxID word carries the writing slot in its top bits, so
/// recovery can judge a copy against that slot's commit record alone and
/// no (TxID, BEGIN) record has to be persisted first (see [`copy_committed`]).
pub const SLOT_SHIFT: u32 = 54;

/// Header TxID word for a copy written by `slot` in transaction `txid`.
pub fn tag_txid(slot: u32, txid: u64) -> u64 {
    u64::from(slot) << SLOT_SHIFT | txid
}

/// (slot, TxID) of a header TxID word.
pub fn untag_txid(w: u64) -> (u32, u64) {
    ((w >> SLOT_SHIFT) as u32, w & ((1 << SLOT_SHIFT) - 1))
}

/// Whether a copy from transaction `txid` survives, given its slot's
/// persisted record (`slot_txid`, `state`). Transactions in one slot run one
/// after another with growing TxIDs, and a commit persists (TxID, COMMITTED)
/// after its copies: an older TxID than the record's finished before it
/// (committed, or aborted with its copies zeroed and fenced); the record's
/// own TxID counts if COMMITTED/END; a newer one never reached its record.
pub fn copy_committed(txid: u64, slot_txid: u64, state: SlotState) -> bool {
    txid < slot_txid
        || (txid == slot_txid && matches!(state, SlotState::Committed | SlotState::End))
}

/// TxState slot states (thesis §5.4.1: BEGIN, COMMITTED, END, ABORT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Slot free / transaction finished (thesis END).
    End = 0,
    /// Transaction running (thesis BEGIN).
    Begin = 1,
    /// Commit record written (thesis COMMITTED).
    Committed = 2,
    /// Transaction aborting (thesis ABORT).
    Abort = 3,
}

/// Packs TxID and state in one 8-byte word, so that "atomically store
/// (TxID, BEGIN)" (Alg. 1 line 2) is one store and can never tear.
pub fn slot_word(txid: u64, s: SlotState) -> u64 {
    txid << 2 | s as u64
}

/// Unpacks a slot word.
pub fn slot_unpack(w: u64) -> (u64, SlotState) {
    let s = match w & 3 {
        0 => SlotState::End,
        1 => SlotState::Begin,
        2 => SlotState::Committed,
        _ => SlotState::Abort,
    };
    (w >> 2, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr() -> PoolHeader {
        plan(1 << 20, 8, 0x1234, 64).unwrap()
    }

    #[test]
    fn header_round_trips() {
        let h = hdr();
        assert_eq!(decode_header(&encode_header(&h), 1 << 20), Ok(h));
    }

    #[test]
    fn header_faults_are_named() {
        let h = hdr();
        let b = encode_header(&h);
        assert_eq!(
            decode_header(&b[..10], 1 << 20),
            Err(HeaderFault::Short(10))
        );
        let mut m = b;
        m[0] = b'X';
        assert!(matches!(
            decode_header(&m, 1 << 20),
            Err(HeaderFault::Magic(_))
        ));
        let mut v = b;
        v[8] = 9;
        assert_eq!(decode_header(&v, 1 << 20), Err(HeaderFault::Version(9)));
        let mut c = b;
        c[50] ^= 1;
        assert!(matches!(
            decode_header(&c, 1 << 20),
            Err(HeaderFault::Checksum(..))
        ));
        assert!(matches!(
            decode_header(&b, 1000),
            Err(HeaderFault::Field("pool_len", _))
        ));
    }

    #[test]
    fn every_single_byte_flip_is_rejected() {
        let b = encode_header(&hdr());
        for i in 0..HEADER_LEN {
            for bit in 0..8 {
                let mut x = b;
                x[i] ^= 1 << bit;
                assert!(decode_header(&x, 1 << 20).is_err(), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn object_headers_validate_only_at_their_line() {
        let h = ObjHeader {
            id: 7,
            size: 40,
            txid: 99,
        };
        let b = encode_obj(5, 10, &h);
        assert_eq!(decode_obj(5, 10, &b), Some(h));
        assert_eq!(decode_obj(5, 11, &b), None);
        assert_eq!(decode_obj(6, 10, &b), None);
        assert_eq!(decode_obj(5, 10, &[0u8; OBJ_HDR]), None);
        let mut t = b;
        t[9] ^= 4;
        assert_eq!(decode_obj(5, 10, &t), None);
        assert_eq!(h.lines(), 1);
        assert_eq!(block_lines(41), 2);
    }

    #[test]
    fn copies_are_judged_by_their_slot_record() {
        assert_eq!(untag_txid(tag_txid(1023, 77)), (1023, 77));
        assert!(copy_committed(5, 9, SlotState::Begin));
        assert!(copy_committed(9, 9, SlotState::Committed));
        assert!(copy_committed(9, 9, SlotState::End));
        assert!(!copy_committed(9, 9, SlotState::Begin));
        assert!(!copy_committed(9, 9, SlotState::Abort));
        assert!(!copy_committed(10, 9, SlotState::Committed));
    }

    #[test]
    fn slot_words_round_trip() {
        for s in [
            SlotState::End,
            SlotState::Begin,
            SlotState::Committed,
            SlotState::Abort,
        ] {
            assert_eq!(slot_unpack(slot_word(123_456, s)), (123_456, s));
        }
    }
}
