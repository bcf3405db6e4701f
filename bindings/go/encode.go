package ninfer

/*
#include "ninfer.h"

// Flat shim: the output planes and the importance vector arrive as direct arguments, and
// the ninfer_mut_bytes array and options struct (which hold pointers) are built here on
// the C stack (see the package doc on cgo pointer rules).
static ninfer_status ninfer_go_quantize_grouped(uint32_t format, const void *src,
    size_t src_bytes, uint32_t src_dtype, uint64_t rows, uint64_t cols, int use_options,
    uint32_t method, uint32_t negative_scales, const float *importance, size_t importance_len,
    uint8_t *p0, size_t n0, uint8_t *p1, size_t n1, uint8_t *p2, size_t n2,
    ninfer_quantize_provenance *provenance) {
  ninfer_quantize_options options;
  ninfer_mut_bytes planes[3];
  options.method = method;
  options.negative_scales = negative_scales;
  options.importance = importance;
  options.importance_len = importance_len;
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_quantize_grouped(format, src, src_bytes, src_dtype, rows, cols,
                                 use_options ? &options : NULL, planes, provenance);
}

static ninfer_status ninfer_go_fp8_row_maxabs(uint32_t format, const void *src,
    size_t src_bytes, uint32_t src_dtype, uint64_t rows, uint64_t cols, uint8_t *p0, size_t n0,
    uint8_t *p1, size_t n1, uint8_t *p2, size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_fp8_row_maxabs(format, src, src_bytes, src_dtype, rows, cols, planes);
}

static ninfer_status ninfer_go_nvfp4_quantize(const void *src, size_t src_bytes,
    uint32_t src_dtype, uint64_t rows, uint64_t cols, uint64_t sources, uint8_t *p0, size_t n0,
    uint8_t *p1, size_t n1, uint8_t *p2, size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_nvfp4_quantize(NINFER_FORMAT_NVFP4, src, src_bytes, src_dtype, rows, cols,
                               sources, planes);
}

static ninfer_status ninfer_go_fp8_row_pack(uint32_t format, uint64_t rows, uint64_t cols,
    const uint8_t *codes, size_t codes_len, const uint16_t *scales, size_t scales_len,
    uint8_t *p0, size_t n0, uint8_t *p1, size_t n1, uint8_t *p2, size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_fp8_row_pack(format, rows, cols, codes, codes_len, scales, scales_len, planes);
}

static ninfer_status ninfer_go_import_gguf(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *s0, size_t sn0, uint32_t target, uint8_t *p0, size_t n0,
    uint8_t *p1, size_t n1, uint8_t *p2, size_t n2) {
  ninfer_weight_view v;
  ninfer_mut_bytes planes[3];
  v.format = format;
  v.layout = layout;
  v.rows = rows;
  v.cols = cols;
  v.planes[0].ptr = s0; v.planes[0].len = sn0;
  v.planes[1].ptr = NULL; v.planes[1].len = 0;
  v.planes[2].ptr = NULL; v.planes[2].len = 0;
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_import_gguf(&v, target, planes);
}

static ninfer_status ninfer_go_import_gguf_ternary(uint32_t ggml_type, const uint8_t *blocks,
    size_t blocks_len, uint64_t rows, uint64_t cols, uint8_t *p0, size_t n0, uint8_t *p1,
    size_t n1, uint8_t *p2, size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_import_gguf_ternary(ggml_type, blocks, blocks_len, rows, cols, planes);
}

static ninfer_status ninfer_go_import_bitnet_packed(const uint8_t *packed, size_t packed_len,
    uint64_t rows, uint64_t cols, float weight_scale, uint32_t scale_rule, uint8_t *p0,
    size_t n0, uint8_t *p1, size_t n1, uint8_t *p2, size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_import_bitnet_packed(packed, packed_len, rows, cols, weight_scale, scale_rule,
                                     planes);
}

static ninfer_status ninfer_go_import_ternary_values(const void *src, size_t src_bytes,
    uint32_t src_dtype, uint64_t rows, uint64_t cols, uint32_t has_scale, float weight_scale,
    uint32_t scale_rule, uint8_t *p0, size_t n0, uint8_t *p1, size_t n1, uint8_t *p2,
    size_t n2) {
  ninfer_mut_bytes planes[3];
  planes[0].ptr = p0; planes[0].len = n0;
  planes[1].ptr = p1; planes[1].len = n1;
  planes[2].ptr = p2; planes[2].len = n2;
  return ninfer_import_ternary_values(src, src_bytes, src_dtype, rows, cols, has_scale,
                                      weight_scale, scale_rule, planes);
}

static ninfer_status ninfer_go_fp8_row_unpack(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2, uint8_t *codes, size_t codes_len, uint16_t *scales,
    size_t scales_len) {
  ninfer_weight_view v;
  v.format = format;
  v.layout = layout;
  v.rows = rows;
  v.cols = cols;
  v.planes[0].ptr = p0; v.planes[0].len = n0;
  v.planes[1].ptr = p1; v.planes[1].len = n1;
  v.planes[2].ptr = p2; v.planes[2].len = n2;
  return ninfer_fp8_row_unpack(&v, codes, codes_len, scales, scales_len);
}
*/
import "C"

