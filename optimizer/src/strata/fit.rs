//! Strata: the keys, fitting one subset per stratum, the cross-validation
//! over train and val's episodes, and writing the fit as a policy.

use super::{Candidate, StrataError, StrataOptions, StratumReport, Target};
use crate::eval::Problem;
use crate::propose::spec::{Act, Cmp, Cond, PolicySpec, RuleSpec};
use crate::rng::Rng;
use mesa_core::{Feature, Mask, Structure};
use std::collections::BTreeMap;

/// What a stratum is keyed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// The episode's domain.
    Domain,
    /// `preview.K.named`, three ways: the question names no step (-1), K
    /// shows every step it names (1), or only some (in `[0, 1)`).
    Named(Structure),
}

impl Key {
    fn name(self) -> String {
        match self {
            Key::Domain => "domain".to_string(),
            Key::Named(s) => format!("{}.named", s.letter()),
        }
    }
}

/// The key sets cross-validation chooses among, from the plainest.
pub const KEY_SETS: [&[Key]; 6] = [
    &[],
    &[Key::Domain],
    &[Key::Named(Structure::Temporal)],
    &[Key::Domain, Key::Named(Structure::Temporal)],
    &[
        Key::Domain,
        Key::Named(Structure::Temporal),
        Key::Named(Structure::Graph),
    ],
    &[
        Key::Domain,
        Key::Named(Structure::Temporal),
        Key::Named(Structure::Summary),
    ],
];

/// A key set's name in reports: `none`, `domain+T.named`, ...
pub fn keys_name(keys: &[Key]) -> String {
    if keys.is_empty() {
        return "none".to_string();
    }
    keys.iter().map(|k| k.name()).collect::<Vec<_>>().join("+")
}

/// The three values of a `Named` key.
const NAMES_NONE: u16 = 0;
const SHOWS_ALL: u16 = 1;
const SHOWS_SOME: u16 = 2;

/// The bucket of a `named` value, exactly as the written conditions test
/// it (`< -0.5`, `== 1`, `> -0.5 and < 1`); `None` for a value none of them
/// holds for (not produced by the host), which reads the default.
fn named_bucket(v: f64) -> Option<u16> {
    if v < -0.5 {
        Some(NAMES_NONE)
    } else if v == 1.0 {
        Some(SHOWS_ALL)
    } else if v > -0.5 && v < 1.0 {
        Some(SHOWS_SOME)
    } else {
        None
    }
}

/// A question's stratum under `keys`: per key, the domain's index in
/// `problem.domains` or the `named` bucket.
type Stratum = Vec<u16>;

fn stratum(problem: &Problem, i: usize, keys: &[Key]) -> Option<Stratum> {
    let q = &problem.questions[i];
    keys.iter()
        .map(|k| match k {
            Key::Domain => problem
                .domains
                .binary_search(&q.domain)
                .ok()
                .and_then(|d| u16::try_from(d).ok()),
            Key::Named(s) => named_bucket(q.input.previews.get(*s, Feature::Named)),
        })
        .collect()
}

/// The mask index with the highest `utility - lambda * tokens` summed over
/// `idx`; ties go to fewer tokens, then to the lower index.
fn best_subset(problem: &Problem, idx: &[usize], lambda: f64) -> usize {
    let mut util = [0.0; Mask::SUBSETS];
    let mut tok = [0.0; Mask::SUBSETS];
    for &i in idx {
        let q = &problem.questions[i];
        for k in 0..Mask::SUBSETS {
            util[k] += q.utility[k];
            tok[k] += q.tokens[k];
        }
    }
    let value = |k: usize| util[k] - lambda * tok[k];
    (0..Mask::SUBSETS).fold(Mask::SUBSETS - 1, |best, k| {
        let (v, b) = (value(k), value(best));
        if v > b || (v == b && (tok[k], k) < (tok[best], best)) {
            k
        } else {
            best
        }
    })
}

