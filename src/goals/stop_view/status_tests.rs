//! `status`'s cut-down plan ([`super::status`]) against the same plan read
//! whole: for the bundled plans and plans of every shape, under each
//! profile, the plan built from the cut-down body and the plan file's
//! bytes is accepted exactly when the whole reading accepts the file
//! without migrating it, and then reads the same everywhere `status`
//! looks, prints the file and has the file's body digest. Any changed byte
//! of the file, and any doubt about the cut-down file, is refused.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::status;
use super::{StopView, progress_digest};
use crate::goals::plan::{BodyText, CriterionStatus, GoalStatus, Plan, UserModel};
use crate::goals::profile::Profile;
use crate::goals::state::StatePaths;
use crate::goals::summary;

use super::test_profile as profile;

/// The plan file the engine writes for `doc` and its body digest.
fn engine_file(doc: &Map<String, Value>) -> (Vec<u8>, String) {
    let body = BodyText::of(doc);
    (body.file_bytes(doc), body.sha256())
}

/// The cut-down body of `doc` under `markers`, as a reader decodes it.
fn cut(plan: &Plan, markers: &[String]) -> Map<String, Value> {
    let line: Value = serde_json::from_slice(&status::line(plan, markers)).unwrap();
    assert_eq!(line["v"], 1);
    line["plan"].as_object().unwrap().clone()
}

/// Everything `status` reads of a plan, as one comparable value.
fn seen(p: &Plan, profile: &Profile) -> Value {
    let markers = &profile.criteria.seeded_markers;
    let goals: Vec<Value> = p
        .goals()
        .map(|g| {
            let criteria: Vec<Value> = g
                .criteria()
                .map(|c| {
                    json!([
                        c.id(),
                        c.status().as_str(),
                        c.essential(),
                        c.user_model(),
                        c.seeded(markers)
                    ])
                })
                .collect();
            json!([
                g.id(),
                g.title(),
                g.status().as_str(),
                g.overlay().map(|o| o.as_str()),
                g.attempt(),
                g.str("attemptDir"),
                g.criteria_len(),
                criteria
            ])
        })
        .collect();
    json!({
        "summary": serde_json::to_value(summary::summary(p)).unwrap(),
        "view": serde_json::to_value(StopView::of(p, profile)).unwrap(),
        "progress": progress_digest(p),
        "goals": goals,
        "revision": p.revision(),
        "active": p.active_goal_id(),
        "session": p.session_id(profile),
        "lastMutation": p.doc().get("lastMutation"),
    })
}

