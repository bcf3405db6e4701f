package ninfer

/*
#include "ninfer.h"

// The view is assembled here, on the C stack, from plane pointers passed as direct
// arguments: Go memory never holds a struct with Go pointers handed to C (see package doc).
#define NINFER_GO_VIEW_PARAMS uint32_t format, uint32_t layout, uint64_t rows, uint64_t cols, \
    const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1, const uint8_t *p2, size_t n2
#define NINFER_GO_VIEW_INIT                                          \
  ninfer_weight_view v;                                              \
  v.format = format;                                                 \
  v.layout = layout;                                                 \
  v.rows = rows;                                                     \
  v.cols = cols;                                                     \
  v.planes[0].ptr = p0; v.planes[0].len = n0;                        \
  v.planes[1].ptr = p1; v.planes[1].len = n1;                        \
  v.planes[2].ptr = p2; v.planes[2].len = n2

static ninfer_status ninfer_go_view_check(NINFER_GO_VIEW_PARAMS) {
  NINFER_GO_VIEW_INIT;
  return ninfer_weight_view_check(&v);
}
static ninfer_status ninfer_go_decode_row(NINFER_GO_VIEW_PARAMS, uint64_t row, float *out,
    size_t out_len) {
  NINFER_GO_VIEW_INIT;
  return ninfer_decode_row(&v, row, out, out_len);
}
static ninfer_status ninfer_go_decode_row_as(NINFER_GO_VIEW_PARAMS, uint64_t row,
    uint32_t dtype, uint8_t *out, size_t out_bytes) {
  NINFER_GO_VIEW_INIT;
  return ninfer_decode_row_as(&v, row, dtype, out, out_bytes);
}
static ninfer_status ninfer_go_decode_rows(NINFER_GO_VIEW_PARAMS, uint64_t first,
    uint64_t count, void *out, size_t out_bytes, uint32_t dtype) {
  NINFER_GO_VIEW_INIT;
  return ninfer_decode_rows(&v, first, count, out, out_bytes, dtype);
}
static ninfer_status ninfer_go_validate(NINFER_GO_VIEW_PARAMS, uint64_t *out_row,
    uint64_t *out_block) {
  NINFER_GO_VIEW_INIT;
  return ninfer_validate(&v, out_row, out_block);
}
static ninfer_status ninfer_go_fp8_row_validate(NINFER_GO_VIEW_PARAMS) {
  NINFER_GO_VIEW_INIT;
  return ninfer_fp8_row_validate(&v);
}
static ninfer_status ninfer_go_nvfp4_validate(NINFER_GO_VIEW_PARAMS) {
  NINFER_GO_VIEW_INIT;
  return ninfer_nvfp4_validate(&v);
}
static ninfer_status ninfer_go_rows_copy(NINFER_GO_VIEW_PARAMS, uint64_t start, uint64_t count,
    uint8_t *out, size_t out_len, size_t *written) {
  NINFER_GO_VIEW_INIT;
  return ninfer_rows_copy(&v, start, count, out, out_len, written);
}
static ninfer_status ninfer_go_rows_gather(NINFER_GO_VIEW_PARAMS, const uint64_t *indices,
    size_t n_indices, uint8_t *out, size_t out_len, size_t *written) {
  NINFER_GO_VIEW_INIT;
  return ninfer_rows_gather(&v, indices, n_indices, out, out_len, written);
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

// viewArgs are a view's fields as the shims' flat C arguments.
type viewArgs struct {
	format, layout C.uint32_t
	rows, cols     C.uint64_t
	p0, p1, p2     *C.uint8_t
	n0, n1, n2     C.size_t
}

func (v *WeightView) args() viewArgs {
	a := viewArgs{format: C.uint32_t(v.Format), layout: C.uint32_t(v.Layout),
		rows: C.uint64_t(v.Rows), cols: C.uint64_t(v.Cols)}
	a.p0, a.n0 = bytesArg(v.Planes[0])
	a.p1, a.n1 = bytesArg(v.Planes[1])
	a.p2, a.n2 = bytesArg(v.Planes[2])
	return a
}

// Check verifies the view's structure (known format and layout, a registered pair, a
// legal shape, exact plane lengths) without reading the payload.
func (v *WeightView) Check() error {
	a := v.args()
	return call(func() C.ninfer_status {
		return C.ninfer_go_view_check(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
}

// DecodeRow decodes row `row` into out[:Cols] as float32 (exact represented values;
// GGUF: bit-identical to ggml's dequantize_row_*). out is written only on success.
func (v *WeightView) DecodeRow(row uint64, out []float32) error {
	a := v.args()
	var po *C.float
	if len(out) > 0 {
		po = (*C.float)(unsafe.Pointer(&out[0]))
	}
	return call(func() C.ninfer_status {
		return C.ninfer_go_decode_row(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
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
	a := v.args()
	po, no := bytesArg(out)
	return call(func() C.ninfer_status {
		return C.ninfer_go_decode_row_as(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
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

// DecodeRowsAs decodes rows first .. first+count into out as dtype dt (native-endian
// bytes), row after row, in one library call (ninfer_decode_rows): row first+i starts at
// byte i × Cols × dt.Size(). len(out) must be >= count × Cols × dt.Size() and out aligned
// to dt.Size(). Nothing is written unless it succeeds (a refused row of grouped, fp8 or
// nvfp4 formats is found before any row is written).
func (v *WeightView) DecodeRowsAs(first, count uint64, dt Dtype, out []byte) error {
	a := v.args()
	var po unsafe.Pointer
	if len(out) > 0 {
		po = unsafe.Pointer(&out[0])
	}
	return call(func() C.ninfer_status {
		return C.ninfer_go_decode_rows(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
			C.uint64_t(first), C.uint64_t(count), po, C.size_t(len(out)), C.uint32_t(dt))
	})
}

// DecodeRows decodes rows first .. first+count into out as float32 (count × Cols values,
// row-major), in one library call; the values are DecodeRow's.
func (v *WeightView) DecodeRows(first, count uint64, out []float32) error {
	var b []byte
	if len(out) > 0 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*len(out))
	}
	return v.DecodeRowsAs(first, count, DtypeF32, b)
}

// Decode decodes every row into a new slice of Rows × Cols float32 values (row-major), in
// one library call.
func (v *WeightView) Decode() ([]float32, error) {
	// Check first: a bad shape is reported as such, not as a huge allocation.
	if err := v.Check(); err != nil {
		return nil, err
	}
	if v.Cols != 0 && v.Rows > uint64(math.MaxInt)/4/v.Cols {
		return nil, &Error{Status: StatusOverflow, Message: "rows × cols too large to decode at once"}
	}
	out := make([]float32, int(v.Rows*v.Cols))
	if err := v.DecodeRows(0, v.Rows, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Validate checks every encoding rule of the view's format over its whole payload. An
// INVALID_ENCODING error carries the first offending row and block (or group) in Location.
func (v *WeightView) Validate() error {
	a := v.args()
	var row, block C.uint64_t
	err := call(func() C.ninfer_status {
		return C.ninfer_go_validate(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
			&row, &block)
	})
	if e, ok := err.(*Error); ok && e.Status == StatusInvalidEncoding {
		e.Location = &Location{Row: uint64(row), Block: uint64(block)}
	}
	return err
}

// FP8RowValidate checks a row-scaled FP8 view against spec §3.4.
func (v *WeightView) FP8RowValidate() error {
	a := v.args()
	return call(func() C.ninfer_status {
		return C.ninfer_go_fp8_row_validate(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
}

// NVFP4Validate checks an nvfp4 view against spec §3.3 and its layout.
func (v *WeightView) NVFP4Validate() error {
	a := v.args()
	return call(func() C.ninfer_status {
		return C.ninfer_go_nvfp4_validate(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2)
	})
}

// rowsBytes is the payload size of `count` rows of this view's format and layout.
func (v *WeightView) rowsBytes(count uint64) (int, error) {
	if count == 0 {
		return 0, nil
	}
	sizes, err := PlaneSizes(v.Format, v.Layout, count, v.Cols)
	if err != nil {
		return 0, err
	}
	return sizes[0] + sizes[1] + sizes[2], nil
}

// RowsCopy returns the payload of rows start .. start+count (planes back to back).
func (v *WeightView) RowsCopy(start, count uint64) ([]byte, error) {
	if err := v.Check(); err != nil {
		return nil, err
	}
	n, err := v.rowsBytes(count)
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	a := v.args()
	po, no := bytesArg(out)
	var written C.size_t
	err = call(func() C.ninfer_status {
		return C.ninfer_go_rows_copy(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
			C.uint64_t(start), C.uint64_t(count), po, no, &written)
	})
	if err != nil {
		return nil, err
	}
	return out[:written], nil
}

// RowsGather returns the payload of the rows `indices` (any order, repeats allowed).
func (v *WeightView) RowsGather(indices []uint64) ([]byte, error) {
	if err := v.Check(); err != nil {
		return nil, err
	}
	n, err := v.rowsBytes(uint64(len(indices)))
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	a := v.args()
	po, no := bytesArg(out)
	var pi *C.uint64_t
	if len(indices) > 0 {
		pi = (*C.uint64_t)(unsafe.Pointer(&indices[0]))
	}
	var written C.size_t
	err = call(func() C.ninfer_status {
		return C.ninfer_go_rows_gather(a.format, a.layout, a.rows, a.cols, a.p0, a.n0, a.p1, a.n1, a.p2, a.n2,
			pi, C.size_t(len(indices)), po, no, &written)
	})
	if err != nil {
		return nil, err
	}
	return out[:written], nil
}
