//! The CPU engine of `linear`: a prepared weight's CPU state (view, kernel, instruction set,
//! threads) and the loop that splits a product into row groups for the family kernels.
//!
//! Work is split by whole weight rows: every output is computed by one thread, in its
//! family's fixed order, so neither the thread count nor M nor the row's position in the
//! batch changes a bit (docs/linear.md, "Evaluation orders").

use super::float::{self, Grouped, WRow};
use super::gguf::Kind;
use super::gguf_q8k::{self, KindK};
use super::{Isa, grouped_q8, nvfp4_q8};
use crate::decode;
use crate::error::{Error, Result, mul, try_filled, try_grow, try_vec};
use crate::formats::nvfp4;
use crate::layouts::{self, block_scale};
use crate::linear::plan::{Family, Plan};
use crate::linear::{q8_1, q8_k};
use crate::registry::Format;
use crate::threads::{default_pool, default_threads, spread};
use crate::view::WeightView;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

/// The CPU kernel a prepared weight runs: its plan's family, resolved to the format's code
/// reader or GGUF block kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// bf16 words, f32 activations.
    Bf16,
    /// fp32 words, f32 activations.
    Fp32,
    /// q2/q4/q5/q6/q8/t2 codes and scales read in place (row_split_k128_v1), f32
    /// activations (the decoded path's values and order without its validation pass).
    RowSplit(Grouped),
    /// fp8_e4m3fn_row_* codes read in place, f32 activations (same reasoning).
    Fp8Row,
    /// nvfp4 codes read in place (block scales gathered per row), f32 activations.
    Nvfp4,
    /// A dedicated GGUF vec_dot against q8_1.
    Gguf(Kind),
    /// A grouped format (row_split_k128_v1) against q8_1 (the opt-in profile).
    GroupedQ8(Grouped),
    /// nvfp4 against q8_1 (the opt-in profile; block scales gathered per row).
    Nvfp4Q8,
    /// A GGUF k-quant or 256-value i-quant against q8_K (the opt-in profile).
    GgufQ8K(KindK),
    /// A GGUF type without a dedicated kernel: decoded f32 row against x̂ (q8_1 values).
    GgufDecoded,
    /// Any other decodable format: decoded f32 row against x.
    Decoded,
}

impl Kernel {
    /// Whether this is a block kernel against quantized activations (q8_1 or q8_K): the
    /// kernels run in row groups of [`ROW_GROUP`] (or [`GEMV_GROUP`], [`AMX_GROUP`]) rather than
    /// [`FLOAT_GROUP`].
    fn q8_blocks(self) -> bool {
        matches!(
            self,
            Kernel::Gguf(_) | Kernel::GgufQ8K(_) | Kernel::GroupedQ8(_) | Kernel::Nvfp4Q8
        )
    }

    /// The kernel of `plan` (every family has one on the CPU).
    pub(crate) fn of(plan: &Plan) -> Kernel {
        let grouped = || Grouped::of(plan.format).expect("the plan's grouped format");
        match plan.family {
            Family::Direct if plan.format == Format::Bf16 => Kernel::Bf16,
            Family::Direct => Kernel::Fp32,
            Family::Grouped => Kernel::RowSplit(grouped()),
            Family::GroupedQ8 => Kernel::GroupedQ8(grouped()),
            Family::Fp8Row => Kernel::Fp8Row,
            Family::Nvfp4 => Kernel::Nvfp4,
            Family::Nvfp4Q8 => Kernel::Nvfp4Q8,
            Family::Gguf => Kind::of(plan.format).map_or(Kernel::GgufDecoded, Kernel::Gguf),
            Family::GgufQ8K => {
                Kernel::GgufQ8K(KindK::of(plan.format).expect("the plan's q8_K format"))
            }
            Family::Decoded => Kernel::Decoded,
        }
    }
}

/// A weight's CPU state. Borrows the view's planes for `'a`.
pub(crate) struct Engine<'a> {
    pub(crate) view: WeightView<'a>,
    pub(crate) kernel: Kernel,
    pub(crate) isa: Isa,
    /// `float::dot_rows`'s `all_512` ([`float::all_512`] unless a test sets it).
    pub(crate) all_512: bool,
    pub(crate) threads: usize,
    pool: Option<Arc<rayon::ThreadPool>>,
    /// The workspace of an earlier call, kept for the next call of the same shape when it
    /// is small ([`SPARE_BYTES`]); emptied by every setting that changes the kernel's needs.
    spare: Mutex<Option<Box<Workspace>>>,
}

