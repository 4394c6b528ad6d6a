//! Smoke-test scenario steps, one module per area. The `smoke` binary runs `all()` in order.
//!
//! To add steps for your area: add `src/scenarios/<area>.rs` with
//! `pub fn steps() -> Vec<Step>` (step names `area/what`), declare it below and append it in
//! `all()`. A step returns `Err(reason)` to fail; a panic also fails it. A step that blocks
//! forever is caught by `cargo xtask smoke`'s time limit, which names the step.

use hosted_tests::Step;

pub mod base;
pub mod engine;
pub mod trng;

pub fn all() -> Vec<Step> {
    let mut v = Vec::new();
    v.extend(base::steps());
    v.extend(engine::steps());
    v.extend(trng::steps());
    v
}
