#!/usr/bin/env python3
"""Records real PyTorch workloads as allocation traces, on a GPU machine.

    record_workloads.py [--held-out] OUT_DIR [NAME...]  record (a whole set, or NAME...)
    record_workloads.py [--held-out] --list             a set's workloads, a line each
    record_workloads.py [--held-out] --check [NAME...]  run each one small on the CPU

Two sets: the first (the default; recorded in `tests/real`) and, with
`--held-out`, a second written after every placement of round 22 was
judged on the first (`held_out_workloads.py` beside this script), to judge
a choice made on the first on programs it has never seen. NAME may be a
workload of either set.

Each workload is a small model built from `torch.nn` with random weights
(nothing is downloaded) run for a few steps: training with sequence lengths
that change every step, a U-Net, inference at changing batch sizes, a
recurrent model, a phase change from training to evaluation, and inputs
copied on a side stream. They are the traces the memory policy has never
been judged on: recorded as `streamcore record --help` says (the caching
allocator's history, `torch.cuda.memory._record_memory_history`), each in a
process of its own so its peaks are its own, and converted by
`torch_snapshot_to_trace.py` (beside this script) into
`OUT_DIR/NAME.jsonl.gz`, with PyTorch's own peak reserved and allocated in
the header. Prints one line per workload: events, streams, peaks.

`--check` runs every workload on the CPU at a small scale (no GPU, no
recording): what a change to this file must pass before it is taken to a
GPU.

A workload that fails is reported as `NAME: FAILED (exit N: why)`: the
exception and the first line of its message (or the conversion's reason,
or the signal that ended the process), after the child's whole output,
traceback included. The others are still recorded.

Exit status: 0 when every workload ran; 1 when any failed (each says why)
or stdout could not be written; 2 for bad arguments (an OUT_DIR that is
not a folder or cannot be created among them); 3 when PyTorch cannot be
imported, or recording finds no CUDA device (nothing recorded). A reader
that stops early (`| head`) ends it quietly, status 0.
"""

import argparse
import gzip
import json
import pickle
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from held_out_workloads import held_out_workloads
from script_io import OutputError, ReaderGone, drop_stdout, emit, stderr_line
from workload_parts import autocast, draw

HERE = Path(__file__).resolve().parent


def workloads():
    """{name: (description, function(torch, device, small))}."""
    return {
        "bert_varlen_train": ("BERT-base-like encoder, 8 training steps, batch 32, "
                              "sequence length drawn per step (64-512), bf16 autocast, AdamW",
                              bert_varlen_train),
        "unet_train": ("U-Net (64-512 channels), 4 training steps, batch 8 of 3x256x256, "
                       "bf16 autocast, AdamW", unet_train),
        "vit_serving": ("ViT-B/16-like encoder, inference at changing batch sizes (1-64), "
                        "24 requests", vit_serving),
        "gru_varlen_train": ("2-layer GRU language model, 8 training steps, batch 64, "
                             "sequence length drawn per step (32-256), AdamW", gru_varlen_train),
        "mlp_train_eval": ("8-layer MLP 4096 wide: 5 training steps at batch 512, evaluation "
                           "at batch 8192, 3 more training steps", mlp_train_eval),
        "cnn_side_stream": ("CNN training, 6 steps at batch 64 of 3x160x160, each batch "
                            "copied from pinned memory on a side stream (record_stream)",
                            cnn_side_stream),
    }


def known_workloads():
    """Both sets: {name: (description, function(torch, device, small))}."""
    return {**workloads(), **held_out_workloads()}


def bert_varlen_train(torch, device, small):
    nn = torch.nn
    vocab, d, heads, layers, batch = (30522, 768, 12, 6, 32) if not small else (1000, 64, 4, 2, 4)
    lengths = [64 + 32 * k for k in range(15)] if not small else [8, 12, 16]
    emb = nn.Embedding(vocab, d).to(device)
    layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True)
    enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device)
    head = nn.Linear(d, vocab).to(device)
    params = [*emb.parameters(), *enc.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-4)
    gen = torch.Generator().manual_seed(11)
    for _ in range(8 if not small else 2):
        x = tokens(torch, vocab, batch, lengths, gen).to(device)
        with autocast(torch, device):
            logits = head(enc(emb(x)))
            loss = nn.functional.cross_entropy(logits.float().view(-1, vocab), x.view(-1))
        learn(loss, opt)


