//! Options and opening: every command that touches a database gets its options here, so
//! that "no database there" is the same clear error everywhere.

use std::path::Path;

use anyhow::{bail, Context, Result};
use cairn::{ColumnFamily, Db, Options};

use crate::OpenArgs;

/// The options to open the database at `db` with: the preset's; without one, those its
/// options file saved (the defaults where it has none). Never creating a database.
pub fn options(db: &Path, args: &OpenArgs) -> Result<Options> {
    let mut o = match &args.preset {
        None if cairn::options_file::has_options_file(db) => Options::load_latest(db)
            .with_context(|| {
                format!(
                    "cannot read the options file of {} (--preset NAME opens without it)",
                    db.display()
                )
            })?,
        None => Options::default(),
        Some(name) => cairn::presets::by_name(name).with_context(|| {
            format!(
                "unknown preset {name:?} (one of: {})",
                cairn::presets::PRESETS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?,
    };
    o.create_if_missing = false;
    Ok(o)
}

/// Opens an existing database (or creates one when `create` is set).
pub fn open(path: &Path, args: &OpenArgs, create: bool) -> Result<Db> {
    let mut o = options(path, args)?;
    o.create_if_missing = create;
    Db::open(path, o).with_context(|| format!("cannot open database {}", path.display()))
}

/// Opens the database at `path` for reads only: no lock, nothing written, so it works
/// beside a process that has the database open.
pub fn open_read_only(path: &Path, args: &OpenArgs) -> Result<Db> {
    Db::open_read_only(path, options(path, args)?)
        .with_context(|| format!("cannot open database {}", path.display()))
}

/// A column family by name.
pub fn cf(db: &Db, name: &str) -> Result<ColumnFamily> {
    match db.cf(name) {
        Some(cf) => Ok(cf),
        None => bail!(
            "no column family {name:?} (the database has: {})",
            db.cf_names().join(", ")
        ),
    }
}
