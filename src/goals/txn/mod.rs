//! The mutation transaction (docs/state-formats.md#ge-2): lock → recovery
//! check → read plan → validate → write plan → append ledger → update index
//! → release. Every mutating subcommand runs inside one [`Locked`].

use std::time::{Duration, SystemTime};

use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Map, Value, json};

use super::Engine;
mod assess;
pub(crate) mod switch;

pub(crate) use assess::{
    Assessment, Consistency, assess, count_landed, count_landed_in, is_recovery_marker,
};

use super::binding::{self, Binding, NamedHead};
use super::error::{ErrorKind, GoalError};
use super::index::{self, Source, View};
use super::journal::{self, Head, LedgerKind};
use super::plan::{self, Plan, PlanRead};
use super::state;
use super::stop_view;
use crate::store::{self, Durability, LockError, LockOptions, MutationLock};

/// What to do when plan and ledger disagree beyond recovery, or were
/// tampered with (docs/threat-model.md#i7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMismatch {
    /// Fail with `ULW_LOOP_PLAN_TAMPERED` / `ULW_LOOP_LEDGER_TAMPERED`, else
    /// with `ULW_LOOP_PLAN_LEDGER_MISMATCH`.
    Refuse,
    /// Refuse tampering only (`repair`, `repair --accept-plan`).
    RefuseTampered,
    /// Continue (archiving and `repair --accept-tampered`).
    Ignore,
}

/// Whether a commit writes the plan.
#[derive(Debug)]
pub enum Write {
    /// Replace `goals.json` (revision R+1) and append.
    Plan(Box<Plan>),
    /// Append only, keeping revision R.
    AuditOnly {
        /// The unchanged plan revision.
        revision: u64,
    },
}

/// The result of a commit.
#[derive(Debug, Clone)]
pub struct Committed {
    /// Plan revision after the write.
    pub revision: u64,
    /// Every entry appended by the command (with `seq`/`prev`), in order.
    pub entries: Vec<Value>,
    /// Entries appended by the recovery check before the command ran.
    pub repaired: Vec<Value>,
    /// The ledger head after the write.
    pub head: Head,
    /// The plan as written, when one was.
    pub plan: Option<Plan>,
}

/// A held mutation lock with the ledger head it saw.
#[derive(Debug)]
pub struct Locked<'e> {
    engine: &'e Engine,
    /// The state directory.
    pub dir: Dir,
    lock: Option<MutationLock>,
    /// The ledger head (after recovery).
    pub view: View,
    torn: Option<Value>,
    /// The command's timestamp.
    pub now: String,
    /// Entries the recovery check appended.
    pub repaired: Vec<Value>,
    /// Whether the index had to be rebuilt.
    pub rebuilt_index: bool,
    /// An interrupted `create-goals --force` this lock finished or undid.
    pub switch_recovered: Option<Value>,
    /// A switch of this command is under way ([`Locked::archive`]).
    switching: bool,
    /// The binding of the plan read by the recovery check (docs/threat-model.md#i7).
    pub binding: Option<Binding>,
}

impl Engine {
    /// Acquires the mutation lock of the scope (creating the state directory),
    /// brings the index up to date and repairs a torn ledger tail.
    pub fn lock(&self, command: &str) -> Result<Locked<'_>, GoalError> {
        self.lock_with(command, false)
    }

    /// [`Engine::lock`], optionally forcing a full index rebuild.
    pub fn lock_with(&self, command: &str, rebuild_index: bool) -> Result<Locked<'_>, GoalError> {
        self.acquire(command, rebuild_index, self.lock_timeout())
    }

    /// [`Engine::lock`] with an explicit wait (the hook channel's
    /// `lock/hookTimeoutMs`).
    pub fn lock_timed(&self, command: &str, timeout: Duration) -> Result<Locked<'_>, GoalError> {
        self.acquire(command, false, timeout)
    }

    /// [`Engine::lock_timed`] in the state directory `dir` the caller has
    /// already opened ([`Engine::state_dir`]): the lock is taken in the
    /// directory that was checked, without walking its path again.
    pub(crate) fn lock_in(
        &self,
        dir: Dir,
        command: &str,
        timeout: Duration,
    ) -> Result<Locked<'_>, GoalError> {
        self.acquire_in(Some(dir), command, false, timeout)
    }

    fn acquire(
        &self,
        command: &str,
        rebuild_index: bool,
        timeout: Duration,
    ) -> Result<Locked<'_>, GoalError> {
        self.acquire_in(None, command, rebuild_index, timeout)
    }

    fn acquire_in(
        &self,
        dir: Option<Dir>,
        command: &str,
        rebuild_index: bool,
        timeout: Duration,
    ) -> Result<Locked<'_>, GoalError> {
        let dir = match dir {
            Some(d) => d,
            None => state::open_chain(self.root(), &self.paths.dir, true)?.expect("created"),
        };
        let lock_path = self.paths.file(state::LOCK);
        let opts = LockOptions {
            timeout,
            command: command.to_owned(),
        };
        let lock = MutationLock::acquire(&dir, state::LOCK, &opts).map_err(|e| match e {
            LockError::Timeout { waited_ms, holder } => GoalError::new(
                ErrorKind::LockTimeout {
                    lock_path: lock_path.clone(),
                    waited_ms,
                    holder,
                },
                format!(
                    "Timed out after {waited_ms} ms waiting for {lock_path}; another {} command holds it. Retry.",
                    self.profile.display_name
                ),
            ),
            LockError::Unsafe { what } => GoalError::unsafe_lock(&lock_path, what),
            LockError::Io(e) => GoalError::io(&lock_path, "lock", &e),
        })?;
        let (now_t, now) = self.now();
        remove_stale_temps(&dir, now_t);
        let switch_recovered = switch::recover(&dir, &self.paths, &self.profile.limits, &now)?;
        let max_record = self.profile.limits.max_ledger_record_bytes;
        let (view, rebuilt) = index::refresh(&dir, &self.paths, max_record, rebuild_index)?;
        if rebuilt {
            super::diagnostics::index_rebuilt(self, command, &view);
        }
        let mut locked = Locked {
            engine: self,
            dir,
            lock: Some(lock),
            view,
            torn: None,
            now,
            repaired: Vec::new(),
            rebuilt_index: rebuilt,
            switch_recovered,
            switching: false,
            binding: None,
        };
        locked.repair_torn_tail(now_t)?;
        Ok(locked)
    }
}