/// The best subset of each of `keys`' strata over `idx`, kept where it
/// differs from `default`.
fn fit_strata(
    problem: &Problem,
    idx: &[usize],
    keys: &[Key],
    lambda: f64,
    default: usize,
) -> BTreeMap<Stratum, usize> {
    let mut groups: BTreeMap<Stratum, Vec<usize>> = BTreeMap::new();
    for &i in idx {
        if let Some(s) = stratum(problem, i, keys) {
            groups.entry(s).or_default().push(i);
        }
    }
    groups
        .into_iter()
        .map(|(s, g)| (s, best_subset(problem, &g, lambda)))
        .filter(|&(_, k)| k != default)
        .collect()
}

/// One subset per stratum, fitted on some questions.
///
/// With the domain among the keys, a question of a domain the fit never
/// saw (another benchmark's, or one left out) reads the strata of the
/// other keys, fitted on every domain together (the backoff), rather than
/// the default: the policy's last rules say `not domain in [...]`.
#[derive(Debug, Clone)]
pub struct Fitted {
    keys: Vec<Key>,
    /// The strata whose subset differs from the default (each a rule).
    strata: BTreeMap<Stratum, usize>,
    /// The domains the fit saw (indices into `Problem::domains`); empty
    /// when the domain is not a key.
    known: Vec<u16>,
    /// The keys without the domain, and their strata that differ from the
    /// default, for questions of other domains.
    backoff_keys: Vec<Key>,
    backoff: BTreeMap<Stratum, usize>,
    /// The subset of every other question.
    default: usize,
}

impl Fitted {
    /// Every question reads all five.
    pub fn all_five() -> Fitted {
        Fitted {
            keys: Vec::new(),
            strata: BTreeMap::new(),
            known: Vec::new(),
            backoff_keys: Vec::new(),
            backoff: BTreeMap::new(),
            default: Mask::SUBSETS - 1,
        }
    }

    /// Fits `keys`' strata on `idx` at the token price `lambda`.
    pub fn fit(problem: &Problem, idx: &[usize], keys: &[Key], lambda: f64) -> Fitted {
        let default = best_subset(problem, idx, lambda);
        let by_domain = keys.contains(&Key::Domain);
        let backoff_keys: Vec<Key> = if by_domain {
            keys.iter().copied().filter(|k| *k != Key::Domain).collect()
        } else {
            Vec::new()
        };
        let mut known: Vec<u16> = if by_domain {
            idx.iter()
                .filter_map(|&i| stratum(problem, i, &[Key::Domain]).map(|s| s[0]))
                .collect()
        } else {
            Vec::new()
        };
        known.sort_unstable();
        known.dedup();
        Fitted {
            strata: fit_strata(problem, idx, keys, lambda, default),
            backoff: if by_domain {
                fit_strata(problem, idx, &backoff_keys, lambda, default)
            } else {
                BTreeMap::new()
            },
            keys: keys.to_vec(),
            known,
            backoff_keys,
            default,
        }
    }

    /// Whether question `i`'s domain is one the fit never saw (only when
    /// the domain is a key).
    fn unseen(&self, problem: &Problem, i: usize) -> bool {
        self.keys.contains(&Key::Domain)
            && stratum(problem, i, &[Key::Domain])
                .is_none_or(|d| self.known.binary_search(&d[0]).is_err())
    }

    /// The rule that decides question `i`, numbered as the policy writes
    /// them (the strata, then the backoff's); `None` for the default.
    fn rule_of(&self, problem: &Problem, i: usize) -> Option<usize> {
        let (keys, strata, first) = if self.unseen(problem, i) {
            (&self.backoff_keys, &self.backoff, self.strata.len())
        } else {
            (&self.keys, &self.strata, 0)
        };
        let s = stratum(problem, i, keys)?;
        strata.keys().position(|x| *x == s).map(|p| first + p)
    }

    /// The mask index the fit reads for question `i`.
    pub fn choose(&self, problem: &Problem, i: usize) -> usize {
        self.rule_of(problem, i)
            .and_then(|r| self.strata.values().chain(self.backoff.values()).nth(r))
            .copied()
            .unwrap_or(self.default)
    }

    /// The strata with a rule of their own.
    pub fn rules(&self) -> usize {
        self.strata.len() + self.backoff.len()
    }

