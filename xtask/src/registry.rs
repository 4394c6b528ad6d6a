//! Every test step and bench provider of xtask, in run order: one line per module that
//! registers some. A step `P:name` is registered with `step!` in xtask/src/areas/P/ (the test
//! below refuses any other place); add a new module's `test_steps()` / `bench_providers()` here
//! where it should run (cheap and widely used first, the simulations last); nothing else lists
//! areas.

use crate::areas;
use crate::steps::{BenchProvider, TestStep};

pub fn all_test_steps() -> Vec<TestStep> {
    let mut v = Vec::new();
    // the builds, cargo test, kernel patches, pytest, the hosted smoke test
    v.extend(areas::xous::test_steps());
    v.extend(areas::programs::test_steps());
    v.extend(areas::rust::test_steps());
    v.extend(areas::kernel::test_steps());
    v.extend(areas::python::test_steps());
    v.extend(areas::hosted::test_steps());
    // the areas
    v.extend(areas::engine::isa::test_steps());
    v.extend(areas::trng::ci::test_steps());
    v.extend(areas::trng_service::test_steps());
    v.extend(areas::trng::sim_tester::test_steps());
    v.extend(areas::trng::gateware::test_steps());
    v.extend(areas::engine::rtl::test_steps());
    v.extend(areas::engine::soc_bench::test_steps());
    v.extend(areas::trng::soc::test_steps());
    v.extend(areas::engine_service::test_steps());
    v.extend(areas::chat::test_steps());
    v.extend(areas::device::test_steps());
    v.extend(areas::ratchet::test_steps());
    v.extend(areas::sim::test_steps());
    v.extend(areas::sim::layout::test_steps());
    v.extend(areas::selftest::test_steps());
    v.extend(areas::sim::selftest::test_steps());
    v.extend(areas::sim::screen::test_steps());
    v
}

pub fn all_bench_providers() -> Vec<BenchProvider> {
    let mut v = Vec::new();
    v.extend(areas::hosted::bench::bench_providers());
    v.extend(areas::engine::isa::bench_providers());
    v.extend(areas::trng::bench_providers());
    v.extend(areas::trng::gateware::bench_providers());
    v.extend(areas::engine::rtl::bench_providers());
    v.extend(areas::engine::fpga::bench_providers());
    v.extend(areas::engine::soc_bench::bench_providers());
    v.extend(areas::trng::soc::bench_providers());
    v.extend(areas::engine_service::bench_providers());
    v.extend(areas::chat::bench_providers());
    v.extend(areas::ratchet::bench_providers());
    v.extend(areas::sim::bench_providers());
    v.extend(areas::sim::selftest::bench_providers());
    v.extend(areas::sim::crypto::bench_providers());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folder a step `P:name` must be registered in: xtask/src/areas/P/ (`-` as `_`).
    pub fn area_dir(step: &str) -> Option<String> {
        let (prefix, name) = step.split_once(':')?;
        if prefix.is_empty()
            || name.is_empty()
            || !prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return None;
        }
        Some(format!("xtask/src/areas/{}/", prefix.replace('-', "_")))
    }

    #[test]
    fn every_step_is_registered_in_its_areas_folder() {
        let steps = all_test_steps();
        let mut wrong = Vec::new();
        for s in &steps {
            match area_dir(s.name) {
                Some(dir) if s.file.starts_with(&dir) => {}
                Some(dir) => wrong.push(format!("{} is registered at {}:{}, not in {dir}", s.name, s.file, s.line)),
                None => wrong.push(format!("{} is not named AREA:NAME", s.name)),
            }
        }
        assert!(wrong.is_empty(), "steps outside their area's folder:\n{}", wrong.join("\n"));
        let mut names: Vec<&str> = steps.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), steps.len(), "two steps share a name");
        assert!(steps.iter().all(|s| crate::util::root().join(s.file).is_file()), "a step's file does not exist");
    }

    #[test]
    fn a_step_outside_its_area_is_refused() {
        // registered here, in registry.rs: the check above must catch it
        let s = crate::steps::step!("engine:misplaced", 1, |_| Ok(()));
        let dir = area_dir(s.name).unwrap();
        assert_eq!(dir, "xtask/src/areas/engine/");
        assert!(!s.file.starts_with(&dir), "{}", s.file);
        assert_eq!(area_dir("trng-service:privilege").unwrap(), "xtask/src/areas/trng_service/");
        assert!(area_dir("noprefix").is_none() && area_dir(":x").is_none() && area_dir("Engine:x").is_none());
    }
}
