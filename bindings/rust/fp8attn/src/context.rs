//! `Context`: a backend, its worker threads and its logger (RAII over fp8attn_context).
use crate::error::{check, Result};
use std::os::raw::{c_char, c_void};
use fp8attn_sys as sys;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Auto = 0,
    Cpu = 1,
    Cuda = 2,
    Reference = 3,
    /// The Hopper kernels under the SIMT emulator (FP8ATTN_BACKEND_EMULATOR).
    Emulator = 4,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Default = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
    Trace = 5,
    Off = 6,
}

impl LogLevel {
    fn from_raw(level: i32) -> Self {
        match level {
            1 => LogLevel::Error,
            2 => LogLevel::Warn,
            3 => LogLevel::Info,
            4 => LogLevel::Debug,
            5 => LogLevel::Trace,
            6 => LogLevel::Off,
            _ => LogLevel::Default,
        }
    }
}

type LogFn = dyn Fn(LogLevel, &str) + Send + Sync + 'static;

/// What the C library's user_data points at: the callback and a count of its caught panics.
struct LogSink {
    callback: Box<LogFn>,
    panics: AtomicUsize,
}

/// The C side of the log callback. A panic in the Rust callback is caught here: unwinding into C
/// is undefined behaviour (and an abort in an `extern "C"` function since Rust 1.81).
unsafe extern "C" fn log_trampoline(user_data: *mut c_void, level: i32, msg: *const c_char, len: usize) {
    // SAFETY: user_data is the LogSink that the context owns for its whole life.
    let sink = unsafe { &*(user_data as *const LogSink) };
    let bytes = if msg.is_null() { &[][..] } else { unsafe { core::slice::from_raw_parts(msg as *const u8, len) } };
    let text = String::from_utf8_lossy(bytes);
    if catch_unwind(AssertUnwindSafe(|| (sink.callback)(LogLevel::from_raw(level), &text))).is_err() {
        sink.panics.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) struct ContextInner {
    pub(crate) raw: sys::fp8attn_context,
    // Declared after `raw`, so dropped after fp8attn_context_destroy has run.
    log: Option<Box<LogSink>>,
}

// SAFETY: the header documents fp8attn_context_create/get_backend, plan and scale-state creation
// and every call taking a context as thread-safe (CPU calls on one context run one at a time on
// its workers); the log callback is `Send + Sync`. Destroy needs exclusivity: it runs in Drop,
// when the last Arc (held by every Plan and ScaleState too) goes.
unsafe impl Send for ContextInner {}
unsafe impl Sync for ContextInner {}

impl Drop for ContextInner {
    fn drop(&mut self) {
        // SAFETY: created by fp8attn_context_create; no plan or state is left (they hold Arcs).
        unsafe { sys::fp8attn_context_destroy(self.raw) }
    }
}

/// A context; cheap to clone (shared), `Send + Sync` as the header documents.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

/// Options of `Context::with_options`; zeros are the library's defaults.
pub struct ContextOptions {
    pub backend: Backend,
    pub device_ordinal: i32,
    pub num_threads: i32,
    pub log_level: LogLevel,
    pub log_callback: Option<Box<LogFn>>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        ContextOptions { backend: Backend::Auto, device_ordinal: 0, num_threads: 0, log_level: LogLevel::Default,
                         log_callback: None }
    }
}

impl Context {
    /// A context on `backend` with default options.
    pub fn new(backend: Backend) -> Result<Self> {
        Self::with_options(ContextOptions { backend, ..Default::default() })
    }

    pub fn with_options(options: ContextOptions) -> Result<Self> {
        let log = options.log_callback.map(|callback| Box::new(LogSink { callback, panics: AtomicUsize::new(0) }));
        let raw_options = sys::fp8attn_context_options {
            struct_size: core::mem::size_of::<sys::fp8attn_context_options>(),
            next: core::ptr::null(),
            backend: options.backend as i32,
            device_ordinal: options.device_ordinal,
            num_threads: options.num_threads,
            log_level: options.log_level as i32,
            log_callback: if log.is_some() { Some(log_trampoline) } else { None },
            log_user_data: log.as_ref().map_or(core::ptr::null_mut(), |s| &**s as *const LogSink as *mut c_void),
        };
        let mut raw = core::ptr::null_mut();
        check(|e| unsafe { sys::fp8attn_context_create(&raw_options, &mut raw, e) })?;
        Ok(Context { inner: Arc::new(ContextInner { raw, log }) })
    }

    /// The backend the context runs on (never `Auto`).
    pub fn backend(&self) -> Result<Backend> {
        let mut b = -1;
        check(|e| unsafe { sys::fp8attn_context_get_backend(self.inner.raw, &mut b, e) })?;
        Ok(match b {
            1 => Backend::Cpu,
            2 => Backend::Cuda,
            3 => Backend::Reference,
            4 => Backend::Emulator,
            _ => Backend::Auto,
        })
    }

    /// How many times the log callback panicked (each caught before it reached C).
    pub fn log_callback_panics(&self) -> usize {
        self.inner.log.as_ref().map_or(0, |s| s.panics.load(Ordering::Relaxed))
    }

    pub fn as_raw(&self) -> sys::fp8attn_context {
        self.inner.raw
    }
}