def unet_train(torch, device, small):
    nn = torch.nn

    def block(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(),
            nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

    class UNet(nn.Module):
        def __init__(self, widths):
            super().__init__()
            self.downs = nn.ModuleList()
            cin = 3
            for w in widths[:-1]:
                self.downs.append(block(cin, w))
                cin = w
            self.mid = block(cin, widths[-1])
            self.ups = nn.ModuleList()
            self.convs = nn.ModuleList()
            cin = widths[-1]
            for w in reversed(widths[:-1]):
                self.ups.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
                self.convs.append(block(2 * w, w))
                cin = w
            self.out = nn.Conv2d(cin, 3, 1)

        def forward(self, x):
            skips = []
            for down in self.downs:
                x = down(x)
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
            x = self.mid(x)
            for up, conv, skip in zip(self.ups, self.convs, reversed(skips)):
                x = conv(torch.cat([up(x), skip], dim=1))
            return self.out(x)

    widths, batch, side = ([64, 128, 256, 512], 8, 256) if not small else ([8, 16, 32], 2, 32)
    model = UNet(widths).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(13)
    for _ in range(4 if not small else 2):
        x = torch.randn(batch, 3, side, side, generator=gen).to(device)
        noise = torch.randn(batch, 3, side, side, generator=gen).to(device)
        with autocast(torch, device):
            loss = nn.functional.mse_loss(model(x + noise).float(), noise)
        learn(loss, opt)


def vit_serving(torch, device, small):
    nn = torch.nn
    d, heads, layers, side, patch = (768, 12, 12, 224, 16) if not small else (64, 4, 2, 32, 8)
    batches = [1, 4, 16, 64, 8, 32, 2, 48, 1, 24, 64, 12,
               4, 40, 16, 1, 56, 8, 32, 2, 64, 20, 6, 1]
    if small:
        batches = [b // 8 + 1 for b in batches[:6]]
    embed = nn.Conv2d(3, d, patch, stride=patch).to(device)
    layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, norm_first=True)
    enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device)
    head = nn.Linear(d, 1000).to(device)
    for m in (embed, enc, head):
        m.eval()
    gen = torch.Generator().manual_seed(17)
    with torch.inference_mode():
        for b in batches:
            x = torch.randn(b, 3, side, side, generator=gen).to(device)
            with autocast(torch, device):
                tokens = embed(x).flatten(2).transpose(1, 2)
                out = head(enc(tokens).mean(dim=1))
            out.float().softmax(dim=-1).argmax(dim=-1).cpu()


def gru_varlen_train(torch, device, small):
    nn = torch.nn
    vocab, d, hidden, batch = (32000, 512, 1024, 64) if not small else (500, 32, 64, 4)
    lengths = [32 * k for k in range(1, 9)] if not small else [4, 8, 12]
    emb = nn.Embedding(vocab, d).to(device)
    rnn = nn.GRU(d, hidden, num_layers=2, batch_first=True).to(device)
    head = nn.Linear(hidden, vocab).to(device)
    params = [*emb.parameters(), *rnn.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=1e-3)
    gen = torch.Generator().manual_seed(19)
    for _ in range(8 if not small else 2):
        x = tokens(torch, vocab, batch, [n + 1 for n in lengths], gen).to(device)
        out, _ = rnn(emb(x[:, :-1]))
        loss = nn.functional.cross_entropy(head(out).reshape(-1, vocab), x[:, 1:].reshape(-1))
        learn(loss, opt)


