#![no_main]
use streamcore_mock::fuzzing::{Profile, fuzz};
libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz(Profile::MultiStreamSync, data));
