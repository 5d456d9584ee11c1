//! The native simulation of a [`PolicySpec`]: each question's features
//! ([`FeatTable`]), conditions compiled against them, and the
//! [`Simulator`] that scores a rule list on a split as the sandbox would.

use super::*;

/// The words of a text as the keyword matcher sees them: maximal runs of
/// word bytes (ASCII letters, digits, `_`, any non-ASCII byte), ASCII
/// lower-cased. A single-word keyword occurs in a text exactly when it is
/// one of these.
pub fn words_of(text: &str) -> Vec<String> {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
    text.as_bytes()
        .split(|b| !is_word(*b))
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).to_ascii_lowercase())
        .collect()
}

/// Per-question features for native simulation.
#[derive(Debug, Clone)]
pub struct QFeat {
    /// Word ids of the query, sorted, distinct.
    pub qwords: Vec<u32>,
    /// Word ids of the task, sorted, distinct.
    pub twords: Vec<u32>,
    /// The domain, ASCII lower-case.
    pub domain: Option<String>,
    /// The question type as the policy sees it, ASCII lower-case.
    pub qtype: Option<String>,
    /// The previews.
    pub previews: mesa_core::Previews,
    /// Bit `j`: the query matches standard cue set `j` of the table.
    pub std: u64,
}

/// Features of every question of a problem, with one vocabulary.
#[derive(Debug, Clone)]
pub struct FeatTable {
    /// Word to id.
    pub vocab: HashMap<String, u32>,
    /// Id to word.
    pub words: Vec<String>,
    /// Per question of the problem.
    pub feats: Vec<QFeat>,
    /// The standard cue sets that apply to queries: name, and whether it is
    /// a pattern (`matches`) rather than a keyword set (`has`).
    pub std_sets: Vec<(String, bool)>,
}