import "unsafe"

// QuantizeMethod selects the grouped encoder (NINFER_QUANTIZE_METHOD_*).
type QuantizeMethod uint32

// Grouped encoders: grouped_absmax (spec §7.2) and grouped_search (§7.3).
const (
	GroupedAbsmax = QuantizeMethod(C.NINFER_QUANTIZE_METHOD_GROUPED_ABSMAX)
	GroupedSearch = QuantizeMethod(C.NINFER_QUANTIZE_METHOD_GROUPED_SEARCH)
)

// QuantizeOptions are grouped_search's parameters; nil options mean grouped_absmax.
type QuantizeOptions struct {
	Method         QuantizeMethod
	NegativeScales bool
	Importance     []float32 // one weight per column, or nil
}

// Provenance is what ninfer_quantize_grouped reports: method, parameters and counters.
type Provenance struct {
	Method            QuantizeMethod
	NegativeScales    bool
	Importance        bool
	ParametersVersion uint32
	Groups            uint64
	ZeroGroups        uint64
	RescuedGroups     uint64
	ImprovedGroups    uint64
	AbsmaxError       float64
	Error             float64
}

// Source is a dense row-major input: float32 values, or bf16 / f16 words.
type Source struct {
	Dtype Dtype
	F32   []float32 // with DtypeF32
	Words []uint16  // with DtypeBF16 or DtypeF16
}

// F32Source wraps float32 values.
func F32Source(v []float32) Source { return Source{Dtype: DtypeF32, F32: v} }

func (s Source) ptr() (unsafe.Pointer, int) {
	if s.Dtype == DtypeF32 {
		if len(s.F32) == 0 {
			return nil, 0
		}
		return unsafe.Pointer(&s.F32[0]), len(s.F32)
	}
	if len(s.Words) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&s.Words[0]), len(s.Words)
}

func newPlanes(f Format, l Layout, rows, cols uint64) (*WeightView, error) {
	sizes, err := PlaneSizes(f, l, rows, cols)
	if err != nil {
		return nil, err
	}
	v := &WeightView{Format: f, Layout: l, Rows: rows, Cols: cols}
	for i, n := range sizes {
		if n > 0 {
			v.Planes[i] = make([]byte, n)
		}
	}
	return v, nil
}

