//! Zig wrapper over the C API of libninfer (ninfer.h via translate-c, module "c").
//!
//! Errors: each failing call returns a member of `Error` (one per C status). The library's
//! message for the last failing call on this thread is read with `lastMessage`: a Zig
//! thread is an OS thread, so reading it right after the call is correct.
//! Slices are passed to C as (pointer, length) without copies; the library keeps nothing.
const std = @import("std");
pub const c = @import("c");

/// One error per non-OK `ninfer_status` (same names, in Zig case).
pub const Error = error{
    NullPointer,
    Misaligned,
    InvalidArgument,
    UnknownFormat,
    UnknownLayout,
    IncompatibleLayout,
    UnregisteredType,
    BadShape,
    SizeMismatch,
    Overflow,
    RowOutOfRange,
    IndexOutOfRange,
    BufferTooSmall,
    Unsupported,
    InvalidEncoding,
    NonFiniteSource,
    ScaleOverflow,
    UnknownDtype,
    Internal,
    NoDevice,
    Cuda,
    OutOfMemory,
    /// A status number this binding does not know (a newer library).
    UnknownStatus,
};

/// Maps a C status to `Error`; OK is void.
pub fn check(status: u32) Error!void {
    return switch (status) {
        c.NINFER_STATUS_OK => {},
        c.NINFER_STATUS_NULL_POINTER => error.NullPointer,
        c.NINFER_STATUS_MISALIGNED => error.Misaligned,
        c.NINFER_STATUS_INVALID_ARGUMENT => error.InvalidArgument,
        c.NINFER_STATUS_UNKNOWN_FORMAT => error.UnknownFormat,
        c.NINFER_STATUS_UNKNOWN_LAYOUT => error.UnknownLayout,
        c.NINFER_STATUS_INCOMPATIBLE_LAYOUT => error.IncompatibleLayout,
        c.NINFER_STATUS_UNREGISTERED_TYPE => error.UnregisteredType,
        c.NINFER_STATUS_BAD_SHAPE => error.BadShape,
        c.NINFER_STATUS_SIZE_MISMATCH => error.SizeMismatch,
        c.NINFER_STATUS_OVERFLOW => error.Overflow,
        c.NINFER_STATUS_ROW_OUT_OF_RANGE => error.RowOutOfRange,
        c.NINFER_STATUS_INDEX_OUT_OF_RANGE => error.IndexOutOfRange,
        c.NINFER_STATUS_BUFFER_TOO_SMALL => error.BufferTooSmall,
        c.NINFER_STATUS_UNSUPPORTED => error.Unsupported,
        c.NINFER_STATUS_INVALID_ENCODING => error.InvalidEncoding,
        c.NINFER_STATUS_NON_FINITE_SOURCE => error.NonFiniteSource,
        c.NINFER_STATUS_SCALE_OVERFLOW => error.ScaleOverflow,
        c.NINFER_STATUS_UNKNOWN_DTYPE => error.UnknownDtype,
        c.NINFER_STATUS_INTERNAL => error.Internal,
        c.NINFER_STATUS_NO_DEVICE => error.NoDevice,
        c.NINFER_STATUS_CUDA => error.Cuda,
        c.NINFER_STATUS_OUT_OF_MEMORY => error.OutOfMemory,
        else => error.UnknownStatus,
    };
}

/// This thread's last error message, copied into `buf` (truncated to fit).
pub fn lastMessage(buf: []u8) []const u8 {
    if (buf.len == 0) return buf[0..0];
    const full = c.ninfer_last_error_message(buf.ptr, buf.len);
    return buf[0..@min(full, buf.len - 1)];
}

/// The linked library's version string.
pub fn version() [:0]const u8 {
    return std.mem.span(c.ninfer_version());
}

/// The linked library's {major, minor, patch}.
pub fn versionNumbers() [3]u32 {
    return .{ c.ninfer_version_major(), c.ninfer_version_minor(), c.ninfer_version_patch() };
}

/// The linked library's ABI version (the number in its SONAME); `c.NINFER_ABI_VERSION` is
/// the header's.
pub fn abiVersion() u32 {
    return c.ninfer_abi_version();
}

/// The name of a status without its prefix ("SIZE_MISMATCH").
pub fn statusName(status: u32) [:0]const u8 {
    return std.mem.span(c.ninfer_status_name(status));
}

pub const Format = u32;
pub const Layout = u32;
pub const Dtype = u32;

pub const FormatInfo = c.ninfer_format_info;

/// Number of registered formats.
pub fn formatCount() u32 {
    return c.ninfer_format_count();
}

/// The format at registry index `i`.
pub fn formatAt(i: u32) Error!Format {
    var f: u32 = 0;
    try check(c.ninfer_format_at(i, &f));
    return f;
}

/// Number of registered layouts.
pub fn layoutCount() u32 {
    return c.ninfer_layout_count();
}

/// The name of a layout, or null for an unknown number.
pub fn layoutName(l: Layout) ?[:0]const u8 {
    const p = c.ninfer_layout_name(l);
    if (p == null) return null;
    return std.mem.span(p);
}

/// Succeeds when format `f` may be stored in layout `l`.
pub fn compatible(f: Format, l: Layout) Error!void {
    return check(c.ninfer_format_layout_compatible(f, l));
}

/// The format with this exact canonical name ("gguf_q8_0").
pub fn formatLookup(name: [:0]const u8) Error!Format {
    var f: u32 = 0;
    try check(c.ninfer_format_lookup(name.ptr, &f));
    return f;
}

/// The format bit-identical to a GGUF tensor of ggml type `t`.
pub fn formatFromGgmlType(t: u32) Error!Format {
    var f: u32 = 0;
    try check(c.ninfer_format_from_ggml_type(t, &f));
    return f;
}

/// The canonical name of a format, or null for an unknown number.
pub fn formatName(f: Format) ?[:0]const u8 {
    const p = c.ninfer_format_name(f);
    if (p == null) return null;
    return std.mem.span(p);
}

/// The registry's facts about `f`.
pub fn formatInfo(f: Format) Error!FormatInfo {
    var info: FormatInfo = undefined;
    try check(c.ninfer_format_get_info(f, &info));
    return info;
}

/// The layout with this exact name.
pub fn layoutLookup(name: [:0]const u8) Error!Layout {
    var l: u32 = 0;
    try check(c.ninfer_layout_lookup(name.ptr, &l));
    return l;
}

/// Byte length of each plane of a rows × cols tensor of `f` in `l`.
pub fn planeSizes(f: Format, l: Layout, rows: u64, cols: u64) Error![c.NINFER_MAX_PLANES]usize {
    var sizes: [c.NINFER_MAX_PLANES]usize = undefined;
    try check(c.ninfer_layout_plane_sizes(f, l, rows, cols, &sizes, sizes.len));
    return sizes;
}

/// A borrowed persistent tensor (see ninfer_weight_view): format, layout, [rows, cols]
/// (cols = K) and the layout's byte planes.
pub const WeightView = struct {
    raw: c.ninfer_weight_view,

    pub fn init(format: Format, layout: Layout, rows: u64, cols: u64, planes: []const []const u8) WeightView {
        var v = WeightView{ .raw = std.mem.zeroes(c.ninfer_weight_view) };
        v.raw.format = format;
        v.raw.layout = layout;
        v.raw.rows = rows;
        v.raw.cols = cols;
        for (planes, 0..) |p, i| {
            if (i >= c.NINFER_MAX_PLANES) break;
            v.raw.planes[i].ptr = if (p.len == 0) null else p.ptr;
            v.raw.planes[i].len = p.len;
        }
        return v;
    }

    /// Structural check without reading the payload.
    pub fn check(self: *const WeightView) Error!void {
        return checkStatus(c.ninfer_weight_view_check(&self.raw));
    }

    /// Decodes row `row` into out[0..cols] as f32.
    pub fn decodeRow(self: *const WeightView, row: u64, out: []f32) Error!void {
        return checkStatus(c.ninfer_decode_row(&self.raw, row, if (out.len == 0) null else out.ptr, out.len));
    }

    /// Decodes row `row` into `out` as `dtype` (NINFER_DTYPE_*), native-endian bytes;
    /// `out` must be aligned to the element size (4 for f32, 2 for bf16/f16), else
    /// error.Misaligned.
    pub fn decodeRowAs(self: *const WeightView, row: u64, dtype: Dtype, out: []u8) Error!void {
        return checkStatus(c.ninfer_decode_row_as(&self.raw, row, dtype, if (out.len == 0) null else out.ptr, out.len));
    }

    /// Checks every encoding rule of a row-scaled FP8 view (fp8_e4m3fn_row_*): codes and
    /// row scales; error.InvalidArgument for a view of another format.
    pub fn fp8RowValidate(self: *const WeightView) Error!void {
        return checkStatus(c.ninfer_fp8_row_validate(&self.raw));
    }

    /// Checks every encoding rule of an nvfp4 view (divisors, block scales, padding);
    /// error.InvalidArgument for a view of another format.
    pub fn nvfp4Validate(self: *const WeightView) Error!void {
        return checkStatus(c.ninfer_nvfp4_validate(&self.raw));
    }

    /// Decodes rows first .. first + count into `out` as `dtype` (NINFER_DTYPE_*),
    /// native-endian bytes, row after row, in one library call (ninfer_decode_rows): row
    /// first + i starts at byte i × cols × element size. `out` must be aligned to the
    /// element size and hold count × cols elements; it is written only on success.
    pub fn decodeRowsAs(self: *const WeightView, first: u64, count: u64, dtype: Dtype, out: []u8) Error!void {
        return checkStatus(c.ninfer_decode_rows(&self.raw, first, count, if (out.len == 0) null else out.ptr, out.len, dtype));
    }

    /// Decodes rows first .. first + count into out[0 .. count × cols] as f32 (decodeRow's
    /// values), in one library call.
    pub fn decodeRows(self: *const WeightView, first: u64, count: u64, out: []f32) Error!void {
        return self.decodeRowsAs(first, count, c.NINFER_DTYPE_F32, std.mem.sliceAsBytes(out));
    }

    /// Decodes every row into a new slice of rows × cols floats (row-major) owned by the
    /// caller, in one library call.
    pub fn decodeAlloc(self: *const WeightView, gpa: std.mem.Allocator) (Error || std.mem.Allocator.Error)![]f32 {
        try self.check();
        const rows = std.math.cast(usize, self.raw.rows) orelse return error.Overflow;
        const cols = std.math.cast(usize, self.raw.cols) orelse return error.Overflow;
        const n = std.math.mul(usize, rows, cols) catch return error.Overflow;
        const out = try gpa.alloc(f32, n);
        errdefer gpa.free(out);
        try self.decodeRows(0, self.raw.rows, out);
        return out;
    }

    /// Decodes row `row` into a new slice of cols floats owned by the caller.
    pub fn decodeRowAlloc(self: *const WeightView, gpa: std.mem.Allocator, row: u64) (Error || std.mem.Allocator.Error)![]f32 {
        try self.check();
        const n = std.math.cast(usize, self.raw.cols) orelse return error.Overflow;
        const out = try gpa.alloc(f32, n);
        errdefer gpa.free(out);
        try self.decodeRow(row, out);
        return out;
    }
};

