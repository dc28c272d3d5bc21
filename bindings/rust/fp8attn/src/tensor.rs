//! Host tensors as borrowed slices: `TensorRef` (read) and `TensorMut` (written), checked before
//! the call so the library can never reach outside the slice. Element types carry their dtype.
use crate::error::{Error, Result};
use core::marker::PhantomData;
use fp8attn_sys as sys;

/// Element types (the header's fp8attn_dtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32 = 1,
    F64 = 2,
    Bf16 = 3,
    F16 = 4,
    E4m3 = 5,
    E5m2 = 6,
    I32 = 7,
    I64 = 8,
}

/// OCP FP8 E4M3 ("e4m3fn") bits: max 448, no infinity.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct E4m3(pub u8);

impl E4m3 {
    pub fn to_f32(self) -> f32 {
        let sign = if self.0 & 0x80 != 0 { -1.0 } else { 1.0 };
        let exp = ((self.0 >> 3) & 0xF) as i32;
        let man = (self.0 & 7) as f32;
        if exp == 0xF && self.0 & 7 == 7 {
            return f32::NAN;
        }
        sign * if exp == 0 { man / 8.0 * 2f32.powi(-6) } else { (1.0 + man / 8.0) * 2f32.powi(exp - 7) }
    }
}

/// bfloat16 bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// Round to nearest even (NaN stays NaN).
    pub fn from_f32(x: f32) -> Self {
        let b = x.to_bits();
        if x.is_nan() {
            return Bf16(((b >> 16) | 0x40) as u16);
        }
        Bf16(((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16)
    }
    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// A type the library reads or writes, with its dtype.
pub trait Element: Copy + 'static {
    const DTYPE: DType;
}
impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for f64 {
    const DTYPE: DType = DType::F64;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for i64 {
    const DTYPE: DType = DType::I64;
}
impl Element for Bf16 {
    const DTYPE: DType = DType::Bf16;
}
impl Element for E4m3 {
    const DTYPE: DType = DType::E4m3;
}

fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    strides
}

fn describe(ptr: *mut core::ffi::c_void, dtype: DType, len: usize, shape: &[i64], strides: &[i64])
            -> Result<sys::fp8attn_tensor> {
    let bad = |status, msg: String| Err(Error::new(status, format!("{msg} (checked by the Rust binding)")));
    if shape.is_empty() || shape.len() > sys::FP8ATTN_MAX_RANK || shape.len() != strides.len() {
        return bad(sys::FP8ATTN_STATUS_BAD_SHAPE, format!("rank {} with {} strides", shape.len(), strides.len()));
    }
    if shape.iter().any(|&e| e < 0) {
        return bad(sys::FP8ATTN_STATUS_BAD_SHAPE, format!("negative extent in {shape:?}"));
    }
    if strides.iter().any(|&s| s < 0) {
        return bad(sys::FP8ATTN_STATUS_BAD_STRIDE, format!("negative stride in {strides:?}"));
    }
    if !shape.contains(&0) {
        let last: i128 = shape.iter().zip(strides).map(|(&e, &s)| (e as i128 - 1) * s as i128).sum();
        if last >= len as i128 {
            return bad(sys::FP8ATTN_STATUS_BAD_SHAPE,
                       format!("shape {shape:?} with strides {strides:?} reaches element {last} of a slice of {len}"));
        }
    }
    let mut t = sys::fp8attn_tensor {
        struct_size: core::mem::size_of::<sys::fp8attn_tensor>(),
        next: core::ptr::null(),
        data: ptr,
        dtype: dtype as i32,
        device: sys::FP8ATTN_DEVICE_HOST,
        rank: shape.len() as i32,
        shape: [0; sys::FP8ATTN_MAX_RANK],
        stride: [0; sys::FP8ATTN_MAX_RANK],
    };
    t.shape[..shape.len()].copy_from_slice(shape);
    t.stride[..shape.len()].copy_from_slice(strides);
    Ok(t)
}

/// A read-only tensor over a borrowed slice (or, unsafely, device memory).
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    pub(crate) raw: sys::fp8attn_tensor,
    _borrow: PhantomData<&'a [u8]>,
}

impl<'a> TensorRef<'a> {
    /// A row-major tensor of `shape` over `data`.
    pub fn new<T: Element>(data: &'a [T], shape: &[i64]) -> Result<Self> {
        Self::strided(data, shape, &row_major(shape))
    }
    /// A strided view (strides in elements; 0 broadcasts) that must stay inside `data`.
    pub fn strided<T: Element>(data: &'a [T], shape: &[i64], strides: &[i64]) -> Result<Self> {
        let raw = describe(data.as_ptr() as *mut _, T::DTYPE, data.len(), shape, strides)?;
        Ok(TensorRef { raw, _borrow: PhantomData })
    }
    /// A tensor the caller describes fully (device memory, for example).
    /// # Safety
    /// The memory must be valid for the described extent, of the described dtype and device,
    /// and stay valid and unwritten by others for `'a`.
    pub unsafe fn from_raw(raw: sys::fp8attn_tensor) -> Self {
        TensorRef { raw, _borrow: PhantomData }
    }
    pub fn shape(&self) -> &[i64] {
        &self.raw.shape[..self.raw.rank as usize]
    }
}

/// A written tensor over an exclusively borrowed slice (or, unsafely, device memory).
pub struct TensorMut<'a> {
    pub(crate) raw: sys::fp8attn_tensor,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> TensorMut<'a> {
    pub fn new<T: Element>(data: &'a mut [T], shape: &[i64]) -> Result<Self> {
        Self::strided(data, shape, &row_major(shape))
    }
    pub fn strided<T: Element>(data: &'a mut [T], shape: &[i64], strides: &[i64]) -> Result<Self> {
        let raw = describe(data.as_mut_ptr() as *mut _, T::DTYPE, data.len(), shape, strides)?;
        Ok(TensorMut { raw, _borrow: PhantomData })
    }
    /// # Safety
    /// As `TensorRef::from_raw`, and no one else may read or write the memory for `'a`.
    pub unsafe fn from_raw(raw: sys::fp8attn_tensor) -> Self {
        TensorMut { raw, _borrow: PhantomData }
    }
    pub fn shape(&self) -> &[i64] {
        &self.raw.shape[..self.raw.rank as usize]
    }
}

/// An absent optional tensor (data NULL).
pub(crate) fn absent() -> sys::fp8attn_tensor {
    // SAFETY: all-zero is a valid fp8attn_tensor (NULL pointers, zero sizes).
    unsafe { core::mem::zeroed() }
}

/// Host scratch from fp8attn_host_alloc (64-byte aligned), freed on drop.
pub struct HostBuffer {
    ptr: *mut core::ffi::c_void,
    len: usize,
}

impl HostBuffer {
    pub fn new(len: usize) -> Result<Self> {
        let mut ptr = core::ptr::null_mut();
        crate::error::check(|e| unsafe { sys::fp8attn_host_alloc(len, 0, &mut ptr, e) })?;
        Ok(HostBuffer { ptr, len })
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub(crate) fn as_mut_ptr(&mut self) -> *mut core::ffi::c_void {
        self.ptr
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by fp8attn_host_alloc, freed once.
        unsafe { sys::fp8attn_host_free(self.ptr) }
    }
}
