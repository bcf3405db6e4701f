package ninfer

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// groupedSource builds a [rows, cols] source that grouped_absmax stores exactly: per group
// of g values, codes in [-qmax, qmax] with one +qmax, times a power of two; amax / qmax is
// that power of two, so decoding gives the source back bit for bit (hand-worked oracle).
func groupedSource(rows, cols, g int, qmax int32) []float32 {
	src := make([]float32, rows*cols)
	for r := 0; r < rows; r++ {
		for k := 0; k < cols; k++ {
			code := int32((r*131+k*37)%int(2*qmax+1)) - qmax
			if k%g == 0 {
				code = qmax
			}
			scale := float32(math.Ldexp(1, (r+k/g)%5-3))
			src[r*cols+k] = float32(code) * scale
		}
	}
	return src
}

func TestQuantizeGroupedRoundTrip(t *testing.T) {
	for _, f := range []Format{FormatQ8G32FP16, FormatQ4G64FP16, FormatQ5G64FP16, FormatQ6G64FP16} {
		info, err := f.Info()
		if err != nil {
			t.Fatal(err)
		}
		rows, cols := 3, 256
		src := groupedSource(rows, cols, int(info.BlockValues), int32(info.QMax))
		for k := 0; k < int(info.BlockValues); k++ {
			src[2*cols+k] = 0 // one all-zero group
		}
		v, prov, err := QuantizeGrouped(f, F32Source(src), uint64(rows), uint64(cols), nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if prov.Groups != uint64(rows*cols)/uint64(info.BlockValues) || prov.ZeroGroups != 1 || prov.Method != GroupedAbsmax {
			t.Fatalf("%s provenance %+v", f, prov)
		}
		exact := 0
		for r := 0; r < rows; r++ {
			got, err := v.Row(uint64(r))
			if err != nil {
				t.Fatal(err)
			}
			for k := range got {
				if math.Float32bits(got[k]) == math.Float32bits(src[r*cols+k]) {
					exact++
				}
			}
		}
		if exact != rows*cols {
			t.Fatalf("%s: %d of %d values round-trip exactly", f, exact, rows*cols)
		}
		t.Logf("%s: %d values round-trip bit for bit", f, exact)
	}
	src := groupedSource(2, 128, 32, 127)
	_, prov, err := QuantizeGrouped(FormatQ8G32FP16, F32Source(src), 2, 128,
		&QuantizeOptions{Method: GroupedSearch})
	if err != nil || prov.Method != GroupedSearch || prov.ParametersVersion != 1 || prov.Error > prov.AbsmaxError {
		t.Fatalf("grouped_search: %+v %v", prov, err)
	}
	src[7] = float32(math.NaN())
	if _, _, err := QuantizeGrouped(FormatQ8G32FP16, F32Source(src), 2, 128, nil); !errors.Is(err, &Error{Status: StatusNonFiniteSource}) {
		t.Fatalf("NaN source: %v", err)
	}
	if _, _, err := QuantizeGrouped(FormatQ8G32FP16, F32Source(src[:100]), 2, 128, nil); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("short source: %v", err)
	}
}

func TestFP8AndNVFP4Encoders(t *testing.T) {
	src := make([]float32, 256*32)
	for i := range src {
		src[i] = float32(i%97-48) / 16
	}
	for _, f := range []Format{FormatFP8E4M3FNRowBF16, FormatFP8E4M3FNRowFP16} {
		v, err := FP8RowMaxAbs(f, F32Source(src), 256, 32)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := v.FP8RowValidate(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	v, err := NVFP4Quantize(F32Source(src), 256, 32, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.NVFP4Validate(); err != nil {
		t.Fatal(err)
	}
	if len(v.Planes[2]) != 8 {
		t.Fatalf("divisors: %d bytes", len(v.Planes[2]))
	}
	if _, err := NVFP4Quantize(F32Source(src), 256, 24, 1); !errors.Is(err, ErrBadShape) && !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("cols 24: %v", err)
	}
}

func TestValidateAndRows(t *testing.T) {
	blocks := q8_0Blocks()
	v, _ := NewWeightView(FormatGGUFQ8_0, 2, 32, blocks)
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	row1, err := v.RowsCopy(1, 1)
	if err != nil || !bytes.Equal(row1, blocks[34:]) {
		t.Fatalf("RowsCopy: %v", err)
	}
	g, err := v.RowsGather([]uint64{1, 0, 1})
	want := append(append(append([]byte{}, blocks[34:]...), blocks[:34]...), blocks[34:]...)
	if err != nil || !bytes.Equal(g, want) {
		t.Fatalf("RowsGather: %v", err)
	}
	if _, err := v.RowsGather([]uint64{0, 2}); !errors.Is(err, &Error{Status: StatusIndexOutOfRange}) {
		t.Fatalf("gather index 2: %v", err)
	}
	bad := append([]byte{}, blocks...)
	bad[34], bad[35] = 0x00, 0x7C // row 1's d = +Inf
	err = (&WeightView{FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 32, [MaxPlanes][]byte{bad}}).Validate()
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidEncoding || e.Location == nil || *e.Location != (Location{Row: 1, Block: 0}) {
		t.Fatalf("Validate(+Inf d): %#v", err)
	}
}

func TestImportGGUF(t *testing.T) {
	blocks := q8_0Blocks()
	g, _ := NewWeightView(FormatGGUFQ8_0, 2, 32, blocks)
	native, err := ImportGGUF(g, FormatQ8G32FP16)
	if err != nil {
		t.Fatal(err)
	}
	for r := uint64(0); r < 2; r++ {
		a, _ := g.Row(r)
		b, err := native.Row(r)
		if err != nil {
			t.Fatal(err)
		}
		for k := range a {
			if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
				t.Fatalf("row %d [%d]: %v != %v", r, k, a[k], b[k])
			}
		}
	}
	if _, err := ImportGGUF(g, FormatQ4G64FP16); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("q4 target: %v", err)
	}
	bad := append([]byte{}, blocks...)
	bad[3] = 0x80 // code -128
	gb, _ := NewWeightView(FormatGGUFQ8_0, 2, 32, bad)
	if _, err := ImportGGUF(gb, FormatQ8G32FP16); !errors.Is(err, ErrInvalidEncoding) {
		t.Fatalf("code -128: %v", err)
	}
}

