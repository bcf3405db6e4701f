package ninfer

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
)

// fp32 weights [[0,1,2],[3,4,5]]: y = x · Wᵀ + bias worked out by hand.
func TestLinearFP32ByHand(t *testing.T) {
	w := []float32{0, 1, 2, 3, 4, 5}
	planes := make([]byte, 4*len(w))
	for i, v := range w {
		b := math.Float32bits(v)
		planes[4*i], planes[4*i+1], planes[4*i+2], planes[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	v := &WeightView{FormatFP32, LayoutContiguousLEV1, 2, 3, [MaxPlanes][]byte{planes}}
	l, err := PrepareLinear(v, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Rows != 2 || l.Cols != 3 {
		t.Fatalf("shape %d x %d", l.Rows, l.Cols)
	}
	// The Linear owns copies: changing the Go planes afterwards changes nothing.
	for i := range planes {
		planes[i] = 0xFF
	}
	y, err := l.Forward([]float32{1, 2, 3, 0, 0, 1}, 2, []float32{10, 20})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{18, 46, 12, 25}; !equalF32(y, want) {
		t.Fatalf("y = %v, want %v", y, want)
	}
	if err := l.SetThreads(2); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup // Forward may run concurrently on one handle
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			y, err := l.Forward([]float32{1, 1, 1}, 1, nil)
			if err != nil || !equalF32(y, []float32{3, 12}) {
				t.Errorf("concurrent forward: %v %v", y, err)
			}
		}()
	}
	wg.Wait()
	if _, err := l.Forward([]float32{1, 2}, 1, nil); !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("short x: %v", err)
	}
	if _, err := l.Forward([]float32{1, 2, 3}, 1, []float32{1}); !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("short bias: %v", err)
	}
	l.Close()
	l.Close() // idempotent
	if _, err := l.Forward([]float32{1, 2, 3}, 1, nil); err == nil {
		t.Fatal("forward after Close succeeded")
	}
}

// Quantized weights whose values and products are exact in f32: the expected y is the
// float64 product (hand-checkable), compared bit for bit.
func TestLinearQuantizedExact(t *testing.T) {
	rows, cols := 8, 128
	src := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for k := 0; k < cols; k++ {
			code := int32((r*131+k*37)%255) - 127
			if k%32 == 0 {
				code = 127
			}
			src[r*cols+k] = float32(code) * float32(math.Ldexp(1, (r+k/32)%4-2))
		}
	}
	v, _, err := QuantizeGrouped(FormatQ8G32FP16, F32Source(src), uint64(rows), uint64(cols), nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := PrepareLinear(v, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := 3
	x := make([]float32, m*cols)
	for i := range x {
		x[i] = float32(i%5 - 2)
	}
	y, err := l.Forward(x, uint64(m), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		for n := 0; n < rows; n++ {
			var want float64
			for k := 0; k < cols; k++ {
				want += float64(x[i*cols+k]) * float64(src[n*cols+k])
			}
			if math.Float32bits(y[i*rows+n]) != math.Float32bits(float32(want)) {
				t.Fatalf("y[%d,%d] = %v, want %v", i, n, y[i*rows+n], want)
			}
		}
	}
	t.Logf("q8_g32_fp16 linear: %d outputs exact", m*rows)
}

func TestLinearRefusalsAndFinalizer(t *testing.T) {
	if ok, err := LinearSupported(FormatInt32, LayoutContiguousLEV1, DtypeF32, DtypeF32, DeviceCPU); ok || err != nil {
		t.Fatalf("int32: %v %v", ok, err)
	}
	if ok, err := LinearSupported(FormatGGUFQ4K, LayoutGGUFBlocksV1, DtypeF32, DtypeF32, DeviceCPU); !ok || err != nil {
		t.Fatalf("gguf_q4_k: %v %v", ok, err)
	}
	if _, err := LinearSupported(FormatFP32, LayoutContiguousLEV1, DtypeF32, DtypeF32, Device(7)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("device 7: %v", err)
	}
	ints := &WeightView{FormatInt32, LayoutContiguousLEV1, 2, 3, [MaxPlanes][]byte{make([]byte, 24)}}
	if _, err := PrepareLinear(ints, DeviceCPU); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("int32 weights: %v", err)
	}
	// Dropped without Close: the finalizers free the handles and plane copies.
	for i := 0; i < 100; i++ {
		v, _ := NewWeightView(FormatGGUFQ8_0, 2, 32, q8_0Blocks())
		if _, err := PrepareLinear(v, DeviceCPU); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
