//! The floating-point environment the library's exact arithmetic needs: IEEE subnormals.
//!
//! A caller that enabled flush-to-zero or denormals-are-zero (a `-ffast-math` program, or
//! an explicit MXCSR change) would make subnormal products and operands collapse to zero,
//! changing decoded values and encoder outputs the spec defines bit for bit. Every C entry
//! point therefore runs with FTZ and DAZ cleared on the calling thread (`IeeeSubnormals`,
//! restored on return); encoders also check each worker thread (`require_subnormals`) and
//! refuse with `UNSUPPORTED` rather than emit different words.

use crate::error::{Error, Result};

/// Whether this thread's floating-point environment keeps IEEE subnormals.
pub fn subnormals_preserved() -> bool {
    use std::hint::black_box;
    // FTZ: a product that underflows to a subnormal; DAZ: a subnormal operand.
    let ftz_ok = black_box(f32::MIN_POSITIVE) * black_box(0.5f32) != 0.0;
    let daz_ok = black_box(f32::from_bits(1)) * black_box(2.0f32) != 0.0;
    ftz_ok && daz_ok
}

/// [`Error::Unsupported`] unless this thread keeps IEEE subnormals.
pub(crate) fn require_subnormals(what: &str) -> Result<()> {
    if subnormals_preserved() {
        Ok(())
    } else {
        Err(Error::Unsupported(format!(
            "this thread flushes subnormals to zero (FTZ/DAZ): {what} needs the default IEEE \
             environment to produce the spec's exact words"
        )))
    }
}

/// While alive, FTZ (MXCSR bit 15) and DAZ (bit 6) are clear on this thread; the caller's
/// control word comes back on drop. A no-op when they were already clear, and off x86_64.
pub(crate) struct IeeeSubnormals {
    #[cfg(target_arch = "x86_64")]
    saved: Option<u32>,
}

#[cfg(target_arch = "x86_64")]
mod mxcsr {
    pub(super) const FTZ_DAZ: u32 = 0x8040;

    pub(super) fn read() -> u32 {
        let mut v = 0u32;
        // SAFETY: stores the 32-bit SSE control/status word to a local; SSE is baseline on
        // x86_64.
        unsafe {
            core::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack, preserves_flags))
        };
        v
    }

    pub(super) fn write(v: u32) {
        // SAFETY: loads a control word read by `read` with only FTZ/DAZ changed: valid bits.
        unsafe {
            core::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack, readonly, preserves_flags))
        };
    }
}

impl IeeeSubnormals {
    /// Clears FTZ and DAZ on this thread until the guard is dropped.
    pub(crate) fn enter() -> IeeeSubnormals {
        #[cfg(target_arch = "x86_64")]
        {
            let csr = mxcsr::read();
            if csr & mxcsr::FTZ_DAZ != 0 {
                mxcsr::write(csr & !mxcsr::FTZ_DAZ);
                return IeeeSubnormals { saved: Some(csr) };
            }
            IeeeSubnormals { saved: None }
        }
        #[cfg(not(target_arch = "x86_64"))]
        IeeeSubnormals {}
    }
}

impl Drop for IeeeSubnormals {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(csr) = self.saved {
            mxcsr::write(csr);
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn guard_clears_and_restores_ftz_daz() {
        // A short-lived thread so no other test sees the changed control word.
        std::thread::spawn(|| {
            let orig = mxcsr::read();
            mxcsr::write(orig | mxcsr::FTZ_DAZ);
            assert!(!subnormals_preserved());
            assert!(require_subnormals("x").is_err());
            {
                let _g = IeeeSubnormals::enter();
                assert!(subnormals_preserved());
                assert_eq!(mxcsr::read() & mxcsr::FTZ_DAZ, 0);
            }
            // Compare control bits only: bits 0..6 are sticky exception flags.
            assert_eq!(mxcsr::read() & !0x3F, (orig | mxcsr::FTZ_DAZ) & !0x3F);
            mxcsr::write(orig);
        })
        .join()
        .unwrap();
    }
}
