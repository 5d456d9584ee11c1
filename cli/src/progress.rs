//! Progress bars on standard error, one style for every long command.

use indicatif::{ProgressBar, ProgressStyle};

/// A bar counting `what` (e.g. "building {pos}/{len} episodes"), hidden
/// when `quiet`. The length is set by the first progress report.
pub fn bar(quiet: bool, what: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} [{{bar:30}}] {{elapsed}} ({{eta}} left) {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar
}
