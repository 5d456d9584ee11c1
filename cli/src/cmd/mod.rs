//! One module per subcommand.

pub mod check;
pub mod fmt;
pub mod run;
pub mod std_cmd;
