//! Where the functions' binaries are: the `bootstrap` of each crate in
//! `functions/` as the workspace's normal build makes it (`cargo build -p
//! sluice-fn-fetch` → `target/debug/sluice-fn-fetch`), no `cargo lambda`
//! and no release build needed.
//!
//! A binary counts as stale when a source file its build read (listed in
//! the `.d` file cargo writes beside it) is newer than it: the same mtime
//! test cargo applies to path dependencies. [`FunctionBinaries::check`]
//! names what is missing or stale; [`FunctionBinaries::for_tests`] builds
//! it with cargo, once per test process, so a test never runs old code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

/// The binaries cannot be used as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinariesError {
    #[error("{missing} not found in {dir}: build them with `cargo build {packages}` (or pass their directory)")]
    Missing { missing: String, dir: String, packages: String },
    #[error("{stale} in {dir} are older than their sources: rebuild them with `cargo build {packages}`")]
    Stale { stale: String, dir: String, packages: String },
    #[error("building the functions failed: {0}")]
    Build(String),
}

/// The directory holding the function binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionBinaries {
    dir: PathBuf,
}

impl FunctionBinaries {
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Beside the running executable: where cargo puts a workspace's
    /// binaries, `sluice` among them.
    pub fn beside_current_exe() -> std::io::Result<Self> {
        let exe = std::env::current_exe()?;
        Ok(Self::in_dir(exe.parent().unwrap_or(Path::new(".")).to_path_buf()))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, binary: &str) -> PathBuf {
        self.dir.join(binary)
    }

    /// `Ok` when each of `binaries` is there and no older than its sources.
    pub fn check(&self, binaries: &[&str]) -> Result<(), BinariesError> {
        let packages = |names: &[&str]| names.iter().map(|n| format!("-p {n}")).collect::<Vec<_>>().join(" ");
        let dir = self.dir.display().to_string();
        let missing: Vec<&str> = binaries.iter().copied().filter(|b| !self.path(b).is_file()).collect();
        if !missing.is_empty() {
            return Err(BinariesError::Missing { missing: missing.join(", "), dir, packages: packages(&missing) });
        }
        let stale: Vec<&str> = binaries.iter().copied().filter(|b| self.is_stale(b)).collect();
        if !stale.is_empty() {
            return Err(BinariesError::Stale { stale: stale.join(", "), dir, packages: packages(&stale) });
        }
        Ok(())
    }

    /// Whether a source `binary`'s build read is newer than it (or gone).
    fn is_stale(&self, binary: &str) -> bool {
        let Some(built) = modified(&self.path(binary)) else { return true };
        let Ok(deps) = std::fs::read_to_string(self.dir.join(format!("{binary}.d"))) else { return false };
        dep_info_sources(&deps).iter().any(|source| modified(Path::new(source)).is_none_or(|m| m > built))
    }

    /// For tests: the binaries in the directory of the test's own profile
    /// (`target/debug` for `target/debug/deps/<test>`), built with cargo
    /// first when missing or stale. Panics, naming the problem, when they
    /// cannot be built.
    pub fn for_tests(binaries: &[&str]) -> Self {
        static BUILT: Mutex<()> = Mutex::new(());
        let _once = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
        let exe = std::env::current_exe().expect("the test's own path");
        let profile_dir = exe.parent().and_then(Path::parent).expect("a test runs from <target>/<profile>/deps");
        let found = Self::in_dir(profile_dir);
        if found.check(binaries).is_ok() {
            return found;
        }
        build(profile_dir, binaries).unwrap_or_else(|e| panic!("{e}"));
        found.check(binaries).unwrap_or_else(|e| panic!("after building them: {e}"));
        found
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The source files of a dep-info file (`target: a.rs b.rs …`, a space in
/// a path escaped as `\ `).
fn dep_info_sources(text: &str) -> Vec<String> {
    let Some(first) = text.lines().next() else { return Vec::new() };
    let Some((_, deps)) = first.split_once(": ") else { return Vec::new() };
    let mut sources = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                current.push(' ');
                chars.next();
            }
            ' ' => sources.extend((!current.is_empty()).then(|| std::mem::take(&mut current))),
            c => current.push(c),
        }
    }
    sources.extend((!current.is_empty()).then_some(current));
    sources
}

/// `cargo build -p …` into the profile whose directory is `profile_dir`.
fn build(profile_dir: &Path, binaries: &[&str]) -> Result<(), BinariesError> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let target_dir = profile_dir.parent().ok_or_else(|| BinariesError::Build("no target directory".into()))?;
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "--manifest-path", manifest, "--target-dir"]).arg(target_dir);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(profile) => {
            command.args(["--profile", profile]);
        }
        None => return Err(BinariesError::Build(format!("{} is no profile directory", profile_dir.display()))),
    }
    for binary in binaries {
        command.args(["-p", binary]);
    }
    let output = command.output().map_err(|e| BinariesError::Build(format!("cannot run cargo: {e}")))?;
    if !output.status.success() {
        return Err(BinariesError::Build(String::from_utf8_lossy(&output.stderr).into_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_lists_each_source() {
        let text = "/t/debug/fn: /w/a.rs /w/my\\ dir/b.rs\n\n/w/a.rs:\n";
        assert_eq!(dep_info_sources(text), vec!["/w/a.rs".to_owned(), "/w/my dir/b.rs".to_owned()]);
    }

    #[test]
    fn a_missing_or_stale_binary_is_named_with_the_command_that_builds_it() {
        let dir = std::env::temp_dir().join(format!("sluice-binaries-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let binaries = FunctionBinaries::in_dir(&dir);
        let err = binaries.check(&["sluice-fn-a"]).unwrap_err().to_string();
        assert!(err.starts_with("sluice-fn-a not found in") && err.contains("`cargo build -p sluice-fn-a`"), "{err}");
        std::fs::write(dir.join("sluice-fn-a"), "").unwrap();
        let source = dir.join("a.rs");
        std::fs::write(
            dir.join("sluice-fn-a.d"),
            format!("{}: {}\n", dir.join("sluice-fn-a").display(), source.display()),
        )
        .unwrap();
        // The source is newer than the binary once it is written after it.
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::write(&source, "").unwrap();
        std::fs::File::options().write(true).open(&source).unwrap().set_modified(later).unwrap();
        assert!(matches!(binaries.check(&["sluice-fn-a"]), Err(BinariesError::Stale { .. })));
        std::fs::File::options().write(true).open(dir.join("sluice-fn-a")).unwrap().set_modified(later).unwrap();
        assert_eq!(binaries.check(&["sluice-fn-a"]), Ok(()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
