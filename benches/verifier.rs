//! Verifier hot paths: payload parse + verify (20 small deliverables),
//! hashing throughput against a raw `sha2` loop on a 64 MiB file (ratio
//! printed, target ≥ 0.8), and a 10,000-file glob (target < 1 s on 2 cores).
//!
//! Run: `cargo bench --bench verifier`.

#![allow(clippy::disallowed_methods)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use criterion::{Criterion, Throughput};
use evidence_gate::evidence::{Root, VerifyOptions, payload, verify_payload};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use evidence_gate::sandbox::open::{FileChecks, verify_file};
use evidence_gate::sandbox::{PathLimits, RelPath};
use sha2::{Digest, Sha256};

fn root(dir: &Path) -> Root {
    let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
    Root::new(
        Dir::open_ambient_dir(dir, cap_std::ambient_authority()).unwrap(),
        &rules,
    )
    .unwrap()
}

fn payload_json(deliverables: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "evidence": 1,
        "summary": "Benchmark payload with many deliverables.",
        "deliverables": deliverables,
        "verification": {"verdict": "passed", "by": "bench", "checks": [{"command": "cargo test", "exitCode": 0}]}
    }))
    .unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut c = Criterion::default().configure_from_args();

    // 20 small deliverables.
    let small = tempfile::tempdir().unwrap();
    let mut list = Vec::new();
    for i in 0..20 {
        let rel = format!("src/m{i:02}.rs");
        std::fs::create_dir_all(small.path().join("src")).unwrap();
        std::fs::write(
            small.path().join(&rel),
            format!("// module {i}\n").repeat(40),
        )
        .unwrap();
        list.push(serde_json::json!({"path": rel}));
    }
    let bytes = payload_json(serde_json::Value::Array(list));
    let r = root(small.path());
    c.bench_function("payload_parse_verify_20_small", |b| {
        b.iter(|| {
            let p = payload::parse(black_box(&bytes), 1 << 20).unwrap();
            let rep = verify_payload(&r, &p, "bench", VerifyOptions::default());
            assert_eq!(rep.files().len(), 20);
        })
    });

    // 64 MiB hashing, ours (confined open + handle checks + stream + re-stat) vs raw sha2.
    let big = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..64u32 * 1024 * 1024)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(big.path().join("big.bin"), &data).unwrap();
    let rb = Dir::open_ambient_dir(big.path(), cap_std::ambient_authority()).unwrap();
    let rel = RelPath::parse("big.bin", PathLimits::default()).unwrap();
    let checks = FileChecks::default();
    let mut g = c.benchmark_group("hash_64MiB");
    g.throughput(Throughput::Bytes(data.len() as u64))
        .sample_size(10);
    g.bench_function("evidence_gate_verify_file", |b| {
        b.iter(|| verify_file(&rb, &rel, &checks, None).unwrap())
    });
    g.bench_function("raw_sha2_in_memory", |b| {
        b.iter(|| Sha256::digest(black_box(&data)))
    });
    g.finish();

    let ours = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                black_box(verify_file(&rb, &rel, &checks, None).unwrap());
                t.elapsed()
            })
            .collect(),
    );
    let raw = median(
        (0..7)
            .map(|_| {
                let t = Instant::now();
                black_box(Sha256::digest(black_box(&data)));
                t.elapsed()
            })
            .collect(),
    );
    let mib = data.len() as f64 / (1024.0 * 1024.0);
    println!(
        "hash_ratio: ours {:.0} MiB/s, raw sha2 {:.0} MiB/s, ratio {:.3} (target >= 0.8)",
        mib / ours.as_secs_f64(),
        mib / raw.as_secs_f64(),
        raw.as_secs_f64() / ours.as_secs_f64()
    );

    // 10,000 small files in one glob.
    let many = tempfile::tempdir().unwrap();
    for d in 0..20 {
        let dir = many.path().join(format!("gen/d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..500 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("{d}-{f}\n")).unwrap();
        }
    }
    let rm = root(many.path());
    let glob = payload_json(serde_json::json!([{"glob": "gen/**/*.txt", "min": 10000}]));
    let p = payload::parse(&glob, 1 << 20).unwrap();
    let mut g = c.benchmark_group("glob_10k_files");
    g.sample_size(10);
    g.bench_function("verify", |b| {
        b.iter(|| {
            let rep = verify_payload(&rm, &p, "bench", VerifyOptions::default());
            assert_eq!(rep.files().len(), 10000);
        })
    });
    g.finish();
    let glob_t = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                let _ = black_box(verify_payload(&rm, &p, "bench", VerifyOptions::default()));
                t.elapsed()
            })
            .collect(),
    );
    println!(
        "glob_10k: {:.1} ms (target < 1000 ms on 2 cores)",
        glob_t.as_secs_f64() * 1000.0
    );
    c.final_summary();
}