impl FeatTable {
    /// Builds the table over every question's input (so words seen only in
    /// val or test still get ids: this is tokenization, not fitting).
    pub fn new(problem: &Problem) -> FeatTable {
        let mut vocab: HashMap<String, u32> = HashMap::new();
        let mut words: Vec<String> = Vec::new();
        let ids = |text: &str, vocab: &mut HashMap<String, u32>, words: &mut Vec<String>| {
            let mut v: Vec<u32> = words_of(text)
                .into_iter()
                .map(|w| {
                    *vocab.entry(w.clone()).or_insert_with(|| {
                        words.push(w);
                        (words.len() - 1) as u32
                    })
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut feats: Vec<QFeat> = problem
            .questions
            .iter()
            .map(|q| feat_of(&q.input, &mut |t| ids(t, &mut vocab, &mut words)))
            .collect();
        let std_sets = std_matches(problem, &mut feats);
        FeatTable {
            vocab,
            words,
            feats,
            std_sets,
        }
    }
}

fn feat_of(input: &Input, ids: &mut dyn FnMut(&str) -> Vec<u32>) -> QFeat {
    QFeat {
        qwords: ids(&input.query),
        twords: ids(input.task.as_deref().unwrap_or("")),
        domain: input.domain.as_ref().map(|d| d.to_ascii_lowercase()),
        qtype: input.qtype.as_ref().map(|d| d.to_ascii_lowercase()),
        previews: input.previews,
        std: 0,
    }
}

/// Which standard cue sets each query matches, evaluated by the
/// interpreter on a one-rule probe policy (so the matching rules are the
/// language's own). Sets that no probe can use are left out.
fn std_matches(problem: &Problem, feats: &mut [QFeat]) -> Vec<(String, bool)> {
    let mut sets = Vec::new();
    for name in mesa_compiler::std_names() {
        if sets.len() >= 64 {
            break;
        }
        let probe = |verb: &str| {
            let src = format!(
                "policy \"probe\"\nuse std\nrule r when query {verb} std.{name} -> select {{S}}\ndefault {{T}}\n"
            );
            mesa_compiler::check(&src)
                .program
                .and_then(|p| mesa_compiler::Selector::new(p).ok())
        };
        let (selector, pattern) = match probe("has") {
            Some(s) => (s, false),
            None => match probe("matches") {
                Some(s) => (s, true),
                None => continue,
            },
        };
        let bit = 1u64 << sets.len();
        for (f, q) in feats.iter_mut().zip(&problem.questions) {
            if selector.select_mask(&q.input).1.is_some() {
                f.std |= bit;
            }
        }
        sets.push((name, pattern));
    }
    sets
}

/// A condition with words resolved to ids, for fast evaluation.
#[derive(Debug, Clone)]
enum Compiled {
    Domain(Vec<String>),
    Qtype(Vec<String>),
    Query(Vec<u32>),
    Task(Vec<u32>),
    Preview(Structure, Feature, Cmp, f64),
    Std(u64),
    And(Vec<Compiled>),
    Not(Box<Compiled>),
}

fn compile(c: &Cond, table: &FeatTable) -> Compiled {
    let ids = |ws: &[String]| -> Vec<u32> {
        ws.iter()
            .filter_map(|w| table.vocab.get(&w.to_ascii_lowercase()).copied())
            .collect()
    };
    let lower = |vs: &[String]| vs.iter().map(|v| v.to_ascii_lowercase()).collect();
    match c {
        Cond::Domain { values } => Compiled::Domain(lower(values)),
        Cond::Qtype { values } => Compiled::Qtype(lower(values)),
        Cond::QueryHas { words } => Compiled::Query(ids(words)),
        Cond::TaskHas { words } => Compiled::Task(ids(words)),
        Cond::Preview {
            structure,
            feature,
            op,
            threshold,
        } => Compiled::Preview(*structure, *feature, *op, *threshold),
        Cond::Std { name, .. } => Compiled::Std(
            table
                .std_sets
                .iter()
                .position(|(n, _)| n == name)
                .map_or(0, |j| 1u64 << j),
        ),
        Cond::And { all } => Compiled::And(all.iter().map(|c| compile(c, table)).collect()),
        Cond::Not { cond } => Compiled::Not(Box::new(compile(cond, table))),
    }
}

fn holds(c: &Compiled, f: &QFeat) -> bool {
    match c {
        Compiled::Domain(vs) => f.domain.as_ref().is_some_and(|d| vs.contains(d)),
        Compiled::Qtype(vs) => f.qtype.as_ref().is_some_and(|d| vs.contains(d)),
        Compiled::Query(ids) => ids.iter().any(|w| f.qwords.binary_search(w).is_ok()),
        Compiled::Task(ids) => ids.iter().any(|w| f.twords.binary_search(w).is_ok()),
        Compiled::Preview(s, feat, op, t) => {
            let v = f.previews.get(*s, *feat);
            match op {
                Cmp::Gt => v > *t,
                Cmp::Lt => v < *t,
                Cmp::Eq => v == *t,
            }
        }
        Compiled::Std(bit) => f.std & bit != 0,
        Compiled::And(all) => all.iter().all(|c| holds(c, f)),
        Compiled::Not(c) => !holds(c, f),
    }
}

/// Whether `cond` holds, for each question of `idx`.
pub fn holds_vec(cond: &Cond, table: &FeatTable, idx: &[usize]) -> Vec<bool> {
    let c = compile(cond, table);
    idx.iter().map(|&i| holds(&c, &table.feats[i])).collect()
}

/// What follows the rules, in the interpreter's order: the trade, then the
/// budget. The simulator and the fitting's per-mask rows both read it.
pub fn after_rules(
    mask: Mask,
    trade: Option<TradeSpec>,
    budget: Option<f64>,
    previews: &mesa_core::Previews,
) -> Mask {
    let mask = trade.map_or(mask, |t| t.apply(mask, previews));
    apply_budget(mask, budget, previews)
}

/// The budget step: while more than one structure is chosen and their
/// preview tokens exceed `budget`, drop the costliest (the later on ties).
pub fn apply_budget(mask: Mask, budget: Option<f64>, previews: &mesa_core::Previews) -> Mask {
    let Some(b) = budget else { return mask };
    let mut m = mask;
    loop {
        if m.len() <= 1 {
            return m;
        }
        let cost = |s: Structure| previews.get(s, Feature::Tokens);
        let total: f64 = m.iter().map(cost).sum();
        if total <= b {
            return m;
        }
        let mut worst: Option<Structure> = None;
        for s in m.iter() {
            if worst.is_none_or(|w| cost(s) >= cost(w)) {
                worst = Some(s);
            }
        }
        match worst {
            Some(w) => m = m.without(Mask::single(w)),
            None => return m,
        }
    }
}

/// A policy spec ready to simulate.
pub struct Simulator {
    rules: Vec<(Option<Compiled>, Act, Mask)>,
    default: Mask,
    budget: Option<f64>,
    trade: Option<TradeSpec>,
}

impl Simulator {
    /// Prepares `spec` for the questions of `table`.
    pub fn new(spec: &PolicySpec, table: &FeatTable) -> Simulator {
        Simulator {
            rules: spec
                .rules
                .iter()
                .map(|r| (r.cond.as_ref().map(|c| compile(c, table)), r.action, r.mask))
                .collect(),
            default: spec.default,
            budget: spec.budget,
            trade: spec.trade,
        }
    }

    /// The mask for question `i`, and the index of the `select` rule that
    /// stopped evaluation (if any).
    pub fn run(&self, table: &FeatTable, i: usize) -> (Mask, Option<usize>) {
        let f = &table.feats[i];
        let mut mask = self.default;
        let mut stopped = None;
        for (k, (cond, act, m)) in self.rules.iter().enumerate() {
            if cond.as_ref().is_none_or(|c| holds(c, f)) {
                match act {
                    Act::Select => {
                        mask = *m;
                        stopped = Some(k);
                        break;
                    }
                    Act::Add => mask = mask.union(*m),
                    Act::Remove => mask = mask.without(*m),
                }
            }
        }
        mask = after_rules(mask, self.trade, self.budget, &f.previews);
        if mask.is_empty() {
            mask = self.default;
        }
        (mask, stopped)
    }
}

/// The total objective of `spec` over the questions `idx`.
pub fn total_objective(
    spec: &PolicySpec,
    problem: &Problem,
    table: &FeatTable,
    idx: &[usize],
) -> f64 {
    let sim = Simulator::new(spec, table);
    idx.iter()
        .map(|&i| {
            let (m, _) = sim.run(table, i);
            Mask::subset_index(m).map_or(0.0, |k| problem.questions[i].objective[k])
        })
        .sum()
}
