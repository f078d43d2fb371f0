//! The endpoint's ARNs and names. A state machine is
//! `arn:aws:states:<region>:000000000000:stateMachine:<name>` and an
//! execution `arn:aws:states:<region>:000000000000:execution:<machine>:<name>`
//! (formed by `sluice_asl::arn`, so the ARN a caller gets is the one the
//! execution reads in `$$.Execution.Id`). An ARN that does not parse, or
//! names the other kind of resource, is `InvalidArn`; one that parses but
//! names nothing here (another region or account included) is the
//! operation's does-not-exist error.

use super::error::ApiError;

/// What a well-formed Step Functions ARN names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Named<'a> {
    StateMachine { machine: &'a str },
    Execution { machine: &'a str, name: &'a str },
}

/// Parses `arn` as a Step Functions ARN of a state machine or an
/// execution (an Express execution's `express:` form included, as AWS
/// hands them out).
pub(super) fn parse(arn: &str) -> Result<Named<'_>, ApiError> {
    let invalid = |why: &str| ApiError::invalid_arn(format!("Invalid Arn: '{why}': {arn}"));
    let fields: Vec<&str> = arn.split(':').collect();
    match fields.as_slice() {
        ["arn", partition, "states", region, account, kind, rest @ ..]
            if partition.starts_with("aws") && !region.is_empty() && !account.is_empty() =>
        {
            match (*kind, rest) {
                ("stateMachine", [machine]) if !machine.is_empty() => Ok(Named::StateMachine { machine }),
                ("execution" | "express", [machine, name, ..]) if !machine.is_empty() && !name.is_empty() => {
                    Ok(Named::Execution { machine, name })
                }
                ("stateMachine" | "execution" | "express", _) => Err(invalid("Resource name not valid")),
                (other, _) => Err(invalid(&format!("Resource type not valid in this context: {other}"))),
            }
        }
        _ => Err(invalid("Unable to parse ARN")),
    }
}

/// A state machine ARN, or `InvalidArn` for anything else.
pub(super) fn state_machine(arn: &str) -> Result<&str, ApiError> {
    match parse(arn)? {
        Named::StateMachine { machine } => Ok(machine),
        Named::Execution { .. } => Err(ApiError::invalid_arn(format!(
            "Invalid Arn: 'Resource type not valid in this context: execution': {arn}"
        ))),
    }
}

/// An execution ARN, or `InvalidArn` for anything else.
pub(super) fn execution(arn: &str) -> Result<(), ApiError> {
    match parse(arn)? {
        Named::Execution { .. } => Ok(()),
        Named::StateMachine { .. } => Err(ApiError::invalid_arn(format!(
            "Invalid Arn: 'Resource type not valid in this context: stateMachine': {arn}"
        ))),
    }
}

/// Characters an execution name may not hold (Step Functions' naming
/// rules): white space and control characters are checked apart.
const FORBIDDEN: &[char] =
    &['<', '>', '{', '}', '[', ']', '?', '*', '"', '#', '%', '\\', '^', '|', '~', '`', '$', '&', ',', ';', ':', '/'];

/// Checks an execution name: 1 to 80 characters, none of [`FORBIDDEN`],
/// no white space or control character.
pub(super) fn check_name(name: &str) -> Result<(), ApiError> {
    let count = name.chars().count();
    let bad = name.chars().find(|c| FORBIDDEN.contains(c) || c.is_whitespace() || c.is_control());
    let why = match (count, bad) {
        (0, _) => "it is empty".to_owned(),
        (81.., _) => format!("it has {count} characters, more than 80"),
        (_, Some(c)) => format!("it holds {c:?}, which names may not"),
        _ => return Ok(()),
    };
    Err(ApiError::invalid_name(format!("Invalid Name: '{name}' ({why})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_machine_and_execution_arns_parse() {
        let machine = "arn:aws:states:us-east-1:000000000000:stateMachine:sluice-dev-pipeline";
        assert_eq!(parse(machine).unwrap(), Named::StateMachine { machine: "sluice-dev-pipeline" });
        let execution = "arn:aws:states:us-east-1:000000000000:execution:sluice-dev-pipeline:e-1";
        assert_eq!(parse(execution).unwrap(), Named::Execution { machine: "sluice-dev-pipeline", name: "e-1" });
        let express = "arn:aws:states:us-east-1:123456789012:express:m:e-1:4c1e";
        assert_eq!(parse(express).unwrap(), Named::Execution { machine: "m", name: "e-1" });
    }

    #[test]
    fn anything_else_is_an_invalid_arn_saying_why() {
        for (arn, why) in [
            ("not-an-arn", "Unable to parse ARN"),
            ("arn:aws:sqs:us-east-1:000000000000:q", "Unable to parse ARN"),
            ("arn:aws:states:us-east-1:000000000000:activity:a", "Resource type not valid in this context: activity"),
            ("arn:aws:states:us-east-1:000000000000:stateMachine:", "Resource name not valid"),
            ("arn:aws:states:us-east-1:000000000000:stateMachine:a:b", "Resource name not valid"),
        ] {
            let e = parse(arn).unwrap_err();
            assert_eq!(e.code, "InvalidArn");
            assert!(e.message.contains(why), "{arn}: {}", e.message);
        }
        let execution = "arn:aws:states:us-east-1:000000000000:execution:m:e";
        assert!(state_machine(execution).unwrap_err().message.contains("not valid in this context: execution"));
        let machine = "arn:aws:states:us-east-1:000000000000:stateMachine:m";
        assert!(super::execution(machine).unwrap_err().message.contains("not valid in this context: stateMachine"));
    }

    #[test]
    fn names_follow_step_functions_rules() {
        assert!(check_name("batch-42_retry.1").is_ok());
        assert!(check_name(&"a".repeat(80)).is_ok());
        for (name, why) in [("", "empty"), ("a b", "' '"), ("a/b", "'/'"), ("a\u{7}", "'\\u{7}'")] {
            let e = check_name(name).unwrap_err();
            assert_eq!(e.code, "InvalidName");
            assert!(e.message.contains(why), "{name:?}: {}", e.message);
        }
        assert!(check_name(&"a".repeat(81)).unwrap_err().message.contains("81 characters"));
    }
}
