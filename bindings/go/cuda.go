package ninfer

/*
#include <stdint.h>
#include <string.h>
#include "ninfer.h"

static ninfer_status ninfer_go_cuda_linear_prepare(uint32_t format, uint32_t layout,
    uint64_t rows, uint64_t cols, const uint8_t *p0, size_t n0, const uint8_t *p1, size_t n1,
    const uint8_t *p2, size_t n2, uint32_t ordinal, ninfer_linear **out) {
  ninfer_weight_view v;
  v.format = format;
  v.layout = layout;
  v.rows = rows;
  v.cols = cols;
  v.planes[0].ptr = p0; v.planes[0].len = n0;
  v.planes[1].ptr = p1; v.planes[1].len = n1;
  v.planes[2].ptr = p2; v.planes[2].len = n2;
  return ninfer_cuda_linear_prepare(&v, ordinal, out);
}

// Streams travel from Go as integers (a CUstream is a pointer the Go side never follows).
static ninfer_status ninfer_go_cuda_linear_forward(const ninfer_linear *h, uint64_t x,
    uint32_t x_dtype, uint64_t m, uint64_t k, uint64_t bias, uint64_t y, uint32_t y_dtype,
    uintptr_t stream, uint64_t workspace, uint64_t workspace_bytes) {
  return ninfer_cuda_linear_forward(h, x, x_dtype, m, k, bias, y, y_dtype, (void *)stream,
                                    workspace, workspace_bytes);
}

static ninfer_status ninfer_go_cuda_linear_decode_rows(const ninfer_linear *h, uint64_t first,
    uint64_t count, uint64_t out, uint32_t out_dtype, uintptr_t stream) {
  return ninfer_cuda_linear_decode_rows(h, first, count, out, out_dtype, (void *)stream);
}

// For the tests: every CUDA entry point with its pointer argument NULL, and whether a
// refused call left its output alone (cgo cannot be used from _test.go files).
static void ninfer_go_cuda_null_statuses(ninfer_status out[8]) {
  ninfer_linear *h = NULL;
  uint64_t n = 0;
  ninfer_device_view dv;
  memset(&dv, 0, sizeof dv);
  out[0] = ninfer_cuda_device_count(NULL);
  out[1] = ninfer_cuda_device_properties(0, NULL);
  out[2] = ninfer_cuda_linear_prepare(NULL, 0, &h);
  out[3] = ninfer_cuda_linear_prepare_device(NULL, 0, &h);
  out[4] = ninfer_cuda_linear_prepare_device(&dv, 0, NULL);
  out[5] = ninfer_cuda_linear_workspace_size(NULL, 1, &n);
  out[6] = ninfer_cuda_linear_forward(NULL, 1, NINFER_DTYPE_F32, 1, 1, 0, 1, NINFER_DTYPE_F32,
                                      NULL, 0, 0);
  out[7] = ninfer_cuda_linear_decode_rows(NULL, 0, 1, 1, NINFER_DTYPE_F32, NULL);
}

static int ninfer_go_cuda_outputs_untouched(void) {
  uint32_t count = 77;
  ninfer_cuda_device_info info;
  memset(&info, 0xAB, sizeof info);
  ninfer_linear *h = (ninfer_linear *)(uintptr_t)0x1230;
  float w[6] = {0, 1, 2, 3, 4, 5};
  ninfer_weight_view v;
  memset(&v, 0, sizeof v);
  v.format = NINFER_FORMAT_FP32;
  v.layout = NINFER_LAYOUT_CONTIGUOUS_LE_V1;
  v.rows = 2;
  v.cols = 3;
  v.planes[0].ptr = (const uint8_t *)w;
  v.planes[0].len = sizeof w;
  return ninfer_cuda_device_count(&count) == NINFER_STATUS_NO_DEVICE && count == 77 &&
         ninfer_cuda_device_properties(0, &info) == NINFER_STATUS_NO_DEVICE &&
         info.multiprocessors == 0xABABABABu &&
         ninfer_cuda_linear_prepare(&v, 0, &h) == NINFER_STATUS_NO_DEVICE &&
         h == (ninfer_linear *)(uintptr_t)0x1230;
}
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// CUDA: every build of the library has these entry points. Without CUDA support in the
// build (cargo feature `cuda`, CMake -DNINFER_CUDA=ON), without the NVIDIA driver or
// without a GPU they fail with ErrNoDevice, the message saying which. Device memory travels
// as uint64 addresses (CUdeviceptr), streams as CUDAStream (a CUstream; 0 = the default
// stream). A Linear prepared with DeviceCUDA or PrepareLinearCUDA computes on the device:
// Forward on host slices (copies in and out, synchronous), CUDAForward on device buffers.

// CUDAStream is a CUstream handle as an integer; 0 is the device's default stream.
type CUDAStream uintptr

// CUDACompiled reports whether the linked library was built with CUDA support. It says
// nothing about the machine: see CUDADeviceCount.
func CUDACompiled() bool { return C.ninfer_cuda_compiled() != 0 }

// CUDADeviceCount is the number of CUDA devices; ErrNoDevice without CUDA support or
// driver.
func CUDADeviceCount() (uint32, error) {
	var n C.uint32_t
	err := call(func() C.ninfer_status { return C.ninfer_cuda_device_count(&n) })
	return uint32(n), err
}

// CUDADeviceInfo holds the properties of one CUDA device (ninfer_cuda_device_info).
type CUDADeviceInfo struct {
	Name                   string
	ComputeCapabilityMajor uint32
	ComputeCapabilityMinor uint32
	TotalMemoryBytes       uint64
	Multiprocessors        uint32
	L2CacheBytes           uint32
	// NativeCubin: the library holds a CUBIN for the device (else its PTX is JIT-compiled
	// once on first use).
	NativeCubin bool
}

// CUDADeviceProperties returns the properties of device ordinal; ErrNoDevice as
// CUDADeviceCount, or for an ordinal with no device.
func CUDADeviceProperties(ordinal uint32) (CUDADeviceInfo, error) {
	var info C.ninfer_cuda_device_info
	err := call(func() C.ninfer_status { return C.ninfer_cuda_device_properties(C.uint32_t(ordinal), &info) })
	if err != nil {
		return CUDADeviceInfo{}, err
	}
	return CUDADeviceInfo{
		Name:                   C.GoString(&info.name[0]),
		ComputeCapabilityMajor: uint32(info.compute_capability_major),
		ComputeCapabilityMinor: uint32(info.compute_capability_minor),
		TotalMemoryBytes:       uint64(info.total_memory_bytes),
		Multiprocessors:        uint32(info.multiprocessors),
		L2CacheBytes:           uint32(info.l2_cache_bytes),
		NativeCubin:            info.native_cubin != 0,
	}, nil
}

// DeviceView is a weight whose planes are already in device memory
// (ninfer_device_view): the fields of WeightView with each plane as a device address and
// a byte length (unused planes 0 and 0).
type DeviceView struct {
	Format         Format
	Layout         Layout
	Rows, Cols     uint64
	PlaneAddresses [MaxPlanes]uint64
	PlaneLengths   [MaxPlanes]uint64
}

// PrepareLinearCUDA copies v's planes once to CUDA device ordinal
// (ninfer_cuda_linear_prepare; PrepareLinear with DeviceCUDA does the same on device 0).
// Nothing of v is kept. Close frees the device copy.
func PrepareLinearCUDA(v *WeightView, ordinal uint32) (*Linear, error) {
	var ptrs [MaxPlanes]*C.uint8_t
	var lens [MaxPlanes]C.size_t
	for i, p := range v.Planes {
		if len(p) > 0 {
			// A Go pointer passed as a direct argument: read during the call only.
			ptrs[i], lens[i] = (*C.uint8_t)(unsafe.Pointer(&p[0])), C.size_t(len(p))
		}
	}
	var h *C.ninfer_linear
	err := call(func() C.ninfer_status {
		return C.ninfer_go_cuda_linear_prepare(C.uint32_t(v.Format), C.uint32_t(v.Layout),
			C.uint64_t(v.Rows), C.uint64_t(v.Cols), ptrs[0], lens[0], ptrs[1], lens[1],
			ptrs[2], lens[2], C.uint32_t(ordinal), &h)
	})
	runtime.KeepAlive(v)
	if err != nil {
		return nil, err
	}
	return adoptLinear(h)
}

// PrepareLinearCUDADevice prepares a weight whose planes the caller holds in the memory
// of CUDA device ordinal (ninfer_cuda_linear_prepare_device, zero copy). The planes must
// stay valid and unchanged until Close.
func PrepareLinearCUDADevice(v DeviceView, ordinal uint32) (*Linear, error) {
	var cv C.ninfer_device_view // no pointers inside: may live in Go memory
	cv.format, cv.layout = C.uint32_t(v.Format), C.uint32_t(v.Layout)
	cv.rows, cv.cols = C.uint64_t(v.Rows), C.uint64_t(v.Cols)
	for i := 0; i < MaxPlanes; i++ {
		cv.plane_addresses[i] = C.uint64_t(v.PlaneAddresses[i])
		cv.plane_lengths[i] = C.uint64_t(v.PlaneLengths[i])
	}
	var h *C.ninfer_linear
	err := call(func() C.ninfer_status { return C.ninfer_cuda_linear_prepare_device(&cv, C.uint32_t(ordinal), &h) })
	if err != nil {
		return nil, err
	}
	return adoptLinear(h)
}

func adoptLinear(h *C.ninfer_linear) (*Linear, error) {
	l := &Linear{handle: h}
	var rows, cols C.uint64_t
	if err := call(func() C.ninfer_status { return C.ninfer_linear_shape(h, &rows, &cols) }); err != nil {
		l.Close()
		return nil, err
	}
	l.Rows, l.Cols = uint64(rows), uint64(cols)
	runtime.SetFinalizer(l, (*Linear).Close)
	return l, nil
}

// CUDAWorkspaceSize is the device workspace, in bytes, CUDAForward of m rows needs (0 for
// a CPU Linear and for products that need none).
func (l *Linear) CUDAWorkspaceSize(m uint64) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.handle == nil {
		return 0, errClosed
	}
	var n C.uint64_t
	err := call(func() C.ninfer_status { return C.ninfer_cuda_linear_workspace_size(l.handle, C.uint64_t(m), &n) })
	return uint64(n), err
}

// CUDAForward enqueues y = x · Wᵀ (+ bias) on stream and returns without waiting: x holds
// m × Cols values of xDtype (F32, BF16, F16) and y m × Rows values of yDtype (F32, BF16),
// row-major, in the device memory of the Linear's device; bias is Rows float32 values
// there or 0. workspace (≥ CUDAWorkspaceSize(m) bytes) or 0: the library allocates in
// stream order. The buffers must stay valid until the stream has run the product.
// ErrUnsupported on a CPU Linear.
func (l *Linear) CUDAForward(x uint64, xDtype Dtype, m uint64, bias uint64, y uint64, yDtype Dtype,
	stream CUDAStream, workspace, workspaceBytes uint64) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.handle == nil {
		return errClosed
	}
	return call(func() C.ninfer_status {
		return C.ninfer_go_cuda_linear_forward(l.handle, C.uint64_t(x), C.uint32_t(xDtype),
			C.uint64_t(m), C.uint64_t(l.Cols), C.uint64_t(bias), C.uint64_t(y), C.uint32_t(yDtype),
			C.uintptr_t(stream), C.uint64_t(workspace), C.uint64_t(workspaceBytes))
	})
}

// CUDADecodeRows enqueues the decode of rows first .. first+count into out (device memory,
// count × Cols values of outDtype: F32 or BF16) on stream. ErrUnsupported on a CPU Linear.
func (l *Linear) CUDADecodeRows(first, count uint64, out uint64, outDtype Dtype, stream CUDAStream) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.handle == nil {
		return errClosed
	}
	return call(func() C.ninfer_status {
		return C.ninfer_go_cuda_linear_decode_rows(l.handle, C.uint64_t(first), C.uint64_t(count),
			C.uint64_t(out), C.uint32_t(outDtype), C.uintptr_t(stream))
	})
}

// cudaNullStatuses: the statuses of every CUDA entry point called with a NULL pointer.
func cudaNullStatuses() []Status {
	var out [8]C.ninfer_status
	C.ninfer_go_cuda_null_statuses(&out[0])
	s := make([]Status, len(out))
	for i, st := range out {
		s[i] = Status(st)
	}
	return s
}

// cudaOutputsUntouched: NO_DEVICE from count, properties and prepare left their outputs alone.
func cudaOutputsUntouched() bool { return C.ninfer_go_cuda_outputs_untouched() != 0 }
