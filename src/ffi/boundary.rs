//! The one helper every export goes through, and the thread-local last error.

use crate::dtype::Dtype;
use crate::error::{Error, Result, Status};
use crate::formats::float_source::FloatSource;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn set_last_error(msg: String) {
    // A message never contains NUL in practice; strip any rather than lose it.
    let msg = CString::new(msg.replace('\0', "")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(msg));
}

/// Runs `f` with IEEE subnormals (FTZ/DAZ cleared, restored after): clears the thread's
/// last error, catches any panic (a bug) as
/// `NINFER_STATUS_INTERNAL`, and turns an `Err` into its status with its message stored.
pub(crate) fn call(f: impl FnOnce() -> Result<()>) -> Status {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
    // Exact results need IEEE subnormals even when the caller runs with FTZ/DAZ.
    let _fp = crate::fpenv::IeeeSubnormals::enter();
    // AssertUnwindSafe: on a panic nothing the closure touched is used again by this
    // library; the caller is told the outputs are unspecified.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Status::Ok,
        Ok(Err(e)) => {
            let status = e.status();
            set_last_error(e.to_string());
            status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            set_last_error(format!("internal error (please report): {what}"));
            Status::Internal
        }
    }
}

/// Copies the last error message of this thread into `buf` (snprintf style: at most
/// `len - 1` bytes plus a NUL) and returns the message's length without the NUL.
pub(crate) fn last_error_message(buf: *mut c_char, len: usize) -> usize {
    LAST_ERROR.with(|e| {
        let e = e.borrow();
        let msg: &[u8] = e.as_deref().map(CStr::to_bytes).unwrap_or(b"");
        if !buf.is_null() && len > 0 {
            let n = msg.len().min(len - 1);
            // SAFETY: the caller promises `buf` has `len` writable bytes; we write n + 1 <= len.
            unsafe {
                std::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        msg.len()
    })
}

/// A borrowed byte slice from a C `(ptr, len)` pair: NULL is accepted only with length 0.
///
/// # Safety
/// When non-NULL, `ptr` must point to `len` readable bytes that stay valid and unmodified
/// for `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize, what: &'static str) -> Result<&'a [u8]> {
    // SAFETY: forwarded contract; bytes need no alignment.
    unsafe { in_slice(ptr, len, what) }
}

/// A mutable slice of `len` elements of `T` from a C pointer: NULL only with length 0,
/// aligned for `T`, byte size within `isize::MAX`.
///
/// # Safety
/// When non-NULL, `ptr` must point to `len` writable `T`s, valid and unaliased for `'a`.
pub(crate) unsafe fn out_slice<'a, T>(
    ptr: *mut T,
    len: usize,
    what: &'static str,
) -> Result<&'a mut [T]> {
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Error::Overflow(format!("{what}: length {len}")));
    }
    if ptr.is_null() {
        return if len == 0 {
            Ok(&mut [])
        } else {
            Err(Error::NullWithLength(what))
        };
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::Misaligned(what, align_of::<T>()));
    }
    // SAFETY: non-NULL, aligned, size bounded, validity and exclusivity promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// A read-only slice of `len` `T`s from a C pointer (same rules as [`out_slice`]).
///
/// # Safety
/// When non-NULL, `ptr` must point to `len` readable `T`s valid for `'a`.
pub(crate) unsafe fn in_slice<'a, T>(
    ptr: *const T,
    len: usize,
    what: &'static str,
) -> Result<&'a [T]> {
    if len
        .checked_mul(size_of::<T>())
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Error::Overflow(format!("{what}: length {len}")));
    }
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Error::NullWithLength(what))
        };
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::Misaligned(what, align_of::<T>()));
    }
    // SAFETY: as above.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A `&T` from a required C pointer.
///
/// # Safety
/// When non-NULL, `ptr` must point to a valid, aligned `T` for `'a`.
pub(crate) unsafe fn req<'a, T>(ptr: *const T, what: &'static str) -> Result<&'a T> {
    if ptr.is_null() {
        return Err(Error::NullPointer(what));
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::Misaligned(what, align_of::<T>()));
    }
    // SAFETY: non-NULL and aligned; validity promised by the caller.
    Ok(unsafe { &*ptr })
}

