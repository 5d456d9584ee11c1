//! Key-set strata: the keys, fitting one subset per stratum (and joining
//! bagged fits), and writing the fit as a policy. The cross-validation that
//! chooses among them is in `cv.rs`.

use crate::eval::Problem;
use crate::propose::spec::{Act, Cmp, Cond, PolicySpec, RuleSpec};
use mesa_core::{Feature, Mask, Structure};
use std::collections::{BTreeMap, BTreeSet};

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

/// Utility and tokens of each subset summed over `idx`.
pub(super) fn sums(
    problem: &Problem,
    idx: &[usize],
) -> ([f64; Mask::SUBSETS], [f64; Mask::SUBSETS]) {
    let mut util = [0.0; Mask::SUBSETS];
    let mut tok = [0.0; Mask::SUBSETS];
    for &i in idx {
        let q = &problem.questions[i];
        for k in 0..Mask::SUBSETS {
            util[k] += q.utility[k];
            tok[k] += q.tokens[k];
        }
    }
    (util, tok)
}

/// The mask index with the highest `util - lambda * tok`, and that value;
/// ties go to fewer tokens, then to the lower index.
pub(super) fn best_of(util: &[f64], tok: &[f64], lambda: f64) -> (usize, f64) {
    let value = |k: usize| util[k] - lambda * tok[k];
    let best = (0..Mask::SUBSETS).fold(Mask::SUBSETS - 1, |best, k| {
        let (v, b) = (value(k), value(best));
        if v > b || (v == b && (tok[k], k) < (tok[best], best)) {
            k
        } else {
            best
        }
    });
    (best, value(best))
}

/// The mask index with the highest `utility - lambda * tokens` summed over
/// `idx` ([`best_of`] of [`sums`]).
fn best_subset(problem: &Problem, idx: &[usize], lambda: f64) -> usize {
    let (util, tok) = sums(problem, idx);
    best_of(&util, &tok, lambda).0
}

/// The best subset of each of `keys`' strata over `idx`, kept where it
/// differs from `default`. Each stratum's sums gain `prior` questions'
/// worth of the mean over all of `idx` (shrinkage toward the pooled fit).
fn fit_strata(
    problem: &Problem,
    idx: &[usize],
    keys: &[Key],
    lambda: f64,
    default: usize,
    prior: u32,
) -> BTreeMap<Stratum, usize> {
    let mut groups: BTreeMap<Stratum, Vec<usize>> = BTreeMap::new();
    for &i in idx {
        if let Some(s) = stratum(problem, i, keys) {
            groups.entry(s).or_default().push(i);
        }
    }
    let (pooled_u, pooled_t) = sums(problem, idx);
    let weight = f64::from(prior) / idx.len().max(1) as f64;
    groups
        .into_iter()
        .map(|(s, g)| {
            let (mut util, mut tok) = sums(problem, &g);
            if prior > 0 {
                for k in 0..Mask::SUBSETS {
                    util[k] += weight * pooled_u[k];
                    tok[k] += weight * pooled_t[k];
                }
            }
            (s, best_of(&util, &tok, lambda).0)
        })
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

    /// Fits `keys`' strata on `idx` at the token price `lambda`, each
    /// stratum shrunk toward the pooled questions by `prior`
    /// pseudo-questions.
    pub fn fit(problem: &Problem, idx: &[usize], keys: &[Key], lambda: f64, prior: u32) -> Fitted {
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
            strata: fit_strata(problem, idx, keys, lambda, default, prior),
            backoff: if by_domain {
                fit_strata(problem, idx, &backoff_keys, lambda, default, prior)
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
    pub fn rule_of(&self, problem: &Problem, i: usize) -> Option<usize> {
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

    /// The mask index of questions no stratum's rule decides.
    pub fn default_subset(&self) -> usize {
        self.default
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
        PolicySpec {
            name: name.to_string(),
            rules,
            default: Mask::subset(self.default),
            budget: None,
            trade: None,
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

/// The union of two mask indices, as [`Mask::union`] joins them.
fn union(a: usize, b: usize) -> usize {
    Mask::subset(a)
        .union(Mask::subset(b))
        .subset_index()
        .unwrap_or(Mask::SUBSETS - 1)
}

impl Fitted {
    /// Fits of the same keys joined: each stratum reads every structure
    /// any of them reads there (a stratum one fit leaves to its default
    /// reads that default).
    pub fn union(fits: &[Fitted]) -> Fitted {
        let Some(first) = fits.first() else {
            return Fitted::all_five();
        };
        let default = fits.iter().fold(first.default, |d, f| union(d, f.default));
        // Where the domain sits among the keys (every fit has the same keys).
        let domain_at = first.keys.iter().position(|k| *k == Key::Domain);
        // What fit `f` reads for stratum `s` of its keys: a domain it never
        // saw reads its backoff, as `choose` does.
        let read = |f: &Fitted, s: &Stratum| -> usize {
            match domain_at {
                Some(d) if f.known.binary_search(&s[d]).is_err() => {
                    let mut b = s.clone();
                    b.remove(d);
                    f.backoff.get(&b).copied().unwrap_or(f.default)
                }
                _ => f.strata.get(s).copied().unwrap_or(f.default),
            }
        };
        let mut known: Vec<u16> = fits.iter().flat_map(|f| f.known.clone()).collect();
        known.sort_unstable();
        known.dedup();
        // Every stratum some fit reads apart from its default: its own, and
        // its backoff's in each domain another fit saw.
        let mut keys: BTreeSet<Stratum> = BTreeSet::new();
        for f in fits {
            keys.extend(f.strata.keys().cloned());
            if let Some(d) = domain_at {
                for b in f.backoff.keys() {
                    for &domain in &known {
                        let mut s = b.clone();
                        s.insert(d, domain);
                        keys.insert(s);
                    }
                }
            }
        }
        // Each reads the union of what every fit reads there.
        let joined = |keys: BTreeSet<Stratum>, read: &dyn Fn(&Fitted, &Stratum) -> usize| {
            keys.into_iter()
                .filter_map(|s| {
                    let k = fits.iter().map(|f| read(f, &s)).reduce(union)?;
                    (k != default).then_some((s, k))
                })
                .collect::<BTreeMap<Stratum, usize>>()
        };
        let strata = joined(keys, &read);
        let backoff = joined(
            fits.iter()
                .flat_map(|f| f.backoff.keys().cloned())
                .collect(),
            &|f, s| f.backoff.get(s).copied().unwrap_or(f.default),
        );
        Fitted {
            keys: first.keys.clone(),
            strata,
            known,
            backoff_keys: first.backoff_keys.clone(),
            backoff,
            default,
        }
    }
}
