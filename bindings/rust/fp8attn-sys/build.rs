//! Finds the installed libfp8attn without the pkg-config crate:
//! 1. `FP8ATTN_LIB_DIR` (and optionally `FP8ATTN_INCLUDE_DIR`), when set;
//! 2. else `fp8attn.pc` read from `PKG_CONFIG_PATH`, `PKG_CONFIG_LIBDIR`, then the usual system
//!    folders, with its variables expanded (`${pcfiledir}` included, as the installed file uses).
use std::collections::HashMap;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn expand(value: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let len = match rest[start..].find('}') {
            Some(len) => len,
            None => break,
        };
        let name = &rest[start + 2..start + len];
        out.push_str(vars.get(name).map(String::as_str).unwrap_or(""));
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// (libdir, includedir) from a .pc file.
fn read_pc(pc: &Path) -> (String, String) {
    let text = fs::read_to_string(pc).unwrap_or_else(|e| panic!("reading {}: {e}", pc.display()));
    let mut vars = HashMap::new();
    vars.insert("pcfiledir".to_string(), pc.parent().unwrap().display().to_string());
    let (mut libdir, mut includedir) = (None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some((k, v)) = line.split_once('=') {
            if !k.contains(':') && !k.contains(' ') {
                vars.insert(k.trim().to_string(), expand(v.trim(), &vars));
                continue;
            }
        }
        if let Some(libs) = line.strip_prefix("Libs:") {
            for flag in expand(libs, &vars).split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    libdir = Some(dir.to_string());
                }
            }
        }
        if let Some(cflags) = line.strip_prefix("Cflags:") {
            for flag in expand(cflags, &vars).split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-I") {
                    includedir = Some(dir.to_string());
                }
            }
        }
    }
    let libdir = libdir.or_else(|| vars.get("libdir").cloned()).expect("fp8attn.pc names no library folder");
    let includedir = includedir.or_else(|| vars.get("includedir").cloned()).unwrap_or_default();
    (libdir, includedir)
}

fn find_pc() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        if let Ok(v) = env::var(var) {
            dirs.extend(env::split_paths(&v));
        }
    }
    for d in ["/usr/local/lib/pkgconfig", "/usr/local/lib64/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
              "/usr/lib/pkgconfig", "/usr/lib64/pkgconfig", "/usr/share/pkgconfig"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join("fp8attn.pc")).find(|p| p.is_file())
}

fn main() {
    for var in ["FP8ATTN_LIB_DIR", "FP8ATTN_INCLUDE_DIR", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let (libdir, includedir) = match env::var("FP8ATTN_LIB_DIR") {
        Ok(dir) => (dir, env::var("FP8ATTN_INCLUDE_DIR").unwrap_or_default()),
        Err(_) => {
            let pc = find_pc().unwrap_or_else(|| {
                panic!("fp8attn-sys: no fp8attn.pc on PKG_CONFIG_PATH or in the system folders, and FP8ATTN_LIB_DIR \
                        is not set; install fp8attn (cmake --install) and point PKG_CONFIG_PATH at <prefix>/lib/pkgconfig")
            });
            println!("cargo:rerun-if-changed={}", pc.display());
            read_pc(&pc)
        }
    };
    assert!(Path::new(&libdir).is_dir(), "fp8attn-sys: library folder {libdir} does not exist");
    println!("cargo:rustc-link-search=native={libdir}");
    println!("cargo:rustc-link-lib=dylib=fp8attn");
    // For dependents' build scripts (DEP_FP8ATTN_LIB_DIR, DEP_FP8ATTN_INCLUDE).
    println!("cargo:lib_dir={libdir}");
    println!("cargo:include={includedir}");
    // For this crate's layout test, which compiles the C layout probe against the same header.
    println!("cargo:rustc-env=FP8ATTN_SYS_INCLUDE_DIR={includedir}");
}
