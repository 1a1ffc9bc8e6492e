//! The two-stream pipeline the H200 comparison (`device_vs_hip`) runs, on
//! the null platform: per stage a fill of the stage's own buffer on stream
//! 1 (info words naming the stage, so its info-cache entry is not the
//! stream's last hit) and an accumulation of it into one buffer on stream 0
//! (the core places the wait). Shared by the device bench and the hand-off
//! test (`#[path = "support/pipeline.rs"] mod pipeline;`).

use streamcore::device::{Buffer, Device, DeviceConfig, KernelId, Launched};
use streamcore::null::Null;
use streamcore::platform::{KernelSource, LaunchDims};
use streamcore::stream::StreamId;

/// The stages' stream (the fills).
pub const PRODUCER: StreamId = StreamId(1);
/// The accumulation's stream.
pub const CONSUMER: StreamId = StreamId(0);

/// A device, the two kernels, the stage buffers and the sum.
pub struct Pipeline {
    pub d: Device<Null>,
    pub fill: KernelId,
    pub acc: KernelId,
    pub stages: Vec<Buffer>,
    pub sum: Buffer,
    /// The element count every launch's info words start with.
    elements: u64,
}

impl Pipeline {
    /// `stages` stage buffers of `bytes` bytes each (4-byte elements).
    pub fn new(stages: usize, bytes: u64) -> Self {
        let d = Device::new(Null, DeviceConfig::with_streams(2)).unwrap();
        let kernel = |bindings| {
            d.load_kernel(&KernelSource {
                name: "k",
                source: "",
                bindings,
            })
            .unwrap()
        };
        let (fill, acc) = (kernel(2), kernel(3));
        let stages = (0..stages)
            .map(|_| d.alloc(PRODUCER, bytes).unwrap())
            .collect();
        let sum = d.alloc(CONSUMER, bytes).unwrap();
        Self {
            d,
            fill,
            acc,
            stages,
            sum,
            elements: bytes / 4,
        }
    }

    /// Every stage once (no sync).
    pub fn run(&self) {
        self.run_with(|| {});
    }

    /// Every stage once (no sync), `between` called before each launch
    /// (the bench's cold variant evicts the caches there, as a driver's
    /// own work between two calls does).
    pub fn run_with(&self, mut between: impl FnMut()) {
        let dims = LaunchDims::linear(self.elements.div_ceil(256).max(1) as u32, 256);
        for (k, b) in self.stages.iter().enumerate() {
            let info = [self.elements, k as u64 + 1];
            between();
            let r = self
                .d
                .launch(PRODUCER, self.fill, dims, &[b.write()], &info);
            assert_eq!(r.unwrap(), Launched::Queued);
            let args = [b.read(), self.sum.read_write()];
            between();
            let r = self
                .d
                .launch(CONSUMER, self.acc, dims, &args, &[self.elements]);
            assert_eq!(r.unwrap(), Launched::Queued);
        }
    }
}
