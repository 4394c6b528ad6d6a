//! Step `programs:build`: our Xous programs for the host (release), built once per run.

use crate::steps::{step, TestStep};

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("programs:build", 30 * 60, |c| c.programs().map(|_| ()))]
}
