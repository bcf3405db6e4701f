package ninfer

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// Two rows of K = 32 gguf_q8_0 (34-byte blocks: binary16 d, then 32 int8 q), made by hand:
// row 0: d = 0.5 (0x3800), q[j] = j - 16 -> w[j] = (j - 16) / 2
// row 1: d = -2^-24 (0x8001), q[j] = 127 - j -> w[j] = -(127 - j) * 2^-24
func q8_0Blocks() []byte {
	b := make([]byte, 68)
	b[0], b[1] = 0x00, 0x38
	for j := 0; j < 32; j++ {
		b[2+j] = byte(int8(j - 16))
	}
	b[34], b[35] = 0x01, 0x80
	for j := 0; j < 32; j++ {
		b[36+j] = byte(int8(127 - j))
	}
	return b
}

func TestVersion(t *testing.T) {
	if ABIVersion() != HeaderABIVersion {
		t.Fatalf("library ABI %d, header ABI %d", ABIVersion(), HeaderABIVersion)
	}
	if !strings.HasPrefix(Version(), "0.") {
		t.Fatalf("version %q", Version())
	}
}

func TestLookup(t *testing.T) {
	f, err := LookupFormat("gguf_q8_0")
	if err != nil || f != FormatGGUFQ8_0 {
		t.Fatalf("LookupFormat: %v %v", f, err)
	}
	if f.String() != "gguf_q8_0" || Format(999).String() != "format(999)" {
		t.Fatalf("names: %s %s", f, Format(999))
	}
	info, err := f.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "gguf_q8_0" || info.BlockValues != 32 || info.BlockBytes != 34 ||
		info.GGMLType != 8 || info.Layout != LayoutGGUFBlocksV1 || info.BitsPerWeight != 8.5 {
		t.Fatalf("info %+v", info)
	}
	if f, err := FormatFromGGMLType(12); err != nil || f != FormatGGUFQ4K {
		t.Fatalf("ggml 12: %v %v", f, err)
	}
	if l, err := LookupLayout("row_split_k128_v1"); err != nil || l != LayoutRowSplitK128V1 {
		t.Fatalf("LookupLayout: %v %v", l, err)
	}
	if FormatCount() != 30 || LayoutCount() != 6 {
		t.Fatalf("counts %d %d", FormatCount(), LayoutCount())
	}
	sizes, err := PlaneSizes(FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 32)
	if err != nil || sizes != [MaxPlanes]int{68, 0, 0} {
		t.Fatalf("PlaneSizes %v %v", sizes, err)
	}
	if err := Compatible(FormatQ4G64FP16, LayoutRowSplitK128V1); err != nil {
		t.Fatal(err)
	}
}

func TestRefusedInputsAreGoErrors(t *testing.T) {
	_, err := LookupFormat("Q4")
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusUnknownFormat || !strings.Contains(e.Message, "Q4") {
		t.Fatalf("LookupFormat(Q4): %#v", err)
	}
	if !errors.Is(err, ErrUnknownFormat) || errors.Is(err, ErrBadShape) {
		t.Fatalf("errors.Is on %v", err)
	}
	if !strings.HasPrefix(err.Error(), "UNKNOWN_FORMAT: ") {
		t.Fatalf("Error() = %q", err.Error())
	}
	_, err = FormatFromGGMLType(3)
	if !errors.Is(err, ErrUnregisteredType) || !strings.Contains(err.Error(), "Q4_1") {
		t.Fatalf("ggml 3: %v", err)
	}
	if err := Compatible(FormatGGUFQ8_0, LayoutRowSplitK128V1); !errors.Is(err, ErrIncompatibleLayout) {
		t.Fatalf("Compatible: %v", err)
	}
	if _, err := PlaneSizes(FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 48); !errors.Is(err, ErrBadShape) {
		t.Fatalf("PlaneSizes K=48: %v", err)
	}
}

func TestDecodeGGUFQ8_0Row(t *testing.T) {
	blocks := q8_0Blocks()
	v, err := NewWeightView(FormatGGUFQ8_0, 2, 32, blocks)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 32)
	if err := v.DecodeRow(0, out); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 32; j++ {
		if out[j] != float32(j-16)*0.5 {
			t.Fatalf("row 0 [%d] = %v", j, out[j])
		}
	}
	if math.Float32bits(out[16]) != 0 {
		t.Fatalf("0 * 0.5 must be +0, got %#x", math.Float32bits(out[16]))
	}
	row1, err := v.Row(1)
	if err != nil {
		t.Fatal(err)
	}
	// q = 96 at j = 31: -96 * 2^-24 = -1.5 * 2^-18 -> bits 0xB6C00000
	if math.Float32bits(row1[31]) != 0xB6C00000 || row1[0] != -127*float32(math.Ldexp(1, -24)) {
		t.Fatalf("row 1: %v ... %#x", row1[0], math.Float32bits(row1[31]))
	}
	// bf16 of row 0: the high half of each exact f32 value.
	half := make([]uint16, 32)
	if err := v.DecodeRowAs16(0, DtypeBF16, half); err != nil {
		t.Fatal(err)
	}
	for j := range half {
		if half[j] != uint16(math.Float32bits(out[j])>>16) {
			t.Fatalf("bf16[%d] = %#x", j, half[j])
		}
	}
	t.Logf("decoded 2 rows x 32 values of gguf_q8_0, 32 bf16 words")
}

