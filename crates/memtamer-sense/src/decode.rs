//! What a sampled instruction stored: decode the instruction at the
//! sample's IP (capstone) and take the size of the memory operand it writes.
//! Bytes per sample = store size x period, as in the KIT thesis.
//!
//! The bytes come from the mapped file at the IP's file offset (PIE
//! executables and shared libraries alike), from `/proc/PID/map_files` when
//! the file was deleted or replaced, and from `/proc/PID/mem` for anonymous
//! (JIT) code, which is never cached because it can be rewritten.
//! Capstone's access flags are wrong for non-temporal stores (it marks the
//! destination of `movnti`/`vmovntdq` read-only), so those mnemonics are
//! recognised by name.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use capstone::arch::x86::{ArchMode, X86OperandType};
use capstone::arch::{ArchDetail, ArchOperand, BuildsCapstone};
use capstone::{Capstone, RegAccessType};

use crate::maps::Region;

/// What one instruction does to memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreClass {
    /// A store of `bytes` bytes (non-temporal: bypasses the caches).
    Store {
        /// Bytes written.
        bytes: u32,
        /// Non-temporal (streaming) store.
        non_temporal: bool,
    },
    /// A `rep movs`/`rep stos`: `element` bytes per iteration, count unknown.
    StringStore {
        /// Bytes per element.
        element: u32,
    },
    /// A cache-line flush or write-back (clwb, clflushopt, clflush): no
    /// store, but the line goes to memory.
    Flush,
    /// Not a store.
    NotAStore,
}

impl StoreClass {
    /// Bytes one execution writes, where known (a string store counts one
    /// element; a flush writes back one 64 B line).
    pub fn bytes(self) -> Option<u32> {
        match self {
            StoreClass::Store { bytes, .. } => Some(bytes),
            StoreClass::StringStore { element } => Some(element),
            StoreClass::Flush => Some(64),
            StoreClass::NotAStore => None,
        }
    }
}

const NT_STORES: [&str; 9] = [
    "movnti", "movntdq", "vmovntdq", "movntps", "vmovntps", "movntpd", "vmovntpd", "movntq",
    "movntdqa",
];
const FLUSHES: [&str; 3] = ["clwb", "clflushopt", "clflush"];

/// Bytes read to decode one instruction (x86's longest is 15).
const INSN_BYTES: usize = 16;
/// Decoded (file, offset) pairs kept at most.
const MAX_CACHED: usize = 1 << 16;
/// Open files kept at most.
const MAX_FILES: usize = 64;

/// Decodes sampled instructions, with bounded caches.
pub struct Decoder {
    cs: Capstone,
    by_file: HashMap<(u64, u64), StoreClass>,
    files: HashMap<String, Option<File>>,
    /// Samples whose instruction bytes could not be read.
    pub unreadable: u64,
}

impl Decoder {
    /// An x86-64 decoder.
    pub fn new() -> Result<Decoder, String> {
        let cs = Capstone::new()
            .x86()
            .mode(ArchMode::Mode64)
            .detail(true)
            .build()
            .map_err(|e| format!("capstone: {e}"))?;
        Ok(Decoder {
            cs,
            by_file: HashMap::new(),
            files: HashMap::new(),
            unreadable: 0,
        })
    }

