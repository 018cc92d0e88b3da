#!/usr/bin/env python3
"""Checks `cudascope whatif` against PyTorch on a GPU: a small transformer trained with
variable sequence lengths (as batches of real text have) runs once per allocator setting,
each in a fresh process with PyTorch's allocator and its memory history recorded from the
start; then `cudascope whatif` replays each run's snapshot under every setting, and each
prediction is compared with the peaks PyTorch actually reached under that setting.

  python3 torch_whatif_check.py --cudascope BUILD/cli/cudascope --out DIR [--steps 40]
  python3 torch_whatif_check.py --run CONF --snapshot S.pickle --steps 40   (one run; prints JSON)

Prints a table and writes DIR/whatif_check.json. Exit status 1 when a prediction under the
snapshot's own setting differs from PyTorch's peak (the other cells are reported, not gated).
"""
import argparse
import json
import os
import subprocess
import sys

SETTINGS = ["", "expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4"]


def one_run(conf, snapshot, steps):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.cuda.memory._record_memory_history(max_entries=2_000_000)
    torch.manual_seed(0)
    vocab, d, layers = 8192, 256, 4
    layer = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
    model = nn.ModuleDict({"embed": nn.Embedding(vocab, d), "body": nn.TransformerEncoder(layer, layers,
                          enable_nested_tensor=False), "head": nn.Linear(d, vocab)}).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lengths = torch.randint(32, 257, (steps,), generator=torch.Generator().manual_seed(1)).tolist()
    for seq in lengths:
        tokens = torch.randint(0, vocab, (16, seq + 1), device="cuda")
        with torch.cuda.nvtx.range("forward"):
            h = model["body"](model["embed"](tokens[:, :-1]), is_causal=True,
                              mask=nn.Transformer.generate_square_subsequent_mask(seq, device="cuda"))
            loss = F.cross_entropy(model["head"](h).flatten(0, 1), tokens[:, 1:].flatten())
        with torch.cuda.nvtx.range("backward"):
            loss.backward()
        with torch.cuda.nvtx.range("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(snapshot)
    s = torch.cuda.memory_stats()
    return {"conf": conf, "peak_reserved_bytes": s["reserved_bytes.all.peak"],
            "peak_allocated_bytes": s["allocated_bytes.all.peak"], "cuda_malloc_count": s["num_device_alloc"],
            "device": torch.cuda.get_device_name(), "torch": torch.__version__}


def check(args):
    os.makedirs(args.out, exist_ok=True)
    actual, predicted = {}, {}
    for k, conf in enumerate(SETTINGS):
        snapshot = os.path.join(args.out, f"train_{k}.pickle")
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        out = subprocess.run([sys.executable, __file__, "--run", conf, "--snapshot", snapshot,
                              "--steps", str(args.steps)], env=env, check=True, capture_output=True, text=True)
        actual[conf] = json.loads(out.stdout.strip().splitlines()[-1])
        cmd = [args.cudascope, "whatif", snapshot, "--json"]
        for other in SETTINGS:
            cmd += ["--conf", other]
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        # The first row is the snapshot's own settings, then each other --conf in order: a conf
        # equal to the snapshot's own is replayed once, so look every setting up by name.
        predicted[conf] = {row["conf"]: row for row in r["settings"]}
    failed = False
    print(f"device {actual[''].get('device')}, torch {actual[''].get('torch')}, {args.steps} steps")
    print(f"{'snapshot recorded under':32} {'predicted for':32} {'predicted':>12} {'PyTorch':>12} {'equal':>6}")
    rows = []
    for source in SETTINGS:
        for target in SETTINGS:
            p = predicted[source][target]["peak_reserved_bytes"]
            a = actual[target]["peak_reserved_bytes"]
            same = p == a
            if source == target and not same:
                failed = True
            rows.append({"snapshot_conf": source, "conf": target, "predicted_peak_reserved": p,
                         "pytorch_peak_reserved": a,
                         "predicted_peak_allocated": predicted[source][target]["peak_allocated_bytes"],
                         "pytorch_peak_allocated": actual[target]["peak_allocated_bytes"]})
            print(f"{source or '(defaults)':32} {target or '(defaults)':32} {p:12d} {a:12d} {str(same):>6}")
    with open(os.path.join(args.out, "whatif_check.json"), "w") as f:
        json.dump({"actual": actual, "rows": rows}, f, indent=1)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cudascope")
    parser.add_argument("--out")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--run")
    parser.add_argument("--snapshot")
    args = parser.parse_args()
    if args.run is not None:
        print(json.dumps(one_run(args.run, args.snapshot, args.steps)))
        return 0
    if not args.cudascope or not args.out:
        parser.error("--cudascope and --out are needed (or --run)")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
