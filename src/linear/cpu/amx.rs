//! Intel AMX tiles for the exact integer block sums of the widest products (the AVX-512
//! tier on CPUs with AMX-INT8, [`Cpu::amx_int8`](crate::isa::Cpu::amx_int8)).
//!
//! Two configurations, by the length L of the sums (32: a block; 16: a half block, for the
//! types with per-16 scales): `tmm0`/`tmm1` hold a 16 × 16 i32 result C, `tmm2`/`tmm3` 16
//! rows of L unsigned weight codes A (16 weight rows), `tmm4`/`tmm5` the L signed activation
//! codes of 16 activation rows B, in the layout `tdpbusd` reads: row k4 (0..L/4) holds, for
//! each activation row m, its codes 4·k4 .. 4·k4 + 4 (64 bytes, [`Rows::arrange_groups`]
//! with 16 rows per group: a block's 512 bytes, its halves 256 each). Then C[n][m] =
//! Σ_k A[n][k]·x[m][k], the exact integer sum for every (weight row, activation row) pair:
//! at most 32·255·127 in magnitude, far inside i32, so the tiles return the integers every
//! other tier forms.
//!
//! Rust has no stable AMX intrinsics; the instructions are inline assembly, which names the
//! tile registers itself (the compiler never allocates them, so their contents persist
//! between the assembly blocks of one thread). A [`Tiles`] value configures them for the
//! calling thread and puts back the configuration the thread had when dropped.
//!
//! [`Rows::arrange_groups`]: crate::linear::q8_1::Rows::arrange_groups

use crate::linear::q8_1::{Row, groups_ready};
use std::arch::asm;

/// Activation rows per group: the tiles' 16 rows (B's 64 bytes are 16 rows × 4 codes).
pub(super) const WIDTH: usize = 16;

/// Most weight rows per call: the tiles' 16 rows (the engine's row group for these kernels).
pub(super) const MAX_ROWS: usize = 16;
const _: () = assert!(MAX_ROWS == super::engine::AMX_GROUP);

/// Most activation rows of one call (the engine's tile of at most 64 rows).
pub(super) const MAX_M: usize = 64;

