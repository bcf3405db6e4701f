package ninfer

/*
#include "ninfer.h"

// The view is assembled here, on the C stack, from plane pointers passed as direct
// arguments: Go memory never holds a struct with Go pointers handed to C (see package doc).
static inline ninfer_weight_view ninfer_go_view(uint32_t format, uint32_t layout,
    uint64_t rows, uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1,
    size_t n1, const uint8_t *p2, size_t n2) {
  ninfer_weight_view v;
  v.format = format;
  v.layout = layout;
  v.rows = rows;
  v.cols = cols;
  v.planes[0].ptr = p0; v.planes[0].len = n0;
  v.planes[1].ptr = p1; v.planes[1].len = n1;
  v.planes[2].ptr = p2; v.planes[2].len = n2;
  return v;
}

static ninfer_status ninfer_go_view_check(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2) {
  ninfer_weight_view v = ninfer_go_view(format, layout, rows, cols, p0, n0, p1, n1, p2, n2);
  return ninfer_weight_view_check(&v);
}

static ninfer_status ninfer_go_decode_row(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2, uint64_t row, float *out, size_t out_len) {
  ninfer_weight_view v = ninfer_go_view(format, layout, rows, cols, p0, n0, p1, n1, p2, n2);
  return ninfer_decode_row(&v, row, out, out_len);
}

static ninfer_status ninfer_go_decode_row_as(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2, uint64_t row, uint32_t dtype, uint8_t *out, size_t out_bytes) {
  ninfer_weight_view v = ninfer_go_view(format, layout, rows, cols, p0, n0, p1, n1, p2, n2);
  return ninfer_decode_row_as(&v, row, dtype, out, out_bytes);
}
*/
import "C"

import (
	"math"
	"unsafe"
)

// WeightView is a borrowed persistent tensor: its format, layout, logical shape
// [Rows, Cols] (Cols = K, the quantization axis) and the layout's byte planes (unused
// planes nil). The library reads the planes only during a call and keeps nothing.
type WeightView struct {
	Format Format
	Layout Layout
	Rows   uint64
	Cols   uint64
	Planes [MaxPlanes][]byte
}

// NewWeightView builds a view with the format's registered layout.
func NewWeightView(f Format, rows, cols uint64, planes ...[]byte) (*WeightView, error) {
	info, err := f.Info()
	if err != nil {
		return nil, err
	}
	if len(planes) > MaxPlanes {
		return nil, &Error{Status: StatusInvalidArgument, Message: "more than MaxPlanes planes"}
	}
	v := &WeightView{Format: f, Layout: info.Layout, Rows: rows, Cols: cols}
	copy(v.Planes[:], planes)
	return v, nil
}

// bytesArg is a plane as a (pointer, length) cgo argument: NULL for an empty slice.
func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// Check verifies the view's structure (known format and layout, a registered pair, a
// legal shape, exact plane lengths) without reading the payload.
func (v *WeightView) Check() error {
	p0, n0 := bytesArg(v.Planes[0])
	p1, n1 := bytesArg(v.Planes[1])
	p2, n2 := bytesArg(v.Planes[2])
	return call(func() C.ninfer_status {
		return C.ninfer_go_view_check(C.uint32_t(v.Format), C.uint32_t(v.Layout),
			C.uint64_t(v.Rows), C.uint64_t(v.Cols), p0, n0, p1, n1, p2, n2)
	})
}

// DecodeRow decodes row `row` into out[:Cols] as float32 (exact represented values;
// GGUF: bit-identical to ggml's dequantize_row_*). out is written only on success.
func (v *WeightView) DecodeRow(row uint64, out []float32) error {
	p0, n0 := bytesArg(v.Planes[0])
	p1, n1 := bytesArg(v.Planes[1])
	p2, n2 := bytesArg(v.Planes[2])
	var po *C.float
	if len(out) > 0 {
		po = (*C.float)(unsafe.Pointer(&out[0]))
	}
	return call(func() C.ninfer_status {
		return C.ninfer_go_decode_row(C.uint32_t(v.Format), C.uint32_t(v.Layout),
			C.uint64_t(v.Rows), C.uint64_t(v.Cols), p0, n0, p1, n1, p2, n2,
			C.uint64_t(row), po, C.size_t(len(out)))
	})
}

// Row decodes row `row` into a new slice of Cols float32 values.
func (v *WeightView) Row(row uint64) ([]float32, error) {
	// Check first: a bad shape is reported as such, not as a huge allocation.
	if err := v.Check(); err != nil {
		return nil, err
	}
	if v.Cols > uint64(math.MaxInt)/4 {
		return nil, &Error{Status: StatusOverflow, Message: "cols too large for one row"}
	}
	out := make([]float32, int(v.Cols))
	if err := v.DecodeRow(row, out); err != nil {
		return nil, err
	}
	return out, nil
}

// DecodeRowAs decodes row `row` into out as dtype dt (native-endian bytes): f32 as
// DecodeRow; bf16 and f16 rounded to nearest-even. len(out) must be >= Cols × dt.Size().
func (v *WeightView) DecodeRowAs(row uint64, dt Dtype, out []byte) error {
	p0, n0 := bytesArg(v.Planes[0])
	p1, n1 := bytesArg(v.Planes[1])
	p2, n2 := bytesArg(v.Planes[2])
	po, no := bytesArg(out)
	return call(func() C.ninfer_status {
		return C.ninfer_go_decode_row_as(C.uint32_t(v.Format), C.uint32_t(v.Layout),
			C.uint64_t(v.Rows), C.uint64_t(v.Cols), p0, n0, p1, n1, p2, n2,
			C.uint64_t(row), C.uint32_t(dt), po, no)
	})
}

// DecodeRowAs16 decodes row `row` into out as bf16 or f16 words.
func (v *WeightView) DecodeRowAs16(row uint64, dt Dtype, out []uint16) error {
	var b []byte
	if len(out) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 2*len(out))
	}
	return v.DecodeRowAs(row, dt, b)
}