    /// The fit as a policy: one `select` rule per stratum that differs
    /// from the default (strata are disjoint, so their order is free).
    pub fn spec(&self, problem: &Problem, name: &str) -> PolicySpec {
        let mut rules: Vec<RuleSpec> = self
            .strata
            .iter()
            .map(|(s, &k)| RuleSpec {
                name: rule_name(problem, &self.keys, s),
                cond: Some(cond(problem, &self.keys, s)),
                action: Act::Select,
                mask: Mask::subset(k),
            })
            .collect();
        let seen = Cond::Domain {
            values: self
                .known
                .iter()
                .map(|&d| problem.domains[usize::from(d)].clone())
                .collect(),
        };
        rules.extend(self.backoff.iter().map(|(s, &k)| RuleSpec {
            name: format!("other_{}", rule_name(problem, &self.backoff_keys, s)),
            cond: Some(Cond::and(
                Cond::Not {
                    cond: Box::new(seen.clone()),
                },
                cond(problem, &self.backoff_keys, s),
            )),
            action: Act::Select,
            mask: Mask::subset(k),
        }));
        // Two domains may spell the same name (`web-1`, `web_1`): number the repeats.
        let mut seen = std::collections::HashSet::new();
        for r in &mut rules {
            let base = r.name.clone();
            let mut n = 1;
            while !seen.insert(r.name.clone()) {
                n += 1;
                r.name = format!("{base}_{n}");
            }
        }
        PolicySpec {
            name: name.to_string(),
            rules,
            default: Mask::subset(self.default),
            budget: None,
        }
    }
}

/// The condition a stratum's rule tests.
fn cond(problem: &Problem, keys: &[Key], s: &Stratum) -> Cond {
    let preview = |structure, op, threshold| Cond::Preview {
        structure,
        feature: Feature::Named,
        op,
        threshold,
    };
    let conds = keys.iter().zip(s).map(|(k, &v)| match *k {
        Key::Domain => Cond::Domain {
            values: vec![problem.domains[usize::from(v)].clone()],
        },
        Key::Named(st) => match v {
            NAMES_NONE => preview(st, Cmp::Lt, -0.5),
            SHOWS_ALL => preview(st, Cmp::Eq, 1.0),
            _ => Cond::and(preview(st, Cmp::Gt, -0.5), preview(st, Cmp::Lt, 1.0)),
        },
    });
    conds
        .reduce(Cond::and)
        .unwrap_or(Cond::And { all: Vec::new() })
}

/// `text2sql_t_some`: the stratum's values, as an identifier.
fn rule_name(problem: &Problem, keys: &[Key], s: &Stratum) -> String {
    let parts: Vec<String> = keys
        .iter()
        .zip(s)
        .map(|(k, &v)| match k {
            Key::Domain => problem.domains[usize::from(v)].clone(),
            Key::Named(st) => format!(
                "{}_{}",
                st.letter().to_ascii_lowercase(),
                ["none", "all", "some"][usize::from(v.min(2))]
            ),
        })
        .collect();
    mesa_grammar::identifier_from(&parts.join("_"), "s")
}

impl Fitted {
    /// Each rule's stratum and the default, with their support over `idx`.
    /// `spec` is this fit's [`Fitted::spec`].
    pub fn strata_report(
        &self,
        problem: &Problem,
        idx: &[usize],
        spec: &PolicySpec,
    ) -> Vec<StratumReport> {
        let rules = spec.rules.len();
        let mut support = vec![0usize; rules + 1];
        for &i in idx {
            support[self.rule_of(problem, i).unwrap_or(rules)] += 1;
        }
        let mut out: Vec<StratumReport> = spec
            .rules
            .iter()
            .zip(&support)
            .map(|(r, &n)| StratumReport {
                rule: r.name.clone(),
                when: r.cond.as_ref().map(Cond::describe).unwrap_or_default(),
                support: n,
                select: r.mask.to_string(),
            })
            .collect();
        out.push(StratumReport {
            rule: "default".to_string(),
            when: "no rule matches".to_string(),
            support: support[rules],
            select: spec.default.to_string(),
        });
        out
    }
}