// DecodeRows / DecodeRowsAs / Decode: one library call for a row range, the same bits as
// the per-row calls, refusals with nothing written.
func TestDecodeRows(t *testing.T) {
	v, err := NewWeightView(FormatGGUFQ8_0, 2, 32, q8_0Blocks())
	if err != nil {
		t.Fatal(err)
	}
	all, err := v.Decode()
	if err != nil || len(all) != 64 {
		t.Fatalf("Decode: %d values, %v", len(all), err)
	}
	for r := uint64(0); r < 2; r++ {
		row, _ := v.Row(r)
		for j := range row {
			if math.Float32bits(all[int(r)*32+j]) != math.Float32bits(row[j]) {
				t.Fatalf("row %d [%d]: %#x != %#x", r, j, math.Float32bits(all[int(r)*32+j]), math.Float32bits(row[j]))
			}
		}
	}
	one := make([]float32, 32)
	if err := v.DecodeRows(1, 1, one); err != nil || one[0] != all[32] || one[31] != all[63] {
		t.Fatalf("DecodeRows(1, 1): %v", err)
	}
	words := make([]uint16, 64)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 128)
	if err := v.DecodeRowsAs(0, 2, DtypeBF16, b); err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		if w != uint16(math.Float32bits(all[i])>>16) {
			t.Fatalf("bf16 word %d: %#x", i, w)
		}
	}
	canary := []float32{42, 42, 42}
	short := make([]float32, 63)
	for i := range short {
		short[i] = 42
	}
	for _, c := range []struct {
		err  error
		want error
	}{
		{v.DecodeRows(1, 2, make([]float32, 64)), ErrRowOutOfRange},
		{v.DecodeRows(0, 2, short), ErrBufferTooSmall},
		{v.DecodeRows(math.MaxUint64, 2, canary), ErrOverflow},
		{v.DecodeRowsAs(0, 1, Dtype(7), b), ErrUnknownDtype},
	} {
		if !errors.Is(c.err, c.want) {
			t.Fatalf("got %v, want %v", c.err, c.want)
		}
	}
	for _, x := range append(short, canary...) {
		if x != 42 {
			t.Fatal("a refused call wrote its output")
		}
	}
	if err := v.DecodeRows(2, 0, nil); err != nil {
		t.Fatalf("count 0: %v", err)
	}
}

func TestDecodeRefusals(t *testing.T) {
	blocks := q8_0Blocks()
	v, _ := NewWeightView(FormatGGUFQ8_0, 2, 32, blocks)
	out := make([]float32, 32)
	out[0] = 42
	cases := []struct {
		name string
		err  error
		want *Error
	}{
		{"row 2 of 2", v.DecodeRow(2, out), ErrRowOutOfRange},
		{"31 outputs", v.DecodeRow(0, out[:31]), ErrBufferTooSmall},
		{"nil output (NULL, 0)", v.DecodeRow(0, nil), ErrBufferTooSmall},
		{"dtype 7", v.DecodeRowAs(0, Dtype(7), make([]byte, 128)), ErrUnknownDtype},
		{"short plane", (&WeightView{FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 32,
			[MaxPlanes][]byte{blocks[:67]}}).DecodeRow(0, out), ErrSizeMismatch},
		{"K = 48", (&WeightView{FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 48,
			[MaxPlanes][]byte{blocks}}).Check(), ErrBadShape},
		{"no plane", (&WeightView{FormatGGUFQ8_0, LayoutGGUFBlocksV1, 2, 32,
			[MaxPlanes][]byte{}}).Check(), ErrSizeMismatch},
		{"wrong layout", (&WeightView{FormatGGUFQ8_0, LayoutContiguousLEV1, 2, 32,
			[MaxPlanes][]byte{blocks}}).Check(), ErrIncompatibleLayout},
	}
	for _, c := range cases {
		var e *Error
		if !errors.As(c.err, &e) || !errors.Is(c.err, c.want) || e.Message == "" {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want.Status)
		}
	}
	if out[0] != 42 {
		t.Fatalf("output written on failure: %v", out[0])
	}
	if _, err := NewWeightView(Format(77), 1, 32); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("NewWeightView(77): %v", err)
	}
}

// Messages are per OS thread on the C side: concurrent failing calls must each get their
// own message (the binding locks the goroutine to its thread for call + read).
func TestErrorMessagesUnderConcurrency(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				name := "no_such_format_" + itoa(uint64(g*1000+i))
				_, err := LookupFormat(name)
				if err == nil || !strings.Contains(err.Error(), name) {
					errs <- name + ": " + err.Error()
					return
				}
				if _, err := LookupFormat("bf16"); err != nil {
					errs <- err.Error()
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