/// The largest workspace a weight keeps between calls (bytes, estimated from its sizes):
/// single-row products of up to 16k outputs keep theirs, so a decoding step allocates
/// nothing; larger temporaries are allocated per call and freed.
const SPARE_BYTES: usize = 256 << 10;

impl<'a> Engine<'a> {
    /// The engine of `view` under `plan` (best instruction set, the global rayon pool).
    pub(crate) fn new(view: WeightView<'a>, plan: &Plan) -> Engine<'a> {
        Engine {
            view,
            kernel: Kernel::of(plan),
            isa: Isa::detect(),
            all_512: float::all_512(),
            threads: 0,
            pool: None,
            spare: Mutex::new(None),
        }
    }

    /// Switches to `plan`'s kernel (same weight, another activation profile).
    pub(crate) fn set_plan(&mut self, plan: &Plan) {
        self.kernel = Kernel::of(plan);
        *self.spare.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// See [`crate::linear::PreparedWeight::set_isa`].
    pub(crate) fn set_isa(&mut self, isa: Isa) -> Result<()> {
        if !isa.available() {
            return Err(Error::Unsupported(format!(
                "{} is not available here",
                isa.name()
            )));
        }
        self.isa = isa;
        *self.spare.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(())
    }

    /// See [`crate::linear::PreparedWeight::set_threads`].
    pub(crate) fn set_threads(&mut self, threads: usize) -> Result<()> {
        if threads > 1024 {
            return Err(Error::InvalidArgument(format!(
                "{threads} threads (at most 1024)"
            )));
        }
        // The calling thread is one of the `threads`: the pool holds the others.
        self.pool = if threads >= 2 {
            Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads - 1)
                    .build()
                    .map_err(|e| Error::Internal(format!("thread pool: {e}")))?,
            ))
        } else {
            None
        };
        self.threads = threads;
        *self.spare.get_mut().unwrap_or_else(PoisonError::into_inner) = None;
        Ok(())
    }

    fn rows(&self) -> usize {
        self.view.rows()
    }

    fn cols(&self) -> usize {
        self.view.cols()
    }

    /// Threads a product may run on at once (the setting: the calling thread and, from 2 on,
    /// the pool's; 0: [`default_threads`]).
    fn parallelism(&self) -> usize {
        match self.threads {
            0 => default_threads(),
            t => t,
        }
    }

    /// Weight rows per parallel work item (a function of the number of output rows computed,
    /// the thread count and the kernel's row group for a tile of `mt` activation rows only):
    /// eight items per thread, at most 64 rows for the float kernels (whose items gather
    /// per-item scratch: larger items measured up to 10% slower) and 256 for the q8_1 and
    /// q8_K block kernels (fewer item boundaries, where each thread's row stream and its
    /// prefetch restart: 3–10% faster at M = 1 with two threads on an Intel Xeon), in whole
    /// float and AMX tiles (8 and 16 rows; an item may end inside a GEMV row group, whose
    /// last call then takes fewer rows).
    fn rows_per_chunk(&self, rows: usize, mt: usize) -> usize {
        let most = if self.kernel.q8_blocks() {
            GEMV_GROUP
        } else {
            64
        };
        rows.div_ceil(self.parallelism() * 8)
            .clamp(1, most)
            .next_multiple_of(FLOAT_GROUP.max(self.group(mt).min(AMX_GROUP)))
    }

    /// Weight rows per kernel call for a tile of `mt` activation rows: the float kernels run
    /// up to 8 rows side by side at M = 1 (eight independent accumulator chains), the
    /// q8_1 and q8_K block kernels a whole work item at M = 1 ([`GEMV_GROUP`]) and beyond
    /// what each family's kernels take per call (`rows_per_call`: 4, the 512-bit tile
    /// kernels 8, the AMX kernels 16; [`ROW_GROUP`] for the others).
    fn group(&self, mt: usize) -> usize {
        use super::gguf::Kind;
        let isa = self.isa;
        match self.kernel {
            k if k.q8_blocks() && mt == 1 => GEMV_GROUP,
            Kernel::Gguf(Kind::KQuant(kq)) => super::kquants::rows_per_call(isa, kq, mt),
            Kernel::Gguf(Kind::Legacy(l)) => super::legacy::rows_per_call(isa, l, mt),
            Kernel::Gguf(Kind::Iq(k)) => super::iquants::rows_per_call(isa, k, mt),
            Kernel::GroupedQ8(kind) => super::grouped_q8::rows_per_call(isa, kind, mt),
            Kernel::Nvfp4Q8 => super::nvfp4_q8::rows_per_call(isa, mt),
            k if k.q8_blocks() => ROW_GROUP,
            _ => FLOAT_GROUP,
        }
    }

    /// [`Engine::workspace`], or the one an earlier call of the same shape left
    /// ([`Engine::keep_workspace`]): a workspace's contents never carry over, every tile
    /// writes what it reads (as tiles after the first of one call already do).
    pub(crate) fn take_workspace(&self, m: usize, rows: Range<usize>) -> Result<Box<Workspace>> {
        let key = (m.clamp(1, TILE_M), rows.len(), self.parallelism());
        let spare = self.spare.try_lock().ok().and_then(|mut s| s.take());
        match spare {
            Some(ws) if ws.key == key => Ok(ws),
            _ => self.workspace(m, rows),
        }
    }

    /// Keeps `ws` for the next call if it is small ([`SPARE_BYTES`]) and no other call
    /// holds the place; else frees it.
    pub(crate) fn keep_workspace(&self, ws: Box<Workspace>) {
        if ws.bytes <= SPARE_BYTES
            && let Ok(mut s) = self.spare.try_lock()
        {
            *s = Some(ws);
        }
    }

    /// The temporaries of a product of `m` activation rows with the weight rows `rows`
    /// (outputs `rows.start .. rows.end`), all allocated here, before any output is
    /// computed: they are sized by one tile of at most [`TILE_M`] rows, K, the length of
    /// `rows` and the thread count, never by M (nor by N beyond the range). Errors:
    /// [`Error::OutOfMemory`], [`Error::Overflow`].
    pub(crate) fn workspace(&self, m: usize, rows: Range<usize>) -> Result<Box<Workspace>> {
        debug_assert!(rows.start <= rows.end && rows.end <= self.rows());
        let (n, k) = (rows.len(), self.cols());
        let mt = m.clamp(1, TILE_M);
        let mk = mul(mt, k, "a tile of x")?;
        let arranged = self.isa.avx2();
        let q = match self.kernel {
            Kernel::Gguf(_) | Kernel::GgufDecoded | Kernel::GroupedQ8(_) | Kernel::Nvfp4Q8 => {
                // The tile kernels' interleaved planes (`Rows::arrange_groups`): the AVX-512
                // tier's, and the k-quants' on every tier that has a tile kernel for them
                // (four rows per group), or the AMX kernel's (16).
                let width = match self.kernel {
                    Kernel::Gguf(super::gguf::Kind::KQuant(kq)) => {
                        if super::kquants::amx_rows(self.isa, kq, mt) {
                            AMX_GROUP
                        } else if super::kquants::tile_min_m(self.isa, kq)
                            .is_some_and(|min| mt >= min)
                        {
                            4
                        } else {
                            0
                        }
                    }
                    Kernel::Gguf(super::gguf::Kind::Legacy(l))
                        if super::legacy::amx_rows(self.isa, l, mt) =>
                    {
                        AMX_GROUP
                    }
                    Kernel::GroupedQ8(_) if super::grouped_q8::amx_rows(self.isa, mt) => AMX_GROUP,
                    Kernel::Gguf(super::gguf::Kind::Iq(k))
                        if super::iquants::amx_rows(self.isa, k, mt) =>
                    {
                        AMX_GROUP
                    }
                    _ if self.isa == Isa::Avx512 => 4,
                    _ => 0,
                };
                Some(q8_1::Rows::with_capacity(mt, k, arranged, width)?)
            }
            _ => None,
        };
        let qk = match self.kernel {
            Kernel::GgufQ8K(_) => Some(q8_k::Rows::with_capacity(mt, k, arranged)?),
            _ => None,
        };
        let xhat = match self.kernel {
            Kernel::GgufDecoded => try_vec(mk, "a tile of q8_1 activation values x̂")?,
            _ => Vec::new(),
        };
        let yt = try_filled(mul(n, mt, "N × tile rows")?, 0f32, "a tile of products")?;
        // What each thread's work items use (the most any one of them needs).
        let group = FLOAT_GROUP * k;
        let materialize = mt >= self.materialize_from();
        let (f, values, other) = match self.kernel {
            Kernel::RowSplit(kind) => (
                FLOAT_GROUP * k.div_ceil(kind.group()),
                if materialize { group } else { 0 },
                0,
            ),
            Kernel::Fp8Row => (0, if materialize { group } else { 0 }, FLOAT_GROUP * mt),
            Kernel::Nvfp4 => (
                FLOAT_GROUP * (k / block_scale::BLOCK),
                if materialize { group } else { 0 },
                FLOAT_GROUP * mt,
            ),
            Kernel::Decoded | Kernel::GgufDecoded => (group, 0, 0),
            _ => (0, 0, 0),
        };
        let threads = self.parallelism();
        // Every plane counted at 4 bytes per value (the q8_1 planes hold about 3 per value).
        let bytes = 4 * (3 * mk + xhat.capacity() + yt.len()) + threads * 4 * (f + values + other);
        let mut slots = try_vec(threads, "per-thread scratch")?;
        for _ in 0..threads {
            slots.push(Mutex::new(Scratch {
                f: try_vec(f, "a scratch of decoded weight rows")?,
                values: try_vec(values, "a scratch of weight values")?,
                other: try_vec(other, "a scratch of products")?,
            }));
        }
        Ok(Box::new(Workspace {
            key: (mt, n, threads),
            bytes,
            q,
            qk,
            xhat,
            yt,
            slots,
        }))
    }

    /// The products of `mt` ≤ [`TILE_M`] activation rows `x` (`mt × K` f32) with the
    /// weight rows `rows` into `ws.yt[.. len·mt]`, len × mt (row of W major, first row
    /// `rows.start`), using only the memory of a workspace made for a range at least as
    /// long. Each output's bits are those of the same output of the whole product: the
    /// family kernels compute every output in a fixed order whatever rows share its call.
    pub(crate) fn compute_tile(
        &self,
        x: &[f32],
        mt: usize,
        rows: Range<usize>,
        ws: &mut Workspace,
    ) -> Result<()> {
        let (n, k) = (rows.len(), self.cols());
        debug_assert!((1..=TILE_M).contains(&mt) && x.len() == mt * k);
        debug_assert!(rows.end <= self.rows());
        let Workspace {
            q,
            qk,
            xhat,
            yt,
            slots,
            ..
        } = ws;
        if let Some(qk) = qk.as_mut() {
            qk.quantize_into(x, mt, self.isa);
            if let Kernel::GgufQ8K(kind) = self.kernel {
                gguf_q8k::prepare(self.isa, kind, qk);
            }
        }
        if let Some(q) = q.as_mut() {
            let mut rows = std::mem::take(q);
            rows.quantize_into(x, mt, self.isa);
            *q = match self.kernel {
                Kernel::Gguf(kind) => super::gguf::prepare(self.isa, kind, rows),
                Kernel::GroupedQ8(kind) => grouped_q8::prepare(self.isa, kind, rows),
                Kernel::Nvfp4Q8 => nvfp4_q8::prepare(self.isa, rows),
                _ => rows,
            };
        }
        let xf: &[f32] = match (self.kernel, q.as_ref()) {
            (Kernel::GgufDecoded, Some(q)) => {
                q.dequantize_into(xhat);
                xhat
            }
            _ => x,
        };
        let mut qrow = [q8_1::Row::EMPTY; TILE_M];
        if let Some(q) = q.as_ref() {
            for (i, r) in qrow.iter_mut().enumerate().take(mt) {
                *r = q.row(i);
            }
        }
        let qrows: &[q8_1::Row<'_>] = if q.is_some() { &qrow[..mt] } else { &[] };
        let mut qkrow = [q8_k::Row::EMPTY; TILE_M];
        if let Some(qk) = qk.as_ref() {
            for (i, r) in qkrow.iter_mut().enumerate().take(mt) {
                *r = qk.row(i);
            }
        }
        let qkrows: &[q8_k::Row<'_>] = if qk.is_some() { &qkrow[..mt] } else { &[] };
        // Which activation rows may meet fp8 / nvfp4 rows in the scaled order.
        let mut xok_all = [false; TILE_M];
        let xok: &[bool] = match self.kernel {
            Kernel::Fp8Row | Kernel::Nvfp4 => {
                for (o, r) in xok_all.iter_mut().zip(xf.chunks(k)) {
                    *o = match self.kernel {
                        Kernel::Fp8Row => float::fp8_scaled_x(r),
                        _ => float::nvfp4_scaled_x(r),
                    };
                }
                &xok_all[..mt]
            }
            _ => &[],
        };
        let slots: &[Mutex<Scratch>] = slots;
        let yt = &mut yt[..n * mt];

        // Chunks of whole W rows; each output is computed entirely inside one chunk, so the
        // partition (and the thread count) never changes a bit.
        let rows_per_chunk = self.rows_per_chunk(n, mt);
        let group = self.group(mt);
        let m = mt;
        let work = |(ci, out): (usize, &mut [f32])| -> Result<()> {
            with_scratch(slots, |s| {
                let first = rows.start + ci * rows_per_chunk;
                let Scratch { f, values, other } = s;
                for (g, o) in out.chunks_mut(group * m).enumerate() {
                    let mut bufs = Bufs { f, values, other };
                    let q = Quantized {
                        q8_1: qrows,
                        q8_k: qkrows,
                    };
                    self.row_group(first + g * group, xf, m, q, xok, o, &mut bufs)?;
                }
                Ok(())
            })
        };
        if self.threads == 1 {
            return yt
                .chunks_mut(rows_per_chunk * m)
                .enumerate()
                .try_for_each(work);
        }
        // The calling thread works too (the pool's other threads wake up meanwhile and join
        // in), all taking chunks from one shared iterator: no thread waits for the pool to
        // start, and no more threads run than the setting says (the weight's pool, or the
        // default one, holds t − 1 threads).
        let nchunks = yt.len().div_ceil(rows_per_chunk * m);
        let chunks = Mutex::new(yt.chunks_mut(rows_per_chunk * m).enumerate());
        let first_err = Mutex::new(None);
        let run = || {
            loop {
                let next = chunks.lock().unwrap_or_else(PoisonError::into_inner).next();
                let Some(item) = next else { break };
                if let Err(e) = work(item) {
                    first_err
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .get_or_insert(e);
                    break;
                }
            }
        };
        // No thread is woken up for want of work: at most one per chunk.
        let t = self.parallelism().min(nchunks);
        match self
            .pool
            .clone()
            .or_else(|| if t > 1 { default_pool() } else { None })
        {
            Some(pool) => pool.in_place_scope(|s| spread(s, t, &run)),
            // One thread, or no pool could be made: the calling thread does every item
            // (the same results).
            None => run(),
        }
        first_err
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Ok(()), Err)
    }

    /// Output rows `r0 .. r0 + out.len() / m` of W against every activation row (`out` is
    /// row of W major). `bufs` holds reused buffers.
    #[allow(clippy::too_many_arguments)]
    fn row_group(
        &self,
        r0: usize,
        x: &[f32],
        m: usize,
        qx: Quantized<'_, '_>,
        xok: &[bool],
        out: &mut [f32],
        bufs: &mut Bufs<'_>,
    ) -> Result<()> {
        let q = qx.q8_1;
        let v = &self.view;
        let count = out.len() / m;
        let bytes = |i: usize| v.row_bytes(0, r0 + i);
        match self.kernel {
            Kernel::Bf16 | Kernel::Fp32 => {
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (i, wr) in ws.iter_mut().enumerate().take(count) {
                    *wr = match self.kernel {
                        Kernel::Bf16 => WRow::Bf16Le(bytes(i)),
                        _ => WRow::F32Le(bytes(i)),
                    };
                }
                self.float_rows(&ws[..count], x, m, out, bufs.values)?
            }
            Kernel::Fp8Row => {
                let (mut scaled, mut plain) =
                    ([WRow::F32(&[]); FLOAT_GROUP], [WRow::F32(&[]); FLOAT_GROUP]);
                for i in 0..count {
                    let (word, codes) = layouts::fp8_row::row_parts(v, r0 + i);
                    let codes = &codes[..v.cols()];
                    let scale = crate::formats::fp8_row::scale_value(v.format(), word);
                    plain[i] = WRow::Fp8 { codes, scale };
                    scaled[i] = if float::fp8_scaled_row(scale) {
                        WRow::Fp8Scaled {
                            codes,
                            factor: 256.0 * scale,
                        }
                    } else {
                        plain[i]
                    };
                }
                let (values, other) = (&mut *bufs.values, &mut *bufs.other);
                self.scaled_rows(
                    &scaled[..count],
                    &plain[..count],
                    x,
                    m,
                    xok,
                    out,
                    values,
                    other,
                )?;
            }
            Kernel::RowSplit(kind) => {
                // The logical groups' binary16 scales as f32 (exact), once per row.
                let k = v.cols();
                let ng = k.div_ceil(kind.group());
                let scratch = fill(bufs.f, count * ng, 0.0, "group scales")?;
                for (i, sf) in scratch.chunks_exact_mut(ng).enumerate() {
                    float::f16_words_to_f32(self.isa, v.row_bytes(2, r0 + i), sf);
                }
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (i, (wr, sf)) in ws.iter_mut().zip(scratch.chunks_exact(ng)).enumerate() {
                    *wr = WRow::Grouped {
                        kind,
                        lo: bytes(i),
                        hi: v.row_bytes(1, r0 + i),
                        sf,
                        k,
                    };
                }
                self.float_rows(&ws[..count], x, m, out, bufs.values)?
            }
            Kernel::Nvfp4 => {
                let nkb = v.cols() / block_scale::BLOCK;
                let scratch = fill(bufs.f, count * nkb, 0.0, "block scales")?;
                float::nvfp4_block_scales(self.isa, v.plane(1), r0, nkb, scratch);
                let (mut scaled, mut plain) =
                    ([WRow::F32(&[]); FLOAT_GROUP], [WRow::F32(&[]); FLOAT_GROUP]);
                for (i, sf) in scratch.chunks_exact(nkb).enumerate() {
                    let d = nvfp4::row_divisor(v, r0 + i);
                    let codes = bytes(i);
                    plain[i] = WRow::Nvfp4 { codes, sf, d };
                    scaled[i] = if float::nvfp4_scaled_row(d) {
                        WRow::Nvfp4Scaled { codes, sf, d }
                    } else {
                        plain[i]
                    };
                }
                let (values, other) = (&mut *bufs.values, &mut *bufs.other);
                self.scaled_rows(
                    &scaled[..count],
                    &plain[..count],
                    x,
                    m,
                    xok,
                    out,
                    values,
                    other,
                )?;
            }
            Kernel::Nvfp4Q8 => {
                // The kernel reads each row's scale words in place: 4 contiguous words per
                // tile of the swizzled plane, tiles TILE_BYTES apart.
                let nkb = v.cols() / block_scale::BLOCK;
                let row = |i: usize| nvfp4_q8::NRow {
                    codes: bytes(i),
                    scales: &v.plane(1)[block_scale::offset(r0 + i, 0, nkb)..],
                    d: nvfp4::row_divisor(v, r0 + i),
                };
                gathered::<_, BLOCK_GROUP, _>(count, row, |ws| {
                    nvfp4_q8::dot_row_group(self.isa, ws, q, out)
                });
            }
            Kernel::Gguf(kind) => gathered::<_, BLOCK_GROUP, _>(count, bytes, |ws| {
                super::gguf::dot_row_group(self.isa, kind, ws, q, out)
            }),
            Kernel::GgufQ8K(kind) => gathered::<_, BLOCK_GROUP, _>(count, bytes, |ws| {
                gguf_q8k::dot_row_group(self.isa, kind, ws, qx.q8_k, out)
            }),
            Kernel::GroupedQ8(kind) => {
                let row = |i: usize| grouped_q8::GRow {
                    codes: bytes(i),
                    hi: v.row_bytes(1, r0 + i),
                    scales: v.row_bytes(2, r0 + i),
                };
                gathered::<_, BLOCK_GROUP, _>(count, row, |ws| {
                    grouped_q8::dot_row_group(self.isa, kind, ws, q, out)
                });
            }
            Kernel::GgufDecoded | Kernel::Decoded => {
                let k = v.cols();
                let scratch = fill(bufs.f, count * k, 0.0, "decoded weight rows")?;
                for (i, d) in scratch.chunks_exact_mut(k).enumerate() {
                    decode::decode_row(v, (r0 + i) as u64, d)?;
                }
                let mut ws = [WRow::F32(&[]); FLOAT_GROUP];
                for (wr, d) in ws.iter_mut().zip(scratch.chunks_exact(k)) {
                    *wr = WRow::F32(d);
                }
                float::dot_rows(self.isa, self.all_512, &ws[..count], x, m, out)
            }
        }
        Ok(())
    }

    /// fp8 / nvfp4 rows against every activation row: output (i, r) runs in the scaled
    /// order (`scaled[i]`, where row i allows it) when activation row r allows it
    /// (`xok[r]`, cpu::float docs), else in the plain order (`plain[i]`): fixed per output,
    /// whatever the batch around it. A batch mixing both kinds of activation rows computes
    /// the group both ways and picks per row.
    #[allow(clippy::too_many_arguments)]
    fn scaled_rows(
        &self,
        scaled: &[WRow<'_>],
        plain: &[WRow<'_>],
        x: &[f32],
        m: usize,
        xok: &[bool],
        out: &mut [f32],
        values: &mut Vec<f32>,
        other: &mut Vec<f32>,
    ) -> Result<()> {
        let (all, any) = (xok.iter().all(|&o| o), xok.iter().any(|&o| o));
        self.runs(if any { scaled } else { plain }, x, m, out, values)?;
        if any && !all {
            let other = fill(other, out.len(), 0.0, "products in the plain order")?;
            self.runs(plain, x, m, other, values)?;
            for (i, o) in out.iter_mut().enumerate() {
                if !xok[i % m] {
                    *o = other[i];
                }
            }
        }
        Ok(())
    }

    /// [`Self::float_rows`] over runs of consecutive rows of one kind.
    fn runs(
        &self,
        ws: &[WRow<'_>],
        x: &[f32],
        m: usize,
        out: &mut [f32],
        values: &mut Vec<f32>,
    ) -> Result<()> {
        let mut start = 0;
        while start < ws.len() {
            let kind = std::mem::discriminant(&ws[start]);
            let end = (start..ws.len())
                .find(|&i| std::mem::discriminant(&ws[i]) != kind)
                .unwrap_or(ws.len());
            self.float_rows(&ws[start..end], x, m, &mut out[start * m..end * m], values)?;
            start = end;
        }
        Ok(())
    }

    /// From this many activation rows on, [`Self::float_rows`] materializes the in-place
    /// rows of a row group once (their values as f32) instead of reading the words for
    /// each activation row: the crossover of the two costs, measured per kernel family and
    /// tier at 4096² on one thread (docs/linear.md, "Materialized rows"). On the AVX-512
    /// tier, where the in-place q2/t2/q4/nvfp4 kernels are fast, writing 8 rows of f32 and
    /// rereading them pays from M = 5 (M = 3 for the others). On the AVX2 tier, measured on
    /// an AVX2-only AMD Zen 3, from M = 2, except q8 (M = 4), whose in-place kernel is the
    /// fastest there. The AVX-VNNI tier runs on Intel cores (AVX-VNNI without AVX-512),
    /// whose in-place kernels measured faster (an Intel Xeon on the AVX2 tier): from M = 8
    /// (q2/t2), 4 (q8), 2 (q5/q6) or 3. On the scalar tier from M = 2. Either way the bits
    /// are the same.
    fn materialize_from(&self) -> usize {
        use Grouped as G;
        match (self.isa, self.kernel) {
            (Isa::Avx512, Kernel::RowSplit(G::Q2 | G::T2 | G::Q4) | Kernel::Nvfp4) => 5,
            (Isa::Avx512, _) => 3,
            (Isa::Avx2 | Isa::AvxVnni, Kernel::RowSplit(G::Q8)) => 4,
            (Isa::AvxVnni, Kernel::RowSplit(G::Q2 | G::T2)) => 8,
            (Isa::AvxVnni, Kernel::RowSplit(G::Q5 | G::Q6)) => 2,
            (Isa::AvxVnni, _) => 3,
            _ => 2,
        }
    }

    /// The f32 kernel over weight rows read in place. With many activation rows, rows
    /// whose words take real work to turn into values (q4/q8 codes, E4M3FN, E2M1) are
    /// first materialized once into `values`, then reused by every activation tile: the
    /// values and the evaluation order are the same, so are the bits.
    fn float_rows(
        &self,
        ws: &[WRow<'_>],
        x: &[f32],
        m: usize,
        out: &mut [f32],
        values: &mut Vec<f32>,
    ) -> Result<()> {
        let cheap = matches!(
            ws.first(),
            Some(WRow::Bf16Le(_) | WRow::F32Le(_) | WRow::F32(_))
        );
        if cheap || m < self.materialize_from() {
            float::dot_rows(self.isa, self.all_512, ws, x, m, out);
            return Ok(());
        }
        let k = self.cols();
        let values = fill(values, ws.len() * k, 0.0, "weight values")?;
        for (w, vals) in ws.iter().zip(values.chunks_exact_mut(k)) {
            float::materialize(self.isa, w, vals);
        }
        let mut fs = [WRow::F32(&[]); FLOAT_GROUP];
        for (f, vals) in fs.iter_mut().zip(values.chunks_exact(k)) {
            *f = WRow::F32(vals);
        }
        float::dot_rows(self.isa, self.all_512, &fs[..ws.len()], x, m, out);
        for (w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
            o.iter_mut().for_each(|y| *y = w.finish(*y));
        }
        Ok(())
    }
}

/// Activation rows per tile of a CPU product: x is converted, quantized and multiplied one
/// tile at a time, so a product's temporaries do not grow with M.
pub(crate) const TILE_M: usize = 64;

/// The temporaries of a CPU product ([`Engine::workspace`]), reused tile after tile.
pub(crate) struct Workspace {
    /// What it was sized for: tile rows, weight rows, threads.
    key: (usize, usize, usize),
    /// Its size estimate (bytes).
    bytes: usize,
    /// The tile's q8_1 activations (q8_1 kernels only).
    q: Option<q8_1::Rows>,
    /// The tile's q8_K activations (q8_K kernels only).
    qk: Option<q8_k::Rows>,
    /// The tile's x̂ as f32 (the decoded GGUF path only).
    xhat: Vec<f32>,
    /// The tile's products, N × rows of the tile (row of W major).
    pub(crate) yt: Vec<f32>,
    /// One scratch per thread that may run a work item at once.
    slots: Vec<Mutex<Scratch>>,
}

/// One thread's reused buffers.
#[derive(Default)]
struct Scratch {
    /// Group or block scales as f32, or decoded weight rows.
    f: Vec<f32>,
    /// Materialized weight values ([`Engine::float_rows`]).
    values: Vec<f32>,
    /// A row group's products in the plain order ([`Engine::scaled_rows`]).
    other: Vec<f32>,
}

/// A tile's quantized activation rows: q8_1 (q8_1 kernels), q8_K (q8_K kernels), else
/// empty.
#[derive(Clone, Copy)]
struct Quantized<'s, 'r> {
    q8_1: &'s [q8_1::Row<'r>],
    q8_k: &'s [q8_k::Row<'r>],
}

/// The buffers of [`Scratch`] a row group uses.
struct Bufs<'s> {
    f: &'s mut Vec<f32>,
    values: &'s mut Vec<f32>,
    other: &'s mut Vec<f32>,
}

/// Runs `f` with a free scratch: the current thread's slot when it is free, else any free
/// one. The workspace holds one per thread that can run at once, so one is always free;
/// were none, the call waits for its own slot rather than growing a fresh scratch during
/// the product (which could fail after outputs were written). A holder never waits on
/// anything, so the wait ends.
fn with_scratch<R>(slots: &[Mutex<Scratch>], f: impl FnOnce(&mut Scratch) -> R) -> R {
    let n = slots.len();
    let start = rayon::current_thread_index().unwrap_or(0);
    for i in 0..n {
        if let Ok(mut s) = slots[(start + i) % n].try_lock() {
            return f(&mut s);
        }
    }
    // A poisoned slot only means an earlier item panicked; its buffers are still buffers.
    let mut s = slots[start % n]
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut s)
}

