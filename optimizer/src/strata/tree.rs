//! Trees of fixed subsets: strata found by splitting the questions on any
//! preview at a learned threshold, or on one domain against the rest.
//!
//! A tree is grown greedily: a node's questions are split by the test that
//! most raises `J - lambda * tokens` when each side reads its own best
//! fixed subset, as long as it raises it and each side keeps `min_leaf`
//! questions. Every leaf becomes one rule whose condition is its path
//! (`rule r_tokens_hi_t_named_lo when preview.R.tokens > 2400 and
//! preview.T.named < 0.5 -> select {S, T}`), so the policy stays a list of
//! explicit, disjoint rules a person can read. Thresholds are the roundest
//! number between two neighbouring values, so a rule reads `> 2400`, not
//! `> 2397.283`. A question of a domain the fit never saw goes where
//! "not this domain" goes.

use super::fit::{best_of, sums};
use crate::eval::Problem;
use crate::propose::spec::{Act, Cmp, Cond, PolicySpec, RuleSpec};
use mesa_core::{Feature, Mask, Structure};

/// How a node splits its questions.
#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// The domain `Problem::domains[d]` (compared as policies compare it,
    /// ignoring ASCII case) against every other.
    Domain(u16),
    /// `preview.K.f > threshold` against `< threshold`.
    Above {
        structure: Structure,
        feature: Feature,
        threshold: f64,
    },
}

impl Test {
    /// Which side question `i` goes to; `None` when it goes to neither
    /// (a preview equal to the threshold or not a number), and so reads
    /// the default, as the written policy does.
    fn side(&self, problem: &Problem, i: usize) -> Option<bool> {
        let q = &problem.questions[i];
        match *self {
            Test::Domain(d) => Some(
                q.domain
                    .eq_ignore_ascii_case(&problem.domains[usize::from(d)]),
            ),
            Test::Above {
                structure,
                feature,
                threshold,
            } => {
                let v = q.input.previews.get(structure, feature);
                if v > threshold {
                    Some(true)
                } else if v < threshold {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }

    /// The condition of one side, as the policy writes it.
    fn cond(&self, problem: &Problem, yes: bool) -> Cond {
        match *self {
            Test::Domain(d) => {
                let is = Cond::Domain {
                    values: vec![problem.domains[usize::from(d)].clone()],
                };
                if yes {
                    is
                } else {
                    Cond::Not { cond: Box::new(is) }
                }
            }
            Test::Above {
                structure,
                feature,
                threshold,
            } => Cond::Preview {
                structure,
                feature,
                op: if yes { Cmp::Gt } else { Cmp::Lt },
                threshold,
            },
        }
    }

    /// One side's part of a rule name: `text2sql`, `not_text2sql`, `r_tokens_hi`.
    fn name(&self, problem: &Problem, yes: bool) -> String {
        match *self {
            Test::Domain(d) => {
                let d = &problem.domains[usize::from(d)];
                if yes {
                    d.clone()
                } else {
                    format!("not_{d}")
                }
            }
            Test::Above {
                structure, feature, ..
            } => format!(
                "{}_{}_{}",
                structure.letter().to_ascii_lowercase(),
                feature.name(),
                if yes { "hi" } else { "lo" }
            ),
        }
    }
}

/// A node: the best subset of its questions, and its split if it has one.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    best: usize,
    split: Option<(Test, Box<Node>, Box<Node>)>,
}

/// A fitted tree: its root and the subset of questions no rule catches
/// (the root's best).
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    root: Node,
}

/// What growing a tree needs besides the questions.
#[derive(Debug, Clone, Copy)]
pub struct Grow {
    /// Levels of splits at most.
    pub depth: usize,
    /// The token price of the objective.
    pub lambda: f64,
    /// Questions each side of a split keeps at least.
    pub min_leaf: usize,
}

impl Tree {
    /// Grows a tree on the questions `idx` of `problem`.
    pub fn fit(problem: &Problem, idx: &[usize], grow: Grow) -> Tree {
        Tree {
            root: grow_node(problem, idx, grow, grow.depth),
        }
    }

    /// The same tree cut to `depth` levels (a greedy tree's first levels
    /// are the tree grown to that depth).
    pub fn truncated(&self, depth: usize) -> Tree {
        fn cut(n: &Node, depth: usize) -> Node {
            Node {
                best: n.best,
                split: match (&n.split, depth) {
                    (Some((t, no, yes)), d) if d > 0 => Some((
                        t.clone(),
                        Box::new(cut(no, d - 1)),
                        Box::new(cut(yes, d - 1)),
                    )),
                    _ => None,
                },
            }
        }
        Tree {
            root: cut(&self.root, depth),
        }
    }

