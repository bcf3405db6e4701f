package ninfer

/*
#include "ninfer.h"
*/
import "C"

import "unsafe"

// QuantizeRowQ8_1 quantizes one activation row x (len(x) a positive multiple of 32) as
// the q8_1 activation profile does (every GGUF product; ActivationQ8_1 on the grouped
// formats and nvfp4): blocks are len(x)/32 ggml block_q8_1 of 36 bytes (binary16 d at 0,
// binary16 s at 2, little-endian, 32 int8 codes at 4), xHat the len(x) values
// f32(d)·q that the product multiplies, for an f64 oracle (docs/linear.md, "Checking a
// product").
func QuantizeRowQ8_1(x []float32) (blocks []byte, xHat []float32, err error) {
	if len(x) == 0 || len(x)%32 != 0 {
		// The library's refusal, before allocating from len(x).
		var px *C.float
		if len(x) > 0 {
			px = (*C.float)(unsafe.Pointer(&x[0]))
		}
		return nil, nil, call(func() C.ninfer_status {
			return C.ninfer_quantize_row_q8_1(px, C.size_t(len(x)), nil, 0, nil, 0)
		})
	}
	blocks = make([]byte, len(x)/32*36)
	xHat = make([]float32, len(x))
	err = call(func() C.ninfer_status {
		return C.ninfer_quantize_row_q8_1((*C.float)(unsafe.Pointer(&x[0])), C.size_t(len(x)),
			(*C.uint8_t)(unsafe.Pointer(&blocks[0])), C.size_t(len(blocks)),
			(*C.float)(unsafe.Pointer(&xHat[0])), C.size_t(len(xHat)))
	})
	if err != nil {
		return nil, nil, err
	}
	return blocks, xHat, nil
}

// QuantizeRowQ8_K quantizes one activation row x (len(x) a positive multiple of 256) as
// the opt-in q8_K activation profile does (ActivationQ8_K on the GGUF k-quants and
// 256-value i-quants): len(x)/256 ggml block_q8_K of 292 bytes (binary32 d at 0, 256 int8
// codes at 4, 16 int16 sums at 260, little-endian). The product multiplies x̂ = d·q, exact
// in float64 (not in float32), for an f64 oracle (docs/linear.md, "Checking a product").
func QuantizeRowQ8_K(x []float32) (blocks []byte, err error) {
	if len(x) == 0 || len(x)%256 != 0 {
		// The library's refusal, before allocating from len(x).
		var px *C.float
		if len(x) > 0 {
			px = (*C.float)(unsafe.Pointer(&x[0]))
		}
		return nil, call(func() C.ninfer_status {
			return C.ninfer_quantize_row_q8_k(px, C.size_t(len(x)), nil, 0)
		})
	}
	blocks = make([]byte, len(x)/256*292)
	err = call(func() C.ninfer_status {
		return C.ninfer_quantize_row_q8_k((*C.float)(unsafe.Pointer(&x[0])), C.size_t(len(x)),
			(*C.uint8_t)(unsafe.Pointer(&blocks[0])), C.size_t(len(blocks)))
	})
	if err != nil {
		return nil, err
	}
	return blocks, nil
}

// Convert converts the values of src (native-endian words of srcType) into dst as dstType
// (ninfer_convert): widening exact, narrowing rounded to nearest even (binary16 overflow
// gives ±Inf). Each slice must be aligned to its element size; len(dst) must hold every
// value.
func Convert(src []byte, srcType Dtype, dst []byte, dstType Dtype) error {
	var ps, pd unsafe.Pointer
	if len(src) > 0 {
		ps = unsafe.Pointer(&src[0])
	}
	if len(dst) > 0 {
		pd = unsafe.Pointer(&dst[0])
	}
	return call(func() C.ninfer_status {
		return C.ninfer_convert(ps, C.size_t(len(src)), C.uint32_t(srcType), pd, C.size_t(len(dst)),
			C.uint32_t(dstType))
	})
}

// ToF32 gives the exact float32 values of bf16 or binary16 words (t = DtypeBF16, DtypeF16).
func ToF32(words []uint16, t Dtype) ([]float32, error) {
	out := make([]float32, len(words))
	if len(words) == 0 {
		return out, nil
	}
	src := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 2*len(words))
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*len(out))
	if err := Convert(src, t, dst, DtypeF32); err != nil {
		return nil, err
	}
	return out, nil
}

// FromF32 rounds float32 values to the nearest (ties to even) bf16 or binary16 words.
func FromF32(x []float32, t Dtype) ([]uint16, error) {
	out := make([]uint16, len(x))
	if len(x) == 0 {
		return out, nil
	}
	src := unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 2*len(out))
	if err := Convert(src, DtypeF32, dst, t); err != nil {
		return nil, err
	}
	return out, nil
}
