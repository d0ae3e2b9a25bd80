//! QEMU TCG plugin: logs each core's own count of firmware instructions whenever it executes a marker.
//!
//! Under `-icount` QEMU runs all vCPUs in one thread, round robin, and the
//! virtual clock counts the instructions of all of them. A path timed with
//! that clock on one core therefore also counts whatever the other vCPUs ran
//! while its vCPU waited for its turn. This plugin counts, per core, only
//! the instructions that core executed in the given code ranges (the
//! firmware, which the measured paths never leave), and writes one line per
//! marker hit, in execution order: `core,marker,instructions`. The harness
//! (`tandem/pathcount.py`) pairs the hits into path lengths.
//!
//! Arguments (`-plugin libtandem_pathcount.so,out=PATH,count=0xSTART-0xEND,
//! mark=NAME@0xADDR,...`): `out` is the CSV to write; each `count` is a
//! range of guest virtual addresses whose blocks are counted; each `mark`
//! names an address in them. The CSV ends with `-1,end,0` once QEMU exits
//! cleanly; on an error the plugin says why on stderr and leaves that out.

use std::path::PathBuf;

// The plugin proper calls into QEMU, whose symbols exist only inside QEMU:
// the unit tests (which cannot link them) cover the argument parsing.
#[cfg(not(test))]
mod plugin;

/// One marker: a name for the report and the guest virtual address whose
/// execution is logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// What the address stands for (letters, digits, `_` and `-`).
    pub name: String,
    /// Guest virtual address of the marked instruction.
    pub address: u64,
}

/// The plugin's arguments, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Where the CSV of marker hits goes.
    pub out: PathBuf,
    /// The marked addresses, all distinct.
    pub markers: Vec<Marker>,
    /// The code whose instructions are counted (`count=0xSTART-0xEND`, end
    /// exclusive): the firmware, which a measured path never leaves.
    pub counted: Vec<std::ops::Range<u64>>,
}

/// Parses the plugin's `key=value` arguments: one `out`, one or more
/// `mark=NAME@0xADDR`, nothing else.
pub fn parse_args<S: AsRef<str>>(raw: &[S]) -> Result<Config, String> {
    let mut out = None;
    let mut markers: Vec<Marker> = Vec::new();
    let mut counted = Vec::new();
    for argument in raw {
        let argument = argument.as_ref();
        let (key, value) = argument
            .split_once('=')
            .ok_or_else(|| format!("argument {argument:?} is not key=value"))?;
        match key {
            "out" if out.is_some() => return Err("out given twice".into()),
            "out" if value.is_empty() => return Err("out is empty".into()),
            "out" => out = Some(PathBuf::from(value)),
            "mark" => {
                let marker = parse_marker(value)?;
                if let Some(same) = markers.iter().find(|m| m.address == marker.address) {
                    return Err(format!(
                        "markers {} and {} share address {:#x}",
                        same.name, marker.name, marker.address
                    ));
                }
                if markers.iter().any(|m| m.name == marker.name) {
                    return Err(format!("marker {} given twice", marker.name));
                }
                markers.push(marker);
            }
            "count" => counted.push(parse_range(value)?),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (expected out, mark or count)"
                ));
            }
        }
    }
    let out = out.ok_or("missing out=PATH")?;
    if markers.is_empty() {
        return Err("no mark=NAME@0xADDR given".into());
    }
    if counted.is_empty() {
        return Err("no count=0xSTART-0xEND given".into());
    }
    if let Some(m) = markers
        .iter()
        .find(|m| !counted.iter().any(|r| r.contains(&m.address)))
    {
        return Err(format!(
            "marker {} at {:#x} lies outside the counted code",
            m.name, m.address
        ));
    }
    Ok(Config {
        out,
        markers,
        counted,
    })
}

fn parse_hex(text: &str, what: &str) -> Result<u64, String> {
    let hex = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{what} {text:?} must start with 0x"))?;
    u64::from_str_radix(hex, 16).map_err(|e| format!("{what} {text:?} is not hex: {e}"))
}

fn parse_range(value: &str) -> Result<std::ops::Range<u64>, String> {
    let (start, end) = value
        .split_once('-')
        .ok_or_else(|| format!("count {value:?} is not 0xSTART-0xEND"))?;
    let range = parse_hex(start, "count start")?..parse_hex(end, "count end")?;
    if range.is_empty() {
        return Err(format!("count {value:?} is empty"));
    }
    Ok(range)
}

fn parse_marker(value: &str) -> Result<Marker, String> {
    let (name, address) = value
        .split_once('@')
        .ok_or_else(|| format!("mark {value:?} is not NAME@0xADDR"))?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "marker name {name:?} must be letters, digits, _ or -"
        ));
    }
    let address = parse_hex(address, "marker address")?;
    Ok(Marker {
        name: name.to_string(),
        address,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_out_and_markers() {
        let config = parse_args(&[
            "out=/tmp/x.csv",
            "mark=a@0x10",
            "count=0x0-0x100",
            "mark=b-2@0xffff0000",
            "count=0xffff0000-0xffff1000",
        ])
        .unwrap();
        assert_eq!(config.out, PathBuf::from("/tmp/x.csv"));
        assert_eq!(
            config.markers,
            vec![
                Marker {
                    name: "a".into(),
                    address: 0x10
                },
                Marker {
                    name: "b-2".into(),
                    address: 0xffff_0000
                },
            ]
        );
        assert_eq!(config.counted, vec![0..0x100, 0xffff_0000..0xffff_1000]);
    }

    #[test]
    fn refuses_bad_arguments() {
        for (args, why) in [
            (&["mark=a@0x10", "count=0x0-0x20"][..], "missing out"),
            (&["out=x", "count=0x0-0x20"][..], "no mark"),
            (&["out=x", "mark=a@0x1"][..], "no count"),
            (&["out=x", "out=y", "mark=a@0x1"][..], "out given twice"),
            (&["out=", "mark=a@0x1"][..], "out is empty"),
            (&["out=x", "mark=a@16"][..], "must start with 0x"),
            (&["out=x", "mark=a@0xzz"][..], "not hex"),
            (&["out=x", "mark=a"][..], "not NAME@0xADDR"),
            (&["out=x", "mark=a,b@0x1"][..], "letters, digits"),
            (&["out=x", "mark=@0x1"][..], "letters, digits"),
            (&["out=x", "mark=a@0x1", "mark=b@0x1"][..], "share address"),
            (&["out=x", "mark=a@0x1", "mark=a@0x2"][..], "given twice"),
            (&["out=x", "mark=a@0x1", "verbose"][..], "not key=value"),
            (&["out=x", "mark=a@0x1", "speed=1"][..], "unknown argument"),
            (
                &["out=x", "mark=a@0x1", "count=0x10"][..],
                "not 0xSTART-0xEND",
            ),
            (&["out=x", "mark=a@0x1", "count=0x10-0x10"][..], "is empty"),
            (
                &["out=x", "mark=a@0x1", "count=0-0x10"][..],
                "must start with 0x",
            ),
            (
                &["out=x", "mark=a@0x30", "count=0x0-0x20"][..],
                "outside the counted code",
            ),
        ] {
            let err = parse_args(args).unwrap_err();
            assert!(err.contains(why), "{args:?}: {err}");
        }
    }
}
