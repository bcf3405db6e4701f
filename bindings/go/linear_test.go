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

// The activation-profile table of ninfer_linear_activation_supported's documentation
// (docs/linear.md "Activation profiles"), asked through ActivationSupported.
func TestActivationSupportedTable(t *testing.T) {
	rs, cl, gb := LayoutRowSplitK128V1, LayoutContiguousLEV1, LayoutGGUFBlocksV1
	cases := []struct {
		f    Format
		l    Layout
		a    Activation
		dev  Device
		want bool
	}{
		{FormatQ4G64FP16, rs, ActivationExact, DeviceCPU, true},
		{FormatQ4G64FP16, rs, ActivationQ8_1, DeviceCPU, true},
		{FormatQ8G32FP16, rs, ActivationQ8_1, DeviceCPU, true},
		{FormatQ2G64FP16, rs, ActivationQ8_1, DeviceCPU, true},
		{FormatT2G128FP16, rs, ActivationQ8_1, DeviceCPU, true},
		{FormatGGUFQ8_0, gb, ActivationQ8_1, DeviceCPU, true},
		{FormatGGUFQ4K, gb, ActivationQ8_1, DeviceCPU, true},
		{FormatGGUFQ8_0, gb, ActivationExact, DeviceCPU, false}, // GGUF products quantize x
		{FormatGGUFQ4K, gb, ActivationQ8K, DeviceCPU, true},
		{FormatGGUFQ6K, gb, ActivationQ8K, DeviceCPU, true},
		{FormatGGUFQ8_0, gb, ActivationQ8K, DeviceCPU, false}, // q8_K: k-quants, 256-value i-quants
		{FormatQ4G64FP16, rs, ActivationQ8K, DeviceCPU, false},
		{FormatGGUFQ4K, gb, ActivationQ8K, DeviceCUDA, false}, // q8_K: CPU only
		{FormatBF16, cl, ActivationExact, DeviceCPU, true},
		{FormatBF16, cl, ActivationQ8_1, DeviceCPU, false},
		{FormatFP32, cl, ActivationQ8_1, DeviceCPU, false},
		{FormatNVFP4, LayoutBlockScaleK16M128x4V1, ActivationQ8_1, DeviceCPU, true},
		{FormatQ4G64FP16, rs, ActivationQ8_1, DeviceCUDA, CUDACompiled()}, // in CUDA builds only
	}
	for _, c := range cases {
		got, err := ActivationSupported(c.f, c.l, c.a, c.dev)
		if err != nil || got != c.want {
			t.Errorf("%v/%v activation %d device %d: %v %v, want %v", c.f, c.l, c.a, c.dev, got, err, c.want)
		}
	}
	refused := []struct {
		f    Format
		l    Layout
		a    Activation
		dev  Device
		want error
	}{
		{FormatQ4G64FP16, rs, Activation(7), DeviceCPU, ErrInvalidArgument},
		{FormatQ4G64FP16, rs, ActivationQ8_1, Device(9), ErrInvalidArgument},
		{Format(999), rs, ActivationQ8_1, DeviceCPU, ErrUnknownFormat},
		{FormatQ4G64FP16, cl, ActivationQ8_1, DeviceCPU, ErrIncompatibleLayout},
	}
	for _, c := range refused {
		got, err := ActivationSupported(c.f, c.l, c.a, c.dev)
		if got || !errors.Is(err, c.want) || err.(*Error).Message == "" {
			t.Errorf("%d/%d activation %d device %d: %v %v, want %v", c.f, c.l, c.a, c.dev, got, err, c.want)
		}
	}
}

// One row of K = 32: gguf_q8_0 with d = 1 (0x3C00) and every code 1, so w[k] = 1.
func onesQ8_0Row() []byte {
	b := make([]byte, 34)
	b[0], b[1] = 0x00, 0x3C
	for j := 0; j < 32; j++ {
		b[2+j] = 1
	}
	return b
}