const checkStatus = check;

pub const Location = struct { row: u64, block: u64 };

/// Checks every encoding rule over the whole payload. On error.InvalidEncoding, `where`
/// (when given) receives the first offending row and block / group.
pub fn validate(v: *const WeightView, where: ?*Location) Error!void {
    var row: u64 = 0;
    var block: u64 = 0;
    const st = c.ninfer_validate(&v.raw, &row, &block);
    if (st == c.NINFER_STATUS_INVALID_ENCODING) {
        if (where) |w| w.* = .{ .row = row, .block = block };
    }
    return check(st);
}

/// Copies the payload of rows start .. start + count into `out`; returns the bytes written.
pub fn rowsCopy(v: *const WeightView, start: u64, count: u64, out: []u8) Error!usize {
    var written: usize = 0;
    try check(c.ninfer_rows_copy(&v.raw, start, count, if (out.len == 0) null else out.ptr, out.len, &written));
    return written;
}

/// Copies the payload of the rows `indices` into `out`; returns the bytes written.
pub fn rowsGather(v: *const WeightView, indices: []const u64, out: []u8) Error!usize {
    var written: usize = 0;
    try check(c.ninfer_rows_gather(&v.raw, if (indices.len == 0) null else indices.ptr, indices.len, if (out.len == 0) null else out.ptr, out.len, &written));
    return written;
}

/// A tensor whose planes this struct owns (an encoder's output). `deinit` frees them.
pub const OwnedTensor = struct {
    planes: [c.NINFER_MAX_PLANES][]u8,
    view: WeightView,
    gpa: std.mem.Allocator,

    fn alloc(gpa: std.mem.Allocator, format: Format, layout: Layout, rows: u64, cols: u64) (Error || std.mem.Allocator.Error)!OwnedTensor {
        const sizes = try planeSizes(format, layout, rows, cols);
        var t = OwnedTensor{ .planes = .{ &.{}, &.{}, &.{} }, .view = undefined, .gpa = gpa };
        errdefer t.deinit();
        for (sizes, 0..) |n, i| t.planes[i] = try gpa.alloc(u8, n);
        for (t.planes) |p| @memset(p, 0);
        t.view = WeightView.init(format, layout, rows, cols, &.{ t.planes[0], t.planes[1], t.planes[2] });
        return t;
    }

    fn replacePlane(t: *OwnedTensor, i: usize, n: usize) std.mem.Allocator.Error!void {
        const p = try t.gpa.alloc(u8, n);
        @memset(p, 0);
        t.gpa.free(t.planes[i]);
        t.planes[i] = p;
        t.view = WeightView.init(t.view.raw.format, t.view.raw.layout, t.view.raw.rows, t.view.raw.cols, &.{ t.planes[0], t.planes[1], t.planes[2] });
    }

    fn mut(p: []u8) ?[*]u8 {
        return if (p.len == 0) null else p.ptr;
    }

    pub fn deinit(t: *OwnedTensor) void {
        for (t.planes) |p| t.gpa.free(p);
        t.planes = .{ &.{}, &.{}, &.{} };
    }
};

pub const QuantizeOptions = c.ninfer_quantize_options;
pub const Provenance = c.ninfer_quantize_provenance;

/// Quantizes a row-major [rows, cols] f32 source into the row_split_k128_v1 planes of a
/// grouped format; `options` null means grouped_absmax.
pub fn quantizeGrouped(gpa: std.mem.Allocator, format: Format, src: []const f32, rows: u64, cols: u64, options: ?*const QuantizeOptions, provenance: ?*Provenance) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, format, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_quantize_grouped(format, if (src.len == 0) null else src.ptr, src.len * @sizeOf(f32), c.NINFER_DTYPE_F32, rows, cols, options, &planes, provenance));
    return t;
}

/// Quantizes a [rows, cols] f32 source with fp8_row_maxabs (fp8_e4m3fn_row_bf16 / _fp16).
pub fn fp8RowMaxAbs(gpa: std.mem.Allocator, format: Format, src: []const f32, rows: u64, cols: u64) (Error || std.mem.Allocator.Error)!OwnedTensor {
    const info = try formatInfo(format);
    var t = try OwnedTensor.alloc(gpa, format, info.layout, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_fp8_row_maxabs(format, if (src.len == 0) null else src.ptr, src.len * @sizeOf(f32), c.NINFER_DTYPE_F32, rows, cols, &planes));
    return t;
}

/// Quantizes a [rows, cols] f32 source of `sources` stacked matrices to nvfp4.
pub fn nvfp4Quantize(gpa: std.mem.Allocator, src: []const f32, rows: u64, cols: u64, sources: u64) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, c.NINFER_FORMAT_NVFP4, c.NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, rows, cols);
    errdefer t.deinit();
    const n = std.math.mul(usize, 4, std.math.cast(usize, sources) orelse return error.Overflow) catch return error.Overflow;
    try t.replacePlane(2, n);
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_nvfp4_quantize(c.NINFER_FORMAT_NVFP4, if (src.len == 0) null else src.ptr, src.len * @sizeOf(f32), c.NINFER_DTYPE_F32, rows, cols, sources, &planes));
    return t;
}

/// Moves a gguf_q8_0 / gguf_q2_0 view's words into the row_split_k128_v1 planes of
/// q8_g32_fp16 / q2_g64_fp16, without rounding (spec §2 import_encoded).
pub fn importGguf(gpa: std.mem.Allocator, gguf: *const WeightView, target: Format) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, target, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1, gguf.raw.rows, gguf.raw.cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_import_gguf(&gguf.raw, target, &planes));
    return t;
}

/// Moves a ternary GGUF tensor into the row_split_k128_v1 planes of t2_g128_fp16 without
/// rounding (spec §2 import_encoded): `ggml_type` 34 (TQ1_0, 54-byte blocks) or 35 (TQ2_0,
/// 66-byte blocks), `blocks` the tensor's data as in the file (rows × cols / 256 blocks),
/// `cols` = GGUF ne[0], a multiple of 256. Each block's binary16 d is the scale of its two
/// 128-value groups; codes map to -1, 0, +1. A TQ2_0 word 3, a NaN/Inf/-0 d or a +0 d over
/// non-zero codes is error.InvalidEncoding; a bad shape error.BadShape; a blocks length
/// that does not match error.SizeMismatch.
pub fn importGgufTernary(gpa: std.mem.Allocator, ggml_type: u32, blocks: []const u8, rows: u64, cols: u64) (Error || std.mem.Allocator.Error)!OwnedTensor {
    const bb: u64 = switch (ggml_type) {
        34 => 54,
        35 => 66,
        else => 0,
    };
    const max = std.math.maxInt(u64);
    const need: u64 = if (std.math.mul(u64, rows, cols / 256)) |n| (std.math.mul(u64, n, bb) catch max) else |_| max;
    if (bb == 0 or cols % 256 != 0 or need != @as(u64, blocks.len)) {
        // The library names the problem; no plane is sized from an unchecked shape.
        var none: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
        for (&none) |*p| p.* = .{ .ptr = null, .len = 0 };
        try check(c.ninfer_import_gguf_ternary(ggml_type, if (blocks.len == 0) null else blocks.ptr, blocks.len, rows, cols, &none));
        return error.SizeMismatch;
    }
    var t = try OwnedTensor.alloc(gpa, c.NINFER_FORMAT_T2_G128_FP16, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_import_gguf_ternary(ggml_type, blocks.ptr, blocks.len, rows, cols, &planes));
    return t;
}

/// Moves a BitNet b1.58 weight packed as Hugging Face transformers packs it (`packed`:
/// u8 [rows / 4, cols]; weight row n is the 2-bit field n / (rows/4) of packed row
/// n % (rows/4), holding code + 1) into t2_g128_fp16 planes without rounding.
/// `scale_rule`: c.NINFER_TERNARY_SCALE_DIVIDE (value = code / weight_scale) or
/// c.NINFER_TERNARY_SCALE_MULTIPLY (code × weight_scale); the scale word must be exact in
/// binary16 (else error.InvalidArgument). A word 3 is error.InvalidEncoding; cols not a
/// multiple of 128 or rows of 4 error.BadShape.
pub fn importBitnetPacked(gpa: std.mem.Allocator, packed_codes: []const u8, rows: u64, cols: u64, weight_scale: f32, scale_rule: u32) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, c.NINFER_FORMAT_T2_G128_FP16, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_import_bitnet_packed(if (packed_codes.len == 0) null else packed_codes.ptr, packed_codes.len, rows, cols, weight_scale, scale_rule, &planes));
    return t;
}

