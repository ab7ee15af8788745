//! Links clawai's binaries with packed relative relocations (`-z pack-relative-relocs`,
//! DT_RELR) where the system linker and C library support them.
//!
//! Why: `clawai proxy` stays resident beside every MCP server, so its memory counts. A
//! position-independent binary carries a relocation entry (24 bytes) for every pointer
//! in its static data, and the loader reads all of them at start: the Unicode tables of
//! the poisoning scan alone hold thousands of pointers. Packed, those entries take a few
//! kilobytes instead of 420 KB, all of which stayed resident. The binary stays
//! position-independent (ASLR is unchanged).
//!
//! Such a binary needs glibc 2.36 or later where it runs: build with
//! `CLAWAI_NO_PACKED_RELOCS=1` for an older system. A linker chosen for rustc
//! (`RUSTC_LINKER`, `CARGO_TARGET_…_LINKER`) is not the one the probe tries, so the flag is
//! left out then too.

use std::process::{Command, Stdio};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for variable in ["CC", "RUSTC_LINKER", "CLAWAI_NO_PACKED_RELOCS"] {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let linker_variable = format!("CARGO_TARGET_{}_LINKER", target.to_uppercase().replace('-', "_"));
    println!("cargo:rerun-if-env-changed={linker_variable}");
    let other_linker = std::env::var_os("RUSTC_LINKER").is_some() || std::env::var_os(&linker_variable).is_some();
    let opted_out = std::env::var_os("CLAWAI_NO_PACKED_RELOCS").is_some_and(|v| !v.is_empty() && v != "0");
    // Only for a native Linux GNU build with the default linker, and only when a test
    // link with the flag works and runs (binutils 2.38+, glibc 2.36+): elsewhere the
    // binaries are linked as usual.
    if opted_out || other_linker || target != host || !target.contains("linux-gnu") || !links_with_packed_relocations()
    {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}

fn links_with_packed_relocations() -> bool {
    let out_dir = std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into());
    let program = std::path::Path::new(&out_dir).join("relr-probe");
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let child = Command::new(compiler)
        .args(["-x", "c", "-", "-Wl,-z,pack-relative-relocs", "-o"])
        .arg(&program)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write;
        let _ = stdin.write_all(b"int main(void) { return 0; }\n");
    }
    let linked = child.wait().is_ok_and(|status| status.success());
    // The probe must also run: a C library without DT_RELR support would not load it.
    linked && Command::new(&program).status().is_ok_and(|status| status.success())
}
