//! A deterministic synthetic sweep with planted structure, for tests and
//! timing runs: the best subset depends on the question type (which the
//! query's wording reveals most of the time), on the domain, on a few
//! cross-cutting keywords, and on the previews (a structure with no hits
//! adds nothing but tokens and distraction). A fixed subset therefore
//! leaves utility on the table that rules over cues and previews can win.

use super::SweepRecord;
use crate::rng::Rng;
use mesa_core::{Mask, Previews};

/// The six AMA-Bench domains.
pub const DOMAINS: [&str; 6] = [
    "TEXT2SQL",
    "SOFTWARE",
    "WEB",
    "GAME",
    "EMBODIED_AI",
    "OPENWORLD_QA",
];
/// AMA-Bench's question types: recall, causal inference, state updating,
/// state abstraction.
pub const QTYPES: [&str; 4] = ["A", "B", "C", "D"];

/// Size and seed of a synthetic sweep.
#[derive(Debug, Clone)]
pub struct SyntheticConfig {
    /// Episodes (trajectories).
    pub episodes: usize,
    /// Questions per episode.
    pub questions_per_episode: usize,
    /// The random seed.
    pub seed: u64,
    /// Share of questions with labels.
    pub labelled_share: f64,
    /// Standard deviation of the per-question relevance noise.
    pub noise: f64,
}

impl Default for SyntheticConfig {
    /// About AMA-Bench's size: 208 episodes of 12 questions (2,496).
    fn default() -> Self {
        SyntheticConfig {
            episodes: 208,
            questions_per_episode: 12,
            seed: 1,
            labelled_share: 0.92,
            noise: 0.12,
        }
    }
}

/// Base relevance of S, T, G, V, R per question type.
const BASE: [[f64; 5]; 4] = [
    [0.20, 0.80, 0.20, 0.50, 0.70], // A: recall needs the step store and raw windows
    [0.60, 0.50, 0.15, 0.30, 0.75], // B: causal needs summary, order and raw detail
    [0.50, 0.60, 0.65, 0.55, 0.20], // C: state needs the graph and the vectors
    [0.85, 0.30, 0.45, 0.45, 0.25], // D: abstraction needs the summary
];

/// Relevance multipliers of S, T, G, V, R per domain.
const DOMAIN_MULT: [[f64; 5]; 6] = [
    [1.0, 1.0, 0.6, 1.0, 1.3], // TEXT2SQL: raw SQL and errors
    [1.0, 1.1, 0.9, 0.9, 1.2], // SOFTWARE
    [1.0, 0.9, 0.8, 1.3, 1.0], // WEB: pages are best found by similarity
    [0.9, 1.0, 1.4, 0.8, 0.7], // GAME: rules and objects form a graph
    [1.0, 1.1, 1.2, 1.0, 0.9], // EMBODIED_AI
    [1.1, 0.8, 1.0, 1.3, 0.9], // OPENWORLD_QA
];

const NOUNS: [[&str; 4]; 6] = [
    ["table", "column", "join", "schema"],
    ["test", "function", "build", "module"],
    ["page", "button", "link", "form"],
    ["rule", "door", "key", "grid"],
    ["room", "drawer", "fridge", "object"],
    ["source", "fact", "search", "claim"],
];

const TASKS: [&str; 6] = [
    "Answer a natural-language question by writing SQL over a database",
    "Fix the failing tests of a Python repository",
    "Complete a shopping task on a web site",
    "Solve a rule-manipulation grid puzzle",
    "Tidy up a household environment with a robot",
    "Answer an open-world question by searching the web",
];

/// Question templates per type; `{n}` is a step, `{x}` a domain noun.
const TEMPLATES: [[&str; 3]; 4] = [
    [
        "What did the agent do at step {n}?",
        "Which {x} was opened at step {n}?",
        "What was the observation at turn {n}?",
    ],
    [
        "Why did the {x} fail after step {n}?",
        "What caused the {x} error?",
        "Which action led to the failure of the {x}?",
    ],
    [
        "What is the current state of the {x}?",
        "How did the {x} change during the episode?",
        "Where is the {x} located now?",
    ],
    [
        "Summarize the overall strategy of the agent.",
        "What was the main goal behind the {x} actions?",
        "What lesson can be drawn from how the agent handled the {x}?",
    ],
];

