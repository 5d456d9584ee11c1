//! Criterion benchmarks for the Wasm backend and its host.
//!
//! Run: `cargo bench -p mesa-runtime --bench wasm`. Module sizes are printed
//! to standard error. Results are in docs/BENCHMARKS.md.
//!
//! On a shared machine, `MESA_BENCH_CPU_TIME=1` measures the `select` rows
//! in the benchmark thread's CPU time instead of wall time, so that time the
//! thread spends preempted by other processes is not counted (figures are
//! still in seconds; the two agree on an idle machine). The `build` rows are
//! always wall time: wasmtime compiles on a thread pool.
//!
//! Policies: "20 keywords" is the small generated policy (2 sets of 10
//! `kw{i}x{j}` keywords, 20 rules); each keyword workload of
//! `mesa_compiler::synthetic::workloads` (generated, English, random) gives a
//! 200-rule policy over 500 keywords in 20 sets, with 10 patterns. Two more
//! policies split the cost of the scan at 2 KiB: the random keywords without
//! patterns, and the 10 patterns with a single keyword.
//!
//! Compilers: the Wasm rows use the runtime's default code generator; the
//! random workload is also run and built with the others
//! (`mesa_runtime::Compiler`), for the choice recorded in BENCHMARKS.md.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkId, Criterion};
use mesa_compiler::synthetic::{policy, query, workloads};
use mesa_compiler::{check, wasm, Input, Selector};
use mesa_runtime::{Compiler, Runtime, RuntimeConfig};
use std::hint::black_box;

/// A bench policy: its name, source, a query generator and query lengths.
struct Case {
    name: String,
    src: String,
    query: Box<dyn Fn(usize) -> String>,
    lens: &'static [usize],
    /// Whether to run and build it with every compiler.
    all_compilers: bool,
}

const LENS: &[usize] = &[100, 200, 2048];

fn cases() -> Vec<Case> {
    let mut cases = vec![Case {
        name: "20 keywords".into(),
        src: policy(2, 10, 0, 20),
        query: Box::new(query),
        lens: LENS,
        all_compilers: false,
    }];
    for w in workloads() {
        let all_compilers = w.name == "random";
        if all_compilers {
            let q = w.clone();
            cases.push(Case {
                name: "random, 500 keywords, no patterns".into(),
                src: w.policy(20, 0, 200),
                query: Box::new(move |len| q.query(len)),
                lens: &[2048],
                all_compilers: false,
            });
        }
        cases.push(Case {
            name: format!("{}, 500 keywords + 10 patterns", w.name),
            src: w.policy(20, 10, 200),
            query: Box::new(move |len| w.query(len)),
            lens: LENS,
            all_compilers,
        });
    }
    cases.push(Case {
        name: "10 patterns, 1 keyword".into(),
        src: policy(1, 1, 10, 200),
        query: Box::new(query),
        lens: &[2048],
        all_compilers: false,
    });
    cases
}

/// The compilers to run a case with, and a runtime for each.
fn runtimes(case: &Case) -> Vec<(&'static str, Runtime)> {
    let mut v = vec![(Compiler::Cranelift, "")];
    if case.all_compilers {
        v.push((Compiler::CraneliftUnoptimized, " (Cranelift, no opt)"));
        v.push((Compiler::Winch, " (Winch)"));
    }
    v.into_iter()
        .map(|(compiler, label)| {
            let config = RuntimeConfig {
                compiler,
                ..RuntimeConfig::default()
            };
            (label, Runtime::with_config(config).expect("runtime"))
        })
        .collect()
}