// QuantizeGrouped quantizes a [rows, cols] source into a new row_split_k128_v1 view of a
// grouped format (q4/q5/q6_g64_fp16, q8_g32_fp16). opts nil means grouped_absmax.
func QuantizeGrouped(f Format, src Source, rows, cols uint64, opts *QuantizeOptions) (*WeightView, Provenance, error) {
	v, err := newPlanes(f, LayoutRowSplitK128V1, rows, cols)
	if err != nil {
		return nil, Provenance{}, err
	}
	sp, n := src.ptr()
	var useOpts, negative C.int
	var method C.uint32_t
	var imp *C.float
	var impLen C.size_t
	if opts != nil {
		useOpts, method = 1, C.uint32_t(opts.Method)
		if opts.NegativeScales {
			negative = 1
		}
		if len(opts.Importance) > 0 {
			imp, impLen = (*C.float)(unsafe.Pointer(&opts.Importance[0])), C.size_t(len(opts.Importance))
		}
	}
	a := v.args()
	var cp C.ninfer_quantize_provenance
	err = call(func() C.ninfer_status {
		return C.ninfer_go_quantize_grouped(C.uint32_t(f), sp, C.size_t(n*src.Dtype.Size()),
			C.uint32_t(src.Dtype), C.uint64_t(rows), C.uint64_t(cols), useOpts, method,
			C.uint32_t(negative), imp, impLen, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2, &cp)
	})
	if err != nil {
		return nil, Provenance{}, err
	}
	return v, Provenance{
		Method:            QuantizeMethod(cp.method),
		NegativeScales:    cp.negative_scales != 0,
		Importance:        cp.importance != 0,
		ParametersVersion: uint32(cp.parameters_version),
		Groups:            uint64(cp.groups),
		ZeroGroups:        uint64(cp.zero_groups),
		RescuedGroups:     uint64(cp.rescued_groups),
		ImprovedGroups:    uint64(cp.improved_groups),
		AbsmaxError:       float64(cp.absmax_error),
		Error:             float64(cp.error),
	}, nil
}