    /// The leaves whose subset differs from the default, in the policy's
    /// rule order, each with its path.
    fn rule_leaves(&self) -> Vec<(Vec<(&Test, bool)>, usize)> {
        fn walk<'a>(
            n: &'a Node,
            path: &mut Vec<(&'a Test, bool)>,
            default: usize,
            out: &mut Vec<(Vec<(&'a Test, bool)>, usize)>,
        ) {
            match &n.split {
                Some((t, no, yes)) => {
                    for (side, child) in [(false, no), (true, yes)] {
                        path.push((t, side));
                        walk(child, path, default, out);
                        path.pop();
                    }
                }
                None if n.best != default => out.push((path.clone(), n.best)),
                None => {}
            }
        }
        let mut out = Vec::new();
        walk(&self.root, &mut Vec::new(), self.root.best, &mut out);
        out
    }

    /// The path to the leaf question `i` reaches; `None` when a test sends
    /// it nowhere.
    fn path(&self, problem: &Problem, i: usize) -> Option<Vec<(&Test, bool)>> {
        let mut n = &self.root;
        let mut path = Vec::new();
        while let Some((t, no, yes)) = &n.split {
            let side = t.side(problem, i)?;
            path.push((t, side));
            n = if side { yes } else { no };
        }
        Some(path)
    }

    /// The rule that decides question `i`, numbered as the policy writes
    /// them; `None` for the default.
    pub fn rule_of(&self, problem: &Problem, i: usize) -> Option<usize> {
        let path = self.path(problem, i)?;
        self.rule_leaves().iter().position(|(p, _)| *p == path)
    }

    /// The mask index the tree reads for question `i` (its leaf's, or the
    /// default when a test sends it nowhere); no path is kept.
    pub fn choose(&self, problem: &Problem, i: usize) -> usize {
        let mut n = &self.root;
        while let Some((t, no, yes)) = &n.split {
            match t.side(problem, i) {
                Some(true) => n = yes,
                Some(false) => n = no,
                None => return self.root.best,
            }
        }
        n.best
    }

    /// The mask index of questions no leaf's rule decides (the root's best).
    pub fn default_subset(&self) -> usize {
        self.root.best
    }

    /// Leaves with a rule of their own.
    pub fn rules(&self) -> usize {
        self.rule_leaves().len()
    }

    /// The tree as a policy: one `select` rule per leaf that differs from
    /// the default (leaves are disjoint, so their order is free).
    pub fn spec(&self, problem: &Problem, name: &str) -> PolicySpec {
        let rules = self
            .rule_leaves()
            .into_iter()
            .map(|(path, best)| {
                let parts: Vec<String> = path.iter().map(|(t, s)| t.name(problem, *s)).collect();
                RuleSpec {
                    name: mesa_grammar::identifier_from(&parts.join("_"), "s"),
                    cond: path
                        .iter()
                        .map(|(t, s)| t.cond(problem, *s))
                        .reduce(Cond::and),
                    action: Act::Select,
                    mask: Mask::subset(best),
                }
            })
            .collect();
        PolicySpec {
            name: name.to_string(),
            rules,
            default: Mask::subset(self.root.best),
            budget: None,
            trade: None,
        }
    }
}

fn grow_node(problem: &Problem, idx: &[usize], grow: Grow, depth: usize) -> Node {
    let (util, tok) = sums(problem, idx);
    let (best, value) = best_of(&util, &tok, grow.lambda);
    let split = if depth == 0 || idx.len() < 2 * grow.min_leaf.max(1) {
        None
    } else {
        best_split(problem, idx, grow, (&util, &tok), value)
    };
    Node {
        best,
        split: split.map(|t| {
            let (yes, no): (Vec<usize>, Vec<usize>) = idx
                .iter()
                .filter(|&&i| t.side(problem, i).is_some())
                .partition(|&&i| t.side(problem, i) == Some(true));
            let no = grow_node(problem, &no, grow, depth - 1);
            let yes = grow_node(problem, &yes, grow, depth - 1);
            (t, Box::new(no), Box::new(yes))
        }),
    }
}

/// Utility and tokens of each subset over a node's questions ([`sums`]).
type Sums<'a> = (&'a [f64; Mask::SUBSETS], &'a [f64; Mask::SUBSETS]);

/// The test whose two sides, each reading its best subset, have the
/// highest objective, if it beats `value` (the node's own best); `total`
/// is the node's [`sums`].
fn best_split(
    problem: &Problem,
    idx: &[usize],
    grow: Grow,
    total: Sums,
    value: f64,
) -> Option<Test> {
    let min = grow.min_leaf.max(1);
    let mut best: Option<(f64, Test)> = None;
    let mut offer = |v: f64, t: Test| {
        if v > value + 1e-9 * value.abs().max(1.0) && best.as_ref().is_none_or(|(b, _)| v > *b) {
            best = Some((v, t));
        }
    };
    let (util, tok) = total;
    for d in 0..problem.domains.len() {
        let Ok(d) = u16::try_from(d) else { break };
        let test = Test::Domain(d);
        let yes: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|&i| test.side(problem, i) == Some(true))
            .collect();
        if yes.len() < min || idx.len() - yes.len() < min {
            continue;
        }
        let (uy, ty) = sums(problem, &yes);
        let un: Vec<f64> = util.iter().zip(&uy).map(|(a, b)| a - b).collect();
        let tn: Vec<f64> = tok.iter().zip(&ty).map(|(a, b)| a - b).collect();
        let v = best_of(&uy, &ty, grow.lambda).1 + best_of(&un, &tn, grow.lambda).1;
        offer(v, test);
    }
    for structure in Structure::ALL {
        if !problem.available[structure.index()] {
            continue;
        }
        for feature in Feature::ALL {
            if let Some((v, threshold)) =
                best_threshold(problem, idx, (structure, feature), grow, total)
            {
                offer(
                    v,
                    Test::Above {
                        structure,
                        feature,
                        threshold,
                    },
                );
            }
        }
    }
    best.map(|(_, t)| t)
}

/// The best threshold on `preview.K.f` over `idx` and its objective;
/// `None` when the feature is constant, not a number for some question,
/// or no threshold leaves `min_leaf` on each side.
fn best_threshold(
    problem: &Problem,
    idx: &[usize],
    (structure, feature): (Structure, Feature),
    grow: Grow,
    (util, tok): Sums,
) -> Option<(f64, f64)> {
    let min = grow.min_leaf.max(1);
    let mut vals: Vec<(f64, usize)> = idx
        .iter()
        .map(|&i| {
            (
                problem.questions[i].input.previews.get(structure, feature),
                i,
            )
        })
        .collect();
    if vals.iter().any(|(v, _)| !v.is_finite()) {
        return None;
    }
    vals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut lo_u = [0.0; Mask::SUBSETS];
    let mut lo_t = [0.0; Mask::SUBSETS];
    let mut hi_u = [0.0; Mask::SUBSETS];
    let mut hi_t = [0.0; Mask::SUBSETS];
    let mut best: Option<(f64, f64)> = None;
    for p in 0..vals.len().saturating_sub(1) {
        let q = &problem.questions[vals[p].1];
        for k in 0..Mask::SUBSETS {
            lo_u[k] += q.utility[k];
            lo_t[k] += q.tokens[k];
        }
        let (a, b) = (vals[p].0, vals[p + 1].0);
        if p + 1 < min || vals.len() - p - 1 < min || a >= b {
            continue;
        }
        let Some(t) = roundest_between(a, b) else {
            continue;
        };
        for k in 0..Mask::SUBSETS {
            hi_u[k] = util[k] - lo_u[k];
            hi_t[k] = tok[k] - lo_t[k];
        }
        let v = best_of(&lo_u, &lo_t, grow.lambda).1 + best_of(&hi_u, &hi_t, grow.lambda).1;
        if best.is_none_or(|(bv, _)| v > bv) {
            best = Some((v, t));
        }
    }
    best
}

/// The number strictly between `a < b` with the fewest significant
/// decimals (so a rule reads `> 2400`, not `> 2397.283`), or their
/// midpoint; `None` when no float lies between them.
pub(super) fn roundest_between(a: f64, b: f64) -> Option<f64> {
    for p in -6i32..=12 {
        // Powers of ten up to 1e22 are exact: an integer times one is
        // exact, and one divided by one is the nearest float to the decimal.
        let s = 10f64.powi(p.abs());
        let (scaled, at): (f64, &dyn Fn(f64) -> f64) = if p < 0 {
            (a / s, &|k| k * s)
        } else {
            (a * s, &|k| k / s)
        };
        // `a * s` may round down a step: the next multiple may equal `a`.
        let mut c = at(scaled.floor() + 1.0);
        if c <= a {
            c = at(scaled.floor() + 2.0);
        }
        if c > a && c < b {
            return Some(c);
        }
    }
    let mid = a + (b - a) / 2.0;
    (mid > a && mid < b).then_some(mid)
}