/// Moves a ternary weight stored as one f32 per value into t2_g128_fp16 planes without
/// rounding: with `has_scale`, codes -1/0/+1 scaled by `weight_scale` under `scale_rule`
/// (as importBitnetPacked); without, values -s/0/+s per 128-value group, s exact in
/// binary16. Anything else is refused with the library's status (error.InvalidEncoding,
/// error.InvalidArgument, error.BadShape, error.SizeMismatch).
pub fn importTernaryValues(gpa: std.mem.Allocator, src: []const f32, rows: u64, cols: u64, has_scale: bool, weight_scale: f32, scale_rule: u32) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, c.NINFER_FORMAT_T2_G128_FP16, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_import_ternary_values(if (src.len == 0) null else src.ptr, src.len * @sizeOf(f32), c.NINFER_DTYPE_F32, rows, cols, @intFromBool(has_scale), weight_scale, scale_rule, &planes));
    return t;
}

/// Lays out logical FP8 words in the planes of `format` (fp8_e4m3fn_row_bf16 / _fp16):
/// `codes` = rows × cols E4M3FN words row-major, `scales` = rows 16-bit scale words (BF16 or
/// binary16 bits). Words are copied unchanged, not validated (follow with
/// `c.ninfer_fp8_row_validate` on the result's view).
pub fn fp8RowPack(gpa: std.mem.Allocator, format: Format, rows: u64, cols: u64, codes: []const u8, scales: []const u16) (Error || std.mem.Allocator.Error)!OwnedTensor {
    const info = try formatInfo(format);
    var t = try OwnedTensor.alloc(gpa, format, info.layout, rows, cols);
    errdefer t.deinit();
    var planes: [c.NINFER_MAX_PLANES]c.ninfer_mut_bytes = undefined;
    for (t.planes, 0..) |p, i| planes[i] = .{ .ptr = OwnedTensor.mut(p), .len = p.len };
    try check(c.ninfer_fp8_row_pack(format, rows, cols, if (codes.len == 0) null else codes.ptr, codes.len, if (scales.len == 0) null else scales.ptr, scales.len, &planes));
    return t;
}

/// The inverse of `fp8RowPack`: copies the logical words of a row-scaled FP8 view into
/// `codes` (rows × cols, row-major) and `scales` (rows words), unchanged.
pub fn fp8RowUnpack(v: *const WeightView, codes: []u8, scales: []u16) Error!void {
    return check(c.ninfer_fp8_row_unpack(&v.raw, if (codes.len == 0) null else codes.ptr, codes.len, if (scales.len == 0) null else scales.ptr, scales.len));
}

/// Swizzles linear row-major E4M3FN block scales [rows, k_blocks] (k_blocks = K / 16) into
/// the 128×4 layout of block_scale_k16_m128x4_v1. `out` must hold round_up(rows, 128) ×
/// round_up(k_blocks, 4) bytes (the nvfp4 scale plane: `planeSizes(..., rows, 16 ·
/// k_blocks)[1]`); padding is zero-filled.
pub fn nvfp4PackScales(rows: u64, k_blocks: u64, linear: []const u8, out: []u8) Error!void {
    return check(c.ninfer_nvfp4_pack_scales(rows, k_blocks, if (linear.len == 0) null else linear.ptr, linear.len, if (out.len == 0) null else out.ptr, out.len));
}

/// The inverse of `nvfp4PackScales`: the linear [rows, k_blocks] scales of a swizzled
/// plane (padding ignored) into `out` (rows × k_blocks bytes).
pub fn nvfp4UnpackScales(rows: u64, k_blocks: u64, swizzled: []const u8, out: []u8) Error!void {
    return check(c.ninfer_nvfp4_unpack_scales(rows, k_blocks, if (swizzled.len == 0) null else swizzled.ptr, swizzled.len, if (out.len == 0) null else out.ptr, out.len));
}

/// True when this build has a linear kernel for the combination, false when the numbers
/// are valid but it has none; an error for numbers that name nothing.
pub fn linearSupported(format: Format, layout: Layout, x: Dtype, y: Dtype, device: u32) Error!bool {
    const st = c.ninfer_linear_supported(format, layout, x, y, device);
    if (st == c.NINFER_STATUS_UNSUPPORTED) return false;
    try check(st);
    return true;
}

/// The activation profile of a `Linear` (NINFER_ACTIVATION_*): what `forward` multiplies
/// the weight values with (spec §2: the consumer chooses activation precision;
/// docs/linear.md "Activation profiles"). Non-exhaustive: other numbers reach the library,
/// which refuses them with error.InvalidArgument.
pub const Activation = enum(u32) {
    /// x as given: the default of every non-GGUF format, unavailable for GGUF weights.
    exact = c.NINFER_ACTIVATION_EXACT,
    /// Each row of x quantized to ggml's q8_1 blocks (32 values, a binary16 scale d, codes
    /// round(x/d) in [-127, 127]), then x̂ = d·code: the only profile of GGUF weights,
    /// opt-in for q2/t2/q4/q5/q6/q8 grouped formats in row_split_k128_v1 and for nvfp4.
    q8_1 = c.NINFER_ACTIVATION_Q8_1,
    /// Each row of x quantized to ggml's q8_K blocks (256 values, a binary32 scale d, codes
    /// in [-127, 127]), then x̂ = d·code: opt-in for the GGUF k-quants (Q2_K..Q6_K) and
    /// 256-value i-quants (IQ4_XS, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S),
    /// on the CPU.
    q8_k = c.NINFER_ACTIVATION_Q8_K,
    _,
};

/// True when this build computes linear for `format` in `layout` on `device` with the
/// profile `activation`, false when the numbers are valid but it does not (exact on GGUF
/// formats, q8_1 on bf16, fp32, fp8 rows, CUDA); an error for numbers that name
/// nothing (UnknownFormat, UnknownLayout, IncompatibleLayout, InvalidArgument for the
/// activation or device). q8_1 also needs K to be a multiple of 32, checked by
/// `Linear.setActivation`.
pub fn linearActivationSupported(format: Format, layout: Layout, activation: Activation, device: u32) Error!bool {
    const st = c.ninfer_linear_activation_supported(format, layout, @backingInt(activation), device);
    if (st == c.NINFER_STATUS_UNSUPPORTED) return false;
    try check(st);
    return true;
}

/// A weight prepared for y = x · Wᵀ (+ bias) (ninfer_linear). It borrows the planes of
/// the view it was prepared from: they must outlive it. Free it with `deinit`.
pub const Linear = struct {
    handle: *c.ninfer_linear,
    rows: u64, // N
    cols: u64, // K

    pub fn prepare(v: *const WeightView, device: u32) Error!Linear {
        var h: ?*c.ninfer_linear = null;
        try check(c.ninfer_linear_prepare(&v.raw, device, &h));
        var l = Linear{ .handle = h.?, .rows = 0, .cols = 0 };
        errdefer l.deinit();
        try check(c.ninfer_linear_shape(l.handle, &l.rows, &l.cols));
        return l;
    }

    pub fn deinit(l: *Linear) void {
        c.ninfer_linear_free(l.handle);
        l.* = undefined;
    }

    /// 0 = process-wide pool (default), 1 = calling thread, n = the calling thread and a
    /// pool of n - 1 threads.
    pub fn setThreads(l: *Linear, threads: u32) Error!void {
        return check(c.ninfer_linear_set_threads(l.handle, threads));
    }

    /// Chooses the activation profile of `forward` (defaults: GGUF formats .q8_1, every
    /// other format .exact). Errors, with the setting unchanged: InvalidArgument (an unknown
    /// number), Unsupported (.exact on a GGUF weight, .q8_1 on a format without it; see
    /// `linearActivationSupported`), BadShape (.q8_1 with K not a multiple of 32).
    pub fn setActivation(l: *Linear, activation: Activation) Error!void {
        return check(c.ninfer_linear_set_activation(l.handle, @backingInt(activation)));
    }

    /// y[m, N] = x[m, K] · Wᵀ (+ bias[N]), all f32.
    pub fn forward(l: *const Linear, x: []const f32, m: u64, bias: ?[]const f32, y: []f32) Error!void {
        const b: []const f32 = bias orelse &.{};
        return check(c.ninfer_linear_forward(l.handle, if (x.len == 0) null else x.ptr, x.len * @sizeOf(f32), c.NINFER_DTYPE_F32, m, l.cols, if (b.len == 0) null else b.ptr, b.len, if (y.len == 0) null else y.ptr, y.len * @sizeOf(f32), c.NINFER_DTYPE_F32));
    }

    /// The outputs n0..n1 of `forward` with strided rows (ninfer_linear_forward_rows): x
    /// holds m rows `ldx` values apart ((m−1)·ldx + K values), y m rows `ldy` values apart
    /// (ldy ≥ n1; (m−1)·ldy + n1 values; y[0] is column 0 of row 0, not column n0); only
    /// y[r·ldy + n], r < m, n0 ≤ n < n1, is written, with the bits of the same outputs of
    /// `forward`. `bias` null or at least n1 values, indexed by the absolute n. Threads may
    /// fill disjoint ranges of one y at once (after `setThreads(1)` each call stays on its
    /// thread). Errors, with nothing written: InvalidArgument (n0 > n1), RowOutOfRange
    /// (n1 > N), BadShape (ldx < K, ldy < n1), BufferTooSmall, Unsupported (a CUDA weight
    /// with a range or strides).
    pub fn forwardRows(l: *const Linear, x: []const f32, m: u64, ldx: u64, bias: ?[]const f32, n0: u64, n1: u64, y: []f32, ldy: u64) Error!void {
        const b: []const f32 = bias orelse &.{};
        return check(c.ninfer_linear_forward_rows(l.handle, if (x.len == 0) null else x.ptr, x.len * @sizeOf(f32), c.NINFER_DTYPE_F32, m, l.cols, ldx, if (b.len == 0) null else b.ptr, b.len, n0, n1, if (y.len == 0) null else y.ptr, y.len * @sizeOf(f32), c.NINFER_DTYPE_F32, ldy));
    }

    /// Copies v's planes once to CUDA device `ordinal` (ninfer_cuda_linear_prepare;
    /// `prepare` with NINFER_DEVICE_CUDA does the same on device 0): v may be freed
    /// afterwards. `forward` then copies host buffers in and out; `cudaForward` works on
    /// device buffers. error.NoDevice without CUDA support, driver or GPU.
    pub fn prepareCuda(v: *const WeightView, ordinal: u32) Error!Linear {
        var h: ?*c.ninfer_linear = null;
        try check(c.ninfer_cuda_linear_prepare(&v.raw, ordinal, &h));
        return adopt(h.?);
    }

    /// A weight whose planes are already in the memory of CUDA device `ordinal`
    /// (ninfer_cuda_linear_prepare_device, zero copy): they must stay valid and unchanged
    /// until `deinit`.
    pub fn prepareCudaDevice(v: *const DeviceView, ordinal: u32) Error!Linear {
        var h: ?*c.ninfer_linear = null;
        try check(c.ninfer_cuda_linear_prepare_device(v, ordinal, &h));
        return adopt(h.?);
    }

    fn adopt(h: *c.ninfer_linear) Error!Linear {
        var l = Linear{ .handle = h, .rows = 0, .cols = 0 };
        errdefer l.deinit();
        try check(c.ninfer_linear_shape(l.handle, &l.rows, &l.cols));
        return l;
    }

    /// Device workspace bytes `cudaForward` of `m` rows needs (0 for a CPU handle).
    pub fn cudaWorkspaceSize(l: *const Linear, m: u64) Error!u64 {
        var n: u64 = 0;
        try check(c.ninfer_cuda_linear_workspace_size(l.handle, m, &n));
        return n;
    }

    /// y = x · Wᵀ (+ bias) on the handle's device, enqueued on `stream` (no wait): x holds
    /// m × K values of `x_dtype`, y m × N of `y_dtype` (F32 or BF16), bias N floats or 0,
    /// all device addresses; `workspace` 0 lets the library allocate in stream order.
    /// error.Unsupported on a CPU handle.
    pub fn cudaForward(l: *const Linear, x: u64, x_dtype: Dtype, m: u64, bias: u64, y: u64, y_dtype: Dtype, stream: CudaStream, workspace: u64, workspace_bytes: u64) Error!void {
        return check(c.ninfer_cuda_linear_forward(l.handle, x, x_dtype, m, l.cols, bias, y, y_dtype, stream, workspace, workspace_bytes));
    }

    /// Rows first .. first + count decoded into device memory `out` (count × K values of
    /// `out_dtype`, F32 or BF16), enqueued on `stream`.
    pub fn cudaDecodeRows(l: *const Linear, first: u64, count: u64, out: u64, out_dtype: Dtype, stream: CudaStream) Error!void {
        return check(c.ninfer_cuda_linear_decode_rows(l.handle, first, count, out, out_dtype, stream));
    }
};

