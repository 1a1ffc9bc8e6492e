//! `streamcore record`: how to record an allocation trace from PyTorch.
//!
//! streamcore does not record traces itself: PyTorch's CUDA caching
//! allocator keeps a history of its events, and a small standard-library
//! Python script (`scripts/torch_snapshot_to_trace.py`, also printed by
//! `streamcore record --script`) turns a snapshot of it into a trace.

use std::io::{self, Write};

use clap::Args;

/// The guide, shown by `streamcore record --help` and `streamcore record`.
pub const GUIDE: &str = "\
Record an allocation trace from PyTorch, to replay with `streamcore replay`.

streamcore does not record traces itself: PyTorch's CUDA caching allocator
keeps a history of its events, and a small Python script (standard library
only) turns a snapshot of that history into a trace.

1. Record the allocator's history around the workload (on the GPU machine):

       import pickle, torch
       torch.cuda.memory._record_memory_history(max_entries=1_000_000)
       torch.cuda.reset_peak_memory_stats()
       run_the_workload()                    # training steps, decoding, ...
       torch.cuda.synchronize()
       snapshot = torch.cuda.memory._snapshot()
       torch.cuda.memory._record_memory_history(enabled=None)
       with open(\"snapshot.pickle\", \"wb\") as f:
           pickle.dump(snapshot, f)
       print(torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated())

   `torch.cuda.memory._dump_snapshot(\"snapshot.pickle\")` writes the same
   file. Keep `max_entries` above the number of allocations and frees: the
   history is a ring buffer, and events lost off its start cannot be
   replayed (the script drops frees of blocks it never saw allocated and
   says how many).

2. Convert the snapshot into a trace (any machine with python3):

       python3 scripts/torch_snapshot_to_trace.py snapshot.pickle trace.jsonl.gz \\
           --workload my_model --peak-reserved R --peak-allocated A

   R and A are the two figures printed above (PyTorch's own peaks); without
   them the script derives both from the snapshot (the segments held at the
   end, walked back through the history). Where the repository is not at
   hand, `streamcore record --script > torch_snapshot_to_trace.py` writes
   the script. It keeps the history's `alloc` events (an allocation of the
   block's size on its stream: the history records the size asked for,
   which the script rounds up to the allocator's 512-byte blocks) and `free_requested` events (the moment the
   program let go of the block; PyTorch may hold it longer, until
   `free_completed`, which is part of what its reserved figure shows).
   Addresses become ids, numbered afresh at each allocation; streams are
   numbered 0, 1, ... in order of first use. Only device 0's history is
   read unless `--device N` says otherwise.

3. Replay it:

       streamcore replay trace.jsonl.gz

The trace format: gzip (or plain) JSON lines. The first line is a header
with what the recorder measured (every member optional):

    {\"header\": {\"workload\": \"my_model\", \"peak_allocated_bytes\": A,
                \"peak_reserved_bytes\": R, \"segment_allocs\": N,
                \"streams\": S, \"events\": E, \"live_at_start_bytes\": L}}

then one event per line, in order:

    {\"op\":\"alloc\",\"id\":N,\"size\":BYTES,\"stream\":S}
    {\"op\":\"free\",\"id\":N}

An id is live from its alloc to its free; a free must name a live id, and a
size must be between 1 byte and 16 TiB. Streams are numbered 0, 1, ... in
order of first use; `streams` and `events`, when given, must match the
events. `live_at_start_bytes` is what the recorder already held before the
recording began: in its peaks, not in the events; so the figures given
must keep live_at_start_bytes <= peak_allocated_bytes <= peak_reserved_bytes. The header's peaks are the
recorded program's (replay shows them as \"PyTorch, recorded\"), not those of a
replay of the events.";

/// The converter script, as committed in `scripts/`.
pub const SCRIPT: &str = include_str!("../../scripts/torch_snapshot_to_trace.py");

/// Arguments of `streamcore record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Print the Python script that converts a PyTorch snapshot into a
    /// trace (standard library only), instead of the guide.
    #[arg(long)]
    pub script: bool,
}

/// Prints the guide, or the script with `--script`.
pub fn run(args: &RecordArgs, out: &mut impl Write) -> io::Result<()> {
    if args.script {
        out.write_all(SCRIPT.as_bytes())
    } else {
        writeln!(out, "{GUIDE}")
    }
}
