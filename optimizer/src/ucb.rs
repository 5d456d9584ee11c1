//! UCB over prior directions (the paper's Algorithm 1):
//!
//! `UCB(a) = mean_val(a) + beta * sqrt(ln(N + 2) / (n_a + 1))`
//!
//! where `mean_val(a)` is the mean val objective of direction `a`'s
//! candidates, `n_a` how many it has had and `N` the candidates over all
//! directions. A direction never tried has mean 0 and the largest bonus.
//! Candidates that fail (invalid, or the same policy as an earlier one)
//! count with the run's floor reward, the val objective of the seed policy:
//! they are trials that achieved nothing beyond the starting point.

use serde::{Deserialize, Serialize};

/// The statistics of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Arm {
    /// Candidates so far (`n_a`).
    pub n: u64,
    /// Sum of their rewards.
    pub sum: f64,
}

impl Arm {
    /// `mean_val(a)`: 0 before the first candidate.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
}

/// UCB statistics over a fixed list of directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ucb {
    /// The exploration weight `beta`.
    pub beta: f64,
    /// One arm per direction, in the directions' order.
    pub arms: Vec<Arm>,
}

impl Ucb {
    /// `arms` untried directions.
    pub fn new(arms: usize, beta: f64) -> Ucb {
        Ucb {
            beta,
            arms: vec![Arm::default(); arms],
        }
    }

    /// `N`: candidates over all directions.
    pub fn total(&self) -> u64 {
        self.arms.iter().map(|a| a.n).sum()
    }

    /// Records a candidate of direction `a` with its reward.
    pub fn update(&mut self, a: usize, reward: f64) {
        if let Some(arm) = self.arms.get_mut(a) {
            arm.n += 1;
            arm.sum += reward;
        }
    }

    /// The exploration bonus `beta * sqrt(ln(N + 2) / (n_a + 1))`.
    pub fn bonus(&self, a: usize) -> f64 {
        let n = self.total() as f64;
        let na = self.arms.get(a).map_or(0, |x| x.n) as f64;
        self.beta * ((n + 2.0).ln() / (na + 1.0)).sqrt()
    }

    /// `UCB(a)`.
    pub fn score(&self, a: usize) -> f64 {
        self.arms.get(a).map_or(0.0, Arm::mean) + self.bonus(a)
    }

    /// The direction with the highest UCB (the first on ties), among those
    /// `allowed`.
    pub fn best(&self, allowed: impl Fn(usize) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for a in (0..self.arms.len()).filter(|&a| allowed(a)) {
            if best.is_none_or(|b| self.score(a) > self.score(b)) {
                best = Some(a);
            }
        }
        best
    }

    /// The exploration pick: the largest bonus (fewest trials) other than
    /// `except`, ties broken by UCB and then by order.
    pub fn explore(&self, except: usize, allowed: impl Fn(usize) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for a in (0..self.arms.len()).filter(|&a| a != except && allowed(a)) {
            let better = match best {
                None => true,
                Some(b) => {
                    let (ba, bb) = (self.bonus(a), self.bonus(b));
                    ba > bb || (ba == bb && self.score(a) > self.score(b))
                }
            };
            if better {
                best = Some(a);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        let mut u = Ucb::new(3, 0.08);
        // Nothing tried: N = 0, every bonus is 0.08 * sqrt(ln 2 / 1).
        let b0 = 0.08 * (2f64).ln().sqrt();
        assert!((u.score(0) - b0).abs() < 1e-15);
        assert_eq!(u.best(|_| true), Some(0));
        u.update(0, 0.5);
        u.update(0, 0.7);
        u.update(1, 0.4);
        // N = 3: arm 0 has mean 0.6 and n = 2.
        let expect0 = 0.6 + 0.08 * ((5f64).ln() / 3.0).sqrt();
        let expect1 = 0.4 + 0.08 * ((5f64).ln() / 2.0).sqrt();
        let expect2 = 0.08 * (5f64).ln().sqrt();
        assert!((u.score(0) - expect0).abs() < 1e-12, "{}", u.score(0));
        assert!((u.score(1) - expect1).abs() < 1e-12);
        assert!((u.score(2) - expect2).abs() < 1e-12);
        assert_eq!(u.total(), 3);
        assert_eq!(u.best(|_| true), Some(0));
        assert_eq!(u.best(|a| a != 0), Some(1));
        // Exploration: arm 2 has never been tried.
        assert_eq!(u.explore(0, |_| true), Some(2));
        assert_eq!(u.explore(2, |_| true), Some(1));
        assert_eq!(Ucb::new(0, 0.08).best(|_| true), None);
    }
}
