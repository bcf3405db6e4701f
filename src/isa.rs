//! The CPU's instruction sets: the features this crate's kernels use, detected once, and
//! the tiers ([`Isa`]) a prepared weight runs on. Every vector code path asks this module
//! (never `is_x86_feature_detected!` directly), so that a tier is one fact.
//!
//! | tier | requires | runs |
//! |---|---|---|
//! | [`Isa::Scalar`] | nothing | the portable reference order |
//! | [`Isa::Avx2`] | AVX2, FMA, F16C | the AVX2 kernels of every family |
//! | [`Isa::AvxVnni`] | the AVX2 tier + AVX-VNNI | AVX2, with 256-bit `vpdpbusd` (VEX) in the legacy GGUF, Q3_K–Q6_K, i-quant grid, grouped-q8_1 and nvfp4-q8_1 kernels |
//! | [`Isa::Avx512`] | the AVX2 tier + AVX-512 F/BW/VL/VNNI | 512-bit kernels of its own for Q2_K–Q6_K (Q2_K–Q5_K against activation codes arranged per super-block so that their sums need no transpose; Q2_K–Q6_K's codes by `vgf2p8affineqb` where [`Cpu::gfni`] holds; software prefetch but in Q2_K–Q6_K's one-row passes where [`Cpu::zen4`] holds), for the grouped formats and nvfp4 against q8_1 (q2 / t2 / q4's codes by `vgf2p8affineqb` where [`Cpu::gfni`] holds, nvfp4's by `vpermb` and `vgf2p8affineqb` where [`Cpu::gfni`] and [`Cpu::avx512vbmi`] do), and for the f32-activation q2 / t2 / q4 / q5 / q6 / q8 / nvfp4 / fp8 (scaled order) rows (two weight rows per register; q2 / t2 / fp8 only where [`Cpu::wide_pipes`] holds, the AVX2 code elsewhere: measured faster on Intel and on Zen 4); the legacy GGUF types and the i-quant grids compile their AVX2 source with 256-bit `vpdpbusd` (EVEX; on Zen 5, [`Cpu::wide_pipes`], the i-quants but IQ3_S at M = 1 two groups per 512-bit `vpdpbusd`, and IQ2_XS on Zen 4, [`Cpu::zen4`]; on Intel cores with [`Cpu::fast_gathers`], the grid entries of IQ3_XXS, IQ3_S, IQ2_S, IQ1_S and IQ1_M by one gather per group, IQ2_XS's by blends kept from becoming shuffles), the grid signs applied as masks (`vpsubb` under a 32-bit mask) and Q5_0's fifth bits as byte masks; with several activation rows, tile kernels for the legacy types, the k-quants but Q2_K (the k-quants, the legacy types but Q2_0, the i-quants but IQ1_S/IQ1_M and the grouped formats against q8_1 on AMX tiles from M = 16 where [`Cpu::amx_int8`] holds) and the grouped formats and nvfp4 against q8_1 (one 512-bit lane per weight row × activation row pair); 512-bit GGUF row decoding (IQ3_S and IQ1_S only where [`Cpu::wide_pipes`] holds: their AVX2 decoders measured faster on Intel, even on Zen 4; Q4_K and IQ1_M not on Zen 4, [`Cpu::zen4`], where their AVX2 decoders measured faster) and grouped_absmax chunk encoding; bf16 / fp32 rows and fp8 outside the scaled order run the AVX2 code |
//!
//! Every tier returns the bits of the scalar reference (docs/linear.md, "Evaluation
//! orders"). AVX-512 BF16 is reported as a separate capability ([`Cpu::avx512bf16`]); no
//! tier requires it. Portable loops run per tier through [`on_tier`].

use std::sync::OnceLock;

