//! What the `mesa` binary's end-to-end test files share: running it from
//! the workspace root, temporary files and its output as text.
#![allow(dead_code)] // each test file uses its own part of these

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn mesa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mesa"))
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(root())
        .output()
        .expect("run mesa")
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn tmp(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("mesa-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path.to_string_lossy().into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