/// Whether an AMX kernel taking row groups from `min_m` rows on serves `xs`: AMX usable
/// ([`Cpu::amx_int8`](crate::isa::Cpu::amx_int8)), at least that many rows, at most
/// [`MAX_M`], interleaved in groups of [`WIDTH`] ([`groups_ready`]).
pub(super) fn rows_ready(min_m: usize, xs: &[Row<'_>]) -> bool {
    crate::isa::Cpu::get().amx_int8
        && (min_m..=MAX_M).contains(&xs.len())
        && groups_ready(xs, WIDTH)
}

/// The interleaved planes of each group of [`WIDTH`] activation rows of `xs`
/// (`Rows::arrange_groups`), read through the group's first row: codes, scales and block
/// sums; null past the last group.
pub(super) fn group_planes(xs: &[Row<'_>]) -> [(*const i8, *const f32, *const i32); MAX_M / WIDTH] {
    std::array::from_fn(|g| {
        xs.get(WIDTH * g).map_or(
            (std::ptr::null(), std::ptr::null(), std::ptr::null()),
            |x| {
                let q = &x.quad;
                (q.codes.as_ptr(), q.d.as_ptr(), q.sum.as_ptr())
            },
        )
    })
}

/// 64-byte aligned storage (tile rows and vectors of the AMX kernels).
#[repr(C, align(64))]
pub(super) struct Aligned<T>(pub(super) T);

/// The activation rows' lanes `lanes` of group g ([`WIDTH`] rows) for weight row n:
/// `out[n·m + 16g + l]` for the rows below `m`.
pub(super) fn store_lanes(out: &mut [f32], lanes: &[f32; WIDTH], n: usize, m: usize, g: usize) {
    for (l, &v) in lanes.iter().enumerate().take(m - WIDTH * g) {
        out[n * m + WIDTH * g + l] = v;
    }
}

/// The tile configuration (palette 1), as `ldtilecfg` reads it: 64 bytes, the palette in
/// byte 0, each tile's bytes per row at 16 + 2·t (u16) and its rows at 48 + t.
#[repr(C, align(64))]
struct Config([u8; 64]);

/// The configuration for sums of `len` (16 or 32) values.
const fn config(len: u8) -> Config {
    let mut c = [0u8; 64];
    c[0] = 1;
    // (tile, rows, bytes per row)
    let shapes = [
        (0, 16, 64),
        (1, 16, 64),
        (2, 16, len),
        (3, 16, len),
        (4, len / 4, 64),
        (5, len / 4, 64),
    ];
    let mut i = 0;
    while i < shapes.len() {
        let (t, rows, bytes) = shapes[i];
        c[16 + 2 * t] = bytes;
        c[48 + t] = rows;
        i += 1;
    }
    Config(c)
}

/// [`config`] for whole 32-value blocks and for 16-value halves.
const CONFIGS: [Config; 2] = [config(32), config(16)];

/// The two products of [`Tiles::block_sums2`] with the dot-product instruction `$op`
/// (`tdpbusd`: u8 weights, `tdpbssd`: i8), each C tile zeroed, the A and B tiles loaded,
/// the product added and C stored. The tiles must be configured; the loads and stores stay
/// in the caller's ranges (tmm2/3: 16 rows × L bytes at stride `$sa`, tmm4/5: L/4 rows ×
/// 64 bytes, tmm0/1: 16 rows × 64 bytes).
macro_rules! sums2 {
    ($op:literal, $a:expr, $sa:expr, $b:expr, $c:expr) => {
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tileloadd tmm2, [{a0} + {sa}*1]",
            "tileloadd tmm4, [{b0} + {s64}*1]",
            "tileloadd tmm3, [{a1} + {sa}*1]",
            "tileloadd tmm5, [{b1} + {s64}*1]",
            concat!($op, " tmm0, tmm2, tmm4"),
            concat!($op, " tmm1, tmm3, tmm5"),
            "tilestored [{c0} + {s64}*1], tmm0",
            "tilestored [{c1} + {s64}*1], tmm1",
            a0 = in(reg) $a[0],
            a1 = in(reg) $a[1],
            sa = in(reg) $sa,
            b0 = in(reg) $b[0],
            b1 = in(reg) $b[1],
            c0 = in(reg) $c[0],
            c1 = in(reg) $c[1],
            s64 = in(reg) 64usize,
            options(nostack, preserves_flags),
        )
    };
}

/// The tile registers configured for this thread ([`config`]) until dropped, when the
/// configuration the thread had before is put back: another library on the same thread
/// (oneDNN, ggml, candle) may have configured the tiles once and rely on that configuration
/// staying (`ldtilecfg` of the saved bytes), or none was (`tilerelease`). Tile data does not
/// survive a call (loading a configuration zeroes the tiles); a caller's kernels load their
/// tiles anew each time, as every AMX kernel does.
pub(super) struct Tiles {
    /// The thread's configuration before [`Tiles::configure`] (all zero: none).
    saved: Config,
    /// Not Send: the configuration belongs to the thread that loaded it.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Tiles {
    /// Configures the tiles of the calling thread for sums of `len` values (32 or 16),
    /// saving the configuration it had.
    ///
    /// # Safety
    /// [`Cpu::amx_int8`](crate::isa::Cpu::amx_int8) holds (the CPU has AMX-INT8 and the
    /// operating system granted this process the tile data).
    #[inline]
    pub(super) unsafe fn configure(len: usize) -> Tiles {
        let mut saved = Config([0; 64]);
        let cfg = match len {
            32 => &CONFIGS[0],
            16 => &CONFIGS[1],
            _ => unreachable!("sums of 32 or 16 values"),
        };
        // SAFETY: AMX is there and permitted (the caller); `sttilecfg` writes 64 bytes
        // (zeros where the tiles are not configured), `ldtilecfg` reads the 64 bytes of a
        // valid palette-1 configuration (every row count ≤ 16, bytes ≤ 64).
        unsafe {
            asm!(
                "sttilecfg [{saved}]",
                "ldtilecfg [{cfg}]",
                saved = in(reg) saved.0.as_mut_ptr(),
                cfg = in(reg) cfg,
                options(nostack, preserves_flags),
            );
        }
        Tiles {
            saved,
            _thread: std::marker::PhantomData,
        }
    }

    /// C = A·B for two runs of L values (the configured length) at once: for i = 0, 1, the
    /// 16 rows of L u8 codes at `a[i]` (rows `a_stride` bytes apart) against the 16·L bytes
    /// of B at `b[i]` (tile layout of the module docs), the 16 × 16 exact i32 sums stored at
    /// `c[i]` (row n = weight row, 64 bytes apart).
    ///
    /// # Safety
    /// 16 rows of L readable bytes at each `a[i]`, 16·L readable bytes at each `b[i]`, 1 KiB
    /// writable at each `c[i]`.
    #[inline]
    pub(super) unsafe fn block_sums2(
        &self,
        a: [*const u8; 2],
        a_stride: usize,
        b: [*const i8; 2],
        c: [*mut i32; 2],
    ) {
        // SAFETY: the caller's contract.
        unsafe { sums2!("tdpbusd", a, a_stride, b, c) }
    }

    /// [`Tiles::block_sums2`] with signed weight codes (i8 at `a[i]`, `tdpbssd`).
    ///
    /// # Safety
    /// As [`Tiles::block_sums2`].
    #[inline]
    pub(super) unsafe fn signed_block_sums2(
        &self,
        a: [*const i8; 2],
        a_stride: usize,
        b: [*const i8; 2],
        c: [*mut i32; 2],
    ) {
        // SAFETY: the caller's contract.
        unsafe { sums2!("tdpbssd", a, a_stride, b, c) }
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: the tiles were configured by `configure` on this thread (a `Tiles` is not
        // Send); the saved bytes are what `sttilecfg` stored there, a configuration this
        // thread had loaded, or zeros (palette 0), which `tilerelease` stands for.
        unsafe {
            if self.saved.0[0] == 0 {
                asm!("tilerelease", options(nostack, nomem, preserves_flags));
            } else {
                asm!(
                    "ldtilecfg [{}]",
                    in(reg) self.saved.0.as_ptr(),
                    options(nostack, readonly, preserves_flags)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's tile configuration now (64 zero bytes: none).
    fn current() -> [u8; 64] {
        let mut c = Config([0xAA; 64]);
        // SAFETY: only called where AMX is usable; `sttilecfg` writes 64 bytes.
        unsafe { asm!("sttilecfg [{}]", in(reg) c.0.as_mut_ptr(), options(nostack)) };
        c.0
    }

    /// A call leaves the thread's tiles as it found them: unconfigured, or configured by
    /// someone else (another library's shapes, which it may rely on keeping); and the block
    /// sums are the hand-computed ones.
    #[test]
    fn a_call_puts_back_the_threads_configuration() {
        if !crate::isa::Cpu::get().amx_int8 {
            eprintln!("note: no usable AMX-INT8 on this machine, its tiles are not tested");
            return;
        }
        assert_eq!(current(), [0; 64]);
        let mut a = [0u8; 16 * 32];
        let mut b = [0i8; 512];
        for (i, v) in a.iter_mut().enumerate() {
            *v = (i * 7 % 251) as u8;
        }
        for (i, v) in b.iter_mut().enumerate() {
            *v = (i as i32 * 13 % 255 - 127) as i8;
        }
        let mut c = [[0i32; 256]; 2];
        let run = |c: &mut [[i32; 256]; 2]| {
            let (c0, c1) = c.split_at_mut(1);
            // SAFETY: AMX usable (checked above); the buffers have the sizes the tiles read
            // and write.
            unsafe {
                let t = Tiles::configure(32);
                t.block_sums2(
                    [a.as_ptr(), a.as_ptr()],
                    32,
                    [b.as_ptr(), b.as_ptr()],
                    [c0[0].as_mut_ptr(), c1[0].as_mut_ptr()],
                );
            }
        };
        run(&mut c);
        assert_eq!(
            current(),
            [0; 64],
            "unconfigured before, unconfigured after"
        );
        for n in 0..16 {
            for m in 0..16 {
                let want: i32 = (0..32)
                    .map(|k| a[32 * n + k] as i32 * b[64 * (k / 4) + 4 * m + k % 4] as i32)
                    .sum();
                assert_eq!(
                    (c[0][16 * n + m], c[1][16 * n + m]),
                    (want, want),
                    "n{n} m{m}"
                );
            }
        }
        // Another library's configuration: one tile of 3 rows × 12 bytes.
        let mut other = Config([0; 64]);
        other.0[0] = 1;
        other.0[16] = 12;
        other.0[48] = 3;
        // SAFETY: a valid palette-1 configuration; released at the end of the test.
        unsafe { asm!("ldtilecfg [{}]", in(reg) other.0.as_ptr(), options(nostack)) };
        run(&mut c);
        let after = current();
        // SAFETY: as above.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
        assert_eq!(after, other.0, "the other configuration is back");
    }
}
