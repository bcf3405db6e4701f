package ninfer

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// One block by hand: x_j = j − 16, amax 16, d = 16/127 stored as binary16 0x3008
// (0.1259765625), 1/d = 7.9375 exactly, q_0 = −127, q_1 = round(−15·7.9375) = −119.
func TestQuantizeRowQ8_1HandWorked(t *testing.T) {
	x := make([]float32, 32)
	for j := range x {
		x[j] = float32(j - 16)
	}
	blocks, xHat, err := QuantizeRowQ8_1(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 36 || blocks[0] != 0x08 || blocks[1] != 0x30 || int8(blocks[4]) != -127 || int8(blocks[5]) != -119 {
		t.Fatalf("block % x", blocks)
	}
	if xHat[0] != -127*0.1259765625 || xHat[16] != 0 || xHat[17] != 8*0.1259765625 {
		t.Fatalf("x̂ %v %v %v", xHat[0], xHat[16], xHat[17])
	}
	if _, _, err := QuantizeRowQ8_1(x[:31]); !errors.Is(err, ErrBadShape) {
		t.Fatalf("K = 31: %v", err)
	}
}

// Blocks by hand (ggml's quantize_row_q8_K_ref): block 0 has max −127, the first of
// largest magnitude (the later +127 does not replace it), so iscale = 1, d = 1, and
// 2.5 → 2, −3.5 → −4 (ties to even); block 1 is all zero: d = 0, codes and sums 0.
func TestQuantizeRowQ8_KHandWorked(t *testing.T) {
	x := make([]float32, 512)
	copy(x, []float32{2.5, -3.5, -127, 127})
	x[16] = 7
	blocks, err := QuantizeRowQ8_K(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 584 {
		t.Fatalf("%d bytes", len(blocks))
	}
	d := math.Float32frombits(binary.LittleEndian.Uint32(blocks[0:4]))
	q := []int8{int8(blocks[4]), int8(blocks[5]), int8(blocks[6]), int8(blocks[7]), int8(blocks[20])}
	s0 := int16(binary.LittleEndian.Uint16(blocks[260:262]))
	s1 := int16(binary.LittleEndian.Uint16(blocks[262:264]))
	if d != 1 || q[0] != 2 || q[1] != -4 || q[2] != -127 || q[3] != 127 || q[4] != 7 || s0 != -2 || s1 != 7 {
		t.Fatalf("block 0: d %v codes %v sums %v %v", d, q, s0, s1)
	}
	for i, b := range blocks[292:] {
		if b != 0 {
			t.Fatalf("zero block byte %d = %#x", i, b)
		}
	}
	if _, err := QuantizeRowQ8_K(x[:255]); !errors.Is(err, ErrBadShape) {
		t.Fatalf("K = 255: %v", err)
	}
}

func TestConvertHandWorked(t *testing.T) {
	f, err := ToF32([]uint16{0x3F80, 0xC000, 0x7F80}, DtypeBF16)
	if err != nil || f[0] != 1 || f[1] != -2 || !math.IsInf(float64(f[2]), 1) {
		t.Fatalf("bf16 → f32: %v %v", f, err)
	}
	h, err := FromF32([]float32{1.00390625, 65520, 65519, float32(math.Ldexp(1, -25))}, DtypeF16)
	if err != nil || h[0] != 0x3C04 || h[1] != 0x7C00 || h[2] != 0x7BFF || h[3] != 0 {
		t.Fatalf("f32 → f16: %#x %v", h, err)
	}
	b, _ := FromF32([]float32{1.00390625, 1.01171875}, DtypeBF16) // ties to even
	if b[0] != 0x3F80 || b[1] != 0x3F82 {
		t.Fatalf("f32 → bf16: %#x", b)
	}
	if err := Convert(make([]byte, 3), DtypeF16, make([]byte, 8), DtypeF32); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("odd source: %v", err)
	}
}