/// The x86 features the kernels query (all `false` on other architectures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu {
    pub avx2: bool,
    pub fma: bool,
    pub f16c: bool,
    pub bmi1: bool,
    pub avxvnni: bool,
    pub avx512f: bool,
    pub avx512bw: bool,
    pub avx512vl: bool,
    pub avx512vnni: bool,
    pub avx512bf16: bool,
    /// GFNI (`vgf2p8affineqb`: one bit-matrix per 64-bit lane applied to each of its
    /// bytes). With the AVX-512 tier, the Q2_K–Q6_K and q2 / t2 / q4 (against q8_1)
    /// kernels take their codes (and Q3_K its high bits) out of their bytes with it (one instruction where a shift
    /// and a mask, or an offset XOR, a shift and a mask, were two or three); the AVX-512 CPUs without it
    /// (Skylake-SP, Cascade Lake) run the shifts and masks. A speed choice only: the same
    /// bits.
    pub gfni: bool,
    /// AVX-512 VBMI (`vpermb`: a 64-entry byte table lookup). With GFNI, the nvfp4 kernel
    /// of the AVX-512 tier looks its E2M1 codes up by one `vpermb` per vector (the low
    /// nibbles: no mask needed) and takes the high nibbles down by `vgf2p8affineqb`, and the
    /// GFNI form of the k-quant passes spreads Q2_K–Q4_K's scale bytes to words by one
    /// `vpermb` (that form runs where both are present). Speed choices only: the same bits.
    pub avx512vbmi: bool,
    /// AMD family 1Ah (Zen 5) or later: four 512-bit vector pipes, so a 512-bit vector costs
    /// no more issue slots than a 256-bit one. Elsewhere (Intel's cores: 512-bit work on two
    /// ports, with their shuffles on one; Zen 4: 256-bit datapaths) a kernel that merges two
    /// 256-bit halves into one 512-bit vector measured slower than the 256-bit form, so the
    /// kernels with both forms ask this fact. A speed choice only: both forms return the
    /// same bits.
    pub wide_pipes: bool,
    /// AMD family 19h with AVX-512 (Zen 4), whose 512-bit instructions run as two 256-bit
    /// halves. Three speed choices ask it (each returns the same bits either way):
    /// - its hardware prefetcher alone keeps one weight row's stream of GGUF super-blocks
    ///   ahead of the AVX-512 k-quant kernels, so their one-row passes (M = 1) issue no
    ///   software prefetch there. Measured on an AMD EPYC (Zen 4), M = 1, 16384 × 4096
    ///   (beyond L3), without against with: Q2_K–Q6_K 1.03–1.17× faster with one thread and
    ///   two, q8_1 and q8_K alike, and even in L3; the passes of two rows (M > 1) still
    ///   prefetch (without it, M = 4 beyond L3 ran at about half the speed), as do the
    ///   grouped formats' kernels (without it, 2–3× slower beyond L3). Only for rows up to
    ///   K = 8192: longer rows ran up to 2× slower without (K = 14336, Q4_K 26 against 45
    ///   GMAC/s), so their passes prefetch too;
    /// - IQ2_XS at M = 1 runs the i-quants' two-group form (two groups per 512-bit
    ///   `vpdpbusd`, as on [`Cpu::wide_pipes`] cores): one thread, 4096² and 16384 × 4096,
    ///   18.7 → 20.5 GMAC/s, two threads alike. The other i-quants measured slower in that
    ///   form there (IQ2_XXS, IQ3_XXS −4 to −5%, IQ1_S −8%, IQ1_M −10%; IQ2_S, IQ3_S even);
    /// - the AVX-512 tier decodes Q4_K and IQ1_M rows with their AVX2 code (one thread,
    ///   4096²: Q4_K 16.1 against 14.6 Gvalues/s, IQ1_M 6.5 against 6.1).
    pub zen4: bool,
    /// An Intel core with AVX512-FP16 (CPUID leaf 7; Sapphire Rapids and later server cores,
    /// which the Gather Data Sampling microcode mitigation does not slow): there one
    /// `vpgatherdd` / `vpgatherdq` of a group's grid entries measured faster than broadcast
    /// loads and blends in the i-quant kernels of the AVX-512 tier (Xeon with AMX, M = 1:
    /// IQ3_XXS and IQ3_S 1.3×, IQ2_S 1.1×, IQ1_M 1.07×), and slower on AMD's cores (Zen 5),
    /// so those kernels ask this fact (and IQ2_XS's, whose blends the compiler would
    /// turn into shuffles, which these cores run on one port). A speed choice only: both forms return the same bits.
    pub fast_gathers: bool,
    /// AMX-TILE and AMX-INT8 (CPUID leaf 7), with the operating system's permission for this
    /// process to use the tile data registers (Linux: `arch_prctl(ARCH_REQ_XCOMP_PERM)`,
    /// requested once, by the detection itself). The AVX-512 tier then forms the exact
    /// integer block sums of its widest products with `tdpbusd` (same bits as without).
    pub amx_int8: bool,
}

