//! Criterion benchmarks for the language front end and the interpreter.
//!
//! Run: `cargo bench -p mesa-compiler --bench policy`. Results and the
//! machine they were measured on are in docs/BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mesa_compiler::synthetic::{policy, query, workloads};
use mesa_compiler::{check, Input, Selector};
use std::hint::black_box;

fn bench_check(c: &mut Criterion) {
    let src = policy(20, 25, 10, 200);
    assert!(!check(&src).has_errors(), "bench policy must check");
    let mut g = c.benchmark_group("check");
    g.throughput(Throughput::Bytes(src.len() as u64));
    g.bench_function("parse+check 200 rules, 500 keywords, 10 patterns", |b| {
        b.iter(|| check(black_box(&src)))
    });
    g.bench_function("parse+check, cold pattern cache", |b| {
        b.iter(|| {
            mesa_compiler::cues::clear_pattern_cache();
            check(black_box(&src))
        })
    });
    g.bench_function("parse only (200 rules)", |b| {
        b.iter(|| mesa_grammar::parse(black_box(&src)))
    });
    // 200 rules over a few small sets: the size of a hand-written policy.
    let small = policy(4, 10, 4, 200);
    g.throughput(Throughput::Bytes(small.len() as u64));
    g.bench_function("parse+check 200 rules, 40 keywords, 4 patterns", |b| {
        b.iter(|| check(black_box(&small)))
    });
    g.finish();
}

/// A workload: its name, the policy source, and a query of a given length.
type Case = (String, String, Box<dyn Fn(usize) -> String>);

fn bench_select(c: &mut Criterion) {
    let mut g = c.benchmark_group("interpreter select");
    let mut cases: Vec<Case> = vec![
        ("20 keywords".into(), policy(2, 10, 0, 20), Box::new(query)),
        (
            "500 keywords + 10 patterns".into(),
            policy(20, 25, 10, 200),
            Box::new(query),
        ),
    ];
    // The other keyword workloads (English vocabulary, random strings).
    for w in workloads().into_iter().skip(1) {
        cases.push((
            format!("{}, 500 keywords + 10 patterns", w.name),
            w.policy(20, 10, 200),
            Box::new(move |len| w.query(len)),
        ));
    }
    for (name, src, make_query) in &cases {
        let checked = check(src);
        let selector = Selector::new(checked.program.expect("checks")).expect("selector");
        for len in [100, 200, 2048] {
            let mut input = Input::query(make_query(len));
            input.domain = Some("web".into());
            g.bench_with_input(
                BenchmarkId::new(name, format!("{len} B")),
                &input,
                |b, input| b.iter(|| selector.select_mask(black_box(input))),
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench_check, bench_select);
criterion_main!(benches);
