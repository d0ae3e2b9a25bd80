//! Puts the linker script fragment every firmware image includes
//! (`link/tandem-runtime.ld`) on the link's library search path, which
//! cargo passes on to the images that depend on this crate; their scripts
//! name it with `INCLUDE tandem-runtime.ld`.

use std::{env, path::PathBuf};

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("link");
    println!("cargo:rustc-link-search={}", dir.display());
    println!("cargo:rerun-if-changed=link/tandem-runtime.ld");
}