func TestImportGGUFTernary(t *testing.T) {
	// TQ2_0: words 2 (code +1) everywhere, d = -0.5 (0xB800): every value is -0.5.
	block := make([]byte, 66)
	for i := 0; i < 64; i++ {
		block[i] = 0xAA
	}
	block[64], block[65] = 0x00, 0xB8
	v, err := ImportGGUFTernary(GGMLTypeTQ2_0, block, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	row, err := v.Row(0)
	if err != nil || v.Format != FormatT2G128FP16 {
		t.Fatalf("%v %v", v.Format, err)
	}
	for k, x := range row {
		if x != -0.5 {
			t.Fatalf("[%d] = %v", k, x)
		}
	}
	bad := append([]byte{}, block...)
	bad[9] = 0xFF // 2-bit words 3: not ternary
	if _, err := ImportGGUFTernary(GGMLTypeTQ2_0, bad, 1, 256); !errors.Is(err, ErrInvalidEncoding) {
		t.Fatalf("word 3: %v", err)
	}
	if _, err := ImportGGUFTernary(GGMLTypeTQ2_0, block, 1, 384); !errors.Is(err, ErrBadShape) {
		t.Fatalf("K = 384: %v", err)
	}
	if _, err := ImportGGUFTernary(GGMLTypeTQ1_0, block, 1, 256); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("66 bytes as TQ1_0: %v", err)
	}
}

func TestPacking(t *testing.T) {
	codes := make([]byte, 2*16)
	for i := range codes {
		codes[i] = 0x38 // E4M3FN 1.0
	}
	scales := []uint16{0x3F80, 0x4000} // bf16 1.0, 2.0
	v, err := FP8RowPack(FormatFP8E4M3FNRowBF16, 2, 16, codes, scales)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.FP8RowValidate(); err != nil {
		t.Fatal(err)
	}
	row1, _ := v.Row(1)
	if row1[15] != 2 {
		t.Fatalf("row 1 = %v", row1)
	}
	c2, s2, err := v.FP8RowUnpack()
	if err != nil || !bytes.Equal(c2, codes) || s2[0] != scales[0] || s2[1] != scales[1] {
		t.Fatalf("unpack: %v", err)
	}
	linear := make([]byte, 130*5)
	for i := range linear {
		linear[i] = byte(i % 127)
	}
	swz, err := NVFP4PackScales(130, 5, linear)
	if err != nil || len(swz) != 256*8 {
		t.Fatalf("pack: %d %v", len(swz), err)
	}
	back, err := NVFP4UnpackScales(130, 5, swz)
	if err != nil || !bytes.Equal(back, linear) {
		t.Fatalf("unpack scales: %v", err)
	}
	if _, err := NVFP4PackScales(130, 5, linear[:10]); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("short scales: %v", err)
	}
	if f, err := FormatAt(0); err != nil || f != FormatBF16 {
		t.Fatalf("FormatAt(0): %v %v", f, err)
	}
	if _, err := FormatAt(uint32(FormatCount())); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("FormatAt(count): %v", err)
	}
	if ma, mi, pa := VersionNumbers(); ma != HeaderVersionMajor || mi != HeaderVersionMinor || pa != HeaderVersionPatch {
		t.Fatalf("versions %d.%d.%d", ma, mi, pa)
	}
}

func TestImportBitNetTernary(t *testing.T) {
	// Packed [1, 128] for 4 rows: byte 0b00_01_10_00 = rows 0..3 codes -1, +1, 0, -1.
	packed := make([]byte, 128)
	for i := range packed {
		packed[i] = 0x18
	}
	v, err := ImportBitNetPacked(packed, 4, 128, 0.5, TernaryScaleDivide)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{-2, 2, 0, -2}
	for r := uint64(0); r < 4; r++ {
		row, err := v.Row(r)
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range row {
			if x != want[r] {
				t.Fatalf("[%d, %d] = %v, want %v", r, k, x, want[r])
			}
		}
	}
	if _, err := ImportBitNetPacked(packed, 4, 128, 3, TernaryScaleDivide); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("1/3: %v", err)
	}
	vals := make([]float32, 2*128)
	for i := range vals {
		vals[i] = float32(i%3-1) * 0.75
	}
	v, err = ImportTernaryValues(F32Source(vals), 2, 128, false, 0, TernaryScaleDivide)
	if err != nil {
		t.Fatal(err)
	}
	row, err := v.Row(1)
	if err != nil {
		t.Fatal(err)
	}
	for k, x := range row {
		if x != vals[128+k] {
			t.Fatalf("[1, %d] = %v", k, x)
		}
	}
	vals[3] = 2
	if _, err := ImportTernaryValues(F32Source(vals), 2, 128, true, 1, TernaryScaleMultiply); !errors.Is(err, ErrInvalidEncoding) {
		t.Fatalf("code 2: %v", err)
	}
}
