//! The last step of checking: drop cue sets no rule uses, and list what the
//! program needs from its host.

use crate::ir::{BoolExpr, Feature, Features, MaskExpr, NumExpr, Program};
use mesa_core::Structure;
use mesa_grammar::ast::{MetaField, Subject};

/// What a walk over the program found.
#[derive(Default)]
struct Uses {
    sets: Vec<bool>,
    patterns: Vec<bool>,
    query: bool,
    task: bool,
    domain: bool,
    qtype: bool,
    previews: [[bool; Feature::COUNT]; 5],
}

impl Uses {
    fn subject(&mut self, s: Subject) {
        match s {
            Subject::Query => self.query = true,
            Subject::Task => self.task = true,
        }
    }

    fn num(&mut self, e: &mut NumExpr, remap: Option<(&[usize], &[usize])>) {
        match e {
            NumExpr::Const(_) | NumExpr::Size => {}
            NumExpr::Preview(s, f) => self.previews[s.index()][f.index()] = true,
            NumExpr::WordCount(s) => self.subject(*s),
            NumExpr::Hits(s, id) => {
                self.subject(*s);
                self.sets[*id] = true;
                if let Some((sets, _)) = remap {
                    *id = sets[*id];
                }
            }
            NumExpr::Neg(a) => self.num(a, remap),
            NumExpr::Add(a, b) | NumExpr::Sub(a, b) | NumExpr::Mul(a, b) | NumExpr::Div(a, b) => {
                self.num(a, remap);
                self.num(b, remap);
            }
            NumExpr::Min(v) | NumExpr::Max(v) => v.iter_mut().for_each(|x| self.num(x, remap)),
            NumExpr::If(c, a, b) => {
                self.boolean(c, remap);
                self.num(a, remap);
                self.num(b, remap);
            }
        }
    }

    fn boolean(&mut self, e: &mut BoolExpr, remap: Option<(&[usize], &[usize])>) {
        match e {
            BoolExpr::Const(_) => {}
            BoolExpr::Has(s, id) => {
                self.subject(*s);
                self.sets[*id] = true;
                if let Some((sets, _)) = remap {
                    *id = sets[*id];
                }
            }
            BoolExpr::Matches(s, id) => {
                self.subject(*s);
                self.patterns[*id] = true;
                if let Some((_, pats)) = remap {
                    *id = pats[*id];
                }
            }
            BoolExpr::MetaIn(MetaField::Domain, _) => self.domain = true,
            BoolExpr::MetaIn(MetaField::Qtype, _) => self.qtype = true,
            BoolExpr::Cmp(_, a, b) => {
                self.num(a, remap);
                self.num(b, remap);
            }
            BoolExpr::And(v) | BoolExpr::Or(v) => v.iter_mut().for_each(|x| self.boolean(x, remap)),
            BoolExpr::Not(a) => self.boolean(a, remap),
            BoolExpr::If(c, a, b) => {
                self.boolean(c, remap);
                self.boolean(a, remap);
                self.boolean(b, remap);
            }
        }
    }

    fn program(&mut self, p: &mut Program, remap: Option<(&[usize], &[usize])>) {
        let mut uses_top = false;
        for rule in &mut p.rules {
            self.boolean(&mut rule.cond, remap);
            if let MaskExpr::Top { above, .. } = &mut rule.mask {
                uses_top = true;
                if let Some(a) = above {
                    self.num(a, remap);
                }
            }
        }
        if uses_top {
            for s in Structure::ALL {
                match &mut p.scores[s.index()] {
                    Some(score) => self.num(score, remap),
                    None => self.previews[s.index()][Feature::Top.index()] = true,
                }
            }
        }
        if p.budget.is_some() || p.trade.is_some() {
            for s in Structure::ALL {
                self.previews[s.index()][Feature::Tokens.index()] = true;
            }
        }
    }
}

/// Drops unused keyword sets and patterns and fills in `program.features`.
/// Scores are only evaluated by `top`, so a policy without `top` drops them.
pub(crate) fn finish(program: &mut Program) {
    let mut uses = Uses {
        sets: vec![false; program.keyword_sets.len()],
        patterns: vec![false; program.patterns.len()],
        ..Uses::default()
    };
    uses.program(program, None);
    let renumber = |used: &[bool]| -> Vec<usize> {
        let mut next = 0;
        used.iter()
            .map(|&u| {
                let id = next;
                next += usize::from(u);
                id
            })
            .collect()
    };
    let set_map = renumber(&uses.sets);
    let pat_map = renumber(&uses.patterns);
    let mut second = Uses {
        sets: uses.sets.clone(),
        patterns: uses.patterns.clone(),
        ..Uses::default()
    };
    second.program(program, Some((&set_map, &pat_map)));
    let mut keep = uses.sets.iter();
    program
        .keyword_sets
        .retain(|_| *keep.next().unwrap_or(&false));
    let mut keep = uses.patterns.iter();
    program.patterns.retain(|_| *keep.next().unwrap_or(&false));
    if !program
        .rules
        .iter()
        .any(|r| matches!(r.mask, MaskExpr::Top { .. }))
    {
        program.scores = Default::default();
    }
    let mut previews = Vec::new();
    for s in Structure::ALL {
        for f in Feature::ALL {
            if uses.previews[s.index()][f.index()] {
                previews.push(mesa_core::PreviewKey::new(s, f));
            }
        }
    }
    program.features = Features {
        query: uses.query,
        task: uses.task,
        domain: uses.domain,
        qtype: uses.qtype,
        previews,
        shown: program.trade.map(|t| t.unit),
    };
}