/// Reads `doc`'s engine file both ways under `profile`; returns whether the
/// cut-down reading accepted it.
fn agree(doc: &Map<String, Value>, profile: &Profile) -> bool {
    let paths = StatePaths::new(&profile.state_dir, None);
    let (file, digest) = engine_file(doc);
    let whole = Plan::decode_file(file.clone(), &paths, profile, "now");
    let Ok(whole) = whole else {
        // A plan the whole reading refuses has no cut-down body to read:
        // the engine never writes one.
        return false;
    };
    let markers = &profile.criteria.seeded_markers;
    // Cut from the body as written (the engine cuts the body it writes).
    let reduced = cut(&Plan::from_doc(doc.clone()), markers);
    let fast = Plan::from_status_view(
        file.clone(),
        || Some(reduced.clone()),
        &digest,
        &paths,
        profile,
        "now",
    );
    let migrated = !whole.pending.is_empty();
    let Ok(fast) = fast else {
        assert!(migrated, "refused a plan read whole unchanged: {doc:?}");
        return false;
    };
    assert!(!migrated, "accepted a plan the whole reading migrates");
    assert_eq!(whole.read_body_sha256(), digest, "the engine's file's body");
    assert_eq!(seen(&fast, profile), seen(&whole, profile));
    assert_eq!(fast.read_body_sha256(), digest);
    assert_eq!(fast.encoded().unwrap().concat(), file, "prints the file");
    mutations_alike(&file, &reduced, &digest, &paths, profile);
    // Any byte of the body changed or dropped is refused; a change in
    // `lastMutation` (read from the file, not part of the body) reads as
    // the whole reading of the changed file does.
    let lm = crate::scan::find(&file, b"\n  \"lastMutation\": {");
    let (mut steps, mut refused) = (0, 0);
    for at in (0..file.len()).step_by(1 + file.len() / 97) {
        let mut changed = file.clone();
        changed[at] = if changed[at] == b'x' { b'y' } else { b'x' };
        let mut dropped = file.clone();
        dropped.remove(at);
        for f in [changed, dropped] {
            match Plan::from_status_view(
                f.clone(),
                || Some(reduced.clone()),
                &digest,
                &paths,
                profile,
                "now",
            ) {
                Err(back) => {
                    assert_eq!(back, f, "the bytes are given back");
                    refused += 1;
                }
                Ok(p) => {
                    assert!(
                        lm.is_some_and(|lm| at > lm),
                        "a body change at {at} was accepted"
                    );
                    let w = Plan::decode_file(f.clone(), &paths, profile, "now").unwrap();
                    assert_eq!(seen(&p, profile), seen(&w, profile), "changed at {at}");
                    assert_eq!(p.encoded().unwrap().concat(), f);
                }
            }
        }
        steps += 1;
    }
    assert!(steps > 0 && refused >= steps, "{refused} of {steps}");
    // A cut-down body naming a `lastMutation` of its own is refused.
    let mut own = reduced.clone();
    own.insert("lastMutation".into(), json!({"revision": 0, "fromSeq": 0}));
    assert!(
        Plan::from_status_view(file.clone(), || Some(own), &digest, &paths, profile, "now")
            .is_err()
    );
    // Another digest is refused.
    assert!(
        Plan::from_status_view(
            file,
            || Some(reduced),
            &"0".repeat(64),
            &paths,
            profile,
            "now"
        )
        .is_err()
    );
    true
}

/// A change made to a plan in a test.
type Edit<'a> = Box<dyn Fn(&mut Plan) + 'a>;

