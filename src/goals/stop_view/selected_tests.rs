//! A plan read for its view ([`crate::goals::plan::read_selected`]) against the same
//! plan read whole: the same acceptance, the same error, the same view and
//! the same body digest, for honest plans of every shape the view reads and
//! for plans with faults in the members the selective reading skips.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{CRITERIA_READ, StopView};
use crate::goals::error::GoalError;
use crate::goals::plan::{CriterionStatus, GoalStatus, Plan};
use crate::goals::profile::Profile;
use crate::goals::state::StatePaths;

use super::test_profile as profile;

/// What a hook takes from a plan read one way: its view and its body digest
/// as read (no record at hand: the whole document's, serialised), then, from
/// a second reading, the digest when any digest counts as recorded (the
/// file's own hash when it can stand in), or the error's code and message.
type Outcome = Result<(StopView, String, String), (String, String)>;

fn outcome(read: &dyn Fn() -> Result<Plan, GoalError>, profile: &Profile) -> Outcome {
    match read() {
        Ok(p) => {
            let view = StopView::of(&p, profile);
            let exact = p.read_body_sha256();
            let again = read().expect("read again");
            let raw = again.read_body_sha256_recorded(&|_| true);
            Ok((view, exact, raw))
        }
        Err(e) => Err((e.code().to_owned(), e.message.clone())),
    }
}

/// Reads `text` both ways under `profile` and asserts they agree; returns
/// whether it was accepted.
fn agree(text: &[u8], profile: &Profile) -> bool {
    let paths = StatePaths::new(&profile.state_dir, None);
    let whole = || Plan::decode_file(text.to_vec(), &paths, profile, "now");
    let selected = || Plan::decode_selected(text.to_vec(), &paths, profile, "now", &CRITERIA_READ);
    let accepted = whole().is_ok();
    if let Ok(p) = &selected() {
        assert!(
            p.is_selected() || !accepted,
            "an accepted plan is read selectively"
        );
    }
    assert_eq!(
        outcome(&selected, profile),
        outcome(&whole, profile),
        "{}",
        String::from_utf8_lossy(text)
    );
    accepted
}

/// The bundled plans (a Node tool's, the OMX fixtures), each under the
/// profile that reads it, and under the others (which refuse some).
#[test]
fn the_bundled_plans_read_the_same() {
    let files = super::BUNDLED_PLANS;
    let profiles = super::test_profiles();
    for (i, text) in files.iter().enumerate() {
        let accepted = profiles
            .iter()
            .filter(|p| agree(text.as_bytes(), p))
            .count();
        assert!(accepted > 0, "bundled plan {i} is read by some profile");
    }
}