def mlp_train_eval(torch, device, small):
    nn = torch.nn
    width, depth, train_batch, eval_batch = (4096, 8, 512, 8192) if not small else (64, 3, 8, 64)
    mods = []
    for _ in range(depth):
        mods += [nn.Linear(width, width), nn.GELU()]
    model = nn.Sequential(*mods, nn.Linear(width, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(23)

    def train(steps):
        model.train()
        for _ in range(steps):
            x = torch.randn(train_batch, width, generator=gen).to(device)
            y = torch.randint(10, (train_batch,), generator=gen).to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            learn(loss, opt)

    train(5 if not small else 2)
    model.eval()
    with torch.no_grad():
        x = torch.randn(eval_batch, width, generator=gen).to(device)
        model(x).argmax(dim=-1).cpu()
    train(3 if not small else 1)


def cnn_side_stream(torch, device, small):
    nn = torch.nn
    batch, side = (64, 160) if not small else (2, 16)
    widths = [64, 128, 256, 512] if not small else [8, 16]
    mods, cin = [], 3
    for w in widths:
        mods += [nn.Conv2d(cin, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
                 nn.Conv2d(w, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
        cin = w
    model = nn.Sequential(*mods, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 100))
    model = model.to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(29)
    cuda = device == "cuda"
    side_stream = torch.cuda.Stream() if cuda else None
    for _ in range(6 if not small else 2):
        host = torch.randn(batch, 3, side, side, generator=gen)
        labels = torch.randint(100, (batch,), generator=gen)
        if cuda:
            host, labels = host.pin_memory(), labels.pin_memory()
            with torch.cuda.stream(side_stream):
                x = host.to(device, non_blocking=True)
                y = labels.to(device, non_blocking=True)
            torch.cuda.current_stream().wait_stream(side_stream)
            x.record_stream(torch.cuda.current_stream())
            y.record_stream(torch.cuda.current_stream())
        else:
            x, y = host, labels
        loss = nn.functional.cross_entropy(model(x.contiguous(memory_format=torch.channels_last)), y)
        learn(loss, opt)


def tokens(torch, vocab, batch, lengths, gen):
    """A batch of random token ids, its sequence length drawn from
    `lengths` (a new shape each step, as padding-free batching makes)."""
    return torch.randint(vocab, (batch, draw(torch, lengths, gen)), generator=gen)


def learn(loss, opt):
    """One optimizer step on `loss`, gradients then dropped (as training
    loops do, so their memory goes back between steps)."""
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def record_one(name, out_dir):
    """Runs `name` on the GPU under the allocator's history and writes its
    trace; the child process of `record`. Exit status 3 without PyTorch
    or CUDA. A failure prints its traceback, then one line, `NAME: why`, as
    the last on stderr: the parent shows it beside FAILED."""
    torch = import_torch()
    if torch is None:
        return 3
    if not torch.cuda.is_available():
        say(f"{name}: SKIPPED: PyTorch has no CUDA device")
        return 3
    try:
        reserved, allocated, trace = record_and_convert(torch, name, out_dir)
        header = read_header(trace)
    except Failed as e:
        say(f"{name}: {e}")
        return 1
    except Exception as e:  # the workload's own error: the log gets it whole
        traceback.print_exc()
        say(f"{name}: {one_line(e)}")
        return 1
    emit(f"{name}: {header.get('events')} events, {header.get('streams')} streams, "
         f"PyTorch peak reserved {reserved} B, allocated {allocated} B "
         f"({reserved / max(allocated, 1):.3f}) -> {trace}")
    return 0


class Failed(Exception):
    """A step of the recording failed; the message says which and why, in
    one line."""


def one_line(e):
    """Exception `e` as one line: its type, and the first line of what it
    says (CUDA's errors run on over several)."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def record_and_convert(torch, name, out_dir):
    """Records `name` and converts its snapshot into OUT_DIR/NAME.jsonl.gz:
    (peak reserved, peak allocated, the trace's path)."""
    torch.manual_seed(7)
    torch.cuda.init()
    torch.cuda.reset_peak_memory_stats()
    try:
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None, stacks="python", max_entries=4_000_000)
    except TypeError:  # an older signature
        torch.cuda.memory._record_memory_history(max_entries=4_000_000)
    known_workloads()[name][1](torch, "cuda", False)
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    reserved = torch.cuda.max_memory_reserved()
    allocated = torch.cuda.max_memory_allocated()
    with tempfile.TemporaryDirectory() as tmp:
        pickled = Path(tmp) / "snapshot.pickle"
        with open(pickled, "wb") as f:
            pickle.dump(snapshot, f)
        trace = Path(out_dir) / f"{name}.jsonl.gz"
        convert = subprocess.run(
            [sys.executable, str(HERE / "torch_snapshot_to_trace.py"), str(pickled), str(trace),
             "--workload", name, "--peak-reserved", str(reserved),
             "--peak-allocated", str(allocated)],
            capture_output=True, text=True)
        if convert.returncode != 0:
            # The converter says why in its last line; the rest to the log.
            said = convert.stderr.strip().splitlines()
            for line in said[:-1]:
                say(line)
            raise Failed(f"conversion failed: {said[-1] if said else 'no message'}")
    return reserved, allocated, trace


def import_torch():
    """PyTorch, or None after saying it is missing."""
    try:
        import torch
    except ImportError as e:
        say(f"SKIPPED: PyTorch cannot be imported ({e})")
        return None
    return torch


say = stderr_line


def run_child(name, out_dir):
    """Records `name` in a child process of its own: (exit status, the last
    line it wrote on stderr, or None). Its stderr is passed on as it comes,
    so the log keeps everything it said (a traceback included)."""
    child = subprocess.Popen([sys.executable, __file__, "--one", name, str(out_dir)],
                             stderr=subprocess.PIPE)
    last = None
    for raw in child.stderr:
        try:
            sys.stderr.buffer.write(raw)
            sys.stderr.flush()
        except OSError:
            pass
        text = raw.decode("utf-8", "replace").strip()
        if text:
            last = text
    return child.wait(), last


def why_failed(name, status, last):
    """One line saying why the child recording `name` failed: the signal
    that ended it, or the last line it wrote (its own `NAME: why`, or the
    last line of a traceback), else its exit status alone."""
    if status < 0:
        try:
            sig = signal.Signals(-status).name
        except ValueError:
            sig = f"signal {-status}"
        hint = ", out of memory?" if -status == signal.SIGKILL else ""
        return f"killed by {sig}{hint}"
    if last is None:
        return f"exit {status}, nothing on stderr"
    prefix = f"{name}: "
    return f"exit {status}: {last[len(prefix):] if last.startswith(prefix) else last}"


def read_header(trace):
    """The header of the trace just written."""
    with gzip.open(trace, "rt", encoding="utf-8") as f:
        return json.loads(f.readline()).get("header", {})


def check(names):
    """Runs each workload small on the CPU; 0 when all ran, 3 without
    PyTorch."""
    torch = import_torch()
    if torch is None:
        return 3
    torch.manual_seed(7)
    failed = 0
    for name in names:
        try:
            known_workloads()[name][1](torch, "cpu", True)
        except Exception as e:  # a report per workload, then the status
            failed += 1
            traceback.print_exc()
            say(f"{name}: FAILED on the CPU: {one_line(e)}")
            continue
        emit(f"{name}: ran on the CPU")
    return 1 if failed else 0


# A child's exit status when its reader went away (`| head`): 128 + SIGPIPE,
# as a shell says it. The parent then stops too.
READER_GONE = 141


def main(argv=None):
    """The command line; its exit status. Output nobody reads any more
    (`| head`) stops it quietly, with status 0."""
    try:
        return run(argv)
    except ReaderGone:
        drop_stdout()
        return 0
    except OutputError as e:
        say(f"record_workloads: writing the output: {e}")
        return 1


def run(argv=None):
    p = argparse.ArgumentParser(
        description="Record real PyTorch workloads as streamcore allocation traces (GPU).")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--check", action="store_true",
                   help="run every workload small on the CPU instead (no GPU, nothing written)")
    p.add_argument("--held-out", action="store_true",
                   help="the second set (held out from every policy choice) instead of the first")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("args", nargs="*", help="OUT_DIR, then workload names (default: the whole set)")
    a = p.parse_args(argv)
    known = known_workloads()
    chosen = held_out_workloads() if a.held_out else workloads()
    if a.list:
        for name, (what, _) in chosen.items():
            emit(f"{name}: {what}")
        return 0
    names = a.args if a.check else a.args[1:]
    unknown = [n for n in names if n not in known]
    if unknown:
        p.error(f"no such workload: {', '.join(unknown)} (see --list)")
    names = names or list(chosen)
    if a.check:
        return check(names)
    if not a.args:
        p.error("OUT_DIR is required (or --list, --check)")
    out_dir = Path(a.args[0])
    if a.one:
        try:
            return record_one(a.one, out_dir)
        except ReaderGone:
            drop_stdout()
            return READER_GONE
    if out_dir.exists() and not out_dir.is_dir():
        p.error(f"OUT_DIR {out_dir} is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        p.error(f"OUT_DIR {out_dir} cannot be created: {e.strerror or e}")
    status = 0
    for name in names:
        code, last = run_child(name, out_dir)
        if code == 3:
            return 3
        if code == READER_GONE:
            raise ReaderGone()
        if code != 0:
            say(f"{name}: FAILED ({why_failed(name, code, last)})")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