// ---- CUDA -------------------------------------------------------------------------------
// Every build has these entry points; without CUDA support in the build, the NVIDIA driver
// or a GPU they fail with error.NoDevice (lastMessage says which). Device memory travels as
// u64 addresses (CUdeviceptr), streams as CudaStream (a CUstream; null = default stream).

/// Properties of one CUDA device (`cudaDeviceName` reads its name).
pub const CudaDeviceInfo = c.ninfer_cuda_device_info;
/// A weight whose planes are device memory: addresses and byte lengths.
pub const DeviceView = c.ninfer_device_view;
/// A CUstream; null is the device's default stream.
pub const CudaStream = ?*anyopaque;

/// True when the linked library was built with CUDA support (says nothing about the machine).
pub fn cudaCompiled() bool {
    return c.ninfer_cuda_compiled() != 0;
}

/// The number of CUDA devices.
pub fn cudaDeviceCount() Error!u32 {
    var n: u32 = 0;
    try check(c.ninfer_cuda_device_count(&n));
    return n;
}

/// The properties of device `ordinal`.
pub fn cudaDeviceProperties(ordinal: u32) Error!CudaDeviceInfo {
    var info = std.mem.zeroes(CudaDeviceInfo);
    try check(c.ninfer_cuda_device_properties(ordinal, &info));
    return info;
}

/// The device's name (borrowed from `info`).
pub fn cudaDeviceName(info: *const CudaDeviceInfo) []const u8 {
    return std.mem.sliceTo(@as([*:0]const u8, @ptrCast(&info.name)), 0);
}

// ---- tests (run by `zig build test`) ----------------------------------------------------

const testing = std.testing;

/// Two rows of K = 32 gguf_q8_0 (34-byte blocks), made by hand:
/// row 0: d = 0.5 (0x3800), q[j] = j - 16; row 1: d = -2^-24 (0x8001), q[j] = 127 - j.
fn q80Blocks() [68]u8 {
    var b: [68]u8 = undefined;
    b[0] = 0x00;
    b[1] = 0x38;
    for (0..32) |j| b[2 + j] = @bitCast(@as(i8, @intCast(@as(i32, @intCast(j)) - 16)));
    b[34] = 0x01;
    b[35] = 0x80;
    for (0..32) |j| b[36 + j] = @bitCast(@as(i8, @intCast(127 - @as(i32, @intCast(j)))));
    return b;
}

/// Quantizes one activation row `x` (len a positive multiple of 32) as the q8_1 activation
/// profile does (ninfer_quantize_row_q8_1): `blocks` (empty to skip) receives len/32 ggml
/// block_q8_1 of 36 bytes, `x_hat` (empty to skip) the len values f32(d)·q the product
/// multiplies. Not both empty.
pub fn quantizeRowQ8_1(x: []const f32, blocks: []u8, x_hat: []f32) Error!void {
    return checkStatus(c.ninfer_quantize_row_q8_1(
        if (x.len == 0) null else x.ptr,
        x.len,
        if (blocks.len == 0) null else blocks.ptr,
        blocks.len,
        if (x_hat.len == 0) null else x_hat.ptr,
        x_hat.len,
    ));
}

/// Quantizes one activation row `x` (len a positive multiple of 256) as the opt-in q8_K
/// activation profile does (ninfer_quantize_row_q8_k): `blocks` receives len/256 ggml
/// block_q8_K of 292 bytes (binary32 d at 0, 256 int8 codes at 4, 16 int16 sums at 260,
/// little-endian); the product multiplies x̂ = d·q, exact in f64.
pub fn quantizeRowQ8_K(x: []const f32, blocks: []u8) Error!void {
    return checkStatus(c.ninfer_quantize_row_q8_k(
        if (x.len == 0) null else x.ptr,
        x.len,
        if (blocks.len == 0) null else blocks.ptr,
        blocks.len,
    ));
}

/// Converts the values of `src` (native-endian `src_type` words) into `dst` as `dst_type`
/// (ninfer_convert): widening exact, narrowing rounded to nearest even. Each buffer aligned
/// to its element size.
pub fn convert(src: []const u8, src_type: Dtype, dst: []u8, dst_type: Dtype) Error!void {
    return checkStatus(c.ninfer_convert(
        if (src.len == 0) null else src.ptr,
        src.len,
        src_type,
        if (dst.len == 0) null else dst.ptr,
        dst.len,
        dst_type,
    ));
}

test "versions agree" {
    try testing.expectEqual(@as(u32, c.NINFER_ABI_VERSION), abiVersion());
    try testing.expectEqual(@as(u32, c.NINFER_VERSION_MAJOR), c.ninfer_version_major());
    try testing.expect(version().len >= 5);
}

test "lookup" {
    const f = try formatLookup("gguf_q8_0");
    try testing.expectEqual(@as(u32, c.NINFER_FORMAT_GGUF_Q8_0), f);
    try testing.expectEqualStrings("gguf_q8_0", formatName(f).?);
    try testing.expect(formatName(999) == null);
    const info = try formatInfo(f);
    try testing.expectEqual(@as(u32, 32), info.block_values);
    try testing.expectEqual(@as(u32, 34), info.block_bytes);
    try testing.expectEqual(@as(i32, 8), info.ggml_type);
    try testing.expectEqual(@as(u32, c.NINFER_LAYOUT_GGUF_BLOCKS_V1), info.layout);
    try testing.expectEqual(@as(u32, c.NINFER_FORMAT_GGUF_Q4_K), try formatFromGgmlType(12));
    try testing.expectEqual(@as(u32, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1), try layoutLookup("row_split_k128_v1"));
    const sizes = try planeSizes(f, info.layout, 2, 32);
    try testing.expectEqual([_]usize{ 68, 0, 0 }, sizes);
    try testing.expectEqual(@as(u32, 30), formatCount());
    try testing.expectEqual(@as(u32, c.NINFER_FORMAT_BF16), try formatAt(0));
    try testing.expectError(error.UnknownFormat, formatAt(formatCount()));
    try testing.expectEqual(@as(u32, 6), layoutCount());
    try testing.expectEqualStrings("gguf_blocks_v1", layoutName(info.layout).?);
    try compatible(f, info.layout);
    try testing.expectError(error.IncompatibleLayout, compatible(f, c.NINFER_LAYOUT_ROW_SPLIT_K128_V1));
    try testing.expectEqualStrings("SIZE_MISMATCH", statusName(c.NINFER_STATUS_SIZE_MISMATCH));
    try testing.expectEqual([3]u32{ c.NINFER_VERSION_MAJOR, c.NINFER_VERSION_MINOR, c.NINFER_VERSION_PATCH }, versionNumbers());
}