/// The plan a mutation reads from the cut-down body
/// ([`Plan::for_mutation`]), reaching no goal, the first or the last: it
/// encodes as the file and reads as the whole reading does, and a goal
/// changed through it (the first, a middle one, the last) gives the body,
/// the cut-down body and everything `status` reads that the same change
/// gives the whole reading. A reached goal whose text the cut-down body does
/// not hold is refused; one reached later makes the plan refused before a
/// commit writes it.
fn mutations_alike(
    file: &[u8],
    reduced: &Map<String, Value>,
    digest: &str,
    paths: &StatePaths,
    profile: &Profile,
) {
    let markers = &profile.criteria.seeded_markers;
    let read_whole = || Plan::decode_file(file.to_vec(), paths, profile, "now").unwrap();
    let partly = |cut: &Map<String, Value>, reach: &[&str]| {
        Plan::for_mutation(
            file.to_vec(),
            || Some(cut.clone()),
            digest,
            reach,
            (markers, status::cut_goal),
            paths,
            profile,
            "now",
        )
    };
    let whole = read_whole();
    let ids: Vec<String> = whole.goals().map(|g| g.id().to_owned()).collect();
    let mut changed: Vec<&str> = Vec::new();
    if let (Some(first), Some(last)) = (ids.first(), ids.last()) {
        changed = vec![first, &ids[ids.len() / 2], last];
    }
    let mut reaches: Vec<Vec<&str>> = vec![vec![]];
    reaches.extend(changed.iter().map(|id| vec![*id]));
    for reach in &reaches {
        let p = partly(reduced, reach).expect("read for a mutation");
        assert_eq!(p.encode(), file, "encodes as the file");
        assert_eq!(seen(&p, profile), seen(&whole, profile));
        // One goal changed; one read whole for a handover and a goal
        // appended; the goals reversed (every goal read whole first).
        let edits: Vec<(&str, Edit<'_>)> = changed
            .iter()
            .map(|id| -> (&str, Edit<'_>) {
                (
                    id,
                    Box::new(move |plan: &mut Plan| {
                        plan.goal_mut(id)
                            .unwrap()
                            .set_updated_at("2027-01-01T00:00:00.000Z");
                    }),
                )
            })
            .chain(changed.first().map(|id| -> (&str, Edit<'_>) {
                (
                    "handover, appended",
                    Box::new(move |plan: &mut Plan| {
                        plan.read_goal(id, paths).expect("reads back");
                        let new = json!({"id": "G-new", "title": "n", "objective": "n",
                            "successCriteria": [{"id": "C1", "scenario": "s"}]});
                        plan.push_goal(new.as_object().unwrap().clone());
                    }),
                )
            }))
            .chain(std::iter::once((
                "reversed",
                Box::new(|plan: &mut Plan| plan.edit_goals(|list| list.reverse())) as Edit<'_>,
            )))
            .collect();
        for (name, edit) in &edits {
            let mut a = partly(reduced, reach).unwrap();
            let mut b = read_whole();
            for plan in [&mut a, &mut b] {
                edit(plan);
                plan.set("updatedAt", json!("2027-01-01T00:00:00.000Z"));
            }
            assert!(a.refuse_unreadable(paths).is_ok(), "{name}");
            assert_eq!(
                BodyText::of_plan(&a).to_vec(),
                BodyText::of_plan(&b).to_vec(),
                "{name}"
            );
            assert_eq!(status::line(&a, markers), status::line(&b, markers));
            assert_eq!(seen(&a, profile), seen(&b, profile), "{name}");
            assert_eq!(a.encode(), b.encode(), "{name}");
        }
    }
    let Some(first) = changed.first() else {
        return;
    };
    let mut forged = reduced.clone();
    forged["goals"][0]["title"] = json!("forged title");
    assert!(partly(&forged, &[first]).is_err(), "a reached goal differs");
    let mut p = partly(&forged, &[]).unwrap();
    let at_once = p.read_goal(first, paths).unwrap_err();
    assert_eq!(at_once.code(), "ULW_LOOP_PLAN_CORRUPT");
    let mut p = partly(&forged, &[]).unwrap();
    p.goal_mut(first).unwrap();
    let refused = p.refuse_unreadable(paths).unwrap_err();
    assert_eq!(refused.code(), "ULW_LOOP_PLAN_CORRUPT");
    let id = reduced["goals"][0]["id"].as_str().unwrap_or("");
    assert!(
        refused
            .message
            .contains(&format!("/goals/0: goal `{id}` does not read back"))
            && refused.message.contains(".goals.status"),
        "names the goal and the file: {}",
        refused.message
    );
}

fn with_last_mutation(mut doc: Map<String, Value>) -> Map<String, Value> {
    doc.insert(
        "lastMutation".into(),
        json!({"revision": 3, "fromSeq": 5, "entries": [{"kind": "x", "planSha256": "d", "note": "a \"q\"\n"}],
               "ledgerHead": {"seq": 6, "sha256": "e".repeat(64)}}),
    );
    doc
}

#[test]
fn the_bundled_plans_read_alike_from_their_cut_down_body() {
    let files = super::BUNDLED_PLANS;
    let profiles = super::test_profiles();
    let mut accepted = 0;
    for text in files {
        let doc: Map<String, Value> = serde_json::from_str(text).unwrap();
        for p in &profiles {
            accepted += usize::from(agree(&doc, p));
            let mut lm = with_last_mutation(doc.clone());
            lm.remove("revision");
            accepted += usize::from(agree(&lm, p));
        }
    }
    assert!(accepted >= 6, "{accepted}");
}

#[test]
fn plans_of_every_shape_read_alike_from_their_cut_down_body() {
    let p = profile("ulw-loop");
    let legacy = p
        .legacy_objectives
        .exact
        .first()
        .cloned()
        .unwrap_or_else(|| "o".into());
    let marker = p.criteria.seeded_markers[0].clone();
    // The shared plan, not migrated, with `seeded` in every form.
    let mut base = super::plan_of_every_shape("o");
    base.as_object_mut().unwrap().remove("lastMutation");
    let g2 = &mut base["goals"][1]["successCriteria"];
    g2[0]["expectedEvidence"] = json!(format!("{marker}: later"));
    g2[1]["seeded"] = json!(true);
    g2.as_array_mut().unwrap().extend([
        json!({"id": "C3", "status": "fail", "seeded": false, "expectedEvidence": format!("{marker} too")}),
        json!({"id": "C4", "seeded": "yes", "expectedEvidence": marker}),
    ]);
    let base = base.as_object().unwrap().clone();
    let mut plans = vec![base.clone(), with_last_mutation(base.clone())];
    let mut done = with_last_mutation(base.clone());
    for g in done["goals"].as_array_mut().unwrap() {
        g["status"] = json!("complete");
    }
    done.remove("aggregateCompletion");
    done.remove("aggregate_completion");
    plans.push(done);
    plans.push(
        json!({"version": 1, "goals": []})
            .as_object()
            .unwrap()
            .clone(),
    );
    // The aggregate objective a read migrates: the cut-down reading refuses.
    let mut migrating = with_last_mutation(base.clone());
    migrating.insert("codexObjective".into(), json!(legacy));
    let accepted: Vec<bool> = plans.iter().map(|d| agree(d, &p)).collect();
    assert_eq!(accepted, [true, true, true, true]);
    assert!(!agree(&migrating, &p), "a migrating plan is read whole");
}

/// The file is read only with the recorded digest, the reader's markers,
/// its version and its final newline.
#[test]
#[allow(clippy::disallowed_methods)] // a test's own temporary directory
fn the_cut_down_file_is_read_only_when_it_is_the_recorded_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = cap_std::fs::Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
    let prof = profile("ulw-loop");
    let paths = StatePaths::new(&prof.state_dir, None);
    let doc = json!({"version": 1, "goals": [{"id": "G1", "title": "a", "objective": "a",
        "successCriteria": [{"id": "C1", "scenario": "long text", "expectedEvidence": "Replace via revise_criterion: x"}]}]});
    let plan = Plan::from_doc(doc.as_object().unwrap().clone());
    let markers = prof.criteria.seeded_markers.clone();
    let line = status::line(&plan, &markers);
    let sha = crate::digest::sha256_hex(&line);
    let write = |bytes: &[u8]| dir.write(status::FILE, bytes).unwrap();
    let read = |sha: &str, markers: &[String]| status::read(&dir, &paths, sha, markers, 1 << 20);
    write(&[line.clone(), b"\n".to_vec()].concat());
    let got = read(&sha, &markers).expect("the recorded file");
    assert_eq!(
        got["goals"][0]["successCriteria"][0],
        json!({"id": "C1", "seeded": true})
    );
    assert_eq!(read(&sha, &["other".to_owned()]), None, "other markers");
    assert_eq!(read(&"0".repeat(64), &markers), None, "another digest");
    assert!(
        status::read(&dir, &paths, &sha, &markers, 16).is_none(),
        "over the cap"
    );
    write(&line);
    assert_eq!(read(&sha, &markers), None, "no final newline");
    let v2 = String::from_utf8(line.clone())
        .unwrap()
        .replacen("{\"v\":1,", "{\"v\":2,", 1);
    write(format!("{v2}\n").as_bytes());
    assert_eq!(
        read(&crate::digest::sha256_hex(v2.as_bytes()), &markers),
        None,
        "another version"
    );
}

