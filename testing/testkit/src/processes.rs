//! Processes as Linux shows them in `/proc`: what a test checks when it
//! asks whether the processes something started are gone.

use std::path::Path;

/// The children of `parent` whose command name (at most 15 bytes, as the
/// kernel keeps it) starts with `prefix`.
pub fn children(parent: u32, prefix: &str) -> Vec<u32> {
    let parent = parent.to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces, so split at its last `)`.
            let (head, rest) = stat.rsplit_once(") ")?;
            let comm = head.split_once(" (")?.1;
            let ppid = rest.split(' ').nth(1)?;
            (ppid == parent && comm.starts_with(prefix)).then_some(pid)
        })
        .collect()
}

/// Whether the process `pid` no longer exists (exited and reaped).
pub fn is_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_seen_until_it_is_reaped() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        assert_eq!(children(std::process::id(), "sleep"), vec![child.id()]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(is_gone(child.id()));
        assert!(children(std::process::id(), "sleep").is_empty());
    }
}
