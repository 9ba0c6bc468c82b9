"""``python -m bench <name> [flags]``: run one benchmark; without a name, list them."""

from __future__ import annotations

import importlib
import sys

from realtime.engine.cpu import omp_env

# name -> (module, what it measures)
BENCHES: dict[str, tuple[str, str]] = {
    "runtime": ("bench.runtime", "model runtime vs upstream ChatTTS (decode steps, first audio)"),
    "int8": ("bench.int8", "int4 and int8 (ONNX Runtime) vs fp32: first differing step, KL, audio SNR"),
    "precision": ("bench.int8", "the same as int8 (the reduced precisions vs fp32)"),
    "roofline": ("bench.roofline", "the memory floor of a CPU decode step per precision (bandwidth, rtf)"),
    "cpu-streams": ("bench.cpu_streams",
                    "concurrent real-time streams on the CPU through the real server, int8 and fp32"),
    "engines": ("bench.engines", "the CPU decoder's whole step per engine and form (torch, ONNX Runtime)"),
    "step-split": ("bench.step_split", "a stream's step split (decode, vocoder), CPU engine by engine"),
    "vocoder": ("bench.vocoder", "streaming vocoder vs upstream's re-decode scheme"),
    "hotpath": ("bench.hotpath", "transfers and launches per decode step, batched vocoder vs per stream"),
    "server": ("bench.server", "server overhead per frame vs a bare websockets loop"),
    "scheduler": ("bench.scheduler", "two-lane scheduler vs baselines, simulated"),
    "overload": ("bench.overload", "admission by capacity vs queue-only under overload, real server"),
    "turns": ("bench.turns", "bursts of streamed turns: a held place per accepted turn vs none"),
    "soak": ("bench.soak", "bounded loopback soak of the whole server"),
    "coldstart": ("bench.coldstart", "process start to /readyz and first audio, cold and warm cache"),
    "text": ("bench.text", "text front end: normalization cost per sentence, share of first audio"),
    "admission": ("bench.admission", "the model thread's time per admission: prepared inline vs off it"),
}


def usage() -> str:
    width = max(map(len, BENCHES))
    lines = ["usage: python -m bench <name> [flags]   (--help after a name for its flags)", ""]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in BENCHES.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name = args.pop(0)
    if name not in BENCHES:
        print(f"unknown benchmark {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    omp_env.apply_defaults()  # as the server does, before a bench loads torch
    module = importlib.import_module(BENCHES[name][0])
    return module.main(args) or 0


if __name__ == "__main__":
    sys.exit(main())
