//! The workload blob: what the RTOS's applications are asked to do on one
//! boot. The harness writes it beside the boot configuration and the RTOS
//! reads it once at cold boot, before Linux can touch it.
//!
//! The boot configuration is the platform's (who owns each core, which
//! monitor features are on); this blob belongs to the applications. It is a
//! flat list of `application.parameter = value` entries whose names only
//! the applications give meaning to: the RTOS checks each one against the
//! parameters the named application declares (`tandem_rtos_kernel::app`),
//! and an application that appears in the blob, even with no parameter, is
//! *selected* for this boot. Neither the monitor nor this crate knows any
//! application, so a new one needs no change here.

/// `"TNDMWKLD"` as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"TNDMWKLD");
/// Layout version of [`Blob`].
pub const VERSION: u32 = 1;
/// Where the blob lies: this many bytes past the boot configuration, in the
/// same page of secure flash (`boards/*.toml` `boot.config`).
pub const OFFSET: u64 = 0x800;
/// Bytes the blob may take.
pub const SIZE: usize = 0x800;
/// Bytes of an application's or a parameter's name (NUL-padded ASCII).
pub const NAME_LEN: usize = 16;

/// One `application.parameter = value`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The application's name.
    pub app: [u8; NAME_LEN],
    /// The parameter's name; empty: the application is selected and its
    /// parameters keep their defaults.
    pub key: [u8; NAME_LEN],
    /// The value.
    pub value: u64,
}

/// Size of one [`Entry`].
pub const ENTRY_SIZE: usize = core::mem::size_of::<Entry>();
/// Size of the blob's header (magic, version, entry count).
pub const HEADER_SIZE: usize = 16;
/// Most entries a blob holds.
pub const MAX_ENTRIES: usize = (SIZE - HEADER_SIZE) / ENTRY_SIZE;

/// The blob as it lies in memory (little endian).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Blob {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`VERSION`].
    pub version: u32,
    /// Entries used.
    pub count: u32,
    /// The entries, the first `count` of them used.
    pub entries: [Entry; MAX_ENTRIES],
}

const _: () = assert!(ENTRY_SIZE == 2 * NAME_LEN + 8);
const _: () = assert!(core::mem::offset_of!(Blob, entries) == HEADER_SIZE);
const _: () = assert!(core::mem::size_of::<Blob>() <= SIZE);

/// Why a blob was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobError {
    /// No blob there (wrong magic).
    Missing,
    /// Written for another layout.
    Version(u32),
    /// More entries than [`MAX_ENTRIES`].
    Count(u32),
    /// An entry whose application name is empty, or whose names are not
    /// NUL-padded ASCII.
    Name {
        /// Index of the entry.
        entry: usize,
    },
}

impl core::fmt::Display for BlobError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            BlobError::Missing => write!(f, "no workload blob (magic missing)"),
            BlobError::Version(v) => {
                write!(f, "workload blob of layout {v}, this RTOS reads {VERSION}")
            }
            BlobError::Count(n) => write!(f, "{n} workload entries, at most {MAX_ENTRIES}"),
            BlobError::Name { entry } => {
                write!(f, "workload entry {entry}: names must be NUL-padded ASCII")
            }
        }
    }
}

/// A name field as text: ASCII up to the first NUL, the rest NUL.
fn name(field: &[u8; NAME_LEN]) -> Option<&str> {
    let len = field.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    let (text, pad) = field.split_at(len);
    if pad.iter().any(|&b| b != 0) || !text.iter().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    core::str::from_utf8(text).ok()
}

impl Entry {
    /// An entry (for tests and encoders); names longer than [`NAME_LEN`]
    /// are cut.
    pub fn new(app: &str, key: &str, value: u64) -> Entry {
        let field = |s: &str| {
            let mut f = [0u8; NAME_LEN];
            for (d, b) in f.iter_mut().zip(s.bytes()) {
                *d = b;
            }
            f
        };
        Entry {
            app: field(app),
            key: field(key),
            value,
        }
    }

    /// The application's name (only meaningful once [`Blob::validate`]
    /// accepted the blob).
    pub fn app(&self) -> &str {
        name(&self.app).unwrap_or("")
    }

    /// The parameter's name ("" for a bare selection).
    pub fn key(&self) -> &str {
        name(&self.key).unwrap_or("")
    }
}

