//! `mesa_memory._native`: the Python package's compiled core, a thin layer
//! over the same library facade the `mesa` command uses.
//!
//! ```text
//! Python                         Rust
//! Memory(root, tenant) ───────►  mesa_memory::LiveMemory / Tenant   (memory.rs)
//!   .query(policy=Policy) ─────► mesa_query::Asker ─► Answer        (answer.rs)
//! Policy.load / check / compile► mesa_runtime::Staged, the sandbox   (policy.rs)
//! exceptions ◄──────────────────  LiveError / PolicyError            (errors.rs)
//! ```
//!
//! Every call that does work releases the GIL; no call panics on Python
//! input (a panic would surface as `pyo3_runtime.PanicException`).

mod answer;
mod errors;
mod memory;
mod policy;

use pyo3::prelude::*;

/// MESA's compiled core; import `mesa_memory` instead.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<memory::Memory>()?;
    m.add_class::<policy::Policy>()?;
    m.add_class::<policy::Diagnostic>()?;
    m.add_class::<policy::Selection>()?;
    m.add_class::<answer::Answer>()?;
    m.add_class::<answer::EvidenceItem>()?;
    m.add_class::<answer::EpisodeInfo>()?;
    m.add_class::<answer::Step>()?;
    m.add_class::<answer::KeptQuestion>()?;
    m.add_class::<answer::Exported>()?;
    m.add_class::<answer::Imported>()?;
    m.add_function(wrap_pyfunction!(policy::check, m)?)?;
    m.add_function(wrap_pyfunction!(policy::format, m)?)?;
    m.add_function(wrap_pyfunction!(policy::compile, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