/// Plans with every input of the view: overlays and their replacements,
/// waivers and user decisions, completion records in both spellings,
/// validation batches, the aggregate objective a read migrates, a pending
/// mutation, escapes in keys and values; then the same plans with a fault
/// in a member the selective reading skips.
#[test]
fn plans_of_every_shape_read_the_same() {
    let p = profile("ulw-loop");
    let legacy = p.legacy_objectives.exact.first().cloned();
    let mut plans = vec![super::plan_of_every_shape(legacy.as_deref().unwrap_or("o"))];
    let mut second = plans[0].clone();
    second["goals"][1]["status"] = json!("complete");
    second["goals"][2]["status"] = json!("complete");
    second["goals"][3]["status"] = json!("complete");
    second
        .as_object_mut()
        .unwrap()
        .remove("aggregateCompletion");
    second
        .as_object_mut()
        .unwrap()
        .remove("aggregate_completion");
    plans.push(second);
    plans.push(json!({"version": 1, "goals": []}));
    for plan in &plans {
        for text in [
            plan.to_string(),
            serde_json::to_string_pretty(plan).unwrap(),
        ] {
            assert!(agree(text.as_bytes(), &p), "{text}");
            // A fault in a skipped member, and in a kept one.
            let faults = [
                (r#""scenario":"s""#, r#""scenario":"s","scenario":"t""#),
                (r#""scenario": "s""#, r#""scenario": "s", "scenario": "t""#),
                (r#""deep""#, "1e999"),
                (r#""deep""#, r#"{"k":1,"k":2}"#),
                (r#""deep""#, r#"[{"k":[{"a":1,"a":1}]}]"#),
                (r#""deep""#, r#""\q""#),
                (r#""x\ny""#, r#""x\uDC00y""#),
                (
                    r#""essential":false"#,
                    r#""essential":false,"essential":true"#,
                ),
                (r#""userModel":"edge""#, r#""userModel":"nobody""#),
                (
                    r#""status":"pending","capturedEvidence""#,
                    r#""status":"later","capturedEvidence""#,
                ),
            ];
            for (from, to) in faults {
                if text.contains(from) {
                    let bad = text.replacen(from, to, 1);
                    assert!(!agree(bad.as_bytes(), &p), "{bad}");
                }
            }
        }
    }
}

/// A plan read selectively is never written.
#[test]
#[should_panic(expected = "never written")]
fn a_selected_plan_is_not_encoded() {
    let p = profile("ulw-loop");
    let text = br#"{"version":1,"goals":[{"id":"G1","title":"t","objective":"o","status":"pending",
        "successCriteria":[{"id":"C1","status":"pass","scenario":"dropped"}]}]}"#;
    let paths = StatePaths::new(&p.state_dir, None);
    let plan = Plan::decode_selected(text.to_vec(), &paths, &p, "now", &CRITERIA_READ).unwrap();
    assert!(plan.encoded().is_none());
    let _ = plan.encode();
}

/// A criterion's member: text, numbers, nested values, or a marked string
/// a fault may replace.
fn member_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        "[a-z \\n\"\\\\\u{e9}\u{1f600}]{0,12}".prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn criterion() -> impl Strategy<Value = Value> {
    (
        "C[0-9]",
        prop::sample::select({
            let mut v = CriterionStatus::names();
            v.push("bogus");
            v
        }),
        prop::option::of(prop::sample::select(vec!["happy", "edge", "bogus"])),
        prop::collection::btree_map(
            prop::sample::select(vec![
                "scenario",
                "expectedEvidence",
                "capturedEvidence",
                "x\\u00e9",
            ]),
            member_value(),
            0..4,
        ),
    )
        .prop_map(|(id, status, model, extra)| {
            let mut c = serde_json::Map::new();
            c.insert("id".into(), json!(id));
            c.insert("status".into(), json!(status));
            if let Some(m) = model {
                c.insert("userModel".into(), json!(m));
            }
            for (k, v) in extra {
                c.insert(k.into(), v);
            }
            Value::Object(c)
        })
}

fn goal() -> impl Strategy<Value = Value> {
    (
        "G[0-9]",
        prop::sample::select(GoalStatus::names()),
        prop::option::of(prop::sample::select(vec!["superseded", "blocked"])),
        0u64..4,
        prop::collection::vec(criterion(), 0..4),
    )
        .prop_map(|(id, status, overlay, attempt, criteria)| {
            let mut g = json!({"id": id, "title": "t", "objective": "o", "status": status,
                               "attempt": attempt, "successCriteria": criteria});
            if let Some(o) = overlay {
                g["steeringStatus"] = json!(o);
            }
            g
        })
}

/// Where a generated plan's text is broken, if it is.
#[derive(Debug, Clone)]
enum Fault {
    None,
    /// A member of a criterion repeated.
    RepeatMember(usize),
    /// The text cut short.
    Cut(usize),
    /// One byte replaced.
    Byte(usize, u8),
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        2 => Just(Fault::None),
        1 => any::<usize>().prop_map(Fault::RepeatMember),
        1 => any::<usize>().prop_map(Fault::Cut),
        1 => (any::<usize>(), prop::sample::select(b"{}[],:\"\\0e-x \xff".to_vec()))
            .prop_map(|(at, b)| Fault::Byte(at, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Generated plans (up to 40 goals: long ones are read on two threads),
    /// honest or broken anywhere (a repeated criterion
    /// member, a cut, a byte changed), read the same both ways.
    #[test]
    fn generated_plans_read_the_same(
        goals in prop::collection::vec(goal(), 0..40),
        active in prop::option::of("G[0-9]"),
        pretty in any::<bool>(),
        fault in fault(),
    ) {
        let mut plan = json!({"version": 1, "goals": goals});
        if let Some(a) = active {
            plan["activeGoalId"] = json!(a);
        }
        let mut text = if pretty {
            serde_json::to_string_pretty(&plan).unwrap()
        } else {
            plan.to_string()
        };
        if let Fault::RepeatMember(n) = fault {
                let at: Vec<usize> = text.match_indices("\"id\":").map(|(i, _)| i).collect();
                if !at.is_empty() {
                    let i = at[n % at.len()];
                    text.insert_str(i, "\"scenario\":1,\"scenario\":2,");
                }
        }
        let mut bytes = text.into_bytes();
        match fault {
            Fault::Cut(n) => bytes.truncate(n % (bytes.len() + 1)),
            Fault::Byte(n, b) if !bytes.is_empty() => {
                let i = n % bytes.len();
                bytes[i] = b;
            }
            _ => {}
        }
        agree(&bytes, &profile("ulw-loop"));
    }
}
