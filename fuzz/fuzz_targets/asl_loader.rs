//! Any text as a state machine definition: loaded or refused with the
//! problems named, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_asl::{StateMachine, Substitutions};

fuzz_target!(|text: &str| {
    let _ = StateMachine::load(text, &Substitutions::default());
});