/// Each position of `idx` its fold: train and val's episodes shuffled by
/// the seed and dealt round-robin, so a fold holds whole episodes.
fn folds(problem: &Problem, idx: &[usize], k: usize, seed: u64) -> Result<Vec<usize>, StrataError> {
    let mut episodes: Vec<u32> = idx
        .iter()
        .map(|&i| problem.questions[i].episode_no)
        .collect();
    episodes.sort_unstable();
    episodes.dedup();
    if episodes.len() < k {
        return Err(StrataError::TooFewEpisodes {
            seed,
            episodes: episodes.len(),
            folds: k,
        });
    }
    let mut rng = Rng::derive(&[seed, 0x5354_5241_5441]);
    for n in (1..episodes.len()).rev() {
        episodes.swap(n, rng.below(n + 1));
    }
    let fold: BTreeMap<u32, usize> = episodes
        .iter()
        .enumerate()
        .map(|(n, &e)| (e, n % k))
        .collect();
    Ok(idx
        .iter()
        .map(|&i| fold[&problem.questions[i].episode_no])
        .collect())
}

/// Every key set at every price, scored out of fold over `idx`.
pub fn cross_validate(
    problem: &Problem,
    idx: &[usize],
    opts: &StrataOptions,
) -> Result<Vec<Candidate>, StrataError> {
    let fold = folds(problem, idx, opts.folds, opts.seed)?;
    let all = Mask::SUBSETS - 1;
    let total = |pick: &dyn Fn(usize) -> usize| {
        idx.iter().enumerate().fold((0.0, 0.0), |(u, t), (p, &i)| {
            let q = &problem.questions[i];
            (u + q.utility[pick(p)], t + q.tokens[pick(p)])
        })
    };
    let (u5, t5) = total(&|_| all);
    let share = |x: f64, of: f64| if of > 0.0 { x / of } else { 1.0 };
    let mut out = Vec::with_capacity(KEY_SETS.len() * opts.lambdas.len());
    for keys in KEY_SETS {
        for &lambda in &opts.lambdas {
            let mut picks = vec![all; idx.len()];
            let mut rules = 0;
            for f in 0..opts.folds {
                let train: Vec<usize> = idx
                    .iter()
                    .zip(&fold)
                    .filter(|&(_, &g)| g != f)
                    .map(|(&i, _)| i)
                    .collect();
                let fit = Fitted::fit(problem, &train, keys, lambda);
                rules += fit.rules();
                for (p, &i) in idx.iter().enumerate() {
                    if fold[p] == f {
                        picks[p] = fit.choose(problem, i);
                    }
                }
            }
            let (u, t) = total(&|p| picks[p]);
            out.push(Candidate {
                keys: keys_name(keys),
                lambda,
                j_share: share(u, u5),
                token_share: share(t, t5),
                rules: rules as f64 / opts.folds as f64,
            });
        }
    }
    Ok(out)
}

/// The candidate that best meets `target`, or `None` when none does.
/// `keep`: the fewest tokens among those keeping `share + margin` of J
/// (ties: fewer rules, then the earlier); `within`: the highest J among
/// those spending at most `tokens - margin` (ties: fewer tokens, rules).
pub fn choose_candidate(candidates: &[Candidate], target: Target) -> Option<usize> {
    let order = |a: &Candidate, b: &Candidate, first: [f64; 2], second: [f64; 2]| {
        first[0]
            .total_cmp(&first[1])
            .then(second[0].total_cmp(&second[1]))
            .then(a.rules.total_cmp(&b.rules))
    };
    let ok = |c: &Candidate| match target {
        Target::Keep { share, margin } => c.j_share >= share + margin,
        Target::Within { tokens, margin } => c.token_share <= tokens - margin,
    };
    let mut best: Option<usize> = None;
    for (n, c) in candidates.iter().enumerate() {
        if !ok(c) {
            continue;
        }
        let better = best.is_none_or(|b| {
            let b = &candidates[b];
            let o = match target {
                Target::Keep { .. } => {
                    order(c, b, [c.token_share, b.token_share], [b.j_share, c.j_share])
                }
                Target::Within { .. } => {
                    order(c, b, [b.j_share, c.j_share], [c.token_share, b.token_share])
                }
            };
            o.is_lt()
        });
        if better {
            best = Some(n);
        }
    }
    best
}
