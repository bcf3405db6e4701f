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

pub const Format = u32;
pub const Layout = u32;
pub const Dtype = u32;

pub const FormatInfo = c.ninfer_format_info;

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
