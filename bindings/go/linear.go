package ninfer

/*
#include <stdlib.h>
#include "ninfer.h"

static ninfer_status ninfer_go_linear_prepare(uint32_t format, uint32_t layout, uint64_t rows,
    uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2, uint32_t device, ninfer_linear **out) {
  ninfer_weight_view v;
  v.format = format;
  v.layout = layout;
  v.rows = rows;
  v.cols = cols;
  v.planes[0].ptr = p0; v.planes[0].len = n0;
  v.planes[1].ptr = p1; v.planes[1].len = n1;
  v.planes[2].ptr = p2; v.planes[2].len = n2;
  return ninfer_linear_prepare(&v, device, out);
}
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Device selects where a Linear runs (NINFER_DEVICE_*).
type Device uint32

// Devices.
const (
	DeviceCPU  = Device(C.NINFER_DEVICE_CPU)
	DeviceCUDA = Device(C.NINFER_DEVICE_CUDA)
)

// Activation is the activation profile of a Linear (NINFER_ACTIVATION_*): what Forward
// multiplies the weight values with (spec §2: the consumer chooses activation precision;
// docs/linear.md "Activation profiles").
type Activation uint32

// Activation profiles.
const (
	// ActivationExact multiplies with x as given: the default of every non-GGUF format,
	// unavailable for GGUF weights.
	ActivationExact = Activation(C.NINFER_ACTIVATION_EXACT)
	// ActivationQ8_1 first quantizes each row of x to ggml's q8_1 blocks (32 values, a
	// binary16 scale d, codes round(x/d) in [-127, 127]) and multiplies with x̂ = d·code:
	// the only profile of GGUF weights, opt-in for q2/t2/q4/q5/q6/q8 grouped formats in
	// row_split_k128_v1 and for nvfp4 (K a multiple of 32).
	ActivationQ8_1 = Activation(C.NINFER_ACTIVATION_Q8_1)
	// ActivationQ8K first quantizes each row of x to ggml's q8_K blocks (256 values, a
	// binary32 scale d, codes in [-127, 127]) and multiplies with x̂ = d·code: opt-in for
	// the GGUF k-quants (Q2_K..Q6_K) and 256-value i-quants (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS,
	// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S), on the CPU.
	ActivationQ8K = Activation(C.NINFER_ACTIVATION_Q8_K)
)

// LinearSupported reports whether this build has a linear kernel for the combination:
// (true, nil) when it has, (false, nil) when the numbers are valid but it has not, and an
// error for numbers that name nothing.
func LinearSupported(f Format, l Layout, x, y Dtype, device Device) (bool, error) {
	err := call(func() C.ninfer_status {
		return C.ninfer_linear_supported(C.uint32_t(f), C.uint32_t(l), C.uint32_t(x), C.uint32_t(y), C.uint32_t(device))
	})
	if e, ok := err.(*Error); ok && e.Status == StatusUnsupported {
		return false, nil
	}
	return err == nil, err
}

// ActivationSupported reports whether this build computes linear for weights of f in l on
// device with the activation profile a: (true, nil) when it does, (false, nil) when the
// numbers are valid but it does not (Exact on GGUF formats, Q8_1 on bf16, fp32, fp8 rows,
// any CUDA combination in a build without CUDA support), and an error for numbers that name nothing
// (ErrUnknownFormat, ErrUnknownLayout, ErrIncompatibleLayout, ErrInvalidArgument for the
// activation or device). Q8_1 also needs K to be a multiple of 32, checked by SetActivation.
func ActivationSupported(f Format, l Layout, a Activation, device Device) (bool, error) {
	err := call(func() C.ninfer_status {
		return C.ninfer_linear_activation_supported(C.uint32_t(f), C.uint32_t(l), C.uint32_t(a), C.uint32_t(device))
	})
	if e, ok := err.(*Error); ok && e.Status == StatusUnsupported {
		return false, nil
	}
	return err == nil, err
}

// Linear is a weight prepared for y = x · Wᵀ (+ bias) (a ninfer_linear handle).
//
// The C handle reads the weight's planes until it is freed, and cgo forbids C to keep Go
// pointers after a call, so PrepareLinear copies the planes once into C memory that the
// Linear owns. Close frees the handle and the copies; a finalizer calls Close for a Linear
// that was dropped without it (a safety net: call Close). Forward may run concurrently.
type Linear struct {
	mu     sync.RWMutex
	handle *C.ninfer_linear
	planes [MaxPlanes]unsafe.Pointer // C copies of the weight planes
	Rows   uint64                    // N: outputs per row of x
	Cols   uint64                    // K: inputs per row of x
}

// PrepareLinear prepares the weight v for device. DeviceCUDA is PrepareLinearCUDA(v, 0):
// the planes are uploaded, and no host copy is kept.
func PrepareLinear(v *WeightView, device Device) (*Linear, error) {
	if device == DeviceCUDA {
		return PrepareLinearCUDA(v, 0)
	}
	l := &Linear{}
	var ptrs [MaxPlanes]*C.uint8_t
	var lens [MaxPlanes]C.size_t
	for i, p := range v.Planes {
		if len(p) > 0 {
			l.planes[i] = C.CBytes(p)
			ptrs[i], lens[i] = (*C.uint8_t)(l.planes[i]), C.size_t(len(p))
		}
	}
	var h *C.ninfer_linear
	err := call(func() C.ninfer_status {
		return C.ninfer_go_linear_prepare(C.uint32_t(v.Format), C.uint32_t(v.Layout),
			C.uint64_t(v.Rows), C.uint64_t(v.Cols), ptrs[0], lens[0], ptrs[1], lens[1],
			ptrs[2], lens[2], C.uint32_t(device), &h)
	})
	if err != nil {
		l.freePlanes()
		return nil, err
	}
	l.handle = h
	var rows, cols C.uint64_t
	if err := call(func() C.ninfer_status { return C.ninfer_linear_shape(h, &rows, &cols) }); err != nil {
		l.Close()
		return nil, err
	}
	l.Rows, l.Cols = uint64(rows), uint64(cols)
	runtime.SetFinalizer(l, (*Linear).Close)
	return l, nil
}

func (l *Linear) freePlanes() {
	for i, p := range l.planes {
		if p != nil {
			C.free(p)
			l.planes[i] = nil
		}
	}
}

// Close frees the handle and the plane copies. Safe to call more than once.
func (l *Linear) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle != nil {
		C.ninfer_linear_free(l.handle)
		l.handle = nil
	}
	l.freePlanes()
	runtime.SetFinalizer(l, nil)
	return nil
}

var errClosed = &Error{Status: StatusNullPointer, Message: "Linear is closed"}

// SetThreads sets the threads Forward uses: 0 = a process-wide pool (default), 1 = the
// calling thread, n = the calling thread and n − 1 pool threads owned by this Linear.
func (l *Linear) SetThreads(n uint32) error {
	l.mu.Lock() // must not overlap any other call on the handle
	defer l.mu.Unlock()
	if l.handle == nil {
		return errClosed
	}
	return call(func() C.ninfer_status { return C.ninfer_linear_set_threads(l.handle, C.uint32_t(n)) })
}

// SetActivation chooses the activation profile Forward uses (defaults: GGUF formats
// ActivationQ8_1, every other format ActivationExact). Errors, with the setting unchanged:
// ErrInvalidArgument (an unknown profile number), ErrUnsupported (Exact on a GGUF weight,
// Q8_1 on a format without it; see ActivationSupported), ErrBadShape (Q8_1 with K not a
// multiple of 32).
func (l *Linear) SetActivation(a Activation) error {
	l.mu.Lock() // must not overlap any other call on the handle
	defer l.mu.Unlock()
	if l.handle == nil {
		return errClosed
	}
	return call(func() C.ninfer_status { return C.ninfer_linear_set_activation(l.handle, C.uint32_t(a)) })
}

// ForwardInto computes y = x · Wᵀ (+ bias) for x [m, Cols] into y [m, Rows] (float32).
// bias is nil or Rows values.
func (l *Linear) ForwardInto(x []float32, m uint64, bias []float32, y []float32) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.handle == nil {
		return errClosed
	}
	var px, py unsafe.Pointer
	var pb *C.float
	if len(x) > 0 {
		px = unsafe.Pointer(&x[0])
	}
	if len(y) > 0 {
		py = unsafe.Pointer(&y[0])
	}
	if len(bias) > 0 {
		pb = (*C.float)(unsafe.Pointer(&bias[0]))
	}
	err := call(func() C.ninfer_status {
		return C.ninfer_linear_forward(l.handle, px, C.size_t(4*len(x)), C.uint32_t(DtypeF32),
			C.uint64_t(m), C.uint64_t(l.Cols), pb, C.size_t(len(bias)), py, C.size_t(4*len(y)),
			C.uint32_t(DtypeF32))
	})
	runtime.KeepAlive(l)
	return err
}

// ForwardRowsInto computes the outputs n0..n1 of ForwardInto with strided rows
// (ninfer_linear_forward_rows): x holds m rows ldx values apart ((m−1)·ldx + Cols values),
// y holds m rows ldy values apart (ldy ≥ n1; (m−1)·ldy + n1 values; y[0] is column 0 of
// row 0, not column n0), and only y[r·ldy + n] for r < m, n0 ≤ n < n1 is written. bias is
// nil or at least n1 values, indexed by the absolute n. The results are the bits of the
// same outputs of ForwardInto. Several goroutines may fill disjoint ranges of one y at
// once (after SetThreads(1), each call runs on its own goroutine's thread). Errors, with
// nothing written: ErrInvalidArgument (n0 > n1), ErrRowOutOfRange (n1 > Rows),
// ErrBadShape (ldx < Cols, ldy < n1), ErrBufferTooSmall, ErrUnsupported (a CUDA weight
// with a range or strides).
func (l *Linear) ForwardRowsInto(x []float32, m, ldx uint64, bias []float32, n0, n1 uint64,
	y []float32, ldy uint64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.handle == nil {
		return errClosed
	}
	var px, py unsafe.Pointer
	var pb *C.float
	if len(x) > 0 {
		px = unsafe.Pointer(&x[0])
	}
	if len(y) > 0 {
		py = unsafe.Pointer(&y[0])
	}
	if len(bias) > 0 {
		pb = (*C.float)(unsafe.Pointer(&bias[0]))
	}
	err := call(func() C.ninfer_status {
		return C.ninfer_linear_forward_rows(l.handle, px, C.size_t(4*len(x)),
			C.uint32_t(DtypeF32), C.uint64_t(m), C.uint64_t(l.Cols), C.uint64_t(ldx), pb,
			C.size_t(len(bias)), C.uint64_t(n0), C.uint64_t(n1), py, C.size_t(4*len(y)),
			C.uint32_t(DtypeF32), C.uint64_t(ldy))
	})
	runtime.KeepAlive(l)
	return err
}

// Forward computes y = x · Wᵀ (+ bias) for x [m, Cols] and returns y [m, Rows].
func (l *Linear) Forward(x []float32, m uint64, bias []float32) ([]float32, error) {
	if m != 0 && l.Rows > uint64(^uint(0)>>1)/4/m {
		return nil, &Error{Status: StatusOverflow, Message: "m × N overflows"}
	}
	y := make([]float32, m*l.Rows)
	if err := l.ForwardInto(x, m, bias, y); err != nil {
		return nil, err
	}
	return y, nil
}