/// A generated criterion the field rules accept: every status and user
/// model, `essential` and `seeded` in every form, expected evidence that
/// starts with a seeded marker or not, and text with escapes.
fn valid_criterion(j: usize) -> impl Strategy<Value = Value> {
    (
        prop::sample::select(CriterionStatus::names()),
        prop::option::of(prop::sample::select(UserModel::names())),
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            Just(json!(true)),
            Just(json!(false)),
            Just(json!("yes"))
        ]),
        prop::option::of(prop_oneof![
            Just("Replace via revise_criterion: the seeded text"),
            Just("a transcript \"quoted\" \u{e9}\n"),
        ]),
        prop::option::of("[a-z \\\"\u{e9}]{0,12}"),
    )
        .prop_map(move |(status, model, essential, seeded, expected, text)| {
            let mut c = Map::new();
            c.insert("id".into(), json!(format!("C{j}")));
            if let Some(t) = text {
                c.insert("scenario".into(), json!(t));
            }
            if let Some(m) = model {
                c.insert("userModel".into(), json!(m));
            }
            if let Some(e) = expected {
                c.insert("expectedEvidence".into(), json!(e));
            }
            if let Some(e) = essential {
                c.insert("essential".into(), json!(e));
            }
            if let Some(sd) = seeded {
                c.insert("seeded".into(), sd);
            }
            c.insert("status".into(), json!(status));
            Value::Object(c)
        })
}