/// Templates that give the type away less (a fifth of the questions).
const NEUTRAL: [&str; 3] = [
    "Tell me about the {x} in this episode.",
    "What about the {x} near step {n}?",
    "Describe the {x} involvement.",
];

/// Mean tokens and spread of S, T, G, V, R.
const TOKENS: [(f64, f64); 5] = [
    (700.0, 100.0),
    (1800.0, 500.0),
    (1200.0, 300.0),
    (2200.0, 400.0),
    (5000.0, 1500.0),
];

/// Chance that a structure finds nothing (zero hits) for a question.
const P_EMPTY: [f64; 5] = [0.0, 0.12, 0.25, 0.05, 0.15];

/// Generates the records of a synthetic sweep.
pub fn generate(config: &SyntheticConfig) -> Vec<SweepRecord> {
    let mut rng = Rng::new(config.seed);
    let mut out = Vec::with_capacity(config.episodes * config.questions_per_episode);
    for e in 0..config.episodes {
        let d = rng.below(DOMAINS.len());
        for q in 0..config.questions_per_episode {
            out.push(question(config, &mut rng, e, q, d));
        }
    }
    out
}

fn question(config: &SyntheticConfig, rng: &mut Rng, e: usize, q: usize, d: usize) -> SweepRecord {
    let t = rng.below(QTYPES.len());
    let noun = NOUNS[d][rng.below(4)];
    let step = rng.below(120);
    let template = if rng.unit() < 0.8 {
        TEMPLATES[t][rng.below(3)]
    } else {
        NEUTRAL[rng.below(3)]
    };
    let mut query = template
        .replace("{x}", noun)
        .replace("{n}", &step.to_string());
    // A cross-cutting cue: asking for exact output makes raw windows worth
    // their tokens whatever the type.
    let exact = rng.unit() < 0.15;
    if exact {
        query.push_str(" Quote the exact output.");
    }
    let mut rel = [0.0f64; 5];
    let mut previews = [[0.0f64; 3]; 5];
    for k in 0..5 {
        let hits = if rng.unit() < P_EMPTY[k] {
            0.0
        } else {
            (1 + rng.below(6)) as f64
        };
        let mut r = BASE[t][k] * DOMAIN_MULT[d][k] + config.noise * rng.normal();
        if exact && k == 4 {
            r += 0.35;
        }
        r = r.clamp(0.0, 0.98);
        if hits == 0.0 {
            r = 0.0;
        }
        rel[k] = r;
        let (mean, sd) = TOKENS[k];
        let tokens = if hits == 0.0 {
            40.0
        } else {
            (mean + sd * rng.normal()).max(100.0).round()
        };
        let top = if hits == 0.0 {
            0.0
        } else {
            ((r + 0.1 * rng.normal()).clamp(0.01, 1.0) * 1000.0).round() / 1000.0
        };
        previews[k] = [tokens, top, hits];
    }
    let mut utility = [0.0; Mask::SUBSETS];
    let mut tokens = [0.0; Mask::SUBSETS];
    for (i, (u, c)) in utility.iter_mut().zip(tokens.iter_mut()).enumerate() {
        let m = Mask::subset(i);
        let mut miss = 1.0;
        let mut distract = 0.0;
        for s in m.iter() {
            let k = s.index();
            miss *= 1.0 - rel[k];
            if rel[k] < 0.25 {
                distract += 0.06;
            }
            *c += previews[k][0];
        }
        *u = ((1.0 - miss - distract).clamp(0.0, 1.0) * 1e6).round() / 1e6;
    }
    SweepRecord {
        episode: e.to_string(),
        question_id: format!("{e}:{q}"),
        domain: DOMAINS[d].to_string(),
        qtype: Some(QTYPES[t].to_string()),
        task: TASKS[d].to_string(),
        query,
        labelled: rng.unit() < config.labelled_share,
        previews: Previews::basic(previews),
        utility,
        tokens,
        coverage: None,
    }
}
