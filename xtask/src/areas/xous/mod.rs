//! Step `xous:build`: the patched and stock hosted kernels and the base services
//! (build/xous.rs), built once per run and cached across runs.

use crate::steps::{step, TestStep};

pub fn test_steps() -> Vec<TestStep> {
    vec![step!("xous:build", 40 * 60, |c| c.xous().map(|_| ()))]
}
