package ninfer

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// The CUDA entry points on a machine without GPU or driver: NO_DEVICE with a message,
// outputs untouched, NULL refused; CUDACompiled agrees with the build.

func fp32Weight() *WeightView {
	planes := []byte{}
	for _, v := range []uint32{0, 0x3F800000, 0x40000000, 0x40400000, 0x40800000, 0x40A00000} {
		planes = append(planes, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return &WeightView{FormatFP32, LayoutContiguousLEV1, 2, 3, [MaxPlanes][]byte{planes}}
}

func wantNoDevice(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.Is(err, ErrNoDevice) || !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("%s: got %v, want NO_DEVICE with a message", what, err)
	}
}

func TestCUDAStatuses(t *testing.T) {
	if StatusNoDevice != 20 || StatusCuda != 21 || StatusNoDevice.String() != "NO_DEVICE" || StatusCuda.String() != "CUDA" {
		t.Fatalf("%d %s %d %s", StatusNoDevice, StatusNoDevice, StatusCuda, StatusCuda)
	}
}

func TestCUDACompiledAgreesWithBuild(t *testing.T) {
	if want := os.Getenv("NINFER_EXPECT_CUDA"); want != "" && CUDACompiled() != (want == "1") {
		t.Fatalf("CUDACompiled() = %v, NINFER_EXPECT_CUDA=%s", CUDACompiled(), want)
	}
	n, err := CUDADeviceCount()
	wantNoDevice(t, "CUDADeviceCount", err)
	if n != 0 {
		t.Fatalf("count %d", n)
	}
	// The message says which: no CUDA support in this build, or no driver / GPU.
	if strings.Contains(err.(*Error).Message, "no CUDA support") == CUDACompiled() {
		t.Fatalf("message %q with CUDACompiled() = %v", err.(*Error).Message, CUDACompiled())
	}
}

func TestCUDANoDevice(t *testing.T) {
	_, err := CUDADeviceProperties(0)
	wantNoDevice(t, "CUDADeviceProperties", err)
	_, err = PrepareLinearCUDA(fp32Weight(), 0)
	wantNoDevice(t, "PrepareLinearCUDA", err)
	_, err = PrepareLinear(fp32Weight(), DeviceCUDA)
	wantNoDevice(t, "PrepareLinear(DeviceCUDA)", err)
	dv := DeviceView{Format: FormatFP32, Layout: LayoutContiguousLEV1, Rows: 2, Cols: 3}
	dv.PlaneAddresses[0], dv.PlaneLengths[0] = 0x7F0000000000, 24
	_, err = PrepareLinearCUDADevice(dv, 0)
	wantNoDevice(t, "PrepareLinearCUDADevice", err)
	bad := dv
	bad.PlaneLengths[0] = 20
	if _, err = PrepareLinearCUDADevice(bad, 0); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("short plane: %v", err)
	}
	bad = dv
	bad.PlaneAddresses[0] = 0
	if _, err = PrepareLinearCUDADevice(bad, 0); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("plane address 0: %v", err)
	}
	if !cudaOutputsUntouched() {
		t.Fatal("a NO_DEVICE call wrote its output")
	}
}

func TestCUDANullPointers(t *testing.T) {
	for i, st := range cudaNullStatuses() {
		if st != StatusNullPointer {
			t.Fatalf("entry point %d: %s", i, st)
		}
	}
}

// The device entry points on a CPU Linear: workspace 0, products refused as UNSUPPORTED,
// NULL buffers refused; a closed Linear is refused before any call.
func TestCUDAOnCPULinear(t *testing.T) {
	l, err := PrepareLinear(fp32Weight(), DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.CUDAWorkspaceSize(4); err != nil || n != 0 {
		t.Fatalf("workspace %d %v", n, err)
	}
	if err := l.CUDAForward(0x1000, DtypeF32, 1, 0, 0x2000, DtypeF32, 0, 0, 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("forward: %v", err)
	}
	if err := l.CUDAForward(0, DtypeF32, 1, 0, 0x2000, DtypeF32, CUDAStream(0x77), 0, 0); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("forward x = 0: %v", err)
	}
	if err := l.CUDADecodeRows(0, 1, 0x3000, DtypeF32, 0); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("decode rows: %v", err)
	}
	if err := l.CUDADecodeRows(0, 1, 0, DtypeF32, 0); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("decode rows out = 0: %v", err)
	}
	l.Close()
	if _, err := l.CUDAWorkspaceSize(1); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("closed: %v", err)
	}
	if err := l.CUDAForward(0x1000, DtypeF32, 1, 0, 0x2000, DtypeF32, 0, 0, 0); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("closed: %v", err)
	}
	if err := l.CUDADecodeRows(0, 1, 0x3000, DtypeF32, 0); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("closed: %v", err)
	}
}
