//! Criterion benchmarks for the Wasm backend and its host.
//!
//! Run: `cargo bench -p mesa-runtime --bench wasm`. Module sizes are printed
//! to standard error. Results are in docs/BENCHMARKS.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mesa_compiler::synthetic::{policy, query};
use mesa_compiler::{check, wasm, Input, Selector};
use mesa_runtime::Runtime;
use std::hint::black_box;

const POLICIES: [(&str, usize, usize, usize, usize); 2] = [
    ("20 keywords", 2, 10, 0, 20),
    ("500 keywords + 10 patterns", 20, 25, 10, 200),
];

fn bench_select(c: &mut Criterion) {
    let runtime = Runtime::new().expect("runtime");
    let mut g = c.benchmark_group("select");
    for (name, sets, per_set, patterns, rules) in POLICIES {
        let src = policy(sets, per_set, patterns, rules);
        let program = check(&src).program.expect("checks");
        let bytes = wasm::compile(&program, &src).expect("compiles");
        eprintln!("module size, {name}, {rules} rules: {} bytes", bytes.len());
        let selector = Selector::new(program).expect("selector");
        let mut instance = runtime
            .load(&bytes)
            .expect("loads")
            .instantiate()
            .expect("instance");
        for len in [100, 200, 2048] {
            let mut input = Input::query(query(len));
            input.domain = Some("web".into());
            assert_eq!(
                instance.select_mask(&input).expect("runs"),
                selector.select_mask(&input)
            );
            g.bench_with_input(
                BenchmarkId::new(format!("wasm, {name}"), format!("{len} B")),
                &input,
                |b, input| b.iter(|| instance.select_mask(black_box(input)).expect("runs")),
            );
            g.bench_with_input(
                BenchmarkId::new(format!("interpreter, {name}"), format!("{len} B")),
                &input,
                |b, input| b.iter(|| selector.select_mask(black_box(input))),
            );
        }
    }
    g.finish();
}

fn bench_build(c: &mut Criterion) {
    let runtime = Runtime::new().expect("runtime");
    let mut g = c.benchmark_group("build");
    g.sample_size(20);
    for (name, sets, per_set, patterns, rules) in POLICIES {
        let src = policy(sets, per_set, patterns, rules);
        g.bench_function(
            BenchmarkId::new("source to .wasm (check + compile)", name),
            |b| {
                b.iter(|| {
                    let program = check(black_box(&src)).program.expect("checks");
                    wasm::compile(&program, &src).expect("compiles")
                })
            },
        );
        let program = check(&src).program.expect("checks");
        let bytes = wasm::compile(&program, &src).expect("compiles");
        g.bench_function(
            BenchmarkId::new("wasmtime compile + validate (Runtime::load)", name),
            |b| b.iter(|| runtime.load(black_box(&bytes)).expect("loads")),
        );
        let loaded = runtime.load(&bytes).expect("loads");
        g.bench_function(
            BenchmarkId::new("instantiate (pooling, InstancePre)", name),
            |b| b.iter(|| loaded.instantiate().expect("instance")),
        );
        g.bench_function(BenchmarkId::new("source to ready instance", name), |b| {
            b.iter(|| {
                let program = check(black_box(&src)).program.expect("checks");
                let bytes = wasm::compile(&program, &src).expect("compiles");
                runtime
                    .load(&bytes)
                    .expect("loads")
                    .instantiate()
                    .expect("instance")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_select, bench_build);
criterion_main!(benches);
