// Package ninfer is the Go binding of libninfer, the codecs of the persistent numeric
// tensor formats of .ninfer artifacts, through its C API (ninfer.h, found with pkg-config).
//
// Errors: every failing call returns an *Error carrying the C status and the library's
// message. The message lives in thread-local storage on the C side, so each call and the
// read of its message happen on one OS thread (runtime.LockOSThread around both).
// errors.Is(err, ErrRowOutOfRange) matches by status.
//
// Memory: Go slices ([]byte planes, []float32 outputs) are passed to C without copies.
// The C view struct (ninfer_weight_view) holds pointers, and cgo forbids passing C a Go
// pointer to memory that contains Go pointers, or storing Go pointers in C memory (Go
// 1.19 has no runtime.Pinner). So the view is never built in Go memory: each plane
// pointer is passed to a small C shim as a direct argument (legal: C may use it for the
// duration of the call), and the shim builds the ninfer_weight_view on the C stack and
// calls the library. The library keeps no pointer after a call returns. The tests run with
// GODEBUG=cgocheck=2, which checks these rules at run time.
//
// Handles: a C handle is a Go struct with an idempotent Close() that frees it, plus a
// runtime.SetFinalizer calling Close as a safety net (Linear). A handle that reads Go
// data after the call that created it (ninfer_linear borrows the weight planes) gets its
// own copy of that data in C memory, because C may not keep Go pointers (Go 1.19 has no
// runtime.Pinner); the copy is freed by Close.
package ninfer