/// `v` resized to `len` elements (new ones `zero`), growing fallibly: no allocation within
/// the capacity the workspace reserved.
fn fill<'v, T: Copy>(v: &'v mut Vec<T>, len: usize, zero: T, what: &str) -> Result<&'v mut [T]> {
    try_grow(v, len, what)?;
    v.resize(len, zero);
    Ok(&mut v[..])
}

/// Calls `k` with `f(0) .. f(count)` (`count ≤ N`), gathered on the stack in an array of
/// which only those `count` places are written: a kernel call's row planes, where writing
/// all N places at every call would cost as much as a small call's work.
fn gathered<T: Copy, const N: usize, R>(
    count: usize,
    mut f: impl FnMut(usize) -> T,
    k: impl FnOnce(&[T]) -> R,
) -> R {
    assert!(count <= N);
    let mut a = [const { MaybeUninit::<T>::uninit() }; N];
    for (i, s) in a.iter_mut().enumerate().take(count) {
        s.write(f(i));
    }
    // SAFETY: places 0 .. count were written just above (`count ≤ N`); a `MaybeUninit<T>`
    // has the layout of a `T`, and `T: Copy` needs no drop whatever happens.
    let ws = unsafe { std::slice::from_raw_parts(a.as_ptr().cast::<T>(), count) };
    k(ws)
}

