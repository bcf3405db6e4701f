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

    /// Decodes row `row` into `out` as `dtype` (NINFER_DTYPE_*), native-endian bytes.
    pub fn decodeRowAs(self: *const WeightView, row: u64, dtype: Dtype, out: []u8) Error!void {
        return checkStatus(c.ninfer_decode_row_as(&self.raw, row, dtype, if (out.len == 0) null else out.ptr, out.len));
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
    try check(c.ninfer_fp8_row_maxabs(format, c.NINFER_DTYPE_F32, if (src.len == 0) null else src.ptr, src.len, rows, cols, OwnedTensor.mut(t.planes[0]), t.planes[0].len, OwnedTensor.mut(t.planes[1]), t.planes[1].len));
    return t;
}

/// Quantizes a [rows, cols] f32 source of `sources` stacked matrices to nvfp4.
pub fn nvfp4Quantize(gpa: std.mem.Allocator, src: []const f32, rows: u64, cols: u64, sources: u64) (Error || std.mem.Allocator.Error)!OwnedTensor {
    var t = try OwnedTensor.alloc(gpa, c.NINFER_FORMAT_NVFP4, c.NINFER_LAYOUT_BLOCK_SCALE_K16_M128X4_V1, rows, cols);
    errdefer t.deinit();
    const n = std.math.mul(usize, 4, std.math.cast(usize, sources) orelse return error.Overflow) catch return error.Overflow;
    try t.replacePlane(2, n);
    try check(c.ninfer_nvfp4_quantize(c.NINFER_DTYPE_F32, if (src.len == 0) null else src.ptr, src.len, rows, cols, sources, OwnedTensor.mut(t.planes[0]), t.planes[0].len, OwnedTensor.mut(t.planes[1]), t.planes[1].len, OwnedTensor.mut(t.planes[2]), t.planes[2].len));
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

/// True when this build has a linear kernel for the combination, false when the numbers
/// are valid but it has none; an error for numbers that name nothing.
pub fn linearSupported(format: Format, layout: Layout, x: Dtype, y: Dtype, device: u32) Error!bool {
    const st = c.ninfer_linear_supported(format, layout, x, y, device);
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

    /// 0 = process-wide pool (default), 1 = calling thread, n = a pool of n threads.
    pub fn setThreads(l: *Linear, threads: u32) Error!void {
        return check(c.ninfer_linear_set_threads(l.handle, threads));
    }

    /// y[m, N] = x[m, K] · Wᵀ (+ bias[N]), all f32.
    pub fn forward(l: *const Linear, x: []const f32, m: u64, bias: ?[]const f32, y: []f32) Error!void {
        const b: []const f32 = bias orelse &.{};
        return check(c.ninfer_linear_forward(l.handle, if (x.len == 0) null else x.ptr, x.len * @sizeOf(f32), c.NINFER_DTYPE_F32, m, l.cols, if (b.len == 0) null else b.ptr, b.len, if (y.len == 0) null else y.ptr, y.len * @sizeOf(f32), c.NINFER_DTYPE_F32));
    }
};

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

test "versions agree" {
    try testing.expectEqual(@as(u32, c.NINFER_ABI_VERSION), c.ninfer_abi_version());
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
    var half: [64]u8 = undefined;
    try v.decodeRowAs(0, c.NINFER_DTYPE_BF16, &half);
    for (0..32) |j| {
        const word = std.mem.readInt(u16, half[2 * j ..][0..2], .little);
        try testing.expectEqual(@as(u16, @truncate(@as(u32, @bitCast(out[j])) >> 16)), word);
    }
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
    try check(c.ninfer_fp8_row_validate(&f8.view.raw));
    var n4 = try nvfp4Quantize(testing.allocator, &src, 256, 32, 2);
    defer n4.deinit();
    try check(c.ninfer_nvfp4_validate(&n4.view.raw));
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