/// Checks an out-pointer before anything is written: NULL is refused unless `optional`,
/// and a non-NULL pointer must be aligned for `T`. Every export runs this on all its
/// out-pointers first, so a bad one fails the call with every output untouched.
pub(crate) fn check_out_ptr<T>(ptr: *mut T, optional: bool, what: &'static str) -> Result<()> {
    if ptr.is_null() {
        return match optional {
            true => Ok(()),
            false => Err(Error::NullPointer(what)),
        };
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::Misaligned(what, align_of::<T>()));
    }
    Ok(())
}

/// Writes `v` through a required out-pointer (call only once everything has succeeded).
///
/// # Safety
/// When non-NULL, `ptr` must point to writable memory for one `T`.
pub(crate) unsafe fn write<T>(ptr: *mut T, v: T, what: &'static str) -> Result<()> {
    if ptr.is_null() {
        return Err(Error::NullPointer(what));
    }
    if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(Error::Misaligned(what, align_of::<T>()));
    }
    // SAFETY: non-NULL, aligned, writable by the caller's promise.
    unsafe { ptr.write(v) };
    Ok(())
}

/// A NUL-terminated C string as UTF-8 text (invalid UTF-8 matches no name, so it is
/// reported as unknown by the caller's lookup).
///
/// # Safety
/// When non-NULL, `ptr` must point to a NUL-terminated string.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &'static str) -> Result<&'a str> {
    if ptr.is_null() {
        return Err(Error::NullPointer(what));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's promise.
    let s = unsafe { CStr::from_ptr(ptr) };
    Ok(s.to_str().unwrap_or("\u{FFFD}"))
}

/// The output planes of an encoder or packer: `planes` points to `NINFER_MAX_PLANES`
/// `ninfer_mut_bytes`, each checked like [`out_slice`] and named by `names`.
///
/// # Safety
/// When non-NULL, `planes` must point to 3 readable `ninfer_mut_bytes` whose ranges are
/// writable for `'a` and do not overlap each other or any input.
pub(crate) unsafe fn mut_planes<'a>(
    planes: *const super::quantize::ninfer_mut_bytes,
    names: [&'static str; crate::layouts::MAX_PLANES],
) -> Result<[&'a mut [u8]; crate::layouts::MAX_PLANES]> {
    if planes.is_null() {
        return Err(Error::NullPointer("planes"));
    }
    let p = unsafe { in_slice(planes, crate::layouts::MAX_PLANES, "planes") }?;
    let [a, b, c] = [0, 1, 2].map(|i| unsafe { out_slice(p[i].ptr, p[i].len, names[i]) });
    Ok([a?, b?, c?])
}

/// Refuses a non-empty entry where a function uses none (it must be `{NULL, 0}`).
pub(crate) fn unused_plane(plane: &[u8], name: &'static str) -> Result<()> {
    match plane.len() {
        0 => Ok(()),
        n => Err(Error::SizeMismatch {
            unit: "bytes",
            plane: name,
            expected: 0,
            actual: n,
        }),
    }
}

/// A [`FloatSource`] from a C `(src, src_bytes, src_dtype)` triple for a `rows × cols`
/// source: `src_bytes` must be exactly rows × cols × the element size (checked in bytes).
///
/// # Safety
/// When non-NULL, `src` must point to `src_bytes` readable bytes, valid for `'a`.
pub(crate) unsafe fn float_source<'a>(
    src: *const c_void,
    src_bytes: usize,
    dtype: u32,
    rows: usize,
    cols: usize,
) -> Result<FloatSource<'a>> {
    let dtype = Dtype::from_u32(dtype)?;
    let len = dtype.source_len(rows, cols, src_bytes)?;
    Ok(match dtype {
        Dtype::F32 => FloatSource::F32(unsafe { in_slice(src.cast::<f32>(), len, "src") }?),
        Dtype::Bf16 => FloatSource::Bf16(unsafe { in_slice(src.cast::<u16>(), len, "src") }?),
        Dtype::F16 => FloatSource::F16(unsafe { in_slice(src.cast::<u16>(), len, "src") }?),
    })
}
