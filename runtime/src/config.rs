//! The host's settings: [`RuntimeConfig`] (every default stated once, on
//! its field) and the [`Compiler`] that turns modules into machine code.

/// Tunable limits of a [`crate::Runtime`]. `RuntimeConfig::default()` gives
/// the values each field's documentation names.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// How many instances may exist at once (the pooling allocator's size).
    /// Default 32.
    pub max_instances: u32,
    /// Fuel granted to each call: `fuel_base + fuel_per_byte * input bytes +
    /// fuel_per_rule * rules`; also the fuel of instantiation. Default 1,000,000.
    pub fuel_base: u64,
    /// Fuel per byte of input. Default 400.
    pub fuel_per_byte: u64,
    /// Fuel per rule of the policy. Default 100,000.
    pub fuel_per_rule: u64,
    /// The code generator that compiles modules. Default
    /// [`Compiler::Cranelift`]; [`RuntimeConfig::for_queries`] picks by
    /// workload.
    pub compiler: Compiler,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_instances: 32,
            fuel_base: 1_000_000,
            fuel_per_byte: 400,
            fuel_per_rule: 100_000,
            compiler: Compiler::default(),
        }
    }
}

impl RuntimeConfig {
    /// The default limits with the compiler that answers about `queries`
    /// questions per loaded policy soonest ([`Compiler::for_queries`]).
    pub fn for_queries(queries: u64) -> RuntimeConfig {
        RuntimeConfig {
            compiler: Compiler::for_queries(queries),
            ..RuntimeConfig::default()
        }
    }

    /// As [`RuntimeConfig::for_queries`], for a policy in `format`: a
    /// `.cwasm` loads only into an engine with the settings that made it,
    /// which are the defaults (`mesa compile --aot`), so it gets Cranelift.
    pub fn for_workload(format: crate::PolicyFormat, queries: u64) -> RuntimeConfig {
        match format {
            crate::PolicyFormat::Precompiled => RuntimeConfig::default(),
            _ => RuntimeConfig::for_queries(queries),
        }
    }
}

/// The code generator that compiles policy modules to machine code. Every
/// choice meters fuel and canonicalizes NaNs, so all give the same results
/// (the differential tests check Winch too).
///
/// The trade-off, for a 200-rule policy over 500 keywords (docs/BENCHMARKS.md):
/// Cranelift takes about 10 ms to compile it and selects in 0.9 µs for a
/// 200-byte query; Winch takes about 2 ms and selects in about 3 µs.
/// [`Compiler::for_queries`] turns that into a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compiler {
    /// Cranelift with its optimizations (the default).
    #[default]
    Cranelift,
    /// Cranelift without optimizations: barely faster to compile (about
    /// 10%), a quarter slower to run; kept for measurements.
    CraneliftUnoptimized,
    /// Winch, wasmtime's single-pass baseline compiler (x86-64 only; on
    /// other hosts the runtime cannot be created).
    Winch,
}

impl Compiler {
    /// Below this many questions per loaded policy, Winch's shorter compile
    /// outweighs its slower selection (about 8 ms saved against about
    /// 2.4 µs more per 200-byte question; docs/BENCHMARKS.md, "Compilers").
    pub const WINCH_BREAK_EVEN: u64 = 3_500;

    /// Whether this host can run Winch.
    pub const WINCH_AVAILABLE: bool = cfg!(target_arch = "x86_64");

    /// The compiler that answers about `queries` questions with one loaded
    /// policy soonest, compile time included: Winch below
    /// [`Compiler::WINCH_BREAK_EVEN`] where it is available (a one-shot
    /// `mesa run`, an optimizer candidate scored on a split), Cranelift
    /// otherwise (a query file, a server's policy).
    pub fn for_queries(queries: u64) -> Compiler {
        if Compiler::WINCH_AVAILABLE && queries < Compiler::WINCH_BREAK_EVEN {
            Compiler::Winch
        } else {
            Compiler::Cranelift
        }
    }
}
