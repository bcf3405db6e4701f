//! Fallible allocation of buffers sized by an input file.

/// `len` zeroed values for `what`, allocated fallibly: a buffer sized by a file's shapes
/// that does not fit in memory is an [`ninfer::Error::OutOfMemory`] naming it and its
/// bytes, never an abort.
pub fn zeroed<T: Clone + Default>(len: usize, what: &str) -> Result<Vec<T>, ninfer::Error> {
    let mut v = Vec::new();
    if v.try_reserve_exact(len).is_err() {
        let size = size_of::<T>();
        return Err(ninfer::Error::OutOfMemory(match len.checked_mul(size) {
            Some(bytes) => format!("{what}: {bytes} bytes ({len} × {size}) could not be allocated"),
            None => format!("{what}: {len} values of {size} bytes could not be allocated"),
        }));
    }
    v.resize(len, T::default());
    Ok(v)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_size_beyond_memory_is_an_error_naming_the_buffer() {
        let e = super::zeroed::<f32>(usize::MAX / 2, "the decoded values").unwrap_err();
        assert_eq!(e.status(), ninfer::Status::OutOfMemory);
        assert!(e.to_string().contains("the decoded values"), "{e}");
        assert_eq!(super::zeroed::<u8>(3, "x").unwrap(), vec![0; 3]);
    }
}