test "decode a hand-made gguf_q8_0 row" {
    const blocks = q80Blocks();
    const f = try formatLookup("gguf_q8_0");
    const v = WeightView.init(f, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&blocks});
    try v.check();
    var out: [32]f32 = undefined;
    try v.decodeRow(0, &out);
    for (0..32) |j| {
        const want: f32 = @as(f32, @floatFromInt(@as(i32, @intCast(j)) - 16)) * 0.5;
        try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(out[j])));
    }
    try testing.expectEqual(@as(u32, 0), @as(u32, @bitCast(out[16]))); // +0
    const row1 = try v.decodeRowAlloc(testing.allocator, 1);
    defer testing.allocator.free(row1);
    // q = 96 at j = 31: -96 * 2^-24 = -1.5 * 2^-18 -> 0xB6C00000
    try testing.expectEqual(@as(u32, 0xB6C00000), @as(u32, @bitCast(row1[31])));
    // bf16: the high half of each exact f32 value of row 0.
    var half: [64]u8 align(2) = undefined;
    try v.decodeRowAs(0, c.NINFER_DTYPE_BF16, &half);
    for (0..32) |j| {
        const word = std.mem.readInt(u16, half[2 * j ..][0..2], .little);
        try testing.expectEqual(@as(u16, @truncate(@as(u32, @bitCast(out[j])) >> 16)), word);
    }
    // An output not aligned to its element type is refused (like float * in decodeRow).
    var odd: [66]u8 align(2) = undefined;
    try testing.expectError(error.Misaligned, v.decodeRowAs(0, c.NINFER_DTYPE_BF16, odd[1..65]));
}

test "decodeRows: one call for a row range, the per-row bits, nothing written on refusal" {
    const blocks = q80Blocks();
    const v = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&blocks});
    const all = try v.decodeAlloc(testing.allocator);
    defer testing.allocator.free(all);
    try testing.expectEqual(@as(usize, 64), all.len);
    var row: [32]f32 = undefined;
    for (0..2) |r| {
        try v.decodeRow(r, &row);
        for (0..32) |j| try testing.expectEqual(@as(u32, @bitCast(row[j])), @as(u32, @bitCast(all[r * 32 + j])));
    }
    var one: [32]f32 = undefined;
    try v.decodeRows(1, 1, &one);
    try testing.expectEqual(@as(u32, @bitCast(all[63])), @as(u32, @bitCast(one[31])));
    var words: [128]u8 align(2) = undefined;
    try v.decodeRowsAs(0, 2, c.NINFER_DTYPE_F16, &words);
    var h: [64]u8 align(2) = undefined;
    try v.decodeRowAs(1, c.NINFER_DTYPE_F16, &h);
    try testing.expectEqualSlices(u8, &h, words[64..128]);
    var canary: [64]f32 = @splat(42);
    try testing.expectError(error.RowOutOfRange, v.decodeRows(1, 2, &canary));
    try testing.expectError(error.BufferTooSmall, v.decodeRows(0, 2, canary[0..63]));
    try testing.expectError(error.Overflow, v.decodeRows(std.math.maxInt(u64), 2, &canary));
    for (canary) |x| try testing.expectEqual(@as(f32, 42), x);
    try v.decodeRows(2, 0, canary[0..0]);
}

test "quantizeRowQ8_1 and convert, by hand" {
    // x_j = j - 16: amax 16, d = 16/127 stored as binary16 0x3008 (0.1259765625),
    // 1/d = 7.9375 exactly, q_0 = -127, q_1 = round(-15 * 7.9375) = -119.
    var x: [32]f32 = undefined;
    for (&x, 0..) |*v, j| v.* = @as(f32, @floatFromInt(@as(i32, @intCast(j)) - 16));
    var blocks: [36]u8 = undefined;
    var x_hat: [32]f32 = undefined;
    try quantizeRowQ8_1(&x, &blocks, &x_hat);
    try testing.expectEqual(@as(u8, 0x08), blocks[0]);
    try testing.expectEqual(@as(u8, 0x30), blocks[1]);
    try testing.expectEqual(@as(i8, -127), @as(i8, @bitCast(blocks[4])));
    try testing.expectEqual(@as(i8, -119), @as(i8, @bitCast(blocks[5])));
    try testing.expectEqual(@as(f32, -127.0 * 0.1259765625), x_hat[0]);
    try testing.expectEqual(@as(f32, 8.0 * 0.1259765625), x_hat[17]);
    try testing.expectError(error.BadShape, quantizeRowQ8_1(x[0..31], &blocks, &x_hat));
    const words = [_]u16{ 0x3F80, 0xC000 };
    var out: [2]f32 = undefined;
    try convert(std.mem.sliceAsBytes(&words), c.NINFER_DTYPE_BF16, std.mem.sliceAsBytes(&out), c.NINFER_DTYPE_F32);
    try testing.expectEqual(@as(f32, 1.0), out[0]);
    try testing.expectEqual(@as(f32, -2.0), out[1]);
    const big = [_]f32{ 65520.0, 65519.0 };
    var h: [2]u16 = undefined;
    try convert(std.mem.sliceAsBytes(&big), c.NINFER_DTYPE_F32, std.mem.sliceAsBytes(&h), c.NINFER_DTYPE_F16);
    try testing.expectEqual(@as(u16, 0x7C00), h[0]);
    try testing.expectEqual(@as(u16, 0x7BFF), h[1]);
}

test "refused inputs are Zig errors with a message" {
    var buf: [256]u8 = undefined;
    try testing.expectError(error.UnknownFormat, formatLookup("Q4"));
    try testing.expect(std.mem.indexOf(u8, lastMessage(&buf), "Q4") != null);
    try testing.expectError(error.UnregisteredType, formatFromGgmlType(3));
    try testing.expect(std.mem.indexOf(u8, lastMessage(&buf), "Q4_1") != null);
    try testing.expectError(error.BadShape, planeSizes(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 48));

    const blocks = q80Blocks();
    const v = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&blocks});
    var out: [32]f32 = undefined;
    out[0] = 42;
    try testing.expectError(error.RowOutOfRange, v.decodeRow(2, &out));
    try testing.expect(lastMessage(&buf).len > 0);
    try testing.expectError(error.BufferTooSmall, v.decodeRow(0, out[0..31]));
    var raw: [128]u8 = undefined;
    try testing.expectError(error.UnknownDtype, v.decodeRowAs(0, 7, &raw));
    const short = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{blocks[0..67]});
    try testing.expectError(error.SizeMismatch, short.check());
    try testing.expectError(error.SizeMismatch, short.decodeRowAlloc(testing.allocator, 0));
    const wrong = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 32, &.{&blocks});
    try testing.expectError(error.IncompatibleLayout, wrong.check());
    try testing.expectEqual(@as(f32, 42), out[0]);
    // Success clears the message.
    _ = try formatLookup("bf16");
    try testing.expectEqual(@as(usize, 0), lastMessage(&buf).len);
}

test "quantize round trip (exact by construction), provenance and a refused source" {
    // Per 32-value group: codes in [-127, 127] with one 127, times a power of two; absmax's
    // scale amax / 127 is that power of two, so decoding gives the source back bit for bit.
    const rows = 3;
    const cols = 128;
    var src: [rows * cols]f32 = undefined;
    for (0..rows) |r| {
        for (0..cols) |k| {
            const code: i32 = if (k % 32 == 0) 127 else @as(i32, @intCast((r * 131 + k * 37) % 255)) - 127;
            const scale = std.math.ldexp(@as(f32, 1.0), @as(i32, @intCast((r + k / 32) % 5)) - 3);
            src[r * cols + k] = @as(f32, @floatFromInt(code)) * scale;
        }
    }
    for (0..32) |k| src[2 * cols + 32 + k] = 0;
    var prov: Provenance = undefined;
    var t = try quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q8_G32_FP16, &src, rows, cols, null, &prov);
    defer t.deinit();
    try testing.expectEqual(@as(u64, rows * cols / 32), prov.groups);
    try testing.expectEqual(@as(u64, 1), prov.zero_groups);
    try t.view.check();
    var exact: usize = 0;
    var out: [cols]f32 = undefined;
    for (0..rows) |r| {
        try t.view.decodeRow(r, &out);
        for (0..cols) |k| {
            if (@as(u32, @bitCast(out[k])) == @as(u32, @bitCast(src[r * cols + k]))) exact += 1;
        }
    }
    try testing.expectEqual(@as(usize, rows * cols), exact);

    const search = QuantizeOptions{ .method = c.NINFER_QUANTIZE_METHOD_GROUPED_SEARCH, .negative_scales = 0, .importance = null, .importance_len = 0 };
    var ts = try quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q8_G32_FP16, &src, rows, cols, &search, &prov);
    defer ts.deinit();
    try testing.expectEqual(@as(u32, c.NINFER_QUANTIZE_METHOD_GROUPED_SEARCH), prov.method);
    try testing.expect(prov.@"error" <= prov.absmax_error);

    src[5] = std.math.nan(f32);
    try testing.expectError(error.NonFiniteSource, quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q8_G32_FP16, &src, rows, cols, null, null));
    try testing.expectError(error.SizeMismatch, quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q8_G32_FP16, src[0..100], rows, cols, null, null));
}

