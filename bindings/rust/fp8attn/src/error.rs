//! `fp8attn::Error`: the status a call returned, its name, and the message the same call wrote
//! into its own error struct (one per call: nothing thread-local).
use std::ffi::CStr;
use core::fmt;
use fp8attn_sys as sys;

/// The status category: the thousands digit of the code (header, "Status codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidArgument,
    Unsupported,
    Resource,
    Device,
    Internal,
    Numerics,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: i32,
    message: String,
}

pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(status: i32, message: impl Into<String>) -> Self {
        Error { status, message: message.into() }
    }
    /// The status code, such as `fp8attn_sys::FP8ATTN_STATUS_BAD_SHAPE` (1005).
    pub fn status(&self) -> i32 {
        self.status
    }
    /// The status name, such as "FP8ATTN_STATUS_BAD_SHAPE".
    pub fn name(&self) -> &'static str {
        status_name(self.status)
    }
    /// The library's detail message (or the binding's, for checks made before the call).
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn kind(&self) -> ErrorKind {
        match self.status / 1000 {
            1 => ErrorKind::InvalidArgument,
            2 => ErrorKind::Unsupported,
            3 => ErrorKind::Resource,
            4 => ErrorKind::Device,
            5 => ErrorKind::Internal,
            6 => ErrorKind::Numerics,
            _ => ErrorKind::Unknown,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name(), self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// The static name of any status code.
pub fn status_name(status: i32) -> &'static str {
    // SAFETY: the header promises a static NUL-terminated string, never NULL.
    unsafe { CStr::from_ptr(sys::fp8attn_status_name(status)) }.to_str().unwrap_or("FP8ATTN_STATUS_UNKNOWN")
}

/// A fresh error struct for one call.
pub(crate) fn error_struct() -> sys::fp8attn_error {
    sys::fp8attn_error {
        struct_size: core::mem::size_of::<sys::fp8attn_error>(),
        status: -1,
        message: [0; sys::FP8ATTN_ERROR_MESSAGE_LEN],
    }
}

/// Runs one fallible entry point with its own error struct.
pub(crate) fn check(f: impl FnOnce(*mut sys::fp8attn_error) -> i32) -> Result<()> {
    let mut err = error_struct();
    let status = f(&mut err);
    if status == sys::FP8ATTN_OK {
        return Ok(());
    }
    // SAFETY: the message buffer is NUL-terminated by the library (and zero-initialized here).
    let bytes: Vec<u8> = err.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    Err(Error::new(status, String::from_utf8_lossy(&bytes).into_owned()))
}