impl Blob {
    /// A blob of `entries` (for tests; the harness writes the same bytes
    /// from Python). Entries past [`MAX_ENTRIES`] are dropped.
    pub fn encode(entries: &[Entry]) -> Blob {
        let mut blob = Blob {
            magic: MAGIC,
            version: VERSION,
            count: entries.len().min(MAX_ENTRIES) as u32,
            entries: [Entry::new("", "", 0); MAX_ENTRIES],
        };
        for (slot, e) in blob.entries.iter_mut().zip(entries) {
            *slot = *e;
        }
        blob
    }

    /// The entries, once the header and every name are checked.
    pub fn validate(&self) -> Result<&[Entry], BlobError> {
        if self.magic != MAGIC {
            return Err(BlobError::Missing);
        }
        if self.version != VERSION {
            return Err(BlobError::Version(self.version));
        }
        let count = self.count as usize;
        if count > MAX_ENTRIES {
            return Err(BlobError::Count(self.count));
        }
        let entries = &self.entries[..count];
        for (i, e) in entries.iter().enumerate() {
            let app_ok = name(&e.app).is_some_and(|a| !a.is_empty());
            let key_ok = e.key == [0; NAME_LEN] || name(&e.key).is_some_and(|k| !k.is_empty());
            if !(app_ok && key_ok) {
                return Err(BlobError::Name { entry: i });
            }
        }
        Ok(entries)
    }
}

/// The blob's numbers for the harness, which writes it.
pub(crate) const C_CONSTANTS: &[crate::CConstant] = &[
    crate::CConstant {
        name: "WORKLOAD_MAGIC",
        value: MAGIC as i64,
    },
    crate::CConstant {
        name: "WORKLOAD_VERSION",
        value: VERSION as i64,
    },
    crate::CConstant {
        name: "WORKLOAD_OFFSET",
        value: OFFSET as i64,
    },
    crate::CConstant {
        name: "WORKLOAD_SIZE",
        value: SIZE as i64,
    },
    crate::CConstant {
        name: "WORKLOAD_NAME_LEN",
        value: NAME_LEN as i64,
    },
    crate::CConstant {
        name: "WORKLOAD_MAX_ENTRIES",
        value: MAX_ENTRIES as i64,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let blob = Blob::encode(&[
            Entry::new("periodic", "period_us", 1000),
            Entry::new("ctxsw", "", 0),
        ]);
        let e = blob.validate().unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].app(), e[0].key(), e[0].value),
            ("periodic", "period_us", 1000)
        );
        assert_eq!((e[1].app(), e[1].key()), ("ctxsw", ""));
        let empty = Blob::encode(&[]);
        assert_eq!(empty.validate().map(<[Entry]>::len), Ok(0));
    }

    #[test]
    fn bad_blobs_are_refused_with_the_reason() {
        let good = Blob::encode(&[Entry::new("a", "b", 1)]);
        let mut b = good;
        b.magic = 0;
        assert_eq!(b.validate(), Err(BlobError::Missing));
        b = good;
        b.version = 9;
        assert_eq!(b.validate(), Err(BlobError::Version(9)));
        b = good;
        b.count = MAX_ENTRIES as u32 + 1;
        assert_eq!(b.validate(), Err(BlobError::Count(MAX_ENTRIES as u32 + 1)));
        for bad in [
            Entry::new("", "b", 1),
            Entry::new("a b", "c", 1),
            Entry {
                app: *b"a\0b\0\0\0\0\0\0\0\0\0\0\0\0\0",
                ..Entry::new("", "k", 0)
            },
            Entry {
                key: [0xFF; NAME_LEN],
                ..Entry::new("a", "", 0)
            },
        ] {
            let b = Blob::encode(&[Entry::new("ok", "", 0), bad]);
            assert_eq!(b.validate(), Err(BlobError::Name { entry: 1 }), "{bad:?}");
        }
        let msg = std::format!("{}", BlobError::Version(9));
        assert!(msg.contains('9') && msg.contains("layout"), "{msg}");
    }

    #[test]
    fn a_full_name_needs_no_terminator() {
        let b = Blob::encode(&[Entry::new("sixteen_letters_", "x", 0)]);
        assert_eq!(b.validate().unwrap()[0].app(), "sixteen_letters_");
    }
}