test "fp8 and nvfp4 encoders, validation with location, row slices" {
    var src: [256 * 32]f32 = undefined;
    for (&src, 0..) |*x, i| x.* = @as(f32, @floatFromInt(@as(i32, @intCast(i % 97)) - 48)) / 16.0;
    var f8 = try fp8RowMaxAbs(testing.allocator, c.NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, &src, 256, 32);
    defer f8.deinit();
    try f8.view.fp8RowValidate();
    var n4 = try nvfp4Quantize(testing.allocator, &src, 256, 32, 2);
    defer n4.deinit();
    try n4.view.nvfp4Validate();
    try testing.expectError(error.InvalidArgument, f8.view.nvfp4Validate());
    try testing.expectError(error.InvalidArgument, n4.view.fp8RowValidate());
    try testing.expectEqual(@as(usize, 8), n4.planes[2].len);

    const blocks = q80Blocks();
    const v = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&blocks});
    try validate(&v, null);
    var slice: [34]u8 = undefined;
    try testing.expectEqual(@as(usize, 34), try rowsCopy(&v, 1, 1, &slice));
    try testing.expectEqualSlices(u8, blocks[34..], &slice);
    var gathered: [3 * 34]u8 = undefined;
    try testing.expectEqual(@as(usize, 3 * 34), try rowsGather(&v, &.{ 1, 0, 1 }, &gathered));
    try testing.expectEqualSlices(u8, blocks[0..34], gathered[34..68]);
    try testing.expectError(error.IndexOutOfRange, rowsGather(&v, &.{ 0, 2 }, &gathered));
    var bad = blocks;
    bad[34] = 0x00;
    bad[35] = 0x7C; // row 1's d = +Inf
    const bv = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&bad});
    var where: Location = .{ .row = 9, .block = 9 };
    try testing.expectError(error.InvalidEncoding, validate(&bv, &where));
    try testing.expectEqual(Location{ .row = 1, .block = 0 }, where);
}

test "linear: fp32 weights by hand, refusals" {
    const w = [_]f32{ 0, 1, 2, 3, 4, 5 }; // [[0,1,2],[3,4,5]]
    const v = WeightView.init(c.NINFER_FORMAT_FP32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, &.{std.mem.sliceAsBytes(&w)});
    try testing.expect(try linearSupported(c.NINFER_FORMAT_FP32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, c.NINFER_DTYPE_F32, c.NINFER_DTYPE_F32, c.NINFER_DEVICE_CPU));
    try testing.expect(!try linearSupported(c.NINFER_FORMAT_INT32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, c.NINFER_DTYPE_F32, c.NINFER_DTYPE_F32, c.NINFER_DEVICE_CPU));
    var lin = try Linear.prepare(&v, c.NINFER_DEVICE_CPU);
    defer lin.deinit();
    try testing.expectEqual(@as(u64, 2), lin.rows);
    try testing.expectEqual(@as(u64, 3), lin.cols);
    var y: [4]f32 = undefined;
    try lin.forward(&.{ 1, 2, 3, 0, 0, 1 }, 2, &.{ 10, 20 }, &y);
    try testing.expectEqualSlices(f32, &.{ 18, 46, 12, 25 }, &y);
    try lin.setThreads(1);
    try testing.expectError(error.BufferTooSmall, lin.forward(&.{ 1, 2 }, 1, null, y[0..2]));
    try testing.expectError(error.BufferTooSmall, lin.forward(&.{ 1, 2, 3 }, 1, &.{1}, y[0..2]));
    const ints: [24]u8 = @splat(0);
    const iv = WeightView.init(c.NINFER_FORMAT_INT32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, &.{&ints});
    try testing.expectError(error.Unsupported, Linear.prepare(&iv, c.NINFER_DEVICE_CPU));
}

test "linear: forwardRows into strided rows, refusals write nothing" {
    const w = [_]f32{ 0, 1, 2, 3, 4, 5 }; // [[0,1,2],[3,4,5]]
    const v = WeightView.init(c.NINFER_FORMAT_FP32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, &.{std.mem.sliceAsBytes(&w)});
    var lin = try Linear.prepare(&v, c.NINFER_DEVICE_CPU);
    defer lin.deinit();
    try lin.setThreads(1);
    const x = [_]f32{ 1, 2, 3, -7, 0, 0, 1 }; // rows [1 2 3], [0 0 1]: ldx 4
    var y: [5]f32 = @splat(-1); // rows 3 apart
    try lin.forwardRows(&x, 2, 4, &.{ 10, 20 }, 1, 2, &y, 3);
    try testing.expectEqualSlices(f32, &.{ -1, 46, -1, -1, 25 }, &y);
    try lin.forwardRows(&x, 2, 4, null, 0, 1, &y, 3);
    try testing.expectEqualSlices(f32, &.{ 8, 46, -1, 2, 25 }, &y);
    try testing.expectError(error.InvalidArgument, lin.forwardRows(&x, 2, 4, null, 2, 1, &y, 3));
    try testing.expectError(error.RowOutOfRange, lin.forwardRows(&x, 2, 4, null, 0, 3, &y, 3));
    try testing.expectError(error.BadShape, lin.forwardRows(&x, 2, 2, null, 0, 1, &y, 3));
    try testing.expectError(error.BufferTooSmall, lin.forwardRows(&x, 2, 4, null, 0, 2, y[0..4], 3));
    try testing.expectEqualSlices(f32, &.{ 8, 46, -1, 2, 25 }, &y);
}

test "importGguf keeps the decoded values" {
    const blocks = q80Blocks();
    const g = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 2, 32, &.{&blocks});
    var native = try importGguf(testing.allocator, &g, c.NINFER_FORMAT_Q8_G32_FP16);
    defer native.deinit();
    var a: [32]f32 = undefined;
    var b: [32]f32 = undefined;
    for (0..2) |r| {
        try g.decodeRow(r, &a);
        try native.view.decodeRow(r, &b);
        try testing.expectEqualSlices(u32, @as(*const [32]u32, @ptrCast(&a)), @as(*const [32]u32, @ptrCast(&b)));
    }
    try testing.expectError(error.Unsupported, importGguf(testing.allocator, &g, c.NINFER_FORMAT_Q4_G64_FP16));
}

test "importGgufTernary: TQ2_0 codes and scale moved unchanged, word 3 refused" {
    // Words 2 (code +1) everywhere, d = -0.5 (0xB800): every value is -0.5.
    var block: [66]u8 = @splat(0xAA);
    block[64] = 0x00;
    block[65] = 0xB8;
    var t = try importGgufTernary(testing.allocator, 35, &block, 1, 256);
    defer t.deinit();
    var out: [256]f32 = undefined;
    try t.view.decodeRow(0, &out);
    for (out) |x| try testing.expectEqual(@as(f32, -0.5), x);
    try testing.expectError(error.BadShape, importGgufTernary(testing.allocator, 35, &block, 1, 384));
    try testing.expectError(error.SizeMismatch, importGgufTernary(testing.allocator, 34, &block, 1, 256));
    block[9] = 0xFF; // 2-bit words 3: not ternary
    try testing.expectError(error.InvalidEncoding, importGgufTernary(testing.allocator, 35, &block, 1, 256));
}

