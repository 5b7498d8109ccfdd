#!/usr/bin/env python3
"""PyTorch timings of the ops that tools/bench_gpu.cpp measures, on the same shapes, for the
ratio columns of `make bench-gpu`. Prints "name<TAB>milliseconds" lines; prints nothing (and
exits 0) where PyTorch or a CUDA device is missing. A benchmark aid, never a dependency."""
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(0)
if not torch.cuda.is_available():
    sys.exit(0)


def time_ms(work, repeats=10):
    work()
    times = []
    for _ in range(repeats):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        work()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def main():
    print(f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}", file=sys.stderr)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    tokens, width = 128 * 197, 768
    x = torch.rand(tokens, width, device=dev) * 2 - 1
    y = torch.rand(tokens, width, device=dev) * 2 - 1
    gamma = torch.rand(width, device=dev)
    beta = torch.rand(width, device=dev)
    seed = torch.rand(tokens, width, device=dev)
    scores = torch.rand(128 * 12 * 197, 197, device=dev) * 10 - 5
    logits = torch.rand(384, 200, device=dev) * 6 - 3
    targets = torch.arange(384, device=dev) % 200
    xg = x.clone().requires_grad_()
    gg = gamma.clone().requires_grad_()
    bg = beta.clone().requires_grad_()

    def layer_norm_fwd_bwd():
        xg.grad = gg.grad = bg.grad = None
        F.layer_norm(xg, (width,), gg, bg, 1e-6).backward(seed)

    def gelu_fwd_bwd():
        xg.grad = None
        F.gelu(xg).backward(seed)

    ops = {
        "add": lambda: x + y,
        "add bias (rows)": lambda: x + gamma,
        "mul scalar": lambda: x * 0.5,
        "gelu": lambda: F.gelu(x),
        "layer_norm": lambda: F.layer_norm(x, (width,), gamma, beta, 1e-6),
        "l2_normalize": lambda: F.normalize(x, dim=-1),
        "sum over rows": lambda: x.sum(0),
        "sum all": lambda: x.sum(),
        "transpose": lambda: x.t().contiguous(),
        "softmax (attention)": lambda: torch.softmax(scores, -1),
        "layer_norm fwd+bwd": layer_norm_fwd_bwd,
        "gelu fwd+bwd": gelu_fwd_bwd,
        "cross_entropy": lambda: F.cross_entropy(logits, targets),
    }
    with torch.no_grad():
        for name, work in ops.items():
            if "bwd" not in name:
                print(f"{name}\t{time_ms(work):.6f}")
    for name in ("layer_norm fwd+bwd", "gelu fwd+bwd"):
        print(f"{name}\t{time_ms(ops[name]):.6f}")

    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        label = "tf32" if tf32 else "fp32"
        for fan_in, fan_out in ((768, 2304), (768, 768), (768, 3072), (3072, 768)):
            inp = torch.rand(tokens, fan_in, device=dev) * 2 - 1
            weight = (torch.rand(fan_out, fan_in, device=dev) * 2 - 1) * 0.03
            bias = torch.rand(fan_out, device=dev)
            out_seed = torch.rand(tokens, fan_out, device=dev)
            with torch.no_grad():
                print(f"{fan_in}->{fan_out} forward {label}\t{time_ms(lambda: F.linear(inp, weight, bias)):.6f}")
            ig, wg, bgr = (t.clone().requires_grad_() for t in (inp, weight, bias))

            def both():
                ig.grad = wg.grad = bgr.grad = None
                F.linear(ig, wg, bgr).backward(out_seed)

            print(f"{fan_in}->{fan_out} fwd+bwd {label}\t{time_ms(both):.6f}")


if __name__ == "__main__":
    main()
