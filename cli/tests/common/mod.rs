//! What the `mesa` binary's end-to-end test files share: running it from
//! the workspace root, temporary files and its output as text.
#![allow(dead_code)] // each test file uses its own part of these

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// The `mesa` binary as a command, run where the test runs.
pub fn command() -> std::process::Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mesa"));
    c.env("NO_COLOR", "1");
    c
}

/// `mesa ARGS...`: whether it succeeded, its output and its errors.
pub fn run(args: &[&str]) -> (bool, String, String) {
    let o = command().args(args).output().expect("run mesa");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `mesa ARGS...` with these environment variables and `input` on its
/// standard input.
pub fn run_with(env: &[(&str, &str)], args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = command()
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mesa");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("input");
    drop(stdin);
    let o = child.wait_with_output().expect("mesa ends");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.success(), text(&o.stdout), text(&o.stderr))
}

/// `mesa CMD ROOT --tenant t --episode EPISODE REST...`
pub fn on(root: &str, cmd: &str, episode: &str, rest: &[&str]) -> (bool, String, String) {
    let mut args = vec![cmd, root, "--tenant", "t", "--episode", episode];
    args.extend_from_slice(rest);
    run(&args)
}