fn remove_stale_temps(dir: &Dir, now: SystemTime) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    let now_ms = crate::time::epoch_ms(now);
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with('.') && name.ends_with(".tmp")) {
            continue;
        }
        let parts: Vec<&str> = name.trim_end_matches(".tmp").rsplit('.').collect();
        let Some(ms) = parts.get(1).and_then(|p| p.parse::<u64>().ok()) else {
            continue;
        };
        if now_ms.saturating_sub(ms) > 3_600_000 {
            let _ = dir.remove_file(name);
        }
    }
}

impl<'e> Locked<'e> {
    fn repair_torn_tail(&mut self, now: SystemTime) -> Result<(), GoalError> {
        if self.view.trailing.is_empty() {
            return Ok(());
        }
        let display = self.engine.paths.ledger();
        let trailing = std::mem::take(&mut self.view.trailing);
        let parsed: Option<Value> = serde_json::from_slice(&trailing).ok();
        if parsed.as_ref().is_some_and(Value::is_object) {
            let (mut f, created) = store::open_append(&self.dir, state::LEDGER)
                .map_err(|e| GoalError::io(&display, "open", &e))?;
            store::append_synced(&self.dir, &mut f, created, b"\n")
                .map_err(|e| GoalError::io(&display, "append to", &e))?;
        } else {
            let name = format!(".ledger-torn-{}", crate::time::epoch_ms(now));
            store::atomic_replace(&self.dir, &name, &trailing, Durability::Synced)
                .map_err(|e| GoalError::io(&self.engine.paths.file(&name), "write", &e))?;
            let mut opts = OpenOptions::new();
            opts.write(true);
            let f = self
                .dir
                .open_with(state::LEDGER, &opts)
                .map_err(|e| GoalError::io(&display, "open", &e))?;
            f.set_len(self.view.head.len)
                .and_then(|()| f.sync_all())
                .map_err(|e| GoalError::io(&display, "truncate", &e))?;
            self.torn = Some(json!({
                "tornBytes": trailing.len(),
                "tornSha256": crate::digest::sha256_hex(&trailing),
                "savedAs": self.engine.paths.file(&name),
            }));
        }
        let max_record = self.engine.profile.limits.max_ledger_record_bytes;
        let (view, _) = index::refresh(&self.dir, &self.engine.paths, max_record, false)?;
        self.view = view;
        Ok(())
    }

    /// Rebuilds the ledger index, `.ledger.keys` and `.ledger.keyhash` from
    /// the ledger (a cache found inconsistent while the lock is held); a
    /// `LEDGER_INDEX_REBUILT` diagnostic names `command`.
    pub fn rebuild_index(&mut self, command: &str) -> Result<(), GoalError> {
        let max_record = self.engine.profile.limits.max_ledger_record_bytes;
        let (view, rebuilt) = index::refresh(&self.dir, &self.engine.paths, max_record, true)?;
        if rebuilt {
            super::diagnostics::index_rebuilt(self.engine, command, &view);
        }
        self.view = view;
        self.rebuilt_index |= rebuilt;
        Ok(())
    }

