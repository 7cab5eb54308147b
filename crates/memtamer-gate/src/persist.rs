//! Making stores durable: flush each cache line of a range, then fence.
//! Picks the best flush the CPU has (CLWB keeps the line cached, CLFLUSHOPT
//! is weakly ordered, CLFLUSH is the baseline), as libpmem does.

/// Cache-line size assumed for flushing.
pub const CACHE_LINE: usize = 64;

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::sync::OnceLock;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Flush {
        Clwb,
        Clflushopt,
        Clflush,
    }

    pub fn best_flush() -> Flush {
        static BEST: OnceLock<Flush> = OnceLock::new();
        *BEST.get_or_init(|| {
            // SAFETY: CPUID leaf 7 exists on every x86-64 CPU that runs Linux 4+.
            #[allow(unused_unsafe)]
            let leaf7 = unsafe { core::arch::x86_64::__cpuid_count(7, 0) };
            if leaf7.ebx & (1 << 24) != 0 {
                Flush::Clwb
            } else if leaf7.ebx & (1 << 23) != 0 {
                Flush::Clflushopt
            } else {
                Flush::Clflush
            }
        })
    }

    /// # Safety
    /// `addr..addr+len` must be mapped.
    pub unsafe fn persist(addr: *const u8, len: usize) {
        let start = addr as usize & !(super::CACHE_LINE - 1);
        let end = addr as usize + len;
        let flush = best_flush();
        let mut line = start;
        while line < end {
            let p = line as *const u8;
            // SAFETY: the caller guarantees the range is mapped.
            unsafe {
                match flush {
                    Flush::Clwb => {
                        std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                    Flush::Clflushopt => {
                        std::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                    Flush::Clflush => core::arch::x86_64::_mm_clflush(p),
                }
            }
            line += super::CACHE_LINE;
        }
        // SAFETY: SFENCE has no preconditions.
        unsafe { core::arch::x86_64::_mm_sfence() };
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    /// # Safety
    /// Always safe; only fences (no portable cache flush).
    pub unsafe fn persist(_addr: *const u8, _len: usize) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// Flushes `addr..addr+len` to the persistence domain and fences.
///
/// # Safety
/// The range must be mapped.
pub unsafe fn persist(addr: *const u8, len: usize) {
    // SAFETY: forwarded.
    unsafe { imp::persist(addr, len) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn persisting_a_buffer_keeps_its_contents() {
        let buf: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        // SAFETY: the whole vector is mapped.
        unsafe { super::persist(buf.as_ptr().wrapping_add(3), 9_000) };
        assert!(buf.iter().enumerate().all(|(i, b)| *b == i as u8));
    }
}