/// A generated goal the field rules accept, with up to four criteria.
fn valid_goal(i: usize) -> impl Strategy<Value = Value> {
    (
        prop::sample::select(GoalStatus::names()),
        prop::option::of(prop::sample::select(vec!["superseded", "blocked"])),
        0u64..4,
        any::<bool>(),
        (0usize..5).prop_flat_map(|n| (0..n).map(valid_criterion).collect::<Vec<_>>()),
    )
        .prop_map(move |(status, overlay, attempt, dir, criteria)| {
            let mut g = json!({"id": format!("G{i}"), "title": format!("goal \"{i}\""),
                               "objective": "o", "status": status, "attempt": attempt,
                               "successCriteria": criteria});
            if let Some(o) = overlay {
                g["steeringStatus"] = json!(o);
            }
            if dir {
                g["attemptDir"] = json!(format!("e/G{i}/a{attempt}"));
            }
            g
        })
}

fn valid_plan() -> impl Strategy<Value = Map<String, Value>> {
    (
        (0usize..40).prop_flat_map(|n| (0..n).map(valid_goal).collect::<Vec<_>>()),
        prop::option::of(0usize..40),
        any::<bool>(),
        prop::option::of(prop::sample::select(vec!["complete", "in_progress"])),
        any::<bool>(),
    )
        .prop_map(|(goals, active, aggregate, completion, last)| {
            let mut plan = json!({"version": 1, "revision": 3, "sessionId": "s1", "goals": goals});
            if let Some(a) = active {
                plan["activeGoalId"] = json!(format!("G{a}"));
            }
            if aggregate {
                plan["codexGoalMode"] = json!("aggregate");
                plan["codexObjective"] = json!("o");
            }
            if let Some(c) = completion {
                plan["aggregateCompletion"] = json!({"status": c});
            }
            let doc = plan.as_object().unwrap().clone();
            if last { with_last_mutation(doc) } else { doc }
        })
}

thread_local! {
    /// Generated plans read, and of them those the cut-down reading
    /// accepted, in this thread.
    static COUNTS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Every generated plan is accepted both ways (the property is not
/// vacuous: a plan the field rules refuse would pass it trivially). Saved
/// failing cases, if any, run first and count as well.
#[test]
fn every_generated_plan_is_read_from_its_cut_down_body() {
    generated_plans_read_alike_from_their_cut_down_body();
    let (read, accepted) = COUNTS.with(std::cell::Cell::get);
    assert!(read >= 128, "{read} plans read");
    assert_eq!(accepted, read, "{accepted} of {read} accepted");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Generated plans (up to 40 goals of every status and overlay, their
    /// criteria with and without each member the cut keeps or computes),
    /// with and without a `lastMutation`, read alike both ways, and any
    /// body byte changed is refused. Run by
    /// [`every_generated_plan_is_read_from_its_cut_down_body`].
    fn generated_plans_read_alike_from_their_cut_down_body(doc in valid_plan()) {
        let accepted = agree(&doc, &profile("ulw-loop"));
        COUNTS.with(|n| {
            let (read, yes) = n.get();
            n.set((read + 1, yes + usize::from(accepted)));
        });
    }
}