test "fp8RowPack / fp8RowUnpack and nvfp4 scale swizzling" {
    var codes: [2 * 16]u8 = @splat(0x38); // E4M3FN 1.0
    const scales = [_]u16{ 0x3F80, 0x4000 }; // bf16 1.0, 2.0
    var t = try fp8RowPack(testing.allocator, c.NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, 2, 16, &codes, &scales);
    defer t.deinit();
    try t.view.fp8RowValidate();
    var row: [16]f32 = undefined;
    try t.view.decodeRow(1, &row);
    try testing.expectEqual(@as(f32, 2), row[15]); // 1.0 × 2.0
    var codes2: [2 * 16]u8 = undefined;
    var scales2: [2]u16 = undefined;
    try fp8RowUnpack(&t.view, &codes2, &scales2);
    try testing.expectEqualSlices(u8, &codes, &codes2);
    try testing.expectEqualSlices(u16, &scales, &scales2);
    try testing.expectError(error.SizeMismatch, fp8RowUnpack(&t.view, codes2[0..31], &scales2));
    try testing.expectError(error.SizeMismatch, fp8RowPack(testing.allocator, c.NINFER_FORMAT_FP8_E4M3FN_ROW_BF16, 2, 16, codes[0..31], &scales));

    // 130 rows × 5 K-blocks: kt = 2, out = 256 × 8 bytes. Every byte checked against the
    // documented position (m/128)·kt·512 + (kb/4)·512 + (m%32)·16 + ((m%128)/32)·4 + kb%4,
    // every other byte zero.
    const rows = 130;
    const kb = 5;
    var lin: [rows * kb]u8 = undefined;
    for (&lin, 0..) |*b, i| b.* = @intCast(i % 127 + 1);
    const sizes = try planeSizes(c.NINFER_FORMAT_NVFP4, c.NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, rows, 16 * kb);
    try testing.expectEqual(@as(usize, 256 * 8), sizes[1]);
    var swz: [256 * 8]u8 = undefined;
    try nvfp4PackScales(rows, kb, &lin, &swz);
    var want: [256 * 8]u8 = @splat(0);
    for (0..rows) |m| {
        for (0..kb) |k| want[(m / 128) * 2 * 512 + (k / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + k % 4] = lin[m * kb + k];
    }
    try testing.expectEqualSlices(u8, &want, &swz);
    var back: [rows * kb]u8 = undefined;
    try nvfp4UnpackScales(rows, kb, &swz, &back);
    try testing.expectEqualSlices(u8, &lin, &back);
    try testing.expectError(error.SizeMismatch, nvfp4PackScales(rows, kb, lin[0..10], &swz));
    try testing.expectError(error.SizeMismatch, nvfp4UnpackScales(rows, kb, swz[0..100], &back));
}

test "activation: the documented support table" {
    const rs = c.NINFER_LAYOUT_ROW_SPLIT_K128_V1;
    const cl = c.NINFER_LAYOUT_CONTIGUOUS_LE_V1;
    const gb = c.NINFER_LAYOUT_GGUF_BLOCKS_V1;
    const cpu = c.NINFER_DEVICE_CPU;
    const Case = struct { f: Format, l: Layout, a: Activation, d: u32, want: bool };
    const cases = [_]Case{
        .{ .f = c.NINFER_FORMAT_Q4_G64_FP16, .l = rs, .a = .exact, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_Q4_G64_FP16, .l = rs, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_Q8_G32_FP16, .l = rs, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_Q5_G64_FP16, .l = rs, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_T2_G128_FP16, .l = rs, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_GGUF_Q8_0, .l = gb, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_GGUF_Q5_K, .l = gb, .a = .q8_1, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_GGUF_Q8_0, .l = gb, .a = .exact, .d = cpu, .want = false },
        .{ .f = c.NINFER_FORMAT_GGUF_Q4_K, .l = gb, .a = .q8_k, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_GGUF_IQ2_XXS, .l = gb, .a = .q8_k, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_GGUF_Q8_0, .l = gb, .a = .q8_k, .d = cpu, .want = false },
        .{ .f = c.NINFER_FORMAT_Q4_G64_FP16, .l = rs, .a = .q8_k, .d = cpu, .want = false },
        .{ .f = c.NINFER_FORMAT_BF16, .l = cl, .a = .exact, .d = cpu, .want = true },
        .{ .f = c.NINFER_FORMAT_BF16, .l = cl, .a = .q8_1, .d = cpu, .want = false },
        .{ .f = c.NINFER_FORMAT_FP32, .l = cl, .a = .q8_1, .d = cpu, .want = false },
        .{ .f = c.NINFER_FORMAT_NVFP4, .l = c.NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, .a = .q8_1, .d = cpu, .want = true },
    };
    for (cases) |k| {
        testing.expectEqual(k.want, try linearActivationSupported(k.f, k.l, k.a, k.d)) catch |e| {
            std.debug.print("format {d} layout {d} activation {d} device {d}\n", .{ k.f, k.l, @backingInt(k.a), k.d });
            return e;
        };
    }
    // CUDA: only in a build with CUDA support (a question about the build).
    try testing.expectEqual(cudaCompiled(), try linearActivationSupported(c.NINFER_FORMAT_Q4_G64_FP16, rs, .q8_1, c.NINFER_DEVICE_CUDA));
    var buf: [256]u8 = undefined;
    try testing.expectError(error.InvalidArgument, linearActivationSupported(c.NINFER_FORMAT_Q4_G64_FP16, rs, @fromBackingInt(@intCast(7)), cpu));
    try testing.expect(lastMessage(&buf).len > 0);
    try testing.expectError(error.InvalidArgument, linearActivationSupported(c.NINFER_FORMAT_Q4_G64_FP16, rs, .q8_1, 9));
    try testing.expectError(error.UnknownFormat, linearActivationSupported(999, rs, .q8_1, cpu));
    try testing.expectError(error.IncompatibleLayout, linearActivationSupported(c.NINFER_FORMAT_Q4_G64_FP16, cl, .q8_1, cpu));
}

fn forward1(l: *const Linear, x: []const f32) !f32 {
    var y: [1]f32 = undefined;
    try l.forward(x, 1, null, &y);
    return y[0];
}

fn expectBits(want: f32, got: f32) !void {
    try testing.expectEqual(@as(u32, @bitCast(want)), @as(u32, @bitCast(got)));
}

// Worked by hand (docs/linear.md, ggml's quantize_row_q8_1_ref), one row of K = 32 with
// w[k] = 1 (gguf_q8_0 d = 1 = 0x3C00, codes 1):
//   x = 1 everywhere: amax = 1, d = 1/127, q = round(1·(1/d)) = 127, stored d =
//   binary16(1/127) = 1032·2⁻¹⁷ (1/127 = 1032.06·2⁻¹⁷), x̂ = 127·1032·2⁻¹⁷, so
//   y = 32·x̂ = 4064·1032·2⁻¹⁷ = 31.998046875 with q8_1 and 32 with exact x.
//   x = (127, 1, …, 1): amax = 127, d = 1, q = x, x̂ = x: y = 127 + 31 = 158 under both.
test "activation: hand-worked K = 32 under both profiles" {
    var row: [34]u8 = @splat(1);
    row[0] = 0x00;
    row[1] = 0x3C;
    const ones: [32]f32 = @splat(1);
    var mixed: [32]f32 = @splat(1);
    mixed[0] = 127;
    const q81: f32 = 4064.0 * 1032.0 / 131072.0;
    try testing.expectEqual(@as(f32, 31.998046875), q81);
    var buf: [256]u8 = undefined;

    const g = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, 1, 32, &.{&row});
    var lg = try Linear.prepare(&g, c.NINFER_DEVICE_CPU);
    defer lg.deinit();
    try expectBits(q81, try forward1(&lg, &ones)); // GGUF: q8_1 by default
    try testing.expectError(error.Unsupported, lg.setActivation(.exact));
    try testing.expect(lastMessage(&buf).len > 0);
    try expectBits(q81, try forward1(&lg, &ones)); // unchanged
    try lg.setActivation(.q8_1);
    try expectBits(158, try forward1(&lg, &mixed));

    var native = try importGguf(testing.allocator, &g, c.NINFER_FORMAT_Q8_G32_FP16);
    defer native.deinit();
    var ln = try Linear.prepare(&native.view, c.NINFER_DEVICE_CPU);
    defer ln.deinit();
    try expectBits(32, try forward1(&ln, &ones)); // exact by default
    try expectBits(158, try forward1(&ln, &mixed));
    try ln.setActivation(.q8_1);
    try expectBits(q81, try forward1(&ln, &ones));
    try expectBits(158, try forward1(&ln, &mixed));
    try testing.expectError(error.InvalidArgument, ln.setActivation(@fromBackingInt(@intCast(7))));
    try expectBits(q81, try forward1(&ln, &ones)); // unchanged
    try ln.setActivation(.exact);
    try expectBits(32, try forward1(&ln, &ones));
}

/// q8_1 values x̂ of one row from the equations of docs/linear.md (binary32 arithmetic):
/// per 32 values amax, d = amax/127, id = 1/d, q = roundf(x·id) (@round: half away from
/// zero), x̂ = binary16(d)·q; `d` receives each block's binary32 d.
fn q81Values(x: []const f32, xhat: []f32, d: []f32) void {
    var b: usize = 0;
    while (b < x.len) : (b += 32) {
        var amax: f32 = 0;
        for (x[b .. b + 32]) |v| amax = @max(amax, @abs(v));
        const db = amax / 127;
        const id: f32 = if (db != 0) 1 / db else 0;
        const dh: f32 = @floatCast(@as(f16, @floatCast(db)));
        for (b..b + 32) |j| xhat[j] = dh * @round(x[j] * id);
        d[b / 32] = db;
    }
}

/// The q8_1 product through the C API called directly: prepare, set_activation(1),
/// forward, free.
fn cForwardQ81(v: *const WeightView, x: []const f32, m: u64, y: []f32) !void {
    var h: ?*c.ninfer_linear = null;
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_OK), c.ninfer_linear_prepare(&v.raw, c.NINFER_DEVICE_CPU, &h));
    defer c.ninfer_linear_free(h);
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_OK), c.ninfer_linear_set_activation(h, c.NINFER_ACTIVATION_Q8_1));
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_OK), c.ninfer_linear_forward(h, x.ptr, x.len * 4, c.NINFER_DTYPE_F32, m, v.raw.cols, null, 0, y.ptr, y.len * 4, c.NINFER_DTYPE_F32));
}

// q4_g64_fp16: exact by default; with .q8_1 each output meets linear_f32acc_v1 against
// Σ w·x̂ in f64 (w the decoded weight values, x̂ from q81Values), equals the C API's bits,
// differs from the exact product, and stays within q8_1's quantization error:
// |x − x̂| ≤ d·(1/2 + 127·2⁻¹¹) per value (rounding to the code, then binary16(d), relative
// error ≤ 2⁻¹¹, times |q| ≤ 127).
test "activation: q4_g64_fp16 with q8_1 against a q8_1 oracle and the C API" {
    const rows = 5;
    const cols = 192;
    const m = 2;
    var src: [rows * cols]f32 = undefined;
    for (&src, 0..) |*v, i| v.* = @cos(@as(f32, @floatFromInt(i)) * 0.11) * @as(f32, @floatFromInt(1 + i % 7));
    var t = try quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q4_G64_FP16, &src, rows, cols, null, null);
    defer t.deinit();
    var w: [rows][cols]f32 = undefined;
    try t.view.decodeRows(0, rows, @as(*[rows * cols]f32, @ptrCast(&w)));
    var x: [m * cols]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @sin(@as(f32, @floatFromInt(i)) * 0.37);

    var lin = try Linear.prepare(&t.view, c.NINFER_DEVICE_CPU);
    defer lin.deinit();
    var exact: [m * rows]f32 = undefined;
    try lin.forward(&x, m, null, &exact);
    try lin.setActivation(.q8_1);
    var y: [m * rows]f32 = undefined;
    try lin.forward(&x, m, null, &y);
    var yc: [m * rows]f32 = undefined;
    try cForwardQ81(&t.view, &x, m, &yc);
    try testing.expectEqualSlices(u32, @as(*const [m * rows]u32, @ptrCast(&yc)), @as(*const [m * rows]u32, @ptrCast(&y)));

    const k_tol: f64 = @floatFromInt(cols + 8);
    const tiny = k_tol * std.math.ldexp(@as(f64, 1), -149);
    var differ: usize = 0;
    for (0..m) |i| {
        const xi = x[i * cols .. (i + 1) * cols];
        var xhat: [cols]f32 = undefined;
        var d: [cols / 32]f32 = undefined;
        q81Values(xi, &xhat, &d);
        for (0..rows) |n| {
            var ref: f64 = 0;
            var sum: f64 = 0;
            var sum_x: f64 = 0;
            var qerr: f64 = 0;
            for (0..cols) |k| {
                const wk: f64 = w[n][k];
                ref += wk * xhat[k];
                sum += @abs(wk * xhat[k]);
                sum_x += @abs(wk * xi[k]);
                qerr += @abs(wk) * d[k / 32] * (0.5 + 127.0 / 2048.0);
            }
            const tol = k_tol * std.math.ldexp(sum, -23) + tiny;
            const tol_x = k_tol * std.math.ldexp(sum_x, -23) + tiny;
            const yq: f64 = y[i * rows + n];
            const ye: f64 = exact[i * rows + n];
            try testing.expect(@abs(yq - ref) <= tol);
            try testing.expect(@abs(yq - ye) <= qerr + tol + tol_x);
            if (@as(u32, @bitCast(y[i * rows + n])) != @as(u32, @bitCast(exact[i * rows + n]))) differ += 1;
        }
    }
    try testing.expect(differ > 0);

    // Refusals leave the setting unchanged; K = 200 (not a multiple of 32) refuses q8_1.
    try testing.expectError(error.InvalidArgument, lin.setActivation(@fromBackingInt(@intCast(7))));
    var again: [m * rows]f32 = undefined;
    try lin.forward(&x, m, null, &again);
    try testing.expectEqualSlices(u32, @as(*const [m * rows]u32, @ptrCast(&y)), @as(*const [m * rows]u32, @ptrCast(&again)));
    var t200 = try quantizeGrouped(testing.allocator, c.NINFER_FORMAT_Q4_G64_FP16, src[0 .. 3 * 200], 3, 200, null, null);
    defer t200.deinit();
    var l200 = try Linear.prepare(&t200.view, c.NINFER_DEVICE_CPU);
    defer l200.deinit();
    try testing.expectError(error.BadShape, l200.setActivation(.q8_1));
    try l200.setActivation(.exact);
}