    /// The engine.
    pub fn engine(&self) -> &'e Engine {
        self.engine
    }

    /// Whether a ledger file exists.
    pub fn ledger_exists(&self) -> bool {
        self.view.source != Source::Missing
    }

    /// Reads the plan (`ULW_LOOP_PLAN_MISSING` when there is none).
    pub fn read_plan(&self) -> Result<Plan, GoalError> {
        plan::read(
            Some(&self.dir),
            &self.engine.paths,
            &self.engine.profile,
            &self.now,
        )
    }

    /// [`Locked::read_plan`] for a mutation that changes only the goals
    /// whose ids are in `reach` (and any goal it reaches through
    /// [`Plan::goal_mut`]): when the ledger vouches for the hooks' view and
    /// the cut-down body it names is the plan's (the conditions under which
    /// `status` reads it), the plan is that body with those goals read whole
    /// from the file ([`Plan::for_mutation`]); otherwise it is read whole.
    pub fn read_plan_reaching(&self, reach: &[&str]) -> Result<(Plan, PlanRead), GoalError> {
        let (paths, profile) = (&self.engine.paths, &self.engine.profile);
        let bytes = plan::read_bytes(Some(&self.dir), paths, profile)?;
        // While an interrupted create-goals --force is pending, the live
        // ledger is the renamed one, which does not vouch for the view.
        let live =
            switch::ledger_name(&self.dir, paths, profile.limits.max_plan_bytes) == state::LEDGER;
        let markers = &profile.criteria.seeded_markers;
        let tried = match live
            .then(|| stop_view::read_vouched(&self.dir, paths))
            .flatten()
        {
            Some(v) => Plan::for_mutation(
                bytes,
                || {
                    stop_view::status::read(
                        &self.dir,
                        paths,
                        &v.status_sha256,
                        markers,
                        profile.limits.max_plan_bytes,
                    )
                },
                &v.plan_sha256,
                reach,
                (markers, stop_view::status::cut_goal),
                paths,
                profile,
                &self.now,
            ),
            None => Err(bytes),
        };
        match tried {
            Ok(plan) => Ok((plan, PlanRead::StatusView)),
            Err(bytes) => Ok((
                Plan::decode_file(bytes, paths, profile, &self.now)?,
                PlanRead::Whole,
            )),
        }
    }

    /// Whether `goals.json` exists.
    pub fn plan_exists(&self) -> Result<bool, GoalError> {
        Ok(state::open_file(&self.dir, state::GOALS, &self.engine.paths.goals())?.is_some())
    }

    /// The recovery check (docs/state-formats.md#ge-2): completes the ledger from
    /// `lastMutation` when possible and audits a torn-tail repair. Checks
    /// the plan's binding to its ledger first (docs/threat-model.md#i7): a
    /// tampered plan or ledger is refused before anything is appended,
    /// unless `on_mismatch` is [`OnMismatch::Ignore`].
    pub fn reconcile(
        &mut self,
        plan: Option<&Plan>,
        on_mismatch: OnMismatch,
    ) -> Result<Assessment, GoalError> {
        let head = self.view.head.clone();
        let dir = &self.dir;
        let a = assess(plan, &head, false, &mut |rev, from, want| {
            count_landed(dir, &head, rev, from, want)
        });
        let pending = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
        self.binding = match plan {
            Some(p) => Some(self.judge(p, pending)?),
            None => None,
        };
        if let Some(b) = &self.binding
            && b.tampered()
            && on_mismatch != OnMismatch::Ignore
        {
            return Err(tampered_error(self.engine, b));
        }
        // Entries appended under a bound, untampered plan record its body.
        let stamp = self
            .binding
            .as_ref()
            .filter(|b| b.bound() && !b.tampered())
            .map(|b| b.body_sha256.clone());
        let torn = self.torn.take();
        let rp = a.plan_revision;
        match a.consistency {
            Consistency::Recoverable => {
                let reason = if a.ledger_revision < rp {
                    "ledger_behind_plan"
                } else {
                    "append_cut_short"
                };
                let mut repair = json!({"reason": reason, "recoveredCount": a.missing.len()});
                if let Some(t) = &torn {
                    merge(&mut repair, t);
                }
                let mut entries = vec![self.repaired_entry(repair, rp)];
                for mut e in a.missing.iter().cloned() {
                    e.insert("recovered".into(), Value::Bool(true));
                    entries.push(e);
                }
                let mut named = None;
                if let Some(d) = &stamp {
                    stamp_plan_sha(&mut entries, d);
                    // Plan first: name the head these records will make.
                    let h = next_head(&self.view.head, &entries);
                    self.rebind_recovering(&h, &entries[0])?;
                    named = Some(h);
                }
                self.append_now(&entries)?;
                if let Some(h) = named {
                    self.rebind_if_moved(&h)?;
                }
            }
            Consistency::Ok | Consistency::Mismatch => {
                if let Some(t) = torn {
                    let mut repair = json!({"reason": "torn_tail", "recoveredCount": 0});
                    merge(&mut repair, &t);
                    let mut e = vec![self.repaired_entry(repair, a.ledger_revision)];
                    if let Some(d) = &stamp {
                        stamp_plan_sha(&mut e, d);
                    }
                    self.append_now(&e)?;
                }
                if a.consistency == Consistency::Mismatch && on_mismatch == OnMismatch::Refuse {
                    return Err(self.mismatch_error(&a));
                }
            }
        }
        Ok(a)
    }

    /// The binding of `plan` to this ledger (docs/threat-model.md#i7), from the
    /// newest records.
    fn judge(&self, plan: &Plan, pending: bool) -> Result<Binding, GoalError> {
        judge_in(
            &self.dir,
            state::LEDGER,
            &self.engine.paths,
            &self.view.head,
            plan,
            pending,
        )
    }

    /// Rewrites only `lastMutation.ledgerHead` of `goals.json` as it is on
    /// disk, to `new` (its body, and so its digest, unchanged). Given the
    /// head the file names now (`old`), a file the engine laid out
    /// (`lastMutation` its last member, `ledgerHead` the last of that, naming
    /// `old`) keeps every byte before that member and gets only a new end;
    /// any other file is parsed and written again.
    fn rebind(&self, old: Option<&NamedHead>, new: &NamedHead) -> Result<(), GoalError> {
        self.rebind_with(old, new, None)
    }

    /// [`Locked::rebind`] by the recovery check, which also keeps in
    /// `lastMutation.recovery` the marker it puts before the recovered
    /// entries, so the head it names can be told from a hand-written one
    /// until they land (docs/threat-model.md#i7).
    fn rebind_recovering(
        &self,
        new: &NamedHead,
        marker: &Map<String, Value>,
    ) -> Result<(), GoalError> {
        self.rebind_with(None, new, Some(marker))
    }

    fn rebind_with(
        &self,
        old: Option<&NamedHead>,
        new: &NamedHead,
        marker: Option<&Map<String, Value>>,
    ) -> Result<(), GoalError> {
        let paths = &self.engine.paths;
        let max = self.engine.profile.limits.max_plan_bytes;
        let Some(state::ReadOutcome::Bytes(bytes)) =
            state::read_file(&self.dir, state::GOALS, &paths.goals(), max)?
        else {
            return Ok(());
        };
        if let Some(prefix) = old.and_then(|o| binding::ledger_head_prefix(&bytes, o)) {
            let end = binding::ledger_head_end(new);
            return stop_view::keeping_view(&self.dir, || {
                self.write_pieces(state::GOALS, &[prefix, end.as_bytes()])
            });
        }
        let Ok(Value::Object(mut doc)) = crate::json::parse_strict(&bytes) else {
            return Ok(());
        };
        let Some(lm) = doc.get_mut("lastMutation").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        lm.insert(binding::LEDGER_HEAD.into(), new.to_json());
        if let Some(m) = marker {
            lm.insert(binding::RECOVERY.into(), Value::Object(m.clone()));
        }
        let mut out = serde_json::to_vec_pretty(&doc).expect("JSON values serialise");
        out.push(b'\n');
        stop_view::keeping_view(&self.dir, || self.write_file(state::GOALS, &out))
    }

    /// How far the ledger's end may run ahead of the head the plan names
    /// before an append that leaves the plan unchanged names a newer one:
    /// [`REBIND_AFTER`], or a quarter of the plan's size for a larger plan.
    /// Each call walks half the distance on average and a rebind (a synced
    /// write of the whole plan) comes once per distance; the distance that
    /// minimises their sum grows with the square root of the plan's size and
    /// of the bytes a call appends (an annotation's snapshots list every
    /// goal), which these two bounds follow from 5 to 2,000 goals.
    fn rebind_distance(&self) -> u64 {
        let plan = self
            .dir
            .symlink_metadata(state::GOALS)
            .map_or(0, |m| m.len());
        REBIND_AFTER.max(plan / 4)
    }

    /// After an append whose head was named before writing: records a Node
    /// tool appended meanwhile (absorbed by the append) change the chain, so
    /// the plan names the head actually written.
    fn rebind_if_moved(&self, named: &NamedHead) -> Result<(), GoalError> {
        let now = &self.view.head;
        match &now.last_hash {
            Some(h) if *h != named.sha256 => self.rebind(
                None,
                &NamedHead {
                    seq: now.last_seq,
                    sha256: h.clone(),
                },
            ),
            _ => Ok(()),
        }
    }

    /// `ULW_LOOP_PLAN_LEDGER_MISMATCH` for an assessment.
    pub fn mismatch_error(&self, a: &Assessment) -> GoalError {
        let p = &self.engine.profile;
        let remedy = format!(
            "{} repair{} --accept-plan --rationale \"<why the plan is right>\"",
            p.command_prefix,
            self.engine
                .paths
                .sid
                .as_ref()
                .map(|s| format!(" {} {s}", p.session.flag))
                .unwrap_or_default()
        );
        GoalError::new(
            ErrorKind::PlanLedgerMismatch {
                plan_revision: a.plan_revision,
                ledger_revision: a.ledger_revision,
                last_seq: a.last_seq,
                remedy: remedy.clone(),
            },
            format!(
                "{} is at revision {} but {} ends at revision {} (seq {}); the difference cannot be recovered automatically. Inspect both, then run `{remedy}`.",
                self.engine.paths.goals(),
                a.plan_revision,
                self.engine.paths.ledger(),
                a.ledger_revision,
                a.last_seq
            ),
        )
    }

    fn repaired_entry(&self, repair: Value, revision: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("at".into(), json!(self.now));
        m.insert("kind".into(), json!(LedgerKind::LedgerRepaired.as_str()));
        m.insert(
            "message".into(),
            json!("Ledger repaired by the recovery check."),
        );
        m.insert("repair".into(), repair);
        m.insert("revision".into(), json!(revision));
        m
    }

    fn append_now(&mut self, entries: &[Map<String, Value>]) -> Result<(), GoalError> {
        self.engine.barrier();
        let mut entries = entries.to_vec();
        alias_keys(&self.engine.profile, &mut entries);
        let max = self.engine.profile.limits.max_ledger_record_bytes;
        let a = journal::append(
            &self.dir,
            &self.engine.paths.ledger(),
            &self.view.head,
            entries,
            max,
        )?;
        self.view.head = a.head;
        self.view.source = Source::Index;
        self.view.keys_bytes =
            index::append_keys(&self.dir, &self.engine.paths, self.view.keys_bytes, &a.keys)?;
        index::write(
            &self.dir,
            &self.engine.paths,
            &self.view.head,
            self.view.keys_bytes,
        )?;
        self.repaired.extend(a.written);
        Ok(())
    }

    /// The seq the entry at `index` of the command's entries will get, given
    /// the plan the command will write (prefix entries come first).
    pub fn seq_of(&self, plan: &Plan, index: usize) -> u64 {
        let prefix = plan.pending.len();
        self.view.head.last_seq + 1 + (prefix + index) as u64
    }

    /// Archives the current run into `.archive/<stamp>[-n]/` and moves its
    /// ledger aside (docs/state-formats.md#ge-2 steps 2–3, made crash-safe by
    /// [`switch`]: steps 1–3 of its protocol). The next [`Locked::commit`]
    /// writes the new run and ends the switch. Returns the state-relative
    /// archive directory (`.archive/<name>`) and the head of the archived
    /// ledger (`None` when the replaced run had no ledger).
    pub fn archive(
        &mut self,
        old_revision: u64,
        stamp: &str,
    ) -> Result<(String, Option<Head>), GoalError> {
        let paths = &self.engine.paths;
        let base = state::open_chain(&self.dir, state::ARCHIVE, true)?.expect("created");
        let mut name = stamp.to_owned();
        let mut n = 1;
        while base.symlink_metadata(&name).is_ok() {
            name = format!("{stamp}-{n}");
            n += 1;
        }
        let rel = switch::archive_rel(&name);
        let display = paths.file(&rel);
        let had_brief = self.dir.exists(state::BRIEF);
        switch::begin(&self.dir, paths, &name, had_brief)?;
        base.create_dir(&name)
            .map_err(|e| GoalError::io(&display, "create", &e))?;
        let target = state::open_chain(&base, &name, false)?.ok_or_else(|| {
            GoalError::io(
                &display,
                "open",
                &std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        for file in [state::GOALS, state::BRIEF] {
            store::copy_file(&self.dir, file, &target, file)
                .map_err(|e| GoalError::io(&paths.file(file), "archive", &e))?;
        }
        let mut previous_head = None;
        if self.ledger_exists() {
            let archived_ledger = format!("{display}/{}", state::LEDGER);
            store::copy_file(&self.dir, state::LEDGER, &target, state::LEDGER)
                .map_err(|e| GoalError::io(&paths.ledger(), "archive", &e))?;
            let mut e = Map::new();
            e.insert("at".into(), json!(self.now));
            e.insert("kind".into(), json!(LedgerKind::PlanArchived.as_str()));
            e.insert(
                "message".into(),
                json!(format!(
                    "Run archived to {display} before create-goals --force."
                )),
            );
            e.insert("archive".into(), json!(display));
            e.insert("revision".into(), json!(old_revision));
            let mut entries = vec![e];
            alias_keys(&self.engine.profile, &mut entries);
            if let Some(b) = self.binding.as_ref().filter(|b| b.bound() && !b.tampered()) {
                stamp_plan_sha(&mut entries, &b.body_sha256);
            }
            let max = self.engine.profile.limits.max_ledger_record_bytes;
            let a = journal::append(&target, &archived_ledger, &self.view.head, entries, max)?;
            previous_head = Some(a.head);
        }
        store::sync_dir(&target)
            .and_then(|()| store::sync_dir(&base))
            .map_err(|e| GoalError::io(&display, "sync", &e))?;
        // Step 3: the old ledger steps aside; readers find it by the marker.
        match self
            .dir
            .rename(state::LEDGER, &self.dir, state::SWITCH_LEDGER)
        {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(GoalError::io(&paths.ledger(), "archive", &e)),
        }
        index::remove_quietly(&self.dir, state::INDEX);
        index::remove_quietly(&self.dir, state::KEYS);
        index::remove_quietly(&self.dir, super::keyhash::FILE);
        store::sync_dir(&self.dir).map_err(|e| GoalError::io(&paths.dir, "sync", &e))?;
        self.switching = true;
        self.view = View {
            head: Head::default(),
            trailing: Vec::new(),
            file_len: 0,
            source: Source::Missing,
            new_keys: Vec::new(),
            keys_bytes: 0,
        };
        Ok((rel, previous_head))
    }

    /// Writes a file of the state directory atomically with fsync.
    pub fn write_file(&self, name: &str, bytes: &[u8]) -> Result<(), GoalError> {
        self.write_pieces(name, &[bytes])
    }

    /// [`Locked::write_file`] with the content in pieces.
    fn write_pieces(&self, name: &str, pieces: &[&[u8]]) -> Result<(), GoalError> {
        self.engine.barrier();
        store::atomic_replace_pieces(&self.dir, name, pieces, Durability::Synced)
            .map_err(|e| GoalError::io(&self.engine.paths.file(name), "write", &e))
    }

    /// Runs steps 4–7 of the write order and releases the lock.
    pub fn commit(
        mut self,
        write: Write,
        entries: Vec<Map<String, Value>>,
    ) -> Result<Committed, GoalError> {
        self.engine.barrier();
        let mut all = Vec::new();
        let (revision, written_plan, named, body, chain) = match write {
            Write::Plan(mut plan) => {
                plan.refuse_unreadable(&self.engine.paths)?;
                all.append(&mut plan.pending);
                all.extend(entries);
                alias_keys(&self.engine.profile, &mut all);
                let rev = plan.revision() + 1;
                stamp_revision(&mut all, rev);
                for (k, v) in &self.engine.profile.plan_markers {
                    if !plan.doc().contains_key(k) {
                        plan.set(k, v.clone());
                    }
                }
                plan.set("revision", json!(rev));
                // docs/threat-model.md#i7: every entry records the body it wrote; the plan names
                // the head its entries will make (plan first, then append).
                // The body is serialised once, for its digest and the file.
                let body = plan::BodyText::of_plan(&plan);
                // The Stop hook's view of this body, vouched for by the same
                // entries (docs/state-formats.md#stop-view); a long body is
                // hashed while the view is computed.
                let (d, view) =
                    stop_view::Prepared::with_digest(&plan, &self.engine.profile, &|| {
                        body.sha256()
                    });
                stamp_plan_sha(&mut all, &d);
                stamp_view_sha(&mut all, &view.sha256);
                // The entries are chained once: the records' sizes are
                // checked before anything is written, the plan names the
                // head they make, and the append writes these bytes.
                let chain = journal::Chain::after(&self.view.head, &all);
                chain.check_sizes(self.engine.profile.limits.max_ledger_record_bytes)?;
                let head = named_last(&chain);
                plan.set(
                    "lastMutation",
                    json!({
                        "revision": rev,
                        "fromSeq": self.view.head.last_seq + 1,
                        "entries": all.iter().cloned().map(Value::Object).collect::<Vec<_>>(),
                        binding::LEDGER_HEAD: head.to_json(),
                    }),
                );
                let file = body.file(plan.doc());
                self.write_pieces(state::GOALS, &file.pieces())?;
                let mut plan = *plan;
                plan.set_encoded(file);
                (rev, Some(plan), Some(head), Some((body, view)), Some(chain))
            }
            Write::AuditOnly { revision } => {
                all.extend(entries);
                alias_keys(&self.engine.profile, &mut all);
                stamp_revision(&mut all, revision);
                if let Some(b) = self.binding.as_ref().filter(|b| b.bound() && !b.tampered()) {
                    stamp_plan_sha(&mut all, &b.body_sha256);
                    // The plan is unchanged, so is its Stop view: these
                    // entries vouch for it too, and the hook's walk back to
                    // a vouching record ends at the newest one.
                    if let Some(v) = &b.view_sha256 {
                        stamp_view_sha(&mut all, v);
                    }
                }
                (revision, None, None, None, None)
            }
        };
        let max = self.engine.profile.limits.max_ledger_record_bytes;
        let a = journal::append_chained(
            &self.dir,
            &self.engine.paths.ledger(),
            &self.view.head,
            all,
            chain,
            max,
        )?;
        let keys_bytes =
            index::append_keys(&self.dir, &self.engine.paths, self.view.keys_bytes, &a.keys)?;
        index::write(&self.dir, &self.engine.paths, &a.head, keys_bytes)?;
        if named.is_none()
            && let Some(b) = &self.binding
            && b.state == binding::State::Bound
            && !b.cut
            && let (Some(old), Some(h)) = (&b.named, &a.head.last_hash)
            && b.walked + a.head.len.saturating_sub(self.view.head.len) > self.rebind_distance()
        {
            // Appends that leave the plan unchanged (annotations, replays,
            // rejected steering) pile up after the head the plan names, and
            // every binding check walks back over them: name the newest
            // record instead. Its entries carry this body's digest, so the
            // plan stays bound; a crash before this write leaves the older
            // head named, which is bound too. The append has landed, so a
            // failed rewrite only leaves the walk longer.
            let new = NamedHead {
                seq: a.head.last_seq,
                sha256: h.clone(),
            };
            let _ = self.rebind(Some(old), &new);
        }
        let mut written_plan = written_plan;
        if let (Some(named), Some(plan), Some((body, _)), Some(h)) =
            (&named, written_plan.as_mut(), &body, &a.head.last_hash)
            && *h != named.sha256
        {
            // A Node tool appended meanwhile (absorbed by the append): name
            // the head actually written.
            let actual = NamedHead {
                seq: a.head.last_seq,
                sha256: h.clone(),
            };
            if let Some(Value::Object(lm)) = plan.doc().get("lastMutation").cloned() {
                let mut lm = lm;
                lm.insert(binding::LEDGER_HEAD.into(), actual.to_json());
                plan.set("lastMutation", Value::Object(lm));
            }
            let file = body.file(plan.doc());
            self.write_pieces(state::GOALS, &file.pieces())?;
            plan.set_encoded(file);
        }
        if let Some((_, view)) = &body {
            view.write(&self.dir);
        }
        if self.switching {
            switch::finish(&self.dir, &self.engine.paths)?;
        }
        if let Some(lock) = self.lock.take() {
            lock.release()
                .map_err(|e| GoalError::io(&self.engine.paths.file(state::LOCK), "release", &e))?;
        }
        Ok(Committed {
            revision,
            entries: a.written,
            repaired: std::mem::take(&mut self.repaired),
            head: a.head,
            plan: written_plan,
        })
    }

    /// Releases the lock without writing (commands whose outcome needs no write).
    pub fn finish(mut self) -> Result<Vec<Value>, GoalError> {
        if let Some(lock) = self.lock.take() {
            lock.release()
                .map_err(|e| GoalError::io(&self.engine.paths.file(state::LOCK), "release", &e))?;
        }
        Ok(std::mem::take(&mut self.repaired))
    }
}

/// The head the chained records of `entries` will make after `head`.
pub(super) fn next_head(head: &Head, entries: &[Map<String, Value>]) -> NamedHead {
    named_last(&journal::Chain::after(head, entries))
}

/// The head the last record of `chain` makes.
fn named_last(chain: &journal::Chain) -> NamedHead {
    let last = chain.last().expect("entries to append");
    NamedHead {
        seq: last.seq,
        sha256: last.hash.clone(),
    }
}

/// `planSha256` on every entry (docs/threat-model.md#i7).
fn stamp_plan_sha(entries: &mut [Map<String, Value>], d: &str) {
    for e in entries {
        e.insert(binding::PLAN_SHA256.into(), json!(d));
    }
}

/// `summarySha256` on every entry (docs/state-formats.md#stop-view).
fn stamp_view_sha(entries: &mut [Map<String, Value>], d: &str) {
    for e in entries {
        e.insert(binding::SUMMARY_SHA256.into(), json!(d));
    }
}

/// The binding of `plan` to the ledger file `ledger_file` of `dir` (the
/// ledger, or the old run's ledger set aside by an interrupted switch;
/// `head`: its head as the index or a scan saw it).
pub(crate) fn judge_in(
    dir: &Dir,
    ledger_file: &str,
    paths: &state::StatePaths,
    head: &Head,
    plan: &Plan,
    pending: bool,
) -> Result<Binding, GoalError> {
    let named = binding::named_head(plan.doc());
    let display = paths.file(ledger_file);
    let tail = if named.is_none() && head.last_seq == 0 {
        binding::Tail::default()
    } else {
        match state::open_file(dir, ledger_file, &display)? {
            Some((mut f, meta)) => binding::read_tail_file(
                &mut f,
                meta.len(),
                named.as_ref().map(|h| h.seq),
                usize::MAX,
                u64::MAX,
            )
            .map_err(|e| GoalError::io(&display, "read", &e))?,
            None => binding::Tail::default(),
        }
    };
    Ok(binding::judge_plan(plan, &tail, pending))
}

/// Past this many bytes between the head a plan names and the ledger's end,
/// an append that leaves the plan unchanged also names the new head in the
/// plan ([`Locked::commit`]), so the walks back to it stay short.
pub(crate) const REBIND_AFTER: u64 = 32 * 1024;

/// The binding of a plan read outside the lock, for a caller with a tight
/// budget (the hooks): no index and no scan. Only the newest records are
/// read — back to the head the plan names, or, for a plan that names none,
/// to the last chained record, within [`binding::HOOK_WALK_BYTES`] — and the
/// recovery check's comparison runs on the head they show.
pub(crate) fn judge_tail(
    dir: &Dir,
    paths: &state::StatePaths,
    plan: &Plan,
    seen_engine: &dyn Fn() -> bool,
) -> Result<Binding, GoalError> {
    let named = binding::named_head(plan.doc());
    let display = paths.ledger();
    let Some((mut f, meta)) = state::open_file(dir, state::LEDGER, &display)? else {
        let a = assess(Some(plan), &Head::default(), false, &mut |_, _, _| 0);
        let pending = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
        return Ok(binding::judge_plan_verdict(
            plan,
            &binding::Tail::default(),
            pending,
        ));
    };
    let io = |e: std::io::Error| GoalError::io(&display, "read", &e);
    let read = |f: &mut cap_std::fs::File, limit: usize| {
        binding::read_tail_file(
            f,
            meta.len(),
            named.as_ref().map(|h| h.seq),
            limit,
            binding::HOOK_WALK_BYTES,
        )
        .map_err(io)
    };
    // A plan that names no head is judged by the ledger's newest record
    // when that is the engine's. When it is not, the ledger is a Node
    // tool's (legacy, one record read), or the engine's with lines appended
    // after its records, which may hide a binding stripped from the plan:
    // then the walk goes back to the last chained record.
    let mut hidden = None;
    let mut tail = read(&mut f, if named.is_some() { usize::MAX } else { 1 })?;
    if named.is_none() && tail.end.is_some() && tail.records.iter().all(|t| t.seq.is_none()) {
        // A ledger the engine created starts with its chained
        // `plan_created`; a first line too long to read is not a Node
        // tool's either.
        let first = journal::record_at(&mut f, 0, FIRST_RECORD_BYTES).map_err(io)?;
        hidden = match first {
            Some(line) if binding::TailRecord::fields(&line).seq.is_none() => None,
            _ => Some("the ledger's first record is the engine's"),
        };
        if hidden.is_none() && seen_engine() {
            hidden = Some("this machine saw the engine's records in this ledger");
        }
        // The first read already covered the budget when it was cut.
        if hidden.is_some() && !tail.cut {
            tail = read(&mut f, usize::MAX)?;
        }
    }
    let Some(len) = tail.end else {
        // No complete record within the budget: nothing to assess.
        let b = binding::judge_plan_verdict(plan, &tail, false);
        return Ok(if b.state == binding::State::Legacy {
            b.hidden_binding("its newest line is longer than the budget", plan)
        } else {
            b
        });
    };
    let mut head = Head {
        len,
        records: tail.records.len() as u64,
        ..Head::default()
    };
    if let Some(t) = tail.records.iter().find(|t| t.seq.is_some()) {
        head.last_seq = t.seq.unwrap_or(0);
        head.last_revision = t.revision.unwrap_or(0);
    }
    let a = assess(Some(plan), &head, false, &mut |rev, from, want| {
        count_landed_in(
            dir,
            state::LEDGER,
            &head,
            rev,
            from,
            want,
            binding::HOOK_WALK_BYTES,
        )
    });
    let pending = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
    let b = binding::judge_plan_verdict(plan, &tail, pending);
    Ok(match hidden {
        // No chained record within the budget of a ledger the engine wrote:
        // the binding is hidden, not absent.
        Some(why) if b.state == binding::State::Legacy && b.cut => b.hidden_binding(why, plan),
        _ => b,
    })
}

/// The most a hook reads of a ledger's first record.
const FIRST_RECORD_BYTES: u64 = 64 * 1024;

/// `ULW_LOOP_PLAN_TAMPERED` (or `…_LEDGER_TAMPERED` when only the ledger
/// side failed) with the file and the fix.
pub(crate) fn tampered_error(engine: &Engine, b: &Binding) -> GoalError {
    let p = &engine.profile;
    let scope = engine
        .paths
        .sid
        .as_ref()
        .map(|s| format!(" {} {s}", p.session.flag))
        .unwrap_or_default();
    let remedy = format!(
        "{} repair{scope} --accept-tampered --rationale \"<why this plan is right>\"",
        p.command_prefix
    );
    let ledger = b.plan_tampered.is_none();
    let (code, file, reason) = if ledger {
        (
            "LEDGER_TAMPERED",
            engine.paths.ledger(),
            b.ledger_tampered.clone().unwrap_or_default(),
        )
    } else {
        (
            "PLAN_TAMPERED",
            engine.paths.goals(),
            b.plan_tampered.clone().unwrap_or_default(),
        )
    };
    let also = match (&b.plan_tampered, &b.ledger_tampered) {
        (Some(_), Some(l)) => format!(" LEDGER_TAMPERED: {l}."),
        _ => String::new(),
    };
    GoalError::new(
        ErrorKind::Tampered {
            ledger,
            goals_path: engine.paths.goals(),
            ledger_path: engine.paths.ledger(),
            reason: reason.clone(),
            binding: b.to_json(),
            remedy: remedy.clone(),
        },
        format!(
            "{code}: {file}: {reason}.{also} The {} engine will not change a plan its ledger does not vouch for. Restore {} and {} from version control, or, if this plan is right, run `{remedy}` (recorded as tamper_acknowledged and reported by verify-evidence).",
            p.display_name,
            engine.paths.goals(),
            engine.paths.ledger(),
        ),
    )
}

fn stamp_revision(entries: &mut [Map<String, Value>], rev: u64) {
    for e in entries {
        if !e.contains_key("revision") {
            e.insert("revision".into(), json!(rev));
        }
    }
}

fn merge(target: &mut Value, extra: &Value) {
    if let (Some(t), Some(e)) = (target.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            t.insert(k.clone(), v.clone());
        }
    }
}

/// Copies each entry's keys named in the profile's `compat/ledgerAliases` to
/// their alias (`at` → `ts`, `kind` → `event`), so readers of the foreign
/// vocabulary find every entry; an entry that already has the alias keeps it.
fn alias_keys(profile: &crate::goals::profile::Profile, entries: &mut [Map<String, Value>]) {
    for e in entries {
        for (from, to) in &profile.compat.ledger_aliases {
            if !e.contains_key(to)
                && let Some(v) = e.get(from).cloned()
            {
                e.insert(to.clone(), v);
            }
        }
    }
}
