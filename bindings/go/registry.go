package ninfer

/*
#include <stdlib.h>
#include "ninfer.h"
*/
import "C"

import "unsafe"

// Format is a registered persistent format (NINFER_FORMAT_*).
type Format uint32

// Layout is a storage layout (NINFER_LAYOUT_*).
type Layout uint32

// Category is a format family (NINFER_CATEGORY_*).
type Category uint32

// ScaleType is the type of a format's stored scale (NINFER_SCALE_TYPE_*).
type ScaleType uint32

// Dtype is a dense element type for decoded output (NINFER_DTYPE_*).
type Dtype uint32

// Formats.
const (
	FormatBF16             = Format(C.NINFER_FORMAT_BF16)
	FormatFP32             = Format(C.NINFER_FORMAT_FP32)
	FormatInt32            = Format(C.NINFER_FORMAT_INT32)
	FormatQ2G64FP16        = Format(C.NINFER_FORMAT_Q2_G64_FP16)
	FormatQ4G64FP16        = Format(C.NINFER_FORMAT_Q4_G64_FP16)
	FormatQ5G64FP16        = Format(C.NINFER_FORMAT_Q5_G64_FP16)
	FormatQ6G64FP16        = Format(C.NINFER_FORMAT_Q6_G64_FP16)
	FormatQ8G32FP16        = Format(C.NINFER_FORMAT_Q8_G32_FP16)
	FormatT2G128FP16       = Format(C.NINFER_FORMAT_T2_G128_FP16)
	FormatNVFP4            = Format(C.NINFER_FORMAT_NVFP4)
	FormatFP8E4M3FNRowBF16 = Format(C.NINFER_FORMAT_FP8_E4M3FN_ROW_BF16)
	FormatFP8E4M3FNRowFP16 = Format(C.NINFER_FORMAT_FP8_E4M3FN_ROW_FP16)
	FormatGGUFQ8_0         = Format(C.NINFER_FORMAT_GGUF_Q8_0)
	FormatGGUFQ4_0         = Format(C.NINFER_FORMAT_GGUF_Q4_0)
	FormatGGUFQ5_0         = Format(C.NINFER_FORMAT_GGUF_Q5_0)
	FormatGGUFQ2_0         = Format(C.NINFER_FORMAT_GGUF_Q2_0)
	FormatGGUFQ2K          = Format(C.NINFER_FORMAT_GGUF_Q2_K)
	FormatGGUFQ3K          = Format(C.NINFER_FORMAT_GGUF_Q3_K)
	FormatGGUFQ4K          = Format(C.NINFER_FORMAT_GGUF_Q4_K)
	FormatGGUFQ5K          = Format(C.NINFER_FORMAT_GGUF_Q5_K)
	FormatGGUFQ6K          = Format(C.NINFER_FORMAT_GGUF_Q6_K)
	FormatGGUFIQ2XXS       = Format(C.NINFER_FORMAT_GGUF_IQ2_XXS)
	FormatGGUFIQ2XS        = Format(C.NINFER_FORMAT_GGUF_IQ2_XS)
	FormatGGUFIQ3XXS       = Format(C.NINFER_FORMAT_GGUF_IQ3_XXS)
	FormatGGUFIQ1S         = Format(C.NINFER_FORMAT_GGUF_IQ1_S)
	FormatGGUFIQ4NL        = Format(C.NINFER_FORMAT_GGUF_IQ4_NL)
	FormatGGUFIQ3S         = Format(C.NINFER_FORMAT_GGUF_IQ3_S)
	FormatGGUFIQ2S         = Format(C.NINFER_FORMAT_GGUF_IQ2_S)
	FormatGGUFIQ4XS        = Format(C.NINFER_FORMAT_GGUF_IQ4_XS)
	FormatGGUFIQ1M         = Format(C.NINFER_FORMAT_GGUF_IQ1_M)
)

// Layouts.
const (
	LayoutContiguousLEV1        = Layout(C.NINFER_LAYOUT_CONTIGUOUS_LE_V1)
	LayoutRowSplitK128V1        = Layout(C.NINFER_LAYOUT_ROW_SPLIT_K128_V1)
	LayoutBlockScaleK16M128x4V1 = Layout(C.NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1)
	LayoutRowScaleV1            = Layout(C.NINFER_LAYOUT_ROW_SCALE_V1)
	LayoutRowInterleavedV1      = Layout(C.NINFER_LAYOUT_ROW_INTERLEAVED_V1)
	LayoutGGUFBlocksV1          = Layout(C.NINFER_LAYOUT_GGUF_BLOCKS_V1)
)

// Dtypes.
const (
	DtypeF32  = Dtype(C.NINFER_DTYPE_F32)
	DtypeBF16 = Dtype(C.NINFER_DTYPE_BF16)
	DtypeF16  = Dtype(C.NINFER_DTYPE_F16)
)

