//! The version set: every column family's current version, the counters (file numbers,
//! sequence numbers, run ids) and the manifest that makes them durable.
//!
//! Manifest protocol: `CURRENT` names the live manifest; a manifest is a log of
//! [`VersionEdit`] records whose first record describes the whole state. An edit is
//! appended and synced before it is installed. A new manifest (written whole, synced, then
//! named by an atomically replaced `CURRENT`) starts at open, when the manifest grows
//! large, and after a failed write, so a partly written record is never followed by more.

use crate::filenames;
use crate::ids::CfId;
use crate::ids::FileNo;
use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::edit::{AddedFile, CfAdded, CompactPointer, LevelPolicy, SealedRun};
use super::{CfVersion, FileDesc, FileMeta, PolicyState, VersionEdit};
use crate::log::{LogReader, LogWriter, TailState};
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

const MAX_MANIFEST_BYTES: u64 = 32 << 20;

/// File numbers whose last version went away, waiting to be deleted.
#[derive(Debug, Default)]
pub struct ObsoleteFiles {
    files: Mutex<Vec<(FileNo, u32)>>,
}

impl ObsoleteFiles {
    pub(crate) fn push(&self, file_no: FileNo, tier: u32) {
        self.files.lock().push((file_no, tier));
    }
    /// Takes the queued (file number, tier) pairs.
    pub fn take(&self) -> Vec<(FileNo, u32)> {
        std::mem::take(&mut *self.files.lock())
    }
}

/// One column family's entry in the version set.
#[derive(Clone, Debug)]
pub struct CfEntry {
    /// Name.
    pub name: String,
    /// Current version.
    pub version: Arc<CfVersion>,
}

/// See the module comment.
pub struct VersionSet {
    env: StorageEnv,
    manifest: Option<LogWriter>,
    manifest_no: FileNo,
    num_levels: usize,
    initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
    /// Next file number to hand out.
    pub next_file_no: FileNo,
    /// Largest sequence number known durable in tables (WAL replay may raise it).
    pub last_seq: u64,
    /// WAL files below this number are obsolete.
    pub log_number: FileNo,
    /// Next run id.
    pub next_run_id: u64,
    /// Column families by id.
    pub cfs: BTreeMap<CfId, CfEntry>,
    /// Largest column family id added so far, dropped ones included.
    pub max_cf_id: CfId,
    /// Queue of files no version references any more.
    pub obsolete: Arc<ObsoleteFiles>,
    /// Which value-log files installed tables reference.
    pub vlogs: Arc<crate::vlog::VlogRegistry>,
    saw_format: bool,
    /// Set when a manifest write failed after its bytes may have reached the disk: the
    /// state in memory may then differ from what a restart reads, so no later edit is
    /// written (the database stops until reopened).
    pub(crate) halt: Arc<crate::error::Halt>,
    /// The states such failed edits would have installed, kept so that the files they
    /// add are never queued for deletion: the manifest may name them after a restart.
    limbo: Vec<BTreeMap<CfId, CfEntry>>,
}

/// How a failed manifest write left the disk.
enum Outcome {
    /// The edit is certainly not what a restart reads.
    NotWritten(Error),
    /// A restart may read the edit.
    Unknown(Error),
}

pub use crate::filenames::{current_path, manifest_path};

impl VersionSet {
    /// A version set with no column family and no manifest yet: the first
    /// [`log_and_apply`](Self::log_and_apply) writes a manifest describing the whole state
    /// and only then points `CURRENT` at it (repair builds its state this way).
    pub(crate) fn blank(
        env: StorageEnv,
        num_levels: usize,
        initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
    ) -> Self {
        VersionSet {
            env,
            manifest: None,
            manifest_no: FileNo::new(0),
            num_levels,
            initial_k,
            next_file_no: FileNo::new(1),
            last_seq: 0,
            log_number: FileNo::new(0),
            next_run_id: 1,
            cfs: BTreeMap::new(),
            max_cf_id: CfId::DEFAULT,
            obsolete: Arc::new(ObsoleteFiles::default()),
            vlogs: Arc::new(crate::vlog::VlogRegistry::default()),
            saw_format: false,
            halt: Arc::default(),
            limbo: Vec::new(),
        }
    }

