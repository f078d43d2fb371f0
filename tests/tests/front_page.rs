//! `README.md` is a front page: what sluice is, the two commands, one
//! picture, a five-minute walk-through and links; everything else lives in
//! `docs/`. These checks keep it that way:
//!
//! - it stays within [`MAX_LINES`];
//! - the time it cites for `make run` and `make test` is the one in
//!   `docs/performance.md`'s timing table, the only place timings live;
//! - every relative link of the front page and of `docs/*.md` names a file
//!   that exists inside the repository and, with `#anchor`, a heading of
//!   that page (anchors as GitHub makes them), so moving a section cannot
//!   leave a link pointing at nothing.

use sluice_tests::template::root;
use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

const FRONT_PAGE: &str = "README.md";
const PERFORMANCE: &str = "docs/performance.md";
/// Longer than this, the front page is a manual again.
const MAX_LINES: usize = 250;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `page`'s lines outside fenced code blocks, with their line numbers.
fn prose_lines(page: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    page.lines().enumerate().map(|(n, line)| (n + 1, line)).filter(move |(_, line)| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// A heading's anchor as GitHub makes it: lower case, punctuation other
/// than `-` and `_` dropped, spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `page`'s headings (a repeated one gets `-1`, `-2`, …).
fn anchors(page: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(page) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = anchor(&line[hashes..]);
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        seen.insert(name);
    }
    seen
}

/// The targets of the Markdown links in `line`: `[text](target)`.
fn link_targets(line: &str) -> Vec<&str> {
    line.split("](").skip(1).filter_map(|rest| rest.split_once(')').map(|(target, _)| target)).collect()
}

/// `path` with `.` and `..` resolved lexically, or `None` when it climbs
/// above where it started.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out.iter().collect())
}

/// What is wrong with the relative links of `page` (its path from the
/// repository root is `from`).
fn broken_links(root: &Path, from: &str, page: &str) -> Vec<String> {
    let dir = Path::new(from).parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for (n, line) in prose_lines(page) {
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let at = format!("{from}:{n}: ({target})");
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            if file.is_empty() {
                if !anchors(page).contains(fragment) {
                    problems.push(format!("{at}: no such heading"));
                }
                continue;
            }
            let Some(resolved) = normalise(&dir.join(file)) else {
                problems.push(format!("{at}: points outside the repository"));
                continue;
            };
            let path = root.join(&resolved);
            if !path.exists() {
                problems.push(format!("{at}: no {}", resolved.display()));
            } else if !fragment.is_empty()
                && resolved.extension().is_some_and(|e| e == "md")
                && !anchors(&read(&path)).contains(fragment)
            {
                problems.push(format!("{at}: no such heading in {}", resolved.display()));
            }
        }
    }
    problems
}

/// The time in `docs/performance.md`'s timing table for `command`.
fn measured(performance: &str, command: &str) -> String {
    let (_, row) = prose_lines(performance)
        .find(|(_, line)| line.starts_with(&format!("| `{command}` |")))
        .unwrap_or_else(|| panic!("{PERFORMANCE} has no timing row for `{command}`"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // | command | what it runs | time | measured |
    cells.get(3).map(|c| c.to_string()).unwrap_or_else(|| panic!("{PERFORMANCE}: a short timing row: {row}"))
}

#[test]
fn the_front_page_stays_a_front_page() {
    let page = read(&root().join(FRONT_PAGE));
    let lines = page.lines().count();
    assert!(
        lines <= MAX_LINES,
        "{FRONT_PAGE} has {lines} lines, over {MAX_LINES}: move the detail into a page of docs/ and link it"
    );
}

#[test]
fn the_front_page_cites_the_timings_of_docs_performance() {
    let page = read(&root().join(FRONT_PAGE));
    let performance = read(&root().join(PERFORMANCE));
    for command in ["make run", "make test"] {
        let time = measured(&performance, command);
        assert!(time.contains("min") || time.ends_with(" s"), "{PERFORMANCE}: `{command}` took {time:?}?");
        assert!(
            page.contains(&format!("**{time}**")),
            "{FRONT_PAGE} does not cite **{time}** for `{command}`, the time in {PERFORMANCE}'s table"
        );
    }
}

#[test]
fn every_link_of_the_front_page_and_the_docs_resolves() {
    let root = root();
    let mut pages = vec![FRONT_PAGE.to_owned()];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("docs/ entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    let problems: Vec<String> = pages.iter().flat_map(|p| broken_links(root, p, &read(&root.join(p)))).collect();
    assert!(problems.is_empty(), "broken links:\n  {}", problems.join("\n  "));
    assert!(pages.len() >= 9, "only {} pages found: {pages:?}", pages.len());
}

#[test]
fn the_checks_catch_a_broken_link_and_compute_anchors_as_github_does() {
    assert_eq!(
        anchor(" The functions as Lambda runs them: `--functions processes`"),
        "the-functions-as-lambda-runs-them---functions-processes"
    );
    assert_eq!(anchor(" The demos' own times"), "the-demos-own-times");
    let page = "# A\n## B: `c`\n```sh\n# not a heading\n```\n[x](#b-c) [y](#a) [z](#nope) [w](../outside.md) [v](docs/none.md)\n";
    let problems = broken_links(root(), "README.md", page).join("\n");
    assert!(!problems.contains("(#b-c)") && !problems.contains("(#a)"), "{problems}");
    for expected in ["(#nope): no such heading", "(../outside.md): points outside", "(docs/none.md): no docs/none.md"] {
        assert!(problems.contains(expected), "{expected} not reported:\n{problems}");
    }
    assert!(!anchors(page).contains("not-a-heading"));
}
