//! Section 3: a chain of launches, eager and as a replayed graph.

use crate::common::*;

/// Section 3: a 100-kernel chain, eager and as a replayed graph.
pub(crate) fn chain(dev: &Device<HipPlatform>) -> R<()> {
    const KERNELS: usize = 100;
    const CHAINS: usize = 10;
    const ROUNDS: usize = 40;
    let inc = dev.load_kernel(&INC).map_err(e("load sb_inc"))?;
    let x = dev.alloc(S0, 4 * N as u64).map_err(e("alloc"))?;
    dev.write(S0, &x, &bytes(&[0; N])).map_err(e("write"))?;
    let info = [N as u64];
    let run_chain = || -> R<()> {
        for _ in 0..KERNELS {
            queued(dev.launch(S0, inc, dims(), &[x.read_write()], &info))?;
        }
        Ok(())
    };
    let mut chains_run = 0u32;

    // Capture: warm-up, then record.
    dev.prepare(S0).map_err(e("prepare"))?;
    run_chain()?;
    chains_run += 1;
    dev.begin_capture(S0).map_err(e("begin_capture"))?;
    run_chain()?;
    let graph = dev.end_capture(S0).map_err(e("end_capture"))?;

    let rk = RawKernel::load(INC.source, INC.name)?;
    let rs = RawStream::new()?;
    let (rx, rinfo) = (RawBuffer::new(4 * N)?, RawBuffer::new(8)?);
    rx.upload(&rs, &bytes(&[0; N]))?;
    rinfo.upload(&rs, &words64(&info))?;
    let mut raw_chains = 0u32;

    let mut s = [Samples::default(), Samples::default(), Samples::default()];
    interleaved(ROUNDS, 3, |which, counted| {
        let t = Instant::now();
        match which {
            0 => {
                for _ in 0..CHAINS {
                    run_chain()?;
                }
                dev.sync(S0).map_err(e("sync"))?;
            }
            1 => {
                for _ in 0..CHAINS {
                    queued(dev.replay(&graph))?;
                }
                dev.sync(S0).map_err(e("sync"))?;
            }
            _ => {
                for _ in 0..CHAINS * KERNELS {
                    rk.launch(&rs, BLOCKS, &[rx.address, rinfo.address])?;
                }
                rs.sync()?;
                raw_chains += CHAINS as u32;
            }
        }
        if which != 2 {
            chains_run += CHAINS as u32;
        }
        if counted {
            s[which].push(ns(t), CHAINS);
        }
        Ok(())
    })?;
    let got = words(&dev.read(S0, &x).map_err(e("read"))?);
    check("Device chain", &got, chains_run * KERNELS as u32)?;
    check(
        "bare chain",
        &words(&rx.download(&rs)?),
        raw_chains * KERNELS as u32,
    )?;
    let stats = dev.stats();
    drop(graph);
    dev.sync_all().map_err(e("sync_all"))?;

    println!(
        "\n3. A chain of {KERNELS} sb_inc launches over one buffer of {N} u32, \
         {CHAINS} chains then one sync, {ROUNDS} rounds"
    );
    println!("  {:<44} {:>10} {:>10}", "", "median", "fastest");
    row("Device, eager launches", &s[0], None, "ns/chain");
    row("Device, captured graph replayed", &s[1], None, "ns/chain");
    row("bare hipModuleLaunchKernel, eager", &s[2], None, "ns/chain");
    ratio("eager / graph (Device)", s[0].median(), s[1].median());
    ratio("bare eager / graph (Device)", s[2].median(), s[1].median());
    println!(
        "  graphs sealed {}, replays {}; results checked: ok",
        stats.graphs_sealed, stats.graph_replays
    );
    Ok(())
}