// FP8RowMaxAbs quantizes a [rows, cols] source with fp8_row_maxabs into a new view of
// fp8_e4m3fn_row_bf16 or fp8_e4m3fn_row_fp16.
func FP8RowMaxAbs(f Format, src Source, rows, cols uint64) (*WeightView, error) {
	info, err := f.Info()
	if err != nil {
		return nil, err
	}
	v, err := newPlanes(f, info.Layout, rows, cols)
	if err != nil {
		return nil, err
	}
	sp, n := src.ptr()
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_fp8_row_maxabs(C.uint32_t(f), sp, C.size_t(n*src.Dtype.Size()),
			C.uint32_t(src.Dtype), C.uint64_t(rows), C.uint64_t(cols), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// NVFP4Quantize quantizes a [rows, cols] source made of `sources` stacked matrices into a
// new nvfp4 view (codes, swizzled scales, one FP32 divisor per source).
func NVFP4Quantize(src Source, rows, cols, sources uint64) (*WeightView, error) {
	v, err := newPlanes(FormatNVFP4, LayoutBlockScaleK16M128x4V1, rows, cols)
	if err != nil {
		return nil, err
	}
	if sources == 0 || sources > rows {
		return nil, &Error{Status: StatusBadShape, Message: "sources must be in 1 ..= rows"}
	}
	v.Planes[2] = make([]byte, 4*sources)
	sp, n := src.ptr()
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_nvfp4_quantize(sp, C.size_t(n*src.Dtype.Size()), C.uint32_t(src.Dtype),
			C.uint64_t(rows), C.uint64_t(cols), C.uint64_t(sources), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ImportGGUF moves a gguf_q8_0 / gguf_q2_0 view's words into a new row_split_k128_v1 view
// of q8_g32_fp16 / q2_g64_fp16 without rounding (spec §2 import_encoded).
func ImportGGUF(gguf *WeightView, target Format) (*WeightView, error) {
	v, err := newPlanes(target, LayoutRowSplitK128V1, gguf.Rows, gguf.Cols)
	if err != nil {
		return nil, err
	}
	g := gguf.args()
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_import_gguf(g.format, g.layout, g.rows, g.cols, g.p0, g.n0,
			C.uint32_t(target), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// GGML type ids of the ternary GGUF types ImportGGUFTernary takes.
const (
	GGMLTypeTQ1_0 uint32 = 34 // 256 values in 54 bytes: qs[48], qh[4], d
	GGMLTypeTQ2_0 uint32 = 35 // 256 values in 66 bytes: qs[64], d
)

// ImportGGUFTernary moves a ternary GGUF tensor (GGMLTypeTQ1_0 or GGMLTypeTQ2_0; blocks is
// its data as in the file, rows × cols / 256 blocks, cols = GGUF ne[0], a multiple of 256)
// into a new row_split_k128_v1 view of t2_g128_fp16 without rounding (spec §2
// import_encoded): each block's binary16 d becomes the scale of its two 128-value groups,
// and codes map to -1, 0, +1. A TQ2_0 word 3, a NaN/Inf/-0 d or a +0 d over non-zero codes
// is ErrInvalidEncoding; a bad shape ErrBadShape; a wrong blocks length ErrSizeMismatch.
func ImportGGUFTernary(ggmlType uint32, blocks []byte, rows, cols uint64) (*WeightView, error) {
	bb := map[uint32]uint64{GGMLTypeTQ1_0: 54, GGMLTypeTQ2_0: 66}[ggmlType]
	bp, bn := bytesArg(blocks)
	fits := bb != 0 && cols%256 == 0 && (rows == 0 || cols/256 <= ^uint64(0)/bb/rows) &&
		rows*(cols/256)*bb == uint64(len(blocks))
	if !fits {
		// The library names the problem; no plane is sized from an unchecked shape.
		err := call(func() C.ninfer_status {
			return C.ninfer_go_import_gguf_ternary(C.uint32_t(ggmlType), bp, bn, C.uint64_t(rows),
				C.uint64_t(cols), nil, 0, nil, 0, nil, 0)
		})
		if err == nil {
			err = ErrSizeMismatch
		}
		return nil, err
	}
	v, err := newPlanes(FormatT2G128FP16, LayoutRowSplitK128V1, rows, cols)
	if err != nil {
		return nil, err
	}
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_import_gguf_ternary(C.uint32_t(ggmlType), bp, bn, C.uint64_t(rows),
			C.uint64_t(cols), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// How a ternary weight_scale s applies (ImportBitNetPacked, ImportTernaryValues).
const (
	TernaryScaleDivide   uint32 = 0 // value = code / s (transformers' BitLinear)
	TernaryScaleMultiply uint32 = 1 // value = code × s (transformers' AutoBitLinear)
)

// ImportBitNetPacked moves a BitNet b1.58 weight packed as Hugging Face transformers packs
// it (packed: uint8 [rows/4, cols]; weight row n is the 2-bit field n/(rows/4) of packed row
// n%(rows/4), holding code + 1) into a new row_split_k128_v1 view of t2_g128_fp16 without
// rounding. The scale word binary16(1/s) (TernaryScaleDivide) or binary16(s)
// (TernaryScaleMultiply) must be exact, else ErrInvalidArgument; a word 3 is
// ErrInvalidEncoding; cols not a multiple of 128 or rows of 4 ErrBadShape.
func ImportBitNetPacked(packed []byte, rows, cols uint64, weightScale float32, scaleRule uint32) (*WeightView, error) {
	v, err := newPlanes(FormatT2G128FP16, LayoutRowSplitK128V1, rows, cols)
	if err != nil {
		return nil, err
	}
	bp, bn := bytesArg(packed)
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_import_bitnet_packed(bp, bn, C.uint64_t(rows), C.uint64_t(cols),
			C.float(weightScale), C.uint32_t(scaleRule), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ImportTernaryValues moves a ternary weight stored one word per value into a new
// t2_g128_fp16 view without rounding: with hasScale, codes -1/0/+1 scaled by weightScale
// under scaleRule (as ImportBitNetPacked); without, values -s/0/+s per 128-value group, s
// exact in binary16. Anything else is refused with the library's status and message.
func ImportTernaryValues(src Source, rows, cols uint64, hasScale bool, weightScale float32, scaleRule uint32) (*WeightView, error) {
	v, err := newPlanes(FormatT2G128FP16, LayoutRowSplitK128V1, rows, cols)
	if err != nil {
		return nil, err
	}
	sp, n := src.ptr()
	has := 0
	if hasScale {
		has = 1
	}
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_import_ternary_values(sp, C.size_t(n*src.Dtype.Size()),
			C.uint32_t(src.Dtype), C.uint64_t(rows), C.uint64_t(cols), C.uint32_t(has),
			C.float(weightScale), C.uint32_t(scaleRule), a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

func u16Arg(w []uint16) (*C.uint16_t, C.size_t) {
	if len(w) == 0 {
		return nil, 0
	}
	return (*C.uint16_t)(unsafe.Pointer(&w[0])), C.size_t(len(w))
}

// FP8RowPack lays out logical FP8 words (codes: rows × cols E4M3FN; scales: rows 16-bit
// words, BF16 or binary16 bits) in a new view of an fp8_e4m3fn_row_* format. The words
// are copied unchanged: follow with FP8RowValidate.
func FP8RowPack(f Format, rows, cols uint64, codes []byte, scales []uint16) (*WeightView, error) {
	info, err := f.Info()
	if err != nil {
		return nil, err
	}
	v, err := newPlanes(f, info.Layout, rows, cols)
	if err != nil {
		return nil, err
	}
	pc, nc := bytesArg(codes)
	ps, ns := u16Arg(scales)
	a := v.args()
	err = call(func() C.ninfer_status {
		return C.ninfer_go_fp8_row_pack(C.uint32_t(f), C.uint64_t(rows), C.uint64_t(cols), pc, nc, ps, ns,
			a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// FP8RowUnpack returns the logical words of a row-scaled FP8 view: codes (rows × cols)
// and the 16-bit row scales.
func (v *WeightView) FP8RowUnpack() (codes []byte, scales []uint16, err error) {
	if err := v.Check(); err != nil {
		return nil, nil, err
	}
	codes = make([]byte, v.Rows*v.Cols)
	scales = make([]uint16, v.Rows)
	a := v.args()
	pc, nc := bytesArg(codes)
	ps, ns := u16Arg(scales)
	err = call(func() C.ninfer_status {
		return C.ninfer_go_fp8_row_unpack(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
			pc, nc, ps, ns)
	})
	if err != nil {
		return nil, nil, err
	}
	return codes, scales, nil
}

// NVFP4PackScales swizzles linear [rows, kBlocks] E4M3FN scales into the 128×4 layout
// (round_up(rows, 128) × round_up(kBlocks, 4) bytes, padding zero).
func NVFP4PackScales(rows, kBlocks uint64, linear []byte) ([]byte, error) {
	out := make([]byte, (rows+127)/128*128*((kBlocks+3)/4*4))
	pl, nl := bytesArg(linear)
	po, no := bytesArg(out)
	err := call(func() C.ninfer_status {
		return C.ninfer_nvfp4_pack_scales(C.uint64_t(rows), C.uint64_t(kBlocks), pl, nl, po, no)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NVFP4UnpackScales extracts the linear [rows, kBlocks] scales from a swizzled plane.
func NVFP4UnpackScales(rows, kBlocks uint64, swizzled []byte) ([]byte, error) {
	out := make([]byte, rows*kBlocks)
	ps, ns := bytesArg(swizzled)
	po, no := bytesArg(out)
	err := call(func() C.ninfer_status {
		return C.ninfer_nvfp4_unpack_scales(C.uint64_t(rows), C.uint64_t(kBlocks), ps, ns, po, no)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
