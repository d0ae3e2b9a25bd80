//! Builds the RTOS image's inputs: links it with the firmware's linker
//! script, and turns each application's `app.toml` (the parameters it takes
//! from the workload blob, which the harness reads too) into Rust,
//! `$OUT_DIR/<application>.rs`, which the application includes. The folder
//! is the application's name; nothing here lists the applications.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::{env, fmt::Write as _, fs, path::Path, path::PathBuf};

/// An application's `app.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// One or two sentences: what the application does (for the harness).
    #[allow(dead_code)]
    description: String,
    #[serde(default)]
    params: BTreeMap<String, Param>,
}

/// One parameter: an integer in `min..=max`, or one of `choices` (its
/// index in the blob).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Param {
    /// What it means (for the harness's messages).
    #[allow(dead_code)]
    help: String,
    min: Option<u32>,
    max: Option<u32>,
    default: Option<toml::Value>,
    choices: Option<Vec<String>>,
}

/// Longest name the workload blob carries (`tandem_abi::workload::NAME_LEN`).
const NAME_LEN: usize = 16;

fn rust(dir: &Path, name: &str) -> Result<String, String> {
    let path = dir.join("app.toml");
    let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let manifest: Manifest =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = String::new();
    writeln!(
        out,
        "// Generated from {} by rtos/apps/build.rs.",
        path.display()
    )
    .unwrap();
    writeln!(out, "/// The application's name: its folder's.").unwrap();
    writeln!(out, "pub const NAME: &str = {name:?};").unwrap();
    writeln!(out, "/// The parameters it declares in `app.toml`.").unwrap();
    writeln!(
        out,
        "pub const PARAMS: &[::tandem_rtos_kernel::app::Param] = &["
    )
    .unwrap();
    let mut consts = String::new();
    for (key, p) in &manifest.params {
        let bad = |what: &str| format!("{}: parameter {key}: {what}", path.display());
        if key.is_empty() || key.len() > NAME_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad("names are 1..=16 printable ASCII characters"));
        }
        let (min, max, default) = match &p.choices {
            Some(choices) => {
                if p.min.is_some() || p.max.is_some() || choices.is_empty() {
                    return Err(bad("choices replace min and max, and are not empty"));
                }
                for (i, c) in choices.iter().enumerate() {
                    let constant = format!("{key}_{c}").to_uppercase().replace('-', "_");
                    writeln!(consts, "/// `{key} = \"{c}\"` in the blob.").unwrap();
                    writeln!(consts, "#[allow(dead_code)]").unwrap();
                    writeln!(consts, "pub const {constant}: u32 = {i};").unwrap();
                }
                let default = match &p.default {
                    None => 0,
                    Some(toml::Value::String(d)) => choices
                        .iter()
                        .position(|c| c == d)
                        .ok_or_else(|| bad("the default is not one of the choices"))?,
                    Some(_) => return Err(bad("the default names a choice")),
                };
                (0, choices.len() as u32 - 1, default as u32)
            }
            None => {
                let (min, max) = (p.min.unwrap_or(0), p.max.unwrap_or(u32::MAX));
                let default = match &p.default {
                    None => min,
                    Some(toml::Value::Integer(d)) => {
                        u32::try_from(*d).map_err(|_| bad("the default is not a u32"))?
                    }
                    Some(_) => return Err(bad("the default is an integer")),
                };
                if !(min <= default && default <= max) {
                    return Err(bad("min <= default <= max"));
                }
                (min, max, default)
            }
        };
        writeln!(
            out,
            "    ::tandem_rtos_kernel::app::Param {{ name: {key:?}, min: {min}, max: {max}, default: {default} }},"
        )
        .unwrap();
    }
    writeln!(out, "];").unwrap();
    out.push_str(&consts);
    Ok(out)
}

fn main() {
    println!("cargo:rustc-link-arg-bins=-Ttandem-rtos.ld");
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed={}", root.display());
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("app.toml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        println!("cargo:rerun-if-changed={}", dir.join("app.toml").display());
        match rust(&dir, &name) {
            Ok(text) => fs::write(out.join(format!("{name}.rs")), text).unwrap(),
            Err(e) => panic!("{e}"),
        }
    }
}
