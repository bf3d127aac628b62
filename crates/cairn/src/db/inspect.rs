//! `Db::inspect`: the manifest's view of a database, read without opening it: no lock
//! taken, no log replayed, nothing written. Tools (`cairn info`) use it so that looking
//! at a database neither changes it nor waits for the process that has it open.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::table_cache::table_path;
use super::{level_infos, LevelInfo};
use crate::compaction::LevelShape;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::options::Options;
use crate::storage::StorageEnv;
use crate::version::set::current_path;
use crate::version::VersionSet;
use crate::{Error, Result};

/// One table file as the manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableFileInfo {
    /// File number.
    pub file_no: FileNo,
    /// Storage tier.
    pub tier: u32,
    /// Level.
    pub level: usize,
    /// Run id.
    pub run: u64,
    /// Bytes, as recorded.
    pub size: u64,
    /// Entries, as recorded.
    pub entries: u64,
    /// Where the file is.
    pub path: PathBuf,
}

/// One column family as the manifest describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfInfo {
    /// Id ([`CfId::DEFAULT`] is `default`).
    pub id: CfId,
    /// Name.
    pub name: String,
    /// Levels, as [`Db::level_info`](super::Db::level_info) reports them (capacities
    /// from the options given).
    pub levels: Vec<LevelInfo>,
    /// Table files, by level then run.
    pub tables: Vec<TableFileInfo>,
}

/// What [`Db::inspect`](super::Db::inspect) read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestInfo {
    /// The manifest `CURRENT` names.
    pub manifest: String,
    /// Last sequence number recorded (writes still in the WAL are not counted).
    pub last_seq: u64,
    /// Write-ahead logs numbered from this one on are replayed at open.
    pub log_number: FileNo,
    /// Next file number.
    pub next_file_no: FileNo,
    /// Column families, by id.
    pub column_families: Vec<CfInfo>,
    /// Value-log files referenced by tables.
    pub value_logs: Vec<FileNo>,
}

pub(crate) fn inspect(path: &Path, opts: &Options) -> Result<ManifestInfo> {
    opts.validate()?;
    if !path.is_dir() {
        return Err(Error::NotFound(path.to_path_buf()));
    }
    if !current_path(path).exists() {
        let data = super::recovery::data_files(path, opts);
        if data.is_empty() {
            return Err(Error::NotFound(path.to_path_buf()));
        }
        return Err(Error::corruption(
            crate::filenames::CURRENT,
            "missing, but the directory holds database files: Db::repair rebuilds it",
        ));
    }
    let env = StorageEnv::new(path, &opts.tiers, 0.0)?;
    let o = opts.clone();
    let initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync> = Arc::new(move |l| o.initial_runs(l));
    let vs = VersionSet::recover(env.clone(), opts.num_levels, initial_k)?;
    let shape = LevelShape {
        level1_bytes: opts.level1_bytes,
        size_ratio: opts.size_ratio,
        num_levels: opts.num_levels,
        held: None,
    };
    let column_families = vs
        .cfs
        .iter()
        .map(|(&id, e)| {
            let mut tables = Vec::new();
            for (level, l) in e.version.levels.iter().enumerate() {
                for run in &l.runs {
                    for f in &run.files {
                        tables.push(TableFileInfo {
                            file_no: f.file_no(),
                            tier: f.desc.tier,
                            level,
                            run: run.id,
                            size: f.desc.size,
                            entries: f.desc.num_entries,
                            path: table_path(&env, f.desc.tier as usize, f.file_no()),
                        });
                    }
                }
            }
            CfInfo {
                id,
                name: e.name.clone(),
                levels: level_infos(&e.version, &shape),
                tables,
            }
        })
        .collect();
    let mut value_logs = vs.vlogs.live_files();
    value_logs.sort_unstable();
    Ok(ManifestInfo {
        manifest: crate::filenames::manifest(vs.manifest_no()),
        last_seq: vs.last_seq,
        log_number: vs.log_number,
        next_file_no: vs.next_file_no,
        column_families,
        value_logs,
    })
}