    /// A new database with the default column family (id 0); writes the first manifest.
    pub fn create(
        env: StorageEnv,
        num_levels: usize,
        initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
    ) -> Result<Self> {
        let mut vs = Self::blank(env, num_levels, initial_k);
        let edit = VersionEdit {
            cf_added: vec![CfAdded {
                id: CfId::DEFAULT,
                name: "default".into(),
            }],
            ..Default::default()
        };
        vs.log_and_apply(edit)?;
        Ok(vs)
    }

    /// Rebuilds the state from `CURRENT` and the manifest it names. The next edit starts a
    /// new manifest.
    pub fn recover(
        env: StorageEnv,
        num_levels: usize,
        initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
    ) -> Result<Self> {
        let root = env.root().to_path_buf();
        let cur = env.read_whole(&current_path(&root), FileKind::Manifest)?;
        let name = std::str::from_utf8(&cur)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| s.starts_with(filenames::MANIFEST_PREFIX) && !s.contains('/'))
            .ok_or_else(|| Error::corruption(filenames::CURRENT, "does not name a manifest"))?;
        let manifest_no = name[filenames::MANIFEST_PREFIX.len()..]
            .parse()
            .map(FileNo::new)
            .map_err(|_| Error::corruption(filenames::CURRENT, "bad manifest number"))?;
        Self::recover_manifest(env, num_levels, initial_k, manifest_no)
    }

    /// Rebuilds the state from manifest number `manifest_no` (whether or not `CURRENT`
    /// names it: repair tries the manifests present). The next edit starts a new manifest.
    pub(crate) fn recover_manifest(
        env: StorageEnv,
        num_levels: usize,
        initial_k: Arc<dyn Fn(usize) -> usize + Send + Sync>,
        manifest_no: FileNo,
    ) -> Result<Self> {
        let path = manifest_path(env.root(), manifest_no);
        let name = filenames::manifest(manifest_no);
        let name = name.as_str();
        let data = env.read_whole(&path, FileKind::Manifest)?;
        let mut vs = Self::blank(env, num_levels, initial_k);
        vs.manifest_no = manifest_no;
        let mut reader = LogReader::new(data, name, false);
        let mut any = false;
        while let Some(rec) = reader
            .next_record()
            .map_err(|e| rename_corruption(e, name))?
        {
            let edit = VersionEdit::decode(&rec).map_err(|e| rename_corruption(e, name))?;
            // Records are checksummed, so a level beyond `num_levels` means the database
            // was created with more levels, not damage: say so instead of reporting
            // corruption.
            if let Some(level) = edit_max_level(&edit).filter(|&l| l >= num_levels) {
                return Err(Error::InvalidArgument(format!(
                    "the database has at least {} levels but num_levels is {num_levels}",
                    level + 1
                )));
            }
            vs.saw_format |= edit.format_version.is_some();
            vs.apply_in_memory(&edit)?;
            any = true;
        }
        // An edit is synced before its effects (deleting WALs and tables) happen, so only an
        // edit whose write was cut short may be dropped. A damaged last record that was
        // written whole is corruption: dropping it would silently roll the database back
        // (to tables that are gone, or past writes whose WAL was deleted).
        if let TailState::Truncated { valid_up_to, .. } = reader.tail() {
            if !reader.tail_is_torn_write() {
                return Err(Error::corruption(
                    name,
                    format!("damaged last record at offset {valid_up_to} (not a torn write)"),
                ));
            }
        }
        if !any || !vs.cfs.contains_key(&CfId::DEFAULT) || !vs.saw_format {
            return Err(Error::corruption(name, "manifest holds no database state"));
        }
        Ok(vs)
    }

    /// Allocates a file number.
    pub fn new_file_no(&mut self) -> FileNo {
        let n = self.next_file_no;
        self.next_file_no = n.next();
        n
    }

    /// Allocates a run id.
    pub fn new_run_id(&mut self) -> u64 {
        let n = self.next_run_id;
        self.next_run_id += 1;
        n
    }

    /// The current version of a column family.
    pub fn version(&self, cf: CfId) -> Option<Arc<CfVersion>> {
        self.cfs.get(&cf).map(|e| e.version.clone())
    }

    fn make_meta(&self, cf: CfId) -> impl Fn(&FileDesc) -> Arc<FileMeta> + '_ {
        let o = self.obsolete.clone();
        let v = self.vlogs.clone();
        move |d: &FileDesc| {
            Arc::new(
                FileMeta::new(d.clone(), Some(o.clone()))
                    .in_family(cf)
                    .with_vlogs(&v),
            )
        }
    }

    /// Computes the state after `edit` without touching the manifest.
    fn apply_in_memory(&mut self, edit: &VersionEdit) -> Result<()> {
        let next = self.preview(edit)?;
        self.install(edit, next);
        Ok(())
    }

    fn preview(&self, edit: &VersionEdit) -> Result<BTreeMap<CfId, CfEntry>> {
        for d in edit.added.iter().map(|a| &a.file) {
            let problem = d.problem().or_else(|| {
                (d.tier as usize >= self.env.num_tiers())
                    .then(|| format!("file {} in tier {} that does not exist", d.file_no, d.tier))
            });
            if let Some(p) = problem {
                return Err(Error::corruption("manifest", p));
            }
        }
        let mut cfs = self.cfs.clone();
        for CfAdded { id, name } in &edit.cf_added {
            let k = self.initial_k.clone();
            cfs.insert(
                *id,
                CfEntry {
                    name: name.clone(),
                    version: Arc::new(CfVersion::empty(|l| k(l), self.num_levels)),
                },
            );
        }
        for id in &edit.cf_dropped {
            cfs.remove(id);
        }
        let touched: std::collections::BTreeSet<CfId> = edit.places().map(|(cf, _)| cf).collect();
        for cf in touched {
            let Some(entry) = cfs.get_mut(&cf) else {
                if edit.cf_dropped.contains(&cf) {
                    continue;
                }
                return Err(Error::corruption(
                    "manifest",
                    format!("edit for unknown column family {cf}"),
                ));
            };
            entry.version = Arc::new(entry.version.apply(cf, edit, &self.make_meta(cf))?);
        }
        Ok(cfs)
    }

    fn install(&mut self, edit: &VersionEdit, cfs: BTreeMap<CfId, CfEntry>) {
        self.cfs = cfs;
        for CfAdded { id, name: _ } in &edit.cf_added {
            self.max_cf_id = self.max_cf_id.max(*id);
        }
        if let Some(n) = edit.next_file_no {
            self.next_file_no = self.next_file_no.max(n);
        }
        if let Some(n) = edit.last_seq {
            self.last_seq = self.last_seq.max(n);
        }
        if let Some(n) = edit.log_number {
            self.log_number = self.log_number.max(n);
        }
        if let Some(n) = edit.next_run_id {
            self.next_run_id = self.next_run_id.max(n);
        }
    }

    /// Writes `edit` durably to the manifest, then installs it. An error after the
    /// record's bytes may have reached the disk (a failed write or fsync of the record, a
    /// failed directory sync after `CURRENT` named a new manifest) stops the version set:
    /// the edit is neither installed nor undone, its new files are kept, and every later
    /// call fails with [`Error::Closed`] until the database is reopened and recovery reads
    /// what the disk holds.
    pub fn log_and_apply(&mut self, mut edit: VersionEdit) -> Result<()> {
        if !self.halt.manifest_writable() {
            let e = self.halt.error().map(|e| e.to_string()).unwrap_or_default();
            return Err(Error::Closed(format!("the database stopped: {e}")));
        }
        edit.next_file_no = Some(self.next_file_no.max(edit.next_file_no.unwrap_or_default()));
        edit.next_run_id = Some(self.next_run_id.max(edit.next_run_id.unwrap_or(0)));
        edit.last_seq = Some(self.last_seq.max(edit.last_seq.unwrap_or(0)));
        edit.log_number = Some(self.log_number.max(edit.log_number.unwrap_or_default()));
        let next = self.preview(&edit)?;
        self.sync_new_entries(&edit)?;
        let needs_new = self
            .manifest
            .as_ref()
            .is_none_or(|m| m.len() > MAX_MANIFEST_BYTES);
        let written = if needs_new {
            self.roll_manifest(&next, &edit)
        } else {
            self.append_record(&edit)
        };
        match written {
            Ok(()) => {
                self.install(&edit, next);
                Ok(())
            }
            Err(Outcome::NotWritten(e)) => Err(e),
            Err(Outcome::Unknown(e)) => {
                self.halt.stop(&e);
                self.limbo.push(next);
                Err(e)
            }
        }
    }

    /// Appends `edit` to the open manifest and syncs it.
    fn append_record(&mut self, edit: &VersionEdit) -> std::result::Result<(), Outcome> {
        let w = self.manifest.as_mut().expect("callers checked");
        let before = w.reached_file();
        let r = w.add_record(&edit.encode()).and_then(|_| w.sync());
        let untouched = before.is_some() && w.reached_file() == before;
        r.map_err(|e| {
            // None of the record reached the file (a full disk refused its write before
            // any byte): the manifest is as it was. Otherwise it may be half written, or
            // whole but unsynced. Either way, never append after it.
            self.manifest = None;
            if untouched {
                Outcome::NotWritten(e)
            } else {
                Outcome::Unknown(e)
            }
        })
    }

    /// Starts a new manifest describing `next` (with `edit`'s counters) and points
    /// `CURRENT` at it.
    fn roll_manifest(
        &mut self,
        next: &BTreeMap<CfId, CfEntry>,
        edit: &VersionEdit,
    ) -> std::result::Result<(), Outcome> {
        // Reserve the manifest's number before describing the state.
        let no = self.new_file_no();
        let mut snapshot = self.snapshot_edit(next);
        snapshot.next_file_no = Some(self.next_file_no);
        snapshot.next_run_id = edit.next_run_id;
        snapshot.last_seq = edit.last_seq;
        snapshot.log_number = edit.log_number;
        match self.write_new_manifest(no, &snapshot) {
            Ok(w) => {
                let old = self.manifest_no;
                self.manifest = Some(w);
                self.manifest_no = no;
                if old != FileNo::new(0) && old != no {
                    let _ = self.env.remove(&manifest_path(self.env.root(), old));
                }
                Ok(())
            }
            Err(e) => {
                // If CURRENT already names the new manifest (renamed, but the directory
                // sync failed), it may be what a restart reads: keep it, and the outcome
                // is unknown. Otherwise the old manifest still rules and lacks the edit.
                let root = self.env.root();
                let named = self
                    .env
                    .read_whole(&current_path(root), FileKind::Manifest)
                    .is_ok_and(|c| c == filenames::current_contents(no).as_bytes());
                if named {
                    return Err(Outcome::Unknown(e));
                }
                let _ = self.env.remove(&manifest_path(root, no));
                Err(Outcome::NotWritten(e))
            }
        }
    }

    /// Makes the directory entries of the files an edit adds durable before the edit
    /// names them: a table or value log synced but not yet in its directory can vanish in
    /// a power loss, leaving the manifest pointing at nothing.
    fn sync_new_entries(&self, edit: &VersionEdit) -> Result<()> {
        let mut tiers: Vec<u32> = edit.added.iter().map(|a| a.file.tier).collect();
        tiers.sort_unstable();
        tiers.dedup();
        for t in tiers {
            self.env.sync_dir(self.env.tier_dir(t as usize))?;
        }
        // Value logs live in the root directory.
        if edit.added.iter().any(|a| !a.file.vlog_refs.is_empty()) {
            self.env.sync_dir(self.env.root())?;
        }
        Ok(())
    }

    fn write_new_manifest(&self, no: FileNo, snapshot: &VersionEdit) -> Result<LogWriter> {
        let root = self.env.root().to_path_buf();
        let path = manifest_path(&root, no);
        let f = self.env.create(&path, FileKind::Manifest, 0, None)?;
        let mut w = LogWriter::new(f);
        w.add_record(&snapshot.encode())?;
        w.sync()?;
        self.env.write_atomic(
            &current_path(&root),
            FileKind::Manifest,
            filenames::current_contents(no).as_bytes(),
        )?;
        Ok(w)
    }

    /// An edit that rebuilds the whole current state from nothing (a checkpoint's
    /// manifest).
    pub(crate) fn state_edit(&self) -> VersionEdit {
        let mut e = self.snapshot_edit(&self.cfs);
        e.next_file_no = Some(self.next_file_no);
        e.next_run_id = Some(self.next_run_id);
        e.last_seq = Some(self.last_seq);
        e.log_number = Some(self.log_number);
        e
    }

    /// An edit that rebuilds `cfs` from nothing.
    fn snapshot_edit(&self, cfs: &BTreeMap<CfId, CfEntry>) -> VersionEdit {
        let mut e = VersionEdit {
            format_version: Some(super::edit::MANIFEST_FORMAT_VERSION),
            ..Default::default()
        };
        for (&id, entry) in cfs {
            e.cf_added.push(CfAdded {
                id,
                name: entry.name.clone(),
            });
            for (level, l) in entry.version.levels.iter().enumerate() {
                let level = level as u32;
                // Oldest run first: each new run id is inserted as the newest.
                for run in l.runs.iter().rev() {
                    for f in &run.files {
                        e.added.push(AddedFile {
                            cf: id,
                            level,
                            run: run.id,
                            file: f.desc.clone(),
                        });
                    }
                    if run.sealed {
                        e.sealed.push(SealedRun {
                            cf: id,
                            level,
                            run: run.id,
                        });
                    }
                }
                e.policies.push(LevelPolicy {
                    cf: id,
                    level,
                    state: l.policy,
                });
                if !l.compact_pointer.is_empty() {
                    e.compact_pointers.push(CompactPointer {
                        cf: id,
                        level,
                        key: l.compact_pointer.clone(),
                    });
                }
            }
        }
        // The largest id ever used, though its family was dropped: recorded as added and
        // dropped at once (a form every manifest reader knows), so that no later family
        // takes it and the dropped family's WAL records are never replayed into one.
        let live_max = cfs.keys().next_back().copied().unwrap_or(CfId::DEFAULT);
        if self.max_cf_id > live_max {
            e.cf_added.push(CfAdded {
                id: self.max_cf_id,
                name: "dropped".into(),
            });
            e.cf_dropped.push(self.max_cf_id);
        }
        e
    }

    /// Every live table file number with its tier.
    pub fn live_files(&self) -> std::collections::HashSet<FileNo> {
        self.cfs
            .values()
            .flat_map(|e| e.version.file_numbers().collect::<Vec<_>>())
            .collect()
    }

    /// The manifest file number in use.
    pub fn manifest_no(&self) -> FileNo {
        self.manifest_no
    }

    /// Default policy state for a level.
    pub fn default_policy(&self, level: usize) -> PolicyState {
        PolicyState {
            k: (self.initial_k)(level) as u32,
            pending_k: None,
            draining: false,
        }
    }
}

/// The deepest level an edit refers to.
fn edit_max_level(e: &VersionEdit) -> Option<usize> {
    e.places().map(|(_, level)| level as usize).max()
}

fn rename_corruption(e: Error, file: &str) -> Error {
    match e {
        Error::Corruption { detail, .. } => Error::corruption(file, detail),
        Error::UnsupportedVersion {
            found, supported, ..
        } => Error::UnsupportedVersion {
            file: file.into(),
            found,
            supported,
        },
        e => e,
    }
}