/// Weight rows computed together (the float kernels' tile height).
pub(crate) const ROW_GROUP: usize = 4;

/// Weight rows per call of the q8_1 and q8_K block kernels at M = 1 (each family's entry
/// runs them a few at a time): at most a work item's rows ([`Engine::rows_per_chunk`]), so
/// that the engine's work per call (the row planes, the dispatch, the checks) and each
/// kernel's set-up per call count for little. Intel Xeon, one thread, M = 1, 4096 × 4096,
/// against 16 rows per call: Q4_K 1.14×, Q5_K 1.16×, Q6_K 1.09×, q2_g64/t2_g128/nvfp4
/// 1.02–1.03×, the rest even (16 against 4 measured on Zen 4: the k-quants 1.03–1.06×,
/// 1.12–1.20× with K = 1024). A call's row planes take up to 12 KiB of the calling
/// thread's stack ([`gathered`]; 64 rows per call measured 2–5% slower on the k-quants).
pub(crate) const GEMV_GROUP: usize = 256;

/// The most rows any q8 block kernel call takes.
const BLOCK_GROUP: usize = if GEMV_GROUP > AMX_GROUP {
    GEMV_GROUP
} else {
    AMX_GROUP
};

/// Weight rows per call of the AMX kernels (`kquants::amx_rows`): one tile's 16 rows.
pub(crate) const AMX_GROUP: usize = 16;

/// Weight rows per call of the f32-activation kernels (a multiple of [`ROW_GROUP`]).
pub(crate) const FLOAT_GROUP: usize = 8;