// Worked by hand (docs/linear.md, ggml's quantize_row_q8_1_ref), w[k] = 1, K = 32:
//
//	x = 1 everywhere: amax = 1, d = 1/127, q = round(1·(1/d)) = 127, stored d =
//	binary16(1/127) = 1032·2⁻¹⁷ (1/127 = 1032.06·2⁻¹⁷), x̂ = 127·1032·2⁻¹⁷, so
//	y = 32·x̂ = 4064·1032·2⁻¹⁷ = 31.998046875 with q8_1 and y = 32 with exact x.
//	x = (127, 1, …, 1): amax = 127, d = 1, q = x, x̂ = x: y = 127 + 31 = 158 under both.
func TestActivationHandWorked(t *testing.T) {
	ones := make([]float32, 32)
	mixed := make([]float32, 32)
	for k := range ones {
		ones[k], mixed[k] = 1, 1
	}
	mixed[0] = 127
	q81Ones := float32(4064 * 1032.0 / 131072.0)
	if q81Ones != 31.998046875 {
		t.Fatalf("hand value %v", q81Ones)
	}
	expect := func(l *Linear, x []float32, want float32, what string) {
		t.Helper()
		y, err := l.Forward(x, 1, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if math.Float32bits(y[0]) != math.Float32bits(want) {
			t.Fatalf("%s: y = %v (0x%08x), want %v", what, y[0], math.Float32bits(y[0]), want)
		}
	}

	g, err := NewWeightView(FormatGGUFQ8_0, 1, 32, onesQ8_0Row())
	if err != nil {
		t.Fatal(err)
	}
	lg, err := PrepareLinear(g, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	expect(lg, ones, q81Ones, "gguf_q8_0 (q8_1 by default)")
	// Exact is refused for GGUF weights, with the documented status and a message; the
	// setting stays q8_1.
	err = lg.SetActivation(ActivationExact)
	if !errors.Is(err, ErrUnsupported) || err.(*Error).Message == "" {
		t.Fatalf("gguf_q8_0 SetActivation(Exact): %v", err)
	}
	expect(lg, ones, q81Ones, "gguf_q8_0 after refused Exact")
	if err := lg.SetActivation(ActivationQ8_1); err != nil {
		t.Fatalf("gguf_q8_0 SetActivation(Q8_1): %v", err)
	}
	expect(lg, mixed, 158, "gguf_q8_0, x̂ = x")

	// The same words as q8_g32_fp16 (import_encoded moves them unchanged).
	n, err := ImportGGUF(g, FormatQ8G32FP16)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := PrepareLinear(n, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	expect(ln, ones, 32, "q8_g32_fp16 (exact by default)")
	expect(ln, mixed, 158, "q8_g32_fp16 exact")
	if err := ln.SetActivation(ActivationQ8_1); err != nil {
		t.Fatal(err)
	}
	expect(ln, ones, q81Ones, "q8_g32_fp16 q8_1")
	expect(ln, mixed, 158, "q8_g32_fp16 q8_1, x̂ = x")
	// An unknown profile number is refused and leaves the setting as it was.
	if err := ln.SetActivation(Activation(7)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("SetActivation(7): %v", err)
	}
	expect(ln, ones, q81Ones, "q8_g32_fp16 after refused 7")
	if err := ln.SetActivation(ActivationExact); err != nil {
		t.Fatal(err)
	}
	expect(ln, ones, 32, "q8_g32_fp16 back to exact")

	ln.Close()
	if err := ln.SetActivation(ActivationQ8_1); !errors.Is(err, ErrNullPointer) {
		t.Fatalf("SetActivation after Close: %v", err)
	}
}

// binary16 rounding (to nearest even) of a value in binary16's normal range: 11
// significant bits.
func roundF16(v float32) float32 {
	if v == 0 {
		return 0
	}
	frac, exp := math.Frexp(float64(v))
	return float32(math.Ldexp(math.RoundToEven(frac*2048), exp-11))
}

// q8_1 values x̂ of one row of x, from the equations of docs/linear.md (ggml's
// quantize_row_q8_1_ref, binary32 arithmetic): per 32 values amax, d = amax/127,
// id = 1/d, q = roundf(x·id) (half away from zero), x̂ = binary16(d)·q. Also returns the
// binary32 d of each block.
func q8_1Values(t *testing.T, x []float32) (xhat []float32, d []float32) {
	xhat = make([]float32, len(x))
	for b := 0; b < len(x); b += 32 {
		var amax float32
		for _, v := range x[b : b+32] {
			amax = float32(math.Max(float64(amax), math.Abs(float64(v))))
		}
		db := amax / 127
		if db < 1.0/16384 || db > 65504 {
			t.Fatalf("block amax %v outside this helper's binary16 normal range", amax)
		}
		id := 1 / db
		dh := roundF16(db)
		for j := b; j < b+32; j++ {
			q := math.Round(float64(float32(x[j] * id)))
			xhat[j] = dh * float32(q)
		}
		d = append(d, db)
	}
	return xhat, d
}

// A q4_g64_fp16 weight (row_split_k128_v1): exact by default; with SetActivation(Q8_1)
// each output meets linear_f32acc_v1 against Σ w·x̂ in f64 (w the decoded weight values,
// x̂ derived above), differs from the exact product, and stays within the bound that
// q8_1's quantization error allows: |x − x̂| ≤ d·(1/2 + 127·2⁻¹¹) per value (rounding to
// the code, then the binary16 rounding of d, relative error ≤ 2⁻¹¹, times |q| ≤ 127).
func TestActivationGroupedQ4(t *testing.T) {
	const rows, cols, m = 5, 192, 2
	src := make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(math.Cos(float64(i)*0.11) * (1 + float64(i%7)))
	}
	v, _, err := QuantizeGrouped(FormatQ4G64FP16, F32Source(src), rows, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := v.Decode()
	if err != nil {
		t.Fatal(err)
	}
	w := make([][]float32, rows)
	for n := range w {
		w[n] = all[n*cols : (n+1)*cols]
	}
	x := make([]float32, m*cols)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.37))
	}
	l, err := PrepareLinear(v, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	exact, err := l.Forward(x, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetActivation(ActivationQ8_1); err != nil {
		t.Fatal(err)
	}
	q81, err := l.Forward(x, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	tolf := func(sum float64) float64 {
		return float64(cols+8)*math.Ldexp(sum, -23) + float64(cols+8)*math.Ldexp(1, -149)
	}
	differ := 0
	for i := 0; i < m; i++ {
		xi := x[i*cols : (i+1)*cols]
		xhat, d := q8_1Values(t, xi)
		for n := 0; n < rows; n++ {
			var yx, sx, yh, sh, qerr float64
			for k := 0; k < cols; k++ {
				wk := float64(w[n][k])
				yx += wk * float64(xi[k])
				sx += math.Abs(wk * float64(xi[k]))
				yh += wk * float64(xhat[k])
				sh += math.Abs(wk * float64(xhat[k]))
				qerr += math.Abs(wk) * float64(d[k/32]) * (0.5 + 127*math.Ldexp(1, -11))
			}
			ye, yq := exact[i*rows+n], q81[i*rows+n]
			if math.Abs(float64(ye)-yx) > tolf(sx) {
				t.Errorf("exact y[%d,%d] = %v, oracle %v", i, n, ye, yx)
			}
			if math.Abs(float64(yq)-yh) > tolf(sh) {
				t.Errorf("q8_1 y[%d,%d] = %v, oracle Σ w·x̂ = %v (tol %g)", i, n, yq, yh, tolf(sh))
			}
			if math.Abs(float64(yq)-float64(ye)) > qerr+tolf(sx)+tolf(sh) {
				t.Errorf("q8_1 y[%d,%d] = %v, exact %v: beyond q8_1's error bound %g", i, n, yq, ye, qerr)
			}
			if math.Float32bits(yq) != math.Float32bits(ye) {
				differ++
			}
		}
	}
	if differ == 0 {
		t.Fatal("the q8_1 product equals the exact one bit for bit: the profile was not applied")
	}
	t.Logf("q4_g64_fp16 q8_1: %d outputs within linear_f32acc_v1 of Σ w·x̂, %d differ from exact", m*rows, differ)

	// Refusals leave the setting unchanged: still the q8_1 bits.
	if err := l.SetActivation(Activation(7)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("SetActivation(7): %v", err)
	}
	again, err := l.Forward(x, m, nil)
	if err != nil || !equalBits(again, q81) {
		t.Fatalf("after a refused SetActivation: %v %v", again, err)
	}
	// K = 200 is not a multiple of 32: BAD_SHAPE for q8_1, exact stays.
	v200, _, err := QuantizeGrouped(FormatQ4G64FP16, F32Source(src[:3*200]), 3, 200, nil)
	if err != nil {
		t.Fatal(err)
	}
	l200, err := PrepareLinear(v200, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l200.Close()
	if err := l200.SetActivation(ActivationQ8_1); !errors.Is(err, ErrBadShape) {
		t.Fatalf("K = 200 SetActivation(Q8_1): %v", err)
	}
	if err := l200.SetActivation(ActivationExact); err != nil {
		t.Fatal(err)
	}
}

// q8_g32_fp16 imported from gguf_q8_0 words, set to q8_1, gives the bits of the GGUF
// product of the same words: the grouped q8_1 kernels follow the legacy GGUF family's
// order with the group scale in the block scale's place (docs/linear.md), and one
// gguf_q8_0 block is one q8_g32 group with the same scale.
func TestActivationQ8MatchesGGUF(t *testing.T) {
	const rows, cols, m = 4, 128, 3
	blocks := make([]byte, rows*cols/32*34)
	for b := 0; b < len(blocks)/34; b++ {
		d := uint16(0x2000 + b*0x35) // positive normal binary16 scales
		blocks[34*b], blocks[34*b+1] = byte(d), byte(d>>8)
		for j := 0; j < 32; j++ {
			blocks[34*b+2+j] = byte(int8((b*31+j*17)%255 - 127))
		}
	}
	g, err := NewWeightView(FormatGGUFQ8_0, rows, cols, blocks)
	if err != nil {
		t.Fatal(err)
	}
	n, err := ImportGGUF(g, FormatQ8G32FP16)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, m*cols)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.7)) * float32(1+i%3)
	}
	lg, err := PrepareLinear(g, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	ln, err := PrepareLinear(n, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	yg, err := lg.Forward(x, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	ye, err := ln.Forward(x, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if equalBits(ye, yg) {
		t.Fatal("exact q8_g32_fp16 product equals the GGUF (q8_1) one bit for bit")
	}
	if err := ln.SetActivation(ActivationQ8_1); err != nil {
		t.Fatal(err)
	}
	yq, err := ln.Forward(x, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !equalBits(yq, yg) {
		t.Fatalf("q8_g32_fp16 with q8_1 %v, gguf_q8_0 %v", yq, yg)
	}
	t.Logf("q8_g32_fp16 + q8_1 = gguf_q8_0 bit for bit on %d outputs", len(yq))
}

// bf16 weights have only the exact profile.
func TestActivationBF16Refused(t *testing.T) {
	// [[1, 2], [3, 4]] as bf16 words 0x3F80, 0x4000, 0x4040, 0x4080 (little-endian).
	plane := []byte{0x80, 0x3F, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40}
	v := &WeightView{FormatBF16, LayoutContiguousLEV1, 2, 2, [MaxPlanes][]byte{plane}}
	l, err := PrepareLinear(v, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.SetActivation(ActivationQ8_1)
	if !errors.Is(err, ErrUnsupported) || err.(*Error).Message == "" {
		t.Fatalf("bf16 SetActivation(Q8_1): %v", err)
	}
	if err := l.SetActivation(ActivationExact); err != nil {
		t.Fatal(err)
	}
	y, err := l.Forward([]float32{0.5, 0.25}, 1, nil)
	if err != nil || !equalF32(y, []float32{1, 2.5}) {
		t.Fatalf("bf16 y = %v %v, want [1 2.5]", y, err)
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// ForwardRowsInto over fp32 weights [[0,1,2],[3,4,5]]: x rows 4 apart, y rows 3 apart;
// two goroutines fill one column each of one y; the gaps and bad calls leave y untouched.
func TestLinearForwardRows(t *testing.T) {
	w := []float32{0, 1, 2, 3, 4, 5}
	planes := make([]byte, 4*len(w))
	for i, v := range w {
		b := math.Float32bits(v)
		planes[4*i], planes[4*i+1], planes[4*i+2], planes[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	l, err := PrepareLinear(&WeightView{FormatFP32, LayoutContiguousLEV1, 2, 3, [MaxPlanes][]byte{planes}}, DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetThreads(1); err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 2, 3, -7, 0, 0, 1} // rows [1 2 3] and [0 0 1], ldx 4
	bias := []float32{10, 20}
	y := []float32{-1, -1, -1, -1, -1} // rows 3 apart: (m−1)·3 + 2 values
	var wg sync.WaitGroup
	for n0 := uint64(0); n0 < 2; n0++ {
		wg.Add(1)
		go func(n0 uint64) {
			defer wg.Done()
			if err := l.ForwardRowsInto(x, 2, 4, bias, n0, n0+1, y, 3); err != nil {
				t.Errorf("range %d: %v", n0, err)
			}
		}(n0)
	}
	wg.Wait()
	if want := []float32{18, 46, -1, 12, 25}; !equalF32(y, want) {
		t.Fatalf("y = %v, want %v", y, want)
	}
	before := append([]float32(nil), y...)
	if err := l.ForwardRowsInto(x, 2, 4, nil, 1, 0, y, 3); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("n0 > n1: %v", err)
	}
	if err := l.ForwardRowsInto(x, 2, 4, nil, 0, 3, y, 3); !errors.Is(err, ErrRowOutOfRange) {
		t.Fatalf("n1 > N: %v", err)
	}
	if err := l.ForwardRowsInto(x, 2, 2, nil, 0, 1, y, 3); !errors.Is(err, ErrBadShape) {
		t.Fatalf("ldx < K: %v", err)
	}
	if err := l.ForwardRowsInto(x, 2, 4, nil, 0, 2, y[:4], 3); !errors.Is(err, ErrBufferTooSmall) {
		t.Fatalf("short y: %v", err)
	}
	if !equalF32(y, before) {
		t.Fatalf("y written on error: %v", y)
	}
}