impl Cpu {
    /// This machine's features, detected on the first call.
    pub fn get() -> &'static Cpu {
        static CPU: OnceLock<Cpu> = OnceLock::new();
        CPU.get_or_init(Cpu::detect)
    }

    #[cfg(target_arch = "x86_64")]
    fn detect() -> Cpu {
        use std::arch::is_x86_feature_detected as has;
        Cpu {
            avx2: has!("avx2"),
            fma: has!("fma"),
            f16c: has!("f16c"),
            bmi1: has!("bmi1"),
            avxvnni: has!("avxvnni"),
            avx512f: has!("avx512f"),
            avx512bw: has!("avx512bw"),
            avx512vl: has!("avx512vl"),
            avx512vnni: has!("avx512vnni"),
            avx512bf16: has!("avx512bf16"),
            gfni: has!("gfni"),
            avx512vbmi: has!("avx512vbmi"),
            wide_pipes: amd_family() >= Some(0x1A),
            zen4: amd_family() == Some(0x19) && has!("avx512f"),
            fast_gathers: intel_avx512fp16(),
            amx_int8: amx_int8(),
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn detect() -> Cpu {
        Cpu::default()
    }

    /// AVX2, FMA and F16C: what every x86 tier above [`Isa::Scalar`] requires.
    pub fn avx2_fma_f16c(&self) -> bool {
        self.avx2 && self.fma && self.f16c
    }
}

/// Whether the CPU has AMX-TILE and AMX-INT8 and the kernel lets this process use the tile
/// registers (the permission is requested here; Linux 5.16 and later grant it where the CPU
/// has AMX). Elsewhere (other systems, Miri) false.
#[cfg(target_arch = "x86_64")]
fn amx_int8() -> bool {
    if cfg!(miri) || !cfg!(target_os = "linux") {
        return false;
    }
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY: CPUID exists on every x86-64 processor; leaf 7 is read only where leaf 0
    // reports it. (Safe from Rust 1.94 on, unsafe before.)
    #[allow(unused_unsafe)]
    let edx = unsafe {
        if __cpuid(0).eax < 7 {
            return false;
        }
        __cpuid_count(7, 0).edx
    };
    const AMX_TILE: u32 = 1 << 24;
    const AMX_INT8: u32 = 1 << 25;
    if edx & (AMX_TILE | AMX_INT8) != AMX_TILE | AMX_INT8 {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): 0 once granted (for the whole
        // process, every thread); an error where the kernel or hypervisor does not allow it.
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a system call with two integer arguments; it changes only which state
        // components this process may use.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        };
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// The CPUID vendor string (leaf 0); `None` under Miri, which cannot run CPUID.
#[cfg(target_arch = "x86_64")]
fn vendor() -> Option<[u8; 12]> {
    if cfg!(miri) {
        return None;
    }
    // SAFETY: CPUID exists on every x86-64 processor; leaf 0 always exists. (The intrinsic
    // is safe from Rust 1.94 on, unsafe before: the block serves older toolchains.)
    #[allow(unused_unsafe)]
    let v = unsafe { std::arch::x86_64::__cpuid(0) };
    let mut s = [0u8; 12];
    for (i, r) in [v.ebx, v.edx, v.ecx].into_iter().enumerate() {
        s[4 * i..4 * i + 4].copy_from_slice(&r.to_le_bytes());
    }
    Some(s)
}

/// Whether this is an Intel processor with AVX512-FP16 (CPUID leaf 7, EDX bit 23).
#[cfg(target_arch = "x86_64")]
fn intel_avx512fp16() -> bool {
    if vendor() != Some(*b"GenuineIntel") {
        return false;
    }
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY: CPUID exists on every x86-64 processor; leaf 7 is read only where leaf 0
    // reports it. (Safe from Rust 1.94 on, unsafe before.)
    #[allow(unused_unsafe)]
    let edx = unsafe {
        if __cpuid(0).eax < 7 {
            return false;
        }
        __cpuid_count(7, 0).edx
    };
    const AVX512_FP16: u32 = 1 << 23;
    edx & AVX512_FP16 != 0
}

/// The CPU family (base + extended, CPUID leaf 1) of an AMD processor; `None` on other vendors.
#[cfg(target_arch = "x86_64")]
fn amd_family() -> Option<u32> {
    // Miri cannot run CPUID (its feature detection reports none either): no vendor.
    if vendor()? != *b"AuthenticAMD" {
        return None;
    }
    // SAFETY: CPUID exists on every x86-64 processor; leaf 1 always exists. (The intrinsic
    // is safe from Rust 1.94 on, unsafe before: the block serves older toolchains.)
    #[allow(unused_unsafe)]
    let l1 = unsafe { std::arch::x86_64::__cpuid(1) };
    let base = (l1.eax >> 8) & 0xF;
    Some(if base == 0xF {
        base + ((l1.eax >> 20) & 0xFF)
    } else {
        base
    })
}

/// The instruction set a prepared weight runs on (the tiers of the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust: the reference order every other path reproduces bit for bit.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C (detected at run time).
    Avx2,
    /// The AVX2 tier with AVX-512 F/BW/VL/VNNI (detected at run time).
    Avx512,
    /// The AVX2 tier with 256-bit AVX-VNNI (detected at run time).
    AvxVnni,
}

impl Isa {
    /// Every tier, from the reference up (tests iterate over it; a machine runs those for
    /// which [`available`](Self::available) holds).
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Avx2, Isa::AvxVnni, Isa::Avx512];

    /// The best instruction set of this machine (the last available tier of [`Isa::ALL`]).
    pub fn detect() -> Isa {
        Isa::ALL
            .into_iter()
            .rfind(|i| i.available())
            .unwrap_or(Isa::Scalar)
    }

    /// The tiers this machine can run, in the order of [`Isa::ALL`].
    pub fn tiers() -> impl Iterator<Item = Isa> {
        Isa::ALL.into_iter().filter(|i| i.available())
    }

    /// Whether this machine can run `self`.
    pub fn available(self) -> bool {
        let c = Cpu::get();
        match self {
            Isa::Scalar => true,
            Isa::Avx2 => c.avx2_fma_f16c(),
            Isa::AvxVnni => c.avx2_fma_f16c() && c.avxvnni,
            Isa::Avx512 => {
                c.avx2_fma_f16c() && c.avx512f && c.avx512bw && c.avx512vl && c.avx512vnni
            }
        }
    }

    /// The tiers of this machine for a test to compare; each one it lacks is named on
    /// stderr (skipped, never silently).
    #[cfg(test)]
    pub(crate) fn tested() -> Vec<Isa> {
        for isa in Isa::ALL.into_iter().filter(|i| !i.available()) {
            eprintln!(
                "note: no {} on this machine, its tier is not tested",
                isa.name()
            );
        }
        Isa::tiers().collect()
    }

    /// Whether `self` runs the AVX2 kernels (every tier but [`Isa::Scalar`]: each requires
    /// AVX2, FMA and F16C).
    pub(crate) fn avx2(self) -> bool {
        self != Isa::Scalar
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::AvxVnni => "avxvnni",
        }
    }
}

