//! Section 1: the per-launch cost, bare HIP, the platform alone and the `Device`.

use crate::common::*;

/// Section 1: per-launch cost. Returns Device/bare (submit, median).
pub(crate) fn launches(dev: &Device<HipPlatform>) -> R<f64> {
    const BATCH: usize = 256;
    const ROUNDS: usize = 200;
    let a_words: Vec<u32> = (0..N as u32).collect();
    let b_words: Vec<u32> = (0..N as u32).map(|x| 3 * x + 7).collect();
    let info = [N as u64];

    // streamcore Device.
    let add = dev.load_kernel(&ADD).map_err(e("load sc_add"))?;
    let a = dev.upload(S0, &bytes(&a_words)).map_err(e("upload"))?;
    let b = dev.upload(S0, &bytes(&b_words)).map_err(e("upload"))?;
    let out = dev.alloc(S0, 4 * N as u64).map_err(e("alloc"))?;
    let dev_launch = || -> R<()> {
        queued(dev.launch(S0, add, dims(), &[a.read(), b.read(), out.write()], &info))
    };

    // Bare HIP: own module, stream and buffers.
    let rk = RawKernel::load(ADD.source, ADD.name)?;
    let rs = RawStream::new()?;
    let (ra, rb) = (RawBuffer::new(4 * N)?, RawBuffer::new(4 * N)?);
    let (rout, rinfo) = (RawBuffer::new(4 * N)?, RawBuffer::new(8)?);
    ra.upload(&rs, &bytes(&a_words))?;
    rb.upload(&rs, &bytes(&b_words))?;
    rinfo.upload(&rs, &words64(&info))?;
    let pointers = [ra.address, rb.address, rout.address, rinfo.address];

    // The platform alone: HipPlatform::launch over pages of its own device
    // storage (it refuses ranges outside them), copied from the bare ones.
    let platform = HipPlatform::new().map_err(e("HipPlatform::new"))?;
    let pk = platform.load_kernel(&ADD).map_err(e("load sc_add"))?;
    let mut ps = platform.create_stream().map_err(e("create_stream"))?;
    let mut pstorage = platform.device_storage().map_err(e("device_storage"))?;
    let mut page_like = |buf: &RawBuffer, access| -> R<Binding> {
        let page = pstorage
            .alloc(buf.bytes as u64)
            .map_err(e("HipStorage::alloc"))?;
        raw::copy_device(page.0, buf.address, buf.bytes, &rs)?;
        let range = DeviceRange {
            page,
            offset: 0,
            len: buf.bytes as u64,
        };
        Ok(Binding { range, access })
    };
    let bindings = [
        page_like(&ra, Access::Read)?,
        page_like(&rb, Access::Read)?,
        page_like(&rout, Access::Write)?,
        page_like(&rinfo, Access::Read)?,
    ];

    let stats0 = dev.stats();
    // [bare, platform, device] x [submit, submit + sync]
    let mut sub: [Samples; 3] = Default::default();
    let mut tot: [Samples; 3] = Default::default();
    interleaved(ROUNDS, 3, |which, counted| {
        let t = Instant::now();
        let submitted = match which {
            0 => {
                for _ in 0..BATCH {
                    rk.launch(&rs, BLOCKS, &pointers)?;
                }
                let s = ns(t);
                rs.sync()?;
                s
            }
            1 => {
                for _ in 0..BATCH {
                    platform
                        .launch(&mut ps, &pk, dims(), &bindings)
                        .map_err(e("HipPlatform::launch"))?;
                }
                let s = ns(t);
                ps.synchronize().map_err(e("synchronize"))?;
                s
            }
            _ => {
                for _ in 0..BATCH {
                    dev_launch()?;
                }
                let s = ns(t);
                dev.sync(S0).map_err(e("Device::sync"))?;
                s
            }
        };
        let total = ns(t);
        // Round 0 is the warm-up.
        if counted {
            sub[which].push(submitted, BATCH);
            tot[which].push(total, BATCH);
        }
        Ok(())
    })?;
    let stats1 = dev.stats();
    let want: Vec<u32> = (0..N).map(|i| a_words[i] + b_words[i]).collect();
    if words(&dev.read(S0, &out).map_err(e("read"))?) != want {
        return Err("Device launches computed a wrong sum".into());
    }
    if words(&rout.download(&rs)?) != want {
        return Err("bare launches computed a wrong sum".into());
    }
    let launched = stats1.launches - stats0.launches;
    let hits = stats1.info_hits - stats0.info_hits;
    let misses = stats1.info_misses - stats0.info_misses;

    println!(
        "\n1. Per-launch cost: sc_add over {N} u32 ({BLOCKS}x256 threads, 3 buffers + info), \
         {BATCH} launches then one stream sync, {ROUNDS} rounds"
    );
    println!(
        "  {:<44} {:>10} {:>10} {:>12} {:>10}",
        "", "submit med", "submit min", "+sync med", "+sync min"
    );
    row(
        "bare hipModuleLaunchKernel",
        &sub[0],
        Some(&tot[0]),
        "ns/launch",
    );
    row(
        "HipPlatform::launch (platform only)",
        &sub[1],
        Some(&tot[1]),
        "ns/launch",
    );
    row(
        "Device::launch (info-cache hit)",
        &sub[2],
        Some(&tot[2]),
        "ns/launch",
    );
    println!(
        "  Device/bare ratio: submit {:.3} (median), {:.3} (fastest); with sync {:.3} (median)",
        sub[2].median() / sub[0].median(),
        sub[2].min() / sub[0].min(),
        tot[2].median() / tot[0].median()
    );
    println!(
        "  Device launches counted: {launched}, info-cache hits {hits}, misses {misses}; \
         results checked: ok"
    );
    Ok(sub[2].median() / sub[0].median())
}