    /// Classifies the first instruction in `code`.
    pub fn classify(&self, code: &[u8]) -> StoreClass {
        let Ok(insns) = self.cs.disasm_count(code, 0, 1) else {
            return StoreClass::NotAStore;
        };
        let Some(insn) = insns.as_ref().first() else {
            return StoreClass::NotAStore;
        };
        let mnemonic = insn.mnemonic().unwrap_or("");
        if FLUSHES.contains(&mnemonic) {
            return StoreClass::Flush;
        }
        let Ok(detail) = self.cs.insn_detail(insn) else {
            return StoreClass::NotAStore;
        };
        let arch = detail.arch_detail();
        let mems: Vec<(u32, Option<RegAccessType>)> = arch
            .operands()
            .into_iter()
            .filter_map(|op| match op {
                ArchOperand::X86Operand(x) => match x.op_type {
                    X86OperandType::Mem(_) => Some((u32::from(x.size), x.access)),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let rep = match arch {
            ArchDetail::X86Detail(x) => x.prefix().iter().any(|p| *p == 0xf3 || *p == 0xf2),
            _ => false,
        };
        if NT_STORES.contains(&mnemonic) && mnemonic != "movntdqa" {
            return mems
                .first()
                .map_or(StoreClass::NotAStore, |(size, _)| StoreClass::Store {
                    bytes: *size,
                    non_temporal: true,
                });
        }
        let written = mems.iter().find(|(_, access)| {
            matches!(
                access,
                Some(RegAccessType::WriteOnly) | Some(RegAccessType::ReadWrite)
            )
        });
        match written {
            Some((size, _))
                if rep
                    && (mnemonic.starts_with("movs")
                        || mnemonic.starts_with("stos")
                        || mnemonic.starts_with("rep")) =>
            {
                StoreClass::StringStore { element: *size }
            }
            Some((size, _)) => StoreClass::Store {
                bytes: *size,
                non_temporal: false,
            },
            None => StoreClass::NotAStore,
        }
    }

    fn file(&mut self, path: &str) -> Option<&File> {
        if !self.files.contains_key(path) {
            if self.files.len() >= MAX_FILES {
                self.files.clear();
            }
            self.files.insert(path.to_string(), File::open(path).ok());
        }
        self.files.get(path).and_then(|f| f.as_ref())
    }

    /// Classifies the instruction at `ip` of process `pid`, `region` being
    /// the mapping that contains `ip`. None when its bytes cannot be read.
    pub fn at(&mut self, pid: u32, ip: u64, region: &Region) -> Option<StoreClass> {
        let mut code = [0u8; INSN_BYTES];
        if region.inode == 0 || region.path.is_empty() || region.path.starts_with('[') {
            // anonymous (JIT) code: read it live, never cache it
            let mem = File::open(format!("/proc/{pid}/mem")).ok()?;
            let n = mem.read_at(&mut code, ip).ok()?;
            return Some(self.classify(&code[..n]));
        }
        let offset = ip.checked_sub(region.start)? + region.offset;
        let key = (region.inode, offset);
        if let Some(c) = self.by_file.get(&key) {
            return Some(*c);
        }
        let deleted = region.path.ends_with(" (deleted)");
        let path = if deleted {
            format!("/proc/{pid}/map_files/{:x}-{:x}", region.start, region.end)
        } else {
            region.path.clone()
        };
        let read = if deleted {
            // the file is gone from its path: read through the mapping's own handle
            let f = File::open(&path).ok()?;
            let n = f
                .read_at(&mut code, ip - region.start + region.offset)
                .ok()?;
            Some(n)
        } else {
            let f = self.file(&path)?;
            f.read_at(&mut code, offset).ok()
        };
        let Some(n) = read.filter(|n| *n > 0) else {
            self.unreadable += 1;
            return None;
        };
        let class = self.classify(&code[..n]);
        if self.by_file.len() >= MAX_CACHED {
            self.by_file.clear();
        }
        self.by_file.insert(key, class);
        Some(class)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoder() -> Decoder {
        Decoder::new().expect("capstone")
    }

    #[test]
    fn known_stores_decode_to_their_sizes() {
        let d = decoder();
        let store = |bytes, nt| StoreClass::Store {
            bytes,
            non_temporal: nt,
        };
        for (code, want) in [
            (&[0x88, 0x07][..], store(1, false)),         // mov [rdi], al
            (&[0x89, 0x07], store(4, false)),             // mov [rdi], eax
            (&[0x48, 0x89, 0x07], store(8, false)),       // mov [rdi], rax
            (&[0x48, 0x0f, 0xc3, 0x07], store(8, true)),  // movnti [rdi], rax
            (&[0xc5, 0xf9, 0xe7, 0x07], store(16, true)), // vmovntdq [rdi], xmm0
            (&[0xc5, 0xfd, 0xe7, 0x07], store(32, true)), // vmovntdq [rdi], ymm0
            (&[0x62, 0xf1, 0x7d, 0x48, 0xe7, 0x07], store(64, true)), // vmovntdq [rdi], zmm0
            (&[0xf3, 0xa4], StoreClass::StringStore { element: 1 }), // rep movsb
            (&[0xf3, 0x48, 0xab], StoreClass::StringStore { element: 8 }), // rep stosq
            (&[0x66, 0x0f, 0xae, 0x37], StoreClass::Flush), // clwb [rdi]
            (&[0x66, 0x0f, 0xae, 0x3f], StoreClass::Flush), // clflushopt [rdi]
            (&[0x8b, 0x07], StoreClass::NotAStore),       // mov eax, [rdi]
            (&[0x66, 0x0f, 0x38, 0x2a, 0x07], StoreClass::NotAStore), // movntdqa xmm0, [rdi] (a load)
            (&[0x90], StoreClass::NotAStore),                         // nop
            (&[0x0f], StoreClass::NotAStore),                         // truncated
        ] {
            assert_eq!(d.classify(code), want, "{code:02x?}");
        }
        assert_eq!(StoreClass::Flush.bytes(), Some(64));
        assert_eq!(StoreClass::NotAStore.bytes(), None);
    }

    #[test]
    fn instructions_are_read_from_the_mapped_file_at_the_ips_offset() {
        let dir = std::env::temp_dir().join(format!("mt-decode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let bin = dir.join("prog");
        // offset 0x1000 of the file: vmovntdq [rdi], ymm0
        let mut bytes = vec![0x90u8; 0x1010];
        bytes[0x1000..0x1004].copy_from_slice(&[0xc5, 0xfd, 0xe7, 0x07]);
        std::fs::write(&bin, &bytes).expect("write");
        let region = Region {
            start: 0x5555_0000_0000,
            end: 0x5555_0000_1000,
            perms: "r-xp".into(),
            offset: 0x1000, // PIE text mapped from file offset 0x1000
            inode: 77,
            path: bin.display().to_string(),
        };
        let mut d = decoder();
        let got = d.at(1, 0x5555_0000_0000, &region);
        assert_eq!(
            got,
            Some(StoreClass::Store {
                bytes: 32,
                non_temporal: true
            })
        );
        // cached: a second lookup does not need the file
        std::fs::remove_file(&bin).expect("rm");
        d.files.clear();
        assert_eq!(d.at(1, 0x5555_0000_0000, &region), got);
        // an unreadable file is reported, not guessed
        let other = Region {
            inode: 78,
            ..region
        };
        assert_eq!(d.at(1, 0x5555_0000_0000, &other), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn anonymous_code_is_read_live_from_the_process() {
        // "JIT" code: bytes in our own anonymous memory
        let code: Vec<u8> = vec![
            0x48, 0x0f, 0xc3, 0x07, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
            0x90, 0x90,
        ];
        let ip = code.as_ptr() as u64;
        let region = Region {
            start: ip & !0xfff,
            end: (ip & !0xfff) + 0x10000,
            perms: "rwxp".into(),
            offset: 0,
            inode: 0,
            path: String::new(),
        };
        let mut d = decoder();
        assert_eq!(
            d.at(std::process::id(), ip, &region),
            Some(StoreClass::Store {
                bytes: 8,
                non_temporal: true
            })
        );
        std::hint::black_box(&code);
    }
}