// Size is the element size of a dtype in bytes (0 for an unknown dtype).
func (d Dtype) Size() int {
	switch d {
	case DtypeF32:
		return 4
	case DtypeBF16, DtypeF16:
		return 2
	}
	return 0
}

// FormatInfo is everything the registry knows about one format (spec §1).
type FormatInfo struct {
	Format        Format
	Name          string
	Category      Category
	CodeBits      uint32 // logical code width in bits; 0 for GGUF blocks
	BlockValues   uint32 // values per group / block (1 for direct and row-scaled)
	BlockBytes    uint32 // bytes per group / block including its scale
	ScaleType     ScaleType
	Layout        Layout  // the registered layout
	CodeMin       int64   // smallest legal signed code, else 0
	CodeMax       int64   // largest legal signed code, else 0
	QMax          int32   // grouped_absmax's scale denominator, 0 where refused
	GGMLType      int32   // ggml type id with bit-identical data, or -1
	BitsPerWeight float64 // ideal logical bits per weight for full blocks
}

// FormatCount is the number of registered formats (numbers 0 .. FormatCount()-1).
func FormatCount() int { return int(C.ninfer_format_count()) }

// FormatAt is the format at registry index i (0 .. FormatCount()-1).
func FormatAt(i uint32) (Format, error) {
	var f C.uint32_t
	err := call(func() C.ninfer_status { return C.ninfer_format_at(C.uint32_t(i), &f) })
	return Format(f), err
}

// LookupFormat finds a format by its exact canonical name ("q4_g64_fp16", "gguf_q4_k").
func LookupFormat(name string) (Format, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.uint32_t
	err := call(func() C.ninfer_status { return C.ninfer_format_lookup(cname, &f) })
	return Format(f), err
}

// FormatFromGGMLType is the format bit-identical to a GGUF tensor of ggml type t.
func FormatFromGGMLType(t uint32) (Format, error) {
	var f C.uint32_t
	err := call(func() C.ninfer_status { return C.ninfer_format_from_ggml_type(C.uint32_t(t), &f) })
	return Format(f), err
}

// String is the canonical name, or "format(N)" for an unknown number.
func (f Format) String() string {
	p := C.ninfer_format_name(C.uint32_t(f))
	if p == nil {
		return "format(" + itoa(uint64(f)) + ")"
	}
	return C.GoString(p)
}

// Info returns the registry's facts about f.
func (f Format) Info() (FormatInfo, error) {
	var ci C.ninfer_format_info
	err := call(func() C.ninfer_status { return C.ninfer_format_get_info(C.uint32_t(f), &ci) })
	if err != nil {
		return FormatInfo{}, err
	}
	return FormatInfo{
		Format:        Format(ci.format),
		Name:          C.GoString(ci.name),
		Category:      Category(ci.category),
		CodeBits:      uint32(ci.code_bits),
		BlockValues:   uint32(ci.block_values),
		BlockBytes:    uint32(ci.block_bytes),
		ScaleType:     ScaleType(ci.scale_type),
		Layout:        Layout(ci.layout),
		CodeMin:       int64(ci.code_min),
		CodeMax:       int64(ci.code_max),
		QMax:          int32(ci.qmax),
		GGMLType:      int32(ci.ggml_type),
		BitsPerWeight: float64(ci.bits_per_weight),
	}, nil
}

// LayoutCount is the number of registered layouts.
func LayoutCount() int { return int(C.ninfer_layout_count()) }

// LookupLayout finds a layout by its exact name ("row_split_k128_v1").
func LookupLayout(name string) (Layout, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var l C.uint32_t
	err := call(func() C.ninfer_status { return C.ninfer_layout_lookup(cname, &l) })
	return Layout(l), err
}

// String is the layout's name, or "layout(N)" for an unknown number.
func (l Layout) String() string {
	p := C.ninfer_layout_name(C.uint32_t(l))
	if p == nil {
		return "layout(" + itoa(uint64(l)) + ")"
	}
	return C.GoString(p)
}

// Compatible returns nil when format f may be stored in layout l.
func Compatible(f Format, l Layout) error {
	return call(func() C.ninfer_status {
		return C.ninfer_format_layout_compatible(C.uint32_t(f), C.uint32_t(l))
	})
}

// PlaneSizes is the byte length of each plane of a rows × cols tensor of f in l.
func PlaneSizes(f Format, l Layout, rows, cols uint64) ([MaxPlanes]int, error) {
	var sizes [MaxPlanes]C.size_t
	var out [MaxPlanes]int
	err := call(func() C.ninfer_status {
		return C.ninfer_layout_plane_sizes(C.uint32_t(f), C.uint32_t(l), C.uint64_t(rows),
			C.uint64_t(cols), &sizes[0], C.size_t(len(sizes)))
	})
	if err != nil {
		return out, err
	}
	for i, s := range sizes {
		out[i] = int(s)
	}
	return out, nil
}

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}
