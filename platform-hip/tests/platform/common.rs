//! Helpers shared by the platform tests.

use std::io::Write;
use std::process::{Command, Output};

use streamcore::platform::{
    DeviceRange, ErrorKind, HostRange, HostStorage, PageId, Platform, PlatformError, Storage,
};
use streamcore_hip::{HipHostStorage, HipPlatform};

use crate::runner::Skip;

/// Prints a line the test harness does not capture (it writes to the
/// process's stderr directly, not through `eprintln!`).
pub fn visible(line: &str) {
    let mut err = std::io::stderr();
    let _ = writeln!(err, "{line}");
}

/// The platform over device 0, or the reason to skip when no runtime or no
/// device is present. Any other constructor error fails the test.
pub fn platform_or_skip() -> Result<HipPlatform, Skip> {
    platform_on(0)
}

/// The platform over device `ordinal`, or the reason to skip when there is
/// no runtime or no such device.
pub fn platform_on(ordinal: i32) -> Result<HipPlatform, Skip> {
    match HipPlatform::with_device(ordinal) {
        Ok(platform) => Ok(platform),
        Err(e) if e.kind() == ErrorKind::NotAvailable => Err(Skip(format!(
            "no HIP runtime or no device {ordinal} ({}: {})",
            e.call(),
            e.name()
        ))),
        Err(e) => panic!("HipPlatform::with_device({ordinal}) failed unexpectedly: {e}"),
    }
}

/// Allocates a pinned page and fills it with `data`.
pub fn host_page(host: &mut HipHostStorage, data: &[u8]) -> PageId {
    let page = host.alloc(data.len() as u64).expect("pinned alloc");
    host.write(page, 0, data).expect("write pinned page");
    page
}

/// The whole of a host page as a range.
pub fn host_range(page: PageId, offset: u64, len: u64) -> HostRange {
    HostRange { page, offset, len }
}

/// `count` little-endian u32 words as bytes.
pub fn words(count: usize, f: impl Fn(u32) -> u32) -> Vec<u8> {
    (0..count as u32).flat_map(|i| f(i).to_le_bytes()).collect()
}

/// Bytes back to u32 words.
pub fn to_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Records an event on `stream` and blocks until it has passed.
pub fn drain(platform: &HipPlatform, stream: &mut <HipPlatform as Platform>::Stream) {
    let event = platform.record(stream).expect("record");
    platform.synchronize(&event).expect("synchronize");
}

/// Runs one ignored test of this binary in a child process with extra
/// environment, returning its output.
pub fn run_child(test: &str, env: &[(&str, &str)], remove: &[&str]) -> Output {
    let exe = std::env::current_exe().expect("current test binary");
    let mut command = Command::new(exe);
    command.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (key, value) in env {
        command.env(key, value);
    }
    for key in remove {
        command.env_remove(key);
    }
    command.output().expect("spawn child test process")
}

/// The `CHILD-REPORT` lines a child printed, without the prefix (the
/// harness may print its own `test … ` text before the first one).
pub fn reports(output: &Output) -> Vec<String> {
    const TAG: &str = "CHILD-REPORT ";
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.find(TAG).map(|at| l[at + TAG.len()..].to_owned()))
        .collect()
}

/// Writes `at.len / 4` words at `at` through a pinned page and reads them back.
pub fn round_trip(platform: &HipPlatform, at: DeviceRange, seed: u32) -> Vec<u32> {
    let mut host = platform.host_storage().unwrap();
    let n = (at.len / 4) as usize;
    let src = host_page(&mut host, &words(n, |i| i ^ seed));
    let dst = host_page(&mut host, &vec![0u8; at.len as usize]);
    let mut stream = platform.create_stream().unwrap();
    platform
        .copy_to_device(&mut stream, host_range(src, 0, at.len), at)
        .unwrap();
    platform
        .copy_to_host(&mut stream, at, host_range(dst, 0, at.len))
        .unwrap();
    drain(platform, &mut stream);
    let mut out = vec![0u8; at.len as usize];
    streamcore::platform::HostStorage::read(&host, dst, 0, &mut out).unwrap();
    to_words(&out)
}