// One gguf_q8_0 block is one q8_g32 group with the same scale, and the grouped q8_1
// kernels follow the legacy GGUF family's order (docs/linear.md): the same bits.
test "activation: q8_g32_fp16 with q8_1 equals gguf_q8_0" {
    const rows = 4;
    const cols = 128;
    const m = 3;
    var blocks: [rows * cols / 32 * 34]u8 = undefined;
    for (0..rows * cols / 32) |b| {
        const d: u16 = @intCast(0x2000 + b * 0x35); // positive normal binary16 scales
        std.mem.writeInt(u16, blocks[34 * b ..][0..2], d, .little);
        for (0..32) |j| blocks[34 * b + 2 + j] = @bitCast(@as(i8, @intCast(@as(i32, @intCast((b * 31 + j * 17) % 255)) - 127)));
    }
    const g = WeightView.init(c.NINFER_FORMAT_GGUF_Q8_0, c.NINFER_LAYOUT_GGUF_BLOCKS_V1, rows, cols, &.{&blocks});
    var native = try importGguf(testing.allocator, &g, c.NINFER_FORMAT_Q8_G32_FP16);
    defer native.deinit();
    var x: [m * cols]f32 = undefined;
    for (&x, 0..) |*v, i| v.* = @sin(@as(f32, @floatFromInt(i)) * 0.7) * @as(f32, @floatFromInt(1 + i % 3));
    var lg = try Linear.prepare(&g, c.NINFER_DEVICE_CPU);
    defer lg.deinit();
    var ln = try Linear.prepare(&native.view, c.NINFER_DEVICE_CPU);
    defer ln.deinit();
    var yg: [m * rows]u32 = undefined;
    var yn: [m * rows]u32 = undefined;
    try lg.forward(&x, m, null, @ptrCast(&yg));
    try ln.forward(&x, m, null, @ptrCast(&yn));
    try testing.expect(!std.mem.eql(u32, &yg, &yn)); // exact differs
    try ln.setActivation(.q8_1);
    try ln.forward(&x, m, null, @ptrCast(&yn));
    try testing.expectEqualSlices(u32, &yg, &yn);
}

test "activation: bf16 refuses q8_1" {
    const w = [_]u16{ 0x3F80, 0x4000, 0x4040, 0x4080 }; // bf16 [[1, 2], [3, 4]]
    const v = WeightView.init(c.NINFER_FORMAT_BF16, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 2, &.{std.mem.sliceAsBytes(&w)});
    var lin = try Linear.prepare(&v, c.NINFER_DEVICE_CPU);
    defer lin.deinit();
    var buf: [256]u8 = undefined;
    try testing.expectError(error.Unsupported, lin.setActivation(.q8_1));
    try testing.expect(lastMessage(&buf).len > 0);
    try lin.setActivation(.exact);
    var y: [2]f32 = undefined;
    try lin.forward(&.{ 0.5, 0.25 }, 1, null, &y);
    try testing.expectEqualSlices(f32, &.{ 1, 2.5 }, &y);
}

test "cuda: no device, outputs untouched, NULL refused" {
    var buf: [256]u8 = undefined;
    if (std.c.getenv("NINFER_EXPECT_CUDA")) |want| {
        try testing.expectEqual(std.mem.eql(u8, std.mem.span(want), "1"), cudaCompiled());
    }
    try testing.expectEqual(@as(u32, 20), c.NINFER_STATUS_NO_DEVICE);
    try testing.expectEqual(@as(u32, 21), c.NINFER_STATUS_CUDA);
    try testing.expectError(error.Cuda, check(c.NINFER_STATUS_CUDA));
    try testing.expectError(error.NoDevice, cudaDeviceCount());
    const msg = lastMessage(&buf);
    try testing.expect(msg.len > 0);
    // The message says which: no CUDA support in this build, or no driver / GPU.
    try testing.expectEqual(!cudaCompiled(), std.mem.indexOf(u8, msg, "no CUDA support") != null);
    try testing.expectError(error.NoDevice, cudaDeviceProperties(0));
    try testing.expect(lastMessage(&buf).len > 0);

    var n: u32 = 77;
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_NO_DEVICE), c.ninfer_cuda_device_count(&n));
    try testing.expectEqual(@as(u32, 77), n);
    var info = std.mem.zeroes(CudaDeviceInfo);
    info.multiprocessors = 5;
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_NO_DEVICE), c.ninfer_cuda_device_properties(0, &info));
    try testing.expectEqual(@as(u32, 5), info.multiprocessors);
    try testing.expectEqual(@as(usize, 0), cudaDeviceName(&info).len);

    const w = [_]f32{ 0, 1, 2, 3, 4, 5 };
    const v = WeightView.init(c.NINFER_FORMAT_FP32, c.NINFER_LAYOUT_CONTIGUOUS_LE_V1, 2, 3, &.{std.mem.sliceAsBytes(&w)});
    try testing.expectError(error.NoDevice, Linear.prepareCuda(&v, 0));
    try testing.expectError(error.NoDevice, Linear.prepare(&v, c.NINFER_DEVICE_CUDA));
    var h: ?*c.ninfer_linear = @ptrFromInt(0x1230);
    try testing.expectEqual(@as(u32, c.NINFER_STATUS_NO_DEVICE), c.ninfer_cuda_linear_prepare(&v.raw, 0, &h));
    try testing.expectEqual(@as(usize, 0x1230), @intFromPtr(h));
    var dv = std.mem.zeroes(DeviceView);
    dv.format = c.NINFER_FORMAT_FP32;
    dv.layout = c.NINFER_LAYOUT_CONTIGUOUS_LE_V1;
    dv.rows = 2;
    dv.cols = 3;
    dv.plane_addresses[0] = 0x7F0000000000;
    dv.plane_lengths[0] = 24;
    try testing.expectError(error.NoDevice, Linear.prepareCudaDevice(&dv, 0));
    try testing.expect(lastMessage(&buf).len > 0);
    var bad = dv;
    bad.plane_lengths[0] = 20;
    try testing.expectError(error.SizeMismatch, Linear.prepareCudaDevice(&bad, 0));
    bad = dv;
    bad.plane_addresses[0] = 0;
    try testing.expectError(error.NullPointer, Linear.prepareCudaDevice(&bad, 0));

    // NULL pointers.
    var ws: u64 = 9;
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_device_count(null)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_device_properties(0, null)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_prepare(null, 0, &h)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_prepare(&v.raw, 0, null)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_prepare_device(null, 0, &h)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_prepare_device(&dv, 0, null)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_workspace_size(null, 1, &ws)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_forward(null, 1, c.NINFER_DTYPE_F32, 1, 3, 0, 1, c.NINFER_DTYPE_F32, null, 0, 0)));
    try testing.expectError(error.NullPointer, check(c.ninfer_cuda_linear_decode_rows(null, 0, 1, 1, c.NINFER_DTYPE_F32, null)));
    try testing.expectEqual(@as(u64, 9), ws);

    // The device entry points on a CPU handle.
    var lin = try Linear.prepare(&v, c.NINFER_DEVICE_CPU);
    defer lin.deinit();
    try testing.expectEqual(@as(u64, 0), try lin.cudaWorkspaceSize(4));
    try testing.expectError(error.Unsupported, lin.cudaForward(0x1000, c.NINFER_DTYPE_F32, 1, 0, 0x2000, c.NINFER_DTYPE_F32, null, 0, 0));
    try testing.expectError(error.NullPointer, lin.cudaForward(0, c.NINFER_DTYPE_F32, 1, 0, 0x2000, c.NINFER_DTYPE_F32, null, 0, 0));
    try testing.expectError(error.Unsupported, lin.cudaDecodeRows(0, 1, 0x3000, c.NINFER_DTYPE_F32, null));
    try testing.expectError(error.NullPointer, lin.cudaDecodeRows(0, 1, 0, c.NINFER_DTYPE_F32, null));
}
