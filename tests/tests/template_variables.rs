//! Each function's environment in `infra/template.yaml` against what its
//! code reads (`sluice_tests::variables`): a variable a function needs and
//! is not given stops its cold start; one it is given and does not read
//! does nothing. Run on the template, and on copies with a variable
//! misnamed, to show the check reports it.

use sluice_tests::template::{broken_copy, template};
use sluice_tests::variables::variable_problems;

#[test]
fn each_function_gets_the_variables_it_reads_and_no_other() {
    let problems = variable_problems(&template());
    assert!(problems.is_empty(), "{problems:#?}");
}

/// One function's variable misnamed: it reads the right name, which it no
/// longer gets, and is given one nothing reads.
#[test]
fn a_misnamed_variable_is_reported() {
    let broken = broken_copy("SLUICE_FLUSH_QUEUE_URL: !Ref FlushQueue", "SLUICE_FLUSH_QUEUE: !Ref FlushQueue");
    let problems = variable_problems(&broken);
    let reported = |text: &str| problems.iter().any(|p| p.contains(text));
    assert!(
        reported("BufferRowFunction reads SLUICE_FLUSH_QUEUE_URL, which the template does not set"),
        "{problems:#?}"
    );
    assert!(reported("the template sets SLUICE_FLUSH_QUEUE for BufferRowFunction"), "{problems:#?}");
    assert!(reported("the template sets SLUICE_FLUSH_QUEUE, which no configuration reads"), "{problems:#?}");
}

/// A variable dropped from `Globals` is missed by every function.
#[test]
fn a_global_variable_dropped_is_reported() {
    let problems = variable_problems(&broken_copy("        SLUICE_STAGE: !Ref Stage\n", ""));
    assert!(
        problems.iter().any(|p| p.contains("reads SLUICE_STAGE, which the template does not set")),
        "{problems:#?}"
    );
}