/*
#cgo pkg-config: ninfer
#include <stdlib.h>
#include "ninfer.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Status is a ninfer_status code; StatusOK is success.
type Status uint32

// The status codes of ninfer.h (numbers are part of the ABI).
const (
	StatusOK                 = Status(C.NINFER_STATUS_OK)
	StatusNullPointer        = Status(C.NINFER_STATUS_NULL_POINTER)
	StatusMisaligned         = Status(C.NINFER_STATUS_MISALIGNED)
	StatusInvalidArgument    = Status(C.NINFER_STATUS_INVALID_ARGUMENT)
	StatusUnknownFormat      = Status(C.NINFER_STATUS_UNKNOWN_FORMAT)
	StatusUnknownLayout      = Status(C.NINFER_STATUS_UNKNOWN_LAYOUT)
	StatusIncompatibleLayout = Status(C.NINFER_STATUS_INCOMPATIBLE_LAYOUT)
	StatusUnregisteredType   = Status(C.NINFER_STATUS_UNREGISTERED_TYPE)
	StatusBadShape           = Status(C.NINFER_STATUS_BAD_SHAPE)
	StatusSizeMismatch       = Status(C.NINFER_STATUS_SIZE_MISMATCH)
	StatusOverflow           = Status(C.NINFER_STATUS_OVERFLOW)
	StatusRowOutOfRange      = Status(C.NINFER_STATUS_ROW_OUT_OF_RANGE)
	StatusIndexOutOfRange    = Status(C.NINFER_STATUS_INDEX_OUT_OF_RANGE)
	StatusBufferTooSmall     = Status(C.NINFER_STATUS_BUFFER_TOO_SMALL)
	StatusUnsupported        = Status(C.NINFER_STATUS_UNSUPPORTED)
	StatusInvalidEncoding    = Status(C.NINFER_STATUS_INVALID_ENCODING)
	StatusNonFiniteSource    = Status(C.NINFER_STATUS_NON_FINITE_SOURCE)
	StatusScaleOverflow      = Status(C.NINFER_STATUS_SCALE_OVERFLOW)
	StatusUnknownDtype       = Status(C.NINFER_STATUS_UNKNOWN_DTYPE)
	StatusInternal           = Status(C.NINFER_STATUS_INTERNAL)
	StatusNoDevice           = Status(C.NINFER_STATUS_NO_DEVICE)
	StatusCuda               = Status(C.NINFER_STATUS_CUDA)
	StatusOutOfMemory        = Status(C.NINFER_STATUS_OUT_OF_MEMORY)
)

// String is the status name without its prefix ("SIZE_MISMATCH").
func (s Status) String() string { return C.GoString(C.ninfer_status_name(C.uint32_t(s))) }

// Error is a failed call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
	// Location is the first offending row and block, set by WeightView.Validate on
	// StatusInvalidEncoding; nil otherwise.
	Location *Location
}

// Location is a row and a block (GGUF) or group index within that row.
type Location struct {
	Row   uint64
	Block uint64
}

func (e *Error) Error() string { return e.Status.String() + ": " + e.Message }

// Is reports whether target is an *Error with the same status and, when target has a
// message, the same message; so the Err* sentinels match any message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Message == "" || t.Message == e.Message)
}

// Sentinels for errors.Is.
var (
	ErrNullPointer        = &Error{Status: StatusNullPointer}
	ErrInvalidArgument    = &Error{Status: StatusInvalidArgument}
	ErrUnknownFormat      = &Error{Status: StatusUnknownFormat}
	ErrUnknownLayout      = &Error{Status: StatusUnknownLayout}
	ErrIncompatibleLayout = &Error{Status: StatusIncompatibleLayout}
	ErrUnregisteredType   = &Error{Status: StatusUnregisteredType}
	ErrBadShape           = &Error{Status: StatusBadShape}
	ErrSizeMismatch       = &Error{Status: StatusSizeMismatch}
	ErrOverflow           = &Error{Status: StatusOverflow}
	ErrRowOutOfRange      = &Error{Status: StatusRowOutOfRange}
	ErrBufferTooSmall     = &Error{Status: StatusBufferTooSmall}
	ErrUnsupported        = &Error{Status: StatusUnsupported}
	ErrInvalidEncoding    = &Error{Status: StatusInvalidEncoding}
	ErrUnknownDtype       = &Error{Status: StatusUnknownDtype}
	ErrNoDevice           = &Error{Status: StatusNoDevice}
	ErrCuda               = &Error{Status: StatusCuda}
)

// call runs one C call that returns a ninfer_status and, on failure, reads its message on
// the same OS thread. Every wrapper goes through it.
func call(f func() C.ninfer_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := Status(f())
	if st == StatusOK {
		return nil
	}
	return &Error{Status: st, Message: lastErrorMessage()}
}

// lastErrorMessage reads this OS thread's message; the caller holds the thread locked.
func lastErrorMessage() string {
	n := C.ninfer_last_error_message(nil, 0)
	if n == 0 {
		return ""
	}
	buf := make([]byte, int(n)+1)
	got := C.ninfer_last_error_message((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)))
	if int(got) < len(buf) {
		buf = buf[:got]
	} else {
		buf = buf[:len(buf)-1]
	}
	return string(buf)
}

// Version is the linked library's version, e.g. "0.1.0".
func Version() string { return C.GoString(C.ninfer_version()) }

// VersionNumbers are the linked library's major, minor and patch versions.
func VersionNumbers() (major, minor, patch uint32) {
	return uint32(C.ninfer_version_major()), uint32(C.ninfer_version_minor()), uint32(C.ninfer_version_patch())
}

// Header version of the ninfer.h this package was compiled with.
const (
	HeaderVersionMajor = uint32(C.NINFER_VERSION_MAJOR)
	HeaderVersionMinor = uint32(C.NINFER_VERSION_MINOR)
	HeaderVersionPatch = uint32(C.NINFER_VERSION_PATCH)
)

// ABIVersion is the linked library's ABI version (the number in its SONAME).
func ABIVersion() uint32 { return uint32(C.ninfer_abi_version()) }

// HeaderABIVersion is the ABI version of the ninfer.h this package was compiled with.
const HeaderABIVersion = uint32(C.NINFER_ABI_VERSION)

// MaxPlanes is the number of plane slots of a weight view.
const MaxPlanes = int(C.NINFER_MAX_PLANES)
