//! Request counts and latency histograms per route, in the Prometheus text
//! format (`GET /metrics`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The server's counters.
#[derive(Default)]
pub struct Metrics {
    /// (method, route, status) -> requests.
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    /// (method, route) -> latency.
    latency: Mutex<BTreeMap<(String, String), Histogram>>,
}

impl Metrics {
    /// Counts one request.
    pub fn record(&self, method: &str, route: &str, status: u16, took: Duration) {
        let key = (method.to_string(), route.to_string());
        *self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((key.0.clone(), key.1.clone(), status))
            .or_default() += 1;
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = latency.entry(key).or_default();
        let s = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += s;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP mesa_http_requests_total Requests by method, route and status.\n");
        out.push_str("# TYPE mesa_http_requests_total counter\n");
        for ((m, r, s), n) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "mesa_http_requests_total{{method=\"{m}\",route=\"{r}\",status=\"{s}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP mesa_http_request_duration_seconds Request latency by method and route.\n",
        );
        out.push_str("# TYPE mesa_http_request_duration_seconds histogram\n");
        for ((m, r), h) in self
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let labels = format!("method=\"{m}\",route=\"{r}\"");
            for (b, c) in BUCKETS.iter().zip(h.counts) {
                let _ = writeln!(
                    out,
                    "mesa_http_request_duration_seconds_bucket{{{labels},le=\"{b}\"}} {c}"
                );
            }
            let _ = writeln!(
                out,
                "mesa_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "mesa_http_request_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "mesa_http_request_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }
        out
    }
}

/// Gauges of what the open tenants keep built in memory, summed over
/// them (`/metrics` needs no token, so it names no tenant), the budget
/// they share, and the counter of episodes it dropped, in the Prometheus
/// text format.
pub fn render_resident(resident: &[mesa_memory::Resident], budget: usize, dropped: u64) -> String {
    let episodes: usize = resident.iter().map(|r| r.episodes).sum();
    let steps: usize = resident.iter().map(|r| r.steps).sum();
    let n = |x: usize| x as u64;
    let metrics = [
        (
            "mesa_open_tenants",
            "gauge",
            "Tenants the server holds open.",
            n(resident.len()),
        ),
        (
            "mesa_resident_episodes",
            "gauge",
            "Built episodes the open tenants keep in memory.",
            n(episodes),
        ),
        (
            "mesa_resident_steps",
            "gauge",
            "Steps of the built episodes the open tenants keep in memory.",
            n(steps),
        ),
        (
            "mesa_resident_budget_steps",
            "gauge",
            "The steps the open tenants keep built at most, together (--resident-steps).",
            n(budget),
        ),
        (
            "mesa_resident_dropped_total",
            "counter",
            "Built episodes dropped for the budget (each is built again when asked).",
            dropped,
        ),
    ];
    let mut out = String::new();
    for (name, kind, help, value) in metrics {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name} {value}");
    }
    out
}
