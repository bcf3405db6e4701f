//! Zig binding of libninfer: translate-c over ninfer.h (found with pkg-config) as module
//! "c", the idiomatic wrapper src/ninfer.zig as module "ninfer", and `zig build test`.
//!
//!   PKG_CONFIG_PATH=<prefix>/lib/pkgconfig zig build test
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});

    const translate = b.addTranslateC(.{
        .root_source_file = b.path("src/c.h"),
        .target = target,
        .optimize = optimize,
    });
    // Header directory and library from pkg-config (the installed ninfer.pc).
    translate.linkSystemLibrary("ninfer", .{ .use_pkg_config = .force });
    const c_mod = translate.createModule();

    const mod = b.addModule("ninfer", .{
        .root_source_file = b.path("src/ninfer.zig"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
        .imports = &.{.{ .name = "c", .module = c_mod }},
    });
    mod.linkSystemLibrary("ninfer", .{ .use_pkg_config = .force });
    // Run-time search path: the installed library's directory, so the test binary runs
    // without LD_LIBRARY_PATH.
    const libdir = std.mem.trim(u8, b.run(&.{ "pkg-config", "--variable=libdir", "ninfer" }), " \r\n");
    mod.addRPathSpecial(libdir);

    const tests = b.addTest(.{ .root_module = mod });
    const run_tests = b.addRunArtifact(tests);
    const test_step = b.step("test", "Run the binding tests against the installed library");
    test_step.dependOn(&run_tests.step);
}