/// `on_tier!(isa, closure)`: calls the closure compiled for tier `isa`'s features, and
/// evaluates to its result. Portable Rust (no intrinsics) called from the closure is
/// inlined into a function with the tier's target features, so the compiler may use its
/// vectors; the IEEE operations and their order are the source's (Rust never contracts to
/// FMA), so every tier returns [`Isa::Scalar`]'s bits. The closure is expanded once per
/// tier (each copy has one call site, which the compiler inlines); keep its callees
/// `#[inline(always)]`, or they run at the baseline.
///
/// Panics when the machine lacks `isa` (callers pass [`Isa::detect`] or a tested tier).
macro_rules! on_tier {
    ($isa:expr, $f:expr) => {{
        let isa: $crate::isa::Isa = $isa;
        assert!(isa.available(), "no {} tier on this machine", isa.name());
        match isa {
            #[cfg(target_arch = "x86_64")]
            $crate::isa::Isa::Avx512 => {
                #[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
                unsafe fn tier<R>(f: impl FnOnce() -> R) -> R {
                    f()
                }
                // SAFETY: the machine runs the AVX-512 tier (asserted above).
                unsafe { tier($f) }
            }
            #[cfg(target_arch = "x86_64")]
            $crate::isa::Isa::Avx2 | $crate::isa::Isa::AvxVnni => {
                // AVX2 + F16C; no FMA, which portable code never asks for.
                #[target_feature(enable = "avx2,f16c")]
                unsafe fn tier<R>(f: impl FnOnce() -> R) -> R {
                    f()
                }
                // SAFETY: the machine runs the AVX2 tier (asserted above).
                unsafe { tier($f) }
            }
            _ => ($f)(),
        }
    }};
}
pub(crate) use on_tier;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_ordered_and_named() {
        assert_eq!(Isa::ALL[0], Isa::Scalar);
        assert!(Isa::Scalar.available());
        let names: Vec<_> = Isa::ALL.iter().map(|i| i.name()).collect();
        assert_eq!(names, ["scalar", "avx2", "avxvnni", "avx512"]);
        assert!(Isa::detect().available());
        assert_eq!(Isa::tiers().last(), Some(Isa::detect()));
        for isa in Isa::ALL {
            // Every tier above the reference requires the AVX2 one.
            assert!(!isa.available() || !isa.avx2() || Isa::Avx2.available());
        }
    }

    /// The detected features are the flags the kernel reports in /proc/cpuinfo.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn detection_matches_proc_cpuinfo() {
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            eprintln!("no /proc/cpuinfo: detection not cross-checked");
            return;
        };
        let Some(line) = info.lines().find(|l| l.starts_with("flags")) else {
            eprintln!("no flags line in /proc/cpuinfo: detection not cross-checked");
            return;
        };
        let flags: std::collections::HashSet<&str> = line.split_whitespace().collect();
        let f = |n: &str| flags.contains(n);
        let c = Cpu::get();
        let expect = [
            ("avx2", c.avx2, f("avx2")),
            ("fma", c.fma, f("fma")),
            ("f16c", c.f16c, f("f16c")),
            ("bmi1", c.bmi1, f("bmi1")),
            ("avx_vnni", c.avxvnni, f("avx_vnni")),
            ("avx512f", c.avx512f, f("avx512f")),
            ("avx512bw", c.avx512bw, f("avx512bw")),
            ("avx512vl", c.avx512vl, f("avx512vl")),
            ("avx512_vnni", c.avx512vnni, f("avx512_vnni")),
            ("avx512_bf16", c.avx512bf16, f("avx512_bf16")),
            ("gfni", c.gfni, f("gfni")),
            ("avx512vbmi", c.avx512vbmi, f("avx512vbmi")),
        ];
        for (name, detected, listed) in expect {
            assert_eq!(
                detected, listed,
                "{name}: detected {detected}, /proc/cpuinfo {listed}"
            );
        }
        // AMX: usable only where listed (the kernel lists it only where it can grant it).
        assert!(
            !c.amx_int8 || (f("amx_tile") && f("amx_int8")),
            "amx_int8 detected, not in /proc/cpuinfo"
        );
        if f("amx_int8") && !c.amx_int8 {
            eprintln!("note: amx_int8 listed but its tile data not granted to this process");
        }
        // The vendor and family lines name the CPU classes of `wide_pipes`, `zen4` and
        // `fast_gathers`.
        let field = |key: &str| {
            info.lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(key))
                .and_then(|l| l.split(':').nth(1))
                .map(str::trim)
        };
        if let (Some(vendor), Some(family)) = (field("vendor_id"), field("cpu family")) {
            let family: u32 = family.parse().expect("cpu family is a decimal number");
            let want = vendor == "AuthenticAMD" && family >= 0x1A;
            assert_eq!(
                c.wide_pipes, want,
                "wide_pipes for {vendor} family {family}"
            );
            let want = vendor == "AuthenticAMD" && family == 0x19 && f("avx512f");
            assert_eq!(c.zen4, want, "zen4 for {vendor} family {family}");
            // Linux lists avx512_fp16 only where AVX-512 state is enabled.
            if c.avx512f {
                let want = vendor == "GenuineIntel" && f("avx512_fp16");
                assert_eq!(c.fast_gathers, want, "fast_gathers for {vendor}");
            }
        }
        eprintln!(
            "detected {c:?}; tiers {:?}",
            Isa::tiers().collect::<Vec<_>>()
        );
    }
}
