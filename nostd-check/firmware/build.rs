//! Links the image with the memory map of its QEMU machine when building
//! for a bare-metal target: `link-arm.x` (mps2-an386, Cortex-M4F) or
//! `link-riscv.x` (virt, RV32).

fn main() {
    println!("cargo:rerun-if-changed=link-arm.x");
    println!("cargo:rerun-if-changed=link-riscv.x");
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("none") {
        return;
    }
    let script = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("riscv32") => "link-riscv.x",
        _ => "link-arm.x",
    };
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rustc-link-arg=-T{dir}/{script}");
}
