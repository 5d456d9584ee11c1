//! `mesa pipeline`: the end-to-end job on built-in defaults. Build the
//! memory store over AMA-Bench, sweep every question's 31 subsets, search
//! for a policy offline, fit the stratified policies (`mesa stratify`), and
//! print the report and where the policies sit on the frontier.

use crate::cmd::build;
use crate::cmd::sweep::{self, UtilityArg};
use crate::error::CliError;
use mesa_memory::EmbedderKind;
use mesa_optimizer::frontier::FrontierOptions;
use mesa_optimizer::strata::{stratify, StrataError, StrataOptions, Target};
use mesa_optimizer::{optimize, OptimizeOptions};
use std::path::PathBuf;
use std::process::ExitCode;

/// Where AMA-Bench sits beside a checkout of the project.
const DEFAULT_DATA: &str = "../shared/data/ama-bench/open_end_qa_set.jsonl";

#[derive(clap::Args)]
pub struct Args {
    /// The dataset (default: AMA-Bench beside the checkout, or MESA_DATA).
    #[arg(long, env = "MESA_DATA", default_value = DEFAULT_DATA)]
    data: PathBuf,
    /// Where the store, the sweep and the run go.
    #[arg(long, default_value = "target/mesa-pipeline")]
    work: PathBuf,
    /// The utility the sweep measures (default evidence-recall; when no
    /// question of the dataset has an evidence label, answer-coverage).
    #[arg(long, value_enum)]
    utility: Option<UtilityArg>,
    /// Optimizer iterations.
    #[arg(long, default_value_t = OptimizeOptions::defaults().iterations)]
    iterations: usize,
    /// Split seed.
    #[arg(long, default_value_t = OptimizeOptions::defaults().seed)]
    seed: u64,
    /// Hide the question type from policies.
    #[arg(long)]
    no_qtype: bool,
    /// Rebuild the store even if one from an earlier run is there.
    #[arg(long)]
    rebuild: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if !args.data.exists() {
        return Err(CliError::Usage(format!(
            "the dataset `{}` does not exist; give it with --data PATH or MESA_DATA (AMA-Bench's open_end_qa_set.jsonl)",
            args.data.display()
        )));
    }
    std::fs::create_dir_all(&args.work).map_err(CliError::io("create", args.work.display()))?;
    let store = args.work.join("store");
    let reuse = !args.rebuild && mesa_memory::Store::open(&store).is_ok();
    if reuse {
        eprintln!(
            "1/4 store: reusing `{}` (--rebuild to build it again)",
            store.display()
        );
    } else {
        eprintln!("1/4 store: building `{}`", store.display());
        build::run(build::Args::new(
            args.data.clone(),
            store.clone(),
            EmbedderKind::Builtin,
        ))?;
    }
    let (mut sweep_file, labelled) = sweep_step(&args, &store, args.utility.unwrap_or_default())?;
    if args.utility.is_none() && labelled == 0 {
        eprintln!(
            "    no question names an evidence step: answer coverage instead (--utility chooses)"
        );
        (sweep_file, _) = sweep_step(&args, &store, UtilityArg::AnswerCoverage)?;
    }
    let run_dir = args.work.join(format!("run-seed{}", args.seed));
    eprintln!("3/4 optimize (offline): `{}`", run_dir.display());
    // A new run each time: the archive of an earlier one is kept aside.
    if run_dir.exists() {
        let old = args.work.join(format!("run-seed{}.previous", args.seed));
        let _ = std::fs::remove_dir_all(&old);
        std::fs::rename(&run_dir, &old).map_err(CliError::io("move aside", run_dir.display()))?;
    }
    let summary = optimize(&OptimizeOptions {
        iterations: args.iterations,
        seed: args.seed,
        hide_qtype: args.no_qtype,
        ..OptimizeOptions::new(&sweep_file, &run_dir)
    })?;
    out!("{}", summary.report.to_markdown());
    let mut policies = vec![run_dir.join("best.mesa").display().to_string()];
    policies.extend(stratified(&args, &sweep_file)?);
    // Where the frozen policies sit against the 31 fixed subsets and the
    // oracle, on the same test split.
    let frontier = mesa_optimizer::frontier::frontier(&FrontierOptions {
        seeds: args.seed..args.seed.saturating_add(1),
        lambda: summary.report.settings.lambda,
        hide_qtype: args.no_qtype,
        ..FrontierOptions::new(&sweep_file, policies)
    })?;
    out!("\n## The frontier\n\n{}", frontier.to_markdown());
    eprintln!(
        "done: the best policy is `{}` (and `.wasm`); the archive, report.json and pareto.svg are in `{}`",
        run_dir.join("best.mesa").display(),
        run_dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Step 2: the sweep of `utility`; its file and how many questions it
/// labels.
fn sweep_step(
    args: &Args,
    store: &std::path::Path,
    utility: UtilityArg,
) -> Result<(PathBuf, usize), CliError> {
    let sweep_file = args
        .work
        .join(format!("sweep-{utility:?}.jsonl").to_lowercase());
    eprintln!("2/4 sweep: `{}`", sweep_file.display());
    let report = sweep::sweep(&sweep::Args {
        store: store.to_path_buf(),
        data: args.data.clone(),
        utility,
        output: sweep_file.clone(),
        judge_cache: None,
        answer_model: None,
        judge_model: None,
        items: None,
        skip_bad: false,
        quiet: false,
        minilm_dir: None,
    })?;
    eprintln!(
        "    {} questions, {} labelled",
        report.questions, report.labelled
    );
    Ok((sweep_file, report.labelled))
}

/// Step 4: the stratified policies for both targets (keep 99% of all five's
/// J; the best J within half its tokens), fitted on train and val; none
/// when train and val have too few episodes to fold.
fn stratified(args: &Args, sweep_file: &std::path::Path) -> Result<Vec<String>, CliError> {
    let mut out = Vec::new();
    for target in [Target::KEEP_99, Target::WITHIN_HALF] {
        let dir = args
            .work
            .join(format!("strata-{}-seed{}", target.name(), args.seed));
        eprintln!("4/4 stratify ({}): `{}`", target.name(), dir.display());
        let mut opts = StrataOptions::new(sweep_file, &dir);
        opts.seed = args.seed;
        opts.target = target;
        match stratify(&opts) {
            Ok(r) => {
                eprintln!(
                    "    {}: out of fold J {:.1}%, tokens {:.1}% of all five's",
                    r.fitted.describe(),
                    100.0 * r.fitted.j_share,
                    100.0 * r.fitted.token_share
                );
                out.push(dir.join("best.mesa").display().to_string());
            }
            Err(e @ StrataError::TooFewEpisodes { .. }) => eprintln!("    skipped: {e}"),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}