fn bench_select<M: Measurement>(c: &mut Criterion<M>) {
    let mut g = c.benchmark_group("select");
    for case in cases() {
        let name = &case.name;
        let program = check(&case.src).program.expect("checks");
        let bytes = wasm::compile(&program, &case.src).expect("compiles");
        eprintln!("module size, {name}: {} bytes", bytes.len());
        let selector = Selector::new(program).expect("selector");
        for (label, runtime) in runtimes(&case) {
            let mut instance = runtime
                .load(&bytes)
                .expect("loads")
                .instantiate()
                .expect("instance");
            for &len in case.lens {
                let mut input = Input::query((case.query)(len));
                input.domain = Some("web".into());
                assert_eq!(
                    instance.select_mask(&input).expect("runs"),
                    selector.select_mask(&input)
                );
                assert_eq!(
                    instance.select(&input).expect("runs"),
                    selector.select(&input)
                );
                g.bench_with_input(
                    BenchmarkId::new(format!("wasm{label}, {name}"), format!("{len} B")),
                    &input,
                    |b, input| b.iter(|| instance.select_mask(black_box(input)).expect("runs")),
                );
                if label.is_empty() {
                    g.bench_with_input(
                        BenchmarkId::new(format!("interpreter, {name}"), format!("{len} B")),
                        &input,
                        |b, input| b.iter(|| selector.select_mask(black_box(input))),
                    );
                }
            }
        }
    }
    g.finish();
}

fn bench_build<M: Measurement>(c: &mut Criterion<M>) {
    let mut g = c.benchmark_group("build");
    g.sample_size(20);
    for case in cases().into_iter().filter(|c| c.lens == LENS) {
        let (name, src) = (&case.name, &case.src);
        g.bench_function(
            BenchmarkId::new("source to .wasm (check + compile)", name),
            |b| {
                b.iter(|| {
                    let program = check(black_box(src)).program.expect("checks");
                    wasm::compile(&program, src).expect("compiles")
                })
            },
        );
        let program = check(src).program.expect("checks");
        let bytes = wasm::compile(&program, src).expect("compiles");
        for (label, runtime) in runtimes(&case) {
            g.bench_function(
                BenchmarkId::new(
                    format!("wasmtime compile + validate (Runtime::load){label}"),
                    name,
                ),
                |b| b.iter(|| runtime.load(black_box(&bytes)).expect("loads")),
            );
            let loaded = runtime.load(&bytes).expect("loads");
            g.bench_function(
                BenchmarkId::new(format!("instantiate (pooling, InstancePre){label}"), name),
                |b| b.iter(|| loaded.instantiate().expect("instance")),
            );
            g.bench_function(
                BenchmarkId::new(format!("source to ready instance{label}"), name),
                |b| {
                    b.iter(|| {
                        let program = check(black_box(src)).program.expect("checks");
                        let bytes = wasm::compile(&program, src).expect("compiles");
                        runtime
                            .load(&bytes)
                            .expect("loads")
                            .instantiate()
                            .expect("instance")
                    })
                },
            );
        }
    }
    g.finish();
}

/// The calling thread's CPU time (Linux `CLOCK_THREAD_CPUTIME_ID`).
struct CpuTime;

fn thread_cpu_time() -> std::time::Duration {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is Linux's.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    std::time::Duration::new(ts.sec as u64, ts.nsec as u32)
}

impl Measurement for CpuTime {
    type Intermediate = std::time::Duration;
    type Value = std::time::Duration;
    fn start(&self) -> Self::Intermediate {
        thread_cpu_time()
    }
    fn end(&self, start: Self::Intermediate) -> Self::Value {
        thread_cpu_time() - start
    }
    fn add(&self, a: &Self::Value, b: &Self::Value) -> Self::Value {
        *a + *b
    }
    fn zero(&self) -> Self::Value {
        std::time::Duration::ZERO
    }
    fn to_f64(&self, value: &Self::Value) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

fn main() {
    if std::env::var_os("MESA_BENCH_CPU_TIME").is_some() {
        let mut c = Criterion::default()
            .with_measurement(CpuTime)
            .configure_from_args();
        bench_select(&mut c);
        c.final_summary();
    } else {
        let mut c = Criterion::default().configure_from_args();
        bench_select(&mut c);
        c.final_summary();
    }
    // Always wall time: wasmtime compiles a module's functions on a thread
    // pool, whose work the calling thread's CPU time does not include.
    let mut c = Criterion::default().configure_from_args();
    bench_build(&mut c);
    c.final_summary();
}
