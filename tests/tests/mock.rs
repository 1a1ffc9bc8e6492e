//! The scenario suite on the mock platform, under several scheduler seeds.

mod seed0 {
    streamcore_tests::scenario_suite!(streamcore_tests::mock::MockHarness { seed: 0 });
}
mod seed1 {
    streamcore_tests::scenario_suite!(streamcore_tests::mock::MockHarness { seed: 0x5eed_0001 });
}
mod seed2 {
    streamcore_tests::scenario_suite!(streamcore_tests::mock::MockHarness { seed: 0xdead_beef });
}
mod seed3 {
    streamcore_tests::scenario_suite!(streamcore_tests::mock::MockHarness { seed: 42 });
}
